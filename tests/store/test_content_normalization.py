"""Content normalization in the dream's consolidate stage, on a real store (DuckDB and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl

from memvault.dream.normalize_content import normalize_content
from memvault.normalize import MAX_TEXT_CHARS
from memvault.store import Store, undo_run

T0 = dt.datetime(2026, 5, 1, 9, 0)
LONG = "\n\n".join(f"Paragraph {k}: " + "word " * 900 + "end." for k in range(16))
BLOCKS = {
    "b-mojibake": "The cafÃ© on the corner â€” ask for the â€œusualâ€\x9d.",
    "b-control": "Ring\x07 the\x1b bell\r\nthen wait\ufeff.",
    "b-nfd": "Ecole: e\u0301cole, cre\u0300me bru\u0302le\u0301e.",
    "b-space": "  Too    many   spaces  here.\n\n\n\nNext\u00a0paragraph.\n```\nx    = 1\n```  ",
    "b-long": LONG,
    "b-clean": "Nothing to do here: naïve café, déjà vu — fine.",
    # A part cut by ingest keeps the whitespace at its cut.
    "b-part": "First half of a text cut at a space ",
}


def _seed(store: Store) -> None:
    rows = [
        {"id": i, "session_id": "s1", "kind": "memory", "text": t, "created_at": T0,
         "updated_at": T0, "tags": json.dumps(["part:1/2"] if i == "b-part" else ["note"])}
        for i, t in BLOCKS.items()
    ]  # fmt: skip
    facts = [
        {"id": "f-space", "subject_id": "e1", "predicate": "works_at", "object": " Acme   Corp ",
         "created_at": T0, "valid_at": T0, "status": "active"},
        {"id": "f-moji", "subject_id": "e2", "predicate": "lives_in", "object": "ZÃ¼rich",
         "created_at": T0, "valid_at": T0, "status": "active"},
    ]  # fmt: skip
    with store.mutation("ingest-seed", "ingest") as m:
        m.insert("sessions", pl.DataFrame([{"id": "s1", "source": "test", "started_at": T0}]))
        m.insert("blocks", pl.DataFrame(rows))
        m.insert("triples", pl.DataFrame(facts))


def _texts(store: Store) -> dict[str, str]:
    return dict(store.fetch("SELECT id, text FROM blocks ORDER BY id"))


def test_each_defect_is_fixed_counted_once_and_undoable(store: Store) -> None:
    _seed(store)
    before = _texts(store)
    store.begin_run("dream", {}, run_id="dream-norm")
    report = normalize_content(store, "dream-norm")
    texts = _texts(store)
    assert texts["b-mojibake"] == "The café on the corner — ask for the “usual”."
    assert texts["b-control"] == "Ring the bell\nthen wait."
    assert texts["b-nfd"] == "Ecole: \u00e9cole, cr\u00e8me br\u00fbl\u00e9e."
    assert texts["b-space"] == "Too many spaces here.\n\nNext paragraph.\n```\nx    = 1\n```"
    assert texts["b-clean"] == before["b-clean"] and texts["b-part"] == before["b-part"]
    facts = dict(store.fetch("SELECT id, object FROM triples ORDER BY id"))
    assert facts == {"f-moji": "Zürich", "f-space": "Acme Corp"}

    # The over-long memory is split as ingest splits it: nothing lost, parts linked.
    parts = store.fetch_df(
        "SELECT id, text, parent_id, tags FROM blocks WHERE id LIKE 'b-long%' ORDER BY id"
    )
    n = parts.height
    assert n == 3  # about 72,000 characters, cut at paragraph breaks
    assert parts["id"].to_list() == ["b-long", *[f"b-long~p{k}" for k in range(2, n + 1)]]
    assert all(len(t) <= MAX_TEXT_CHARS for t in parts["text"])
    assert "".join(parts["text"]) == LONG
    assert parts["parent_id"].to_list() == [None, *["b-long"] * (n - 1)]
    assert [json.loads(t)[-1] for t in parts["tags"]] == [f"part:{k}/{n}" for k in range(1, n + 1)]

    assert report.by_kind == {
        "control_characters": 1,
        "mojibake": 2,  # a memory and a fact
        "split": 1,
        "unicode_form": 1,
        "whitespace": 2,  # a memory and a fact
    }
    assert (report.blocks_changed, report.facts_changed) == (5, 2)
    assert (report.encoding_fixed, report.whitespace_collapsed) == (4, 2)
    assert (report.split, report.parts_created) == (1, n - 1)
    audit = dict(
        store.fetch(
            "SELECT action, count(*) FROM audit_log WHERE run_id = 'dream-norm' "
            "AND phase = 'dream_consolidate' GROUP BY action"
        )
    )
    assert audit == {"normalize-text": 7, "split-part": n - 1}

    again = normalize_content(store, "dream-norm-2")
    assert again.blocks_changed == again.facts_changed == again.parts_created == 0
    assert store.fetch("SELECT count(*) FROM audit_log WHERE run_id = 'dream-norm-2'")[0][0] == 0

    store.finish_run("dream-norm", "succeeded")
    undo_run(store, "dream-norm")
    assert _texts(store) == before
    facts = dict(store.fetch("SELECT id, object FROM triples ORDER BY id"))
    assert facts == {"f-moji": "ZÃ¼rich", "f-space": " Acme   Corp "}


def test_a_dry_run_counts_and_writes_nothing(store: Store) -> None:
    _seed(store)
    before = _texts(store)
    audit = store.fetch("SELECT count(*) FROM audit_log")[0][0]
    report = normalize_content(store, "dream-dry", dry_run=True)
    assert (report.blocks_changed, report.facts_changed, report.split) == (5, 2, 1)
    assert _texts(store) == before
    assert store.fetch("SELECT count(*) FROM audit_log")[0][0] == audit
