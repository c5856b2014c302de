"""Currency by slot on both backends: a question about something that changes (the editor,
the city, the employer) gets the latest memory that states it first, and the older ones
marked ``older`` / ``superseded_by`` — from the text alone, or from the night's facts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memvault.embed import HashingEmbedder
from memvault.judge import ScriptedJudge
from memvault.recall import Recaller
from memvault.records import (
    BlockRecord,
    EntityRecord,
    MentionRecord,
    Record,
    SessionRecord,
    TripleRecord,
)
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, plan_conflicts
from memvault.vectors import embed_missing
from tests.recall_support import T0, add_records, employer_after, employer_before

JULY = dt.datetime(2026, 7, 14, 10)
NOVEMBER = dt.datetime(2026, 11, 20, 16)

#: Ada's memories: the editor in July, many things she uses, the editor again in November.
MEMORIES: list[tuple[str, dt.datetime, str, tuple[str, ...]]] = [
    ("b_nvim", JULY, "Preference (tooling): Ada uses Neovim with a small config.", ("ent_nvim",)),
    ("b_pytest", JULY + dt.timedelta(days=3), "Ada uses pytest with the xdist plugin for the suite.", ()),
    ("b_git", JULY + dt.timedelta(days=9), "Ada uses the terminal for git, never a GUI.", ()),
    ("b_tmux", JULY + dt.timedelta(days=20), "Ada uses tmux to keep long-running jobs alive.", ()),
    ("b_lisbon", JULY + dt.timedelta(days=30), "Ada moved to Lisbon in the spring, a flat near the river.", ("ent_lisbon",)),
    ("b_porto", NOVEMBER - dt.timedelta(days=5), "Ada lives in Porto now; the commute is shorter.", ("ent_porto",)),
    ("b_vscode", NOVEMBER, "Updated preference on tooling: Ada switched to VS Code for the debugger.", ("ent_vscode",)),
]  # fmt: skip


def _records() -> list[Record]:
    out: list[Record] = [
        SessionRecord(id="s-slots", started_at=JULY - dt.timedelta(days=1), title="tooling"),
        EntityRecord(id="ent_ada", name="Ada Lovelace", entity_type="person"),
        EntityRecord(id="ent_nvim", name="Neovim", entity_type="tool"),
        EntityRecord(id="ent_vscode", name="VS Code", entity_type="tool"),
        EntityRecord(id="ent_lisbon", name="Lisbon", entity_type="place"),
        EntityRecord(id="ent_porto", name="Porto", entity_type="place"),
    ]
    for bid, at, text, entities in MEMORIES:
        out.append(BlockRecord(id=bid, session_id="s-slots", text=text, created_at=at))
        out += [
            MentionRecord(entity=e, block_id=bid, session_id="s-slots", mentioned_at=at)
            for e in ("ent_ada", *entities)
        ]
    return out


def _recaller() -> Recaller:
    return Recaller(HashingEmbedder(), refresh_seconds=0)


def test_the_editor_ada_uses_now_comes_first_and_july_is_marked_older(
    store: Store, tmp_path: Path
) -> None:
    add_records(store, _records(), tmp_path / "slots.jsonl")
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    for query in ("what editor does Ada use", "Which IDE does Ada code in?"):
        result = _recaller().recall(store, query, limit=10, now=NOVEMBER + dt.timedelta(days=1))
        hits = {h.block_id: h for h in result.results}
        assert result.results[0].block_id == "b_vscode", [h.block_id for h in result.results]
        assert hits["b_vscode"].older is False and hits["b_vscode"].superseded_by is None
        assert hits["b_nvim"].older is True and hits["b_nvim"].superseded_by == "b_vscode"
        assert hits["b_nvim"].score < hits["b_vscode"].score
        # what is no editor is left as it was
        assert all(not hits[b].older for b in hits if b not in ("b_nvim",))


def test_the_city_ada_lives_in_now_comes_first(store: Store, tmp_path: Path) -> None:
    add_records(store, _records(), tmp_path / "slots.jsonl")
    result = _recaller().recall(store, "which city does Ada live in", limit=10, now=NOVEMBER)
    hits = {h.block_id: h for h in result.results}
    assert result.results[0].block_id == "b_porto"
    assert hits["b_lisbon"].older is True and hits["b_lisbon"].superseded_by == "b_porto"


def test_the_same_value_said_again_is_no_change(store: Store, tmp_path: Path) -> None:
    again = BlockRecord(id="b_vscode_again", session_id="s-slots", created_at=NOVEMBER + dt.timedelta(days=2),
                        text="Ada still likes VS Code: the debugger and the remote containers.")  # fmt: skip
    mention = MentionRecord(entity="ent_ada", block_id="b_vscode_again", session_id="s-slots", mentioned_at=again.created_at)  # fmt: skip
    add_records(store, [*_records(), again, mention], tmp_path / "slots.jsonl")
    result = _recaller().recall(store, "what editor does Ada use", limit=10, now=NOVEMBER + dt.timedelta(days=3))  # fmt: skip
    hits = {h.block_id: h for h in result.results}
    # both say what holds now: they come first, in their search order, neither marked
    assert {h.block_id for h in result.results[:2]} == {"b_vscode", "b_vscode_again"}
    assert not hits["b_vscode"].older and not hits["b_vscode_again"].older
    assert hits["b_nvim"].superseded_by == result.results[0].block_id


def test_with_the_nights_facts_the_facts_decide_and_mark_the_older_memory(
    store: Store, tmp_path: Path
) -> None:
    add_records(store, employer_before() + employer_after(), tmp_path / "h.jsonl")
    apply_conflict_plan(store, plan_conflicts(store, ScriptedJudge({}), now=T0), "dream-test")
    result = _recaller().recall(store, "where does Ada work", limit=10, now=T0)
    hits = {h.block_id: h for h in result.results}
    assert result.results[0].block_id == "b_tyrell"
    assert hits["b_initech"].older is True and hits["b_initech"].superseded_by == "b_tyrell"


def test_the_nights_preference_chain_decides_over_a_later_passing_mention(
    store: Store, tmp_path: Path
) -> None:
    """The demo's case: the night recorded the editor preference changing (Neovim, then VS
    Code: the older fact invalidated); a December side note still says Ada uses Neovim (a
    tool she has, not the editor she prefers now). The chain decides: VS Code first, both
    Neovim memories marked older."""
    december = NOVEMBER + dt.timedelta(days=10)
    note = BlockRecord(id="b_note", session_id="s-slots", created_at=december,
                       text="Rolled back the release. I also saw that Ada Lovelace uses Neovim.")  # fmt: skip
    facts = [
        TripleRecord(subject="ent_ada", predicate="prefers", object="uses Neovim with a small config",
                     valid_at=JULY, invalid_at=NOVEMBER, status="superseded", created_at=JULY,
                     source_session="s-slots", source_block="b_nvim"),
        TripleRecord(subject="ent_ada", predicate="prefers", object="switched to VS Code for the debugger",
                     valid_at=NOVEMBER, created_at=NOVEMBER, source_session="s-slots", source_block="b_vscode"),
        TripleRecord(subject="ent_ada", predicate="uses_tool", object="Neovim", object_id="ent_nvim",
                     valid_at=december, created_at=december, source_session="s-slots", source_block="b_note"),
    ]  # fmt: skip
    mention = MentionRecord(entity="ent_ada", block_id="b_note", session_id="s-slots", mentioned_at=december)  # fmt: skip
    add_records(store, [*_records(), note, mention, *facts], tmp_path / "slots.jsonl")
    result = _recaller().recall(store, "what editor does Ada use", limit=10, now=december)
    hits = {h.block_id: h for h in result.results}
    assert result.results[0].block_id == "b_vscode", [h.block_id for h in result.results]
    for older in ("b_nvim", "b_note"):
        assert hits[older].older is True and hits[older].superseded_by == "b_vscode"


# --------------------------------------------------------------------------- a weak match


def test_nonsense_is_a_weak_match_and_a_real_question_is_not(store: Store, tmp_path: Path) -> None:
    add_records(store, _records(), tmp_path / "slots.jsonl")
    embed_missing(store, HashingEmbedder(), kinds=("block",))
    recaller = _recaller()
    at = NOVEMBER + dt.timedelta(days=1)
    for nonsense in ("zebra quantum paella", "what about the walrus saxophone?"):
        found = recaller.recall(store, nonsense, limit=5, now=at, record=False)
        assert found.weak_match is True  # its nearest memories (if any) are no answer
    for question in ("what editor does Ada use", "where did Ada move in the spring", "tmux jobs"):
        assert recaller.recall(store, question, limit=5, now=at, record=False).weak_match is False
