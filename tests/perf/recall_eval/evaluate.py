"""Recall quality on two labelled sets: memvault.recall against two baselines.

The sets: ``generated``, our seeded conversations (:mod:`.conversations`), and ``realtalk``,
the ten real chats of the public REALTALK dataset with its annotated questions
(:mod:`.realtalk`). Each conversation goes into its own DuckDB store (one session per
conversation session, starting at the session's time; one block per turn ``Speaker: text``
at the time it was said; entities and mentions from the offline extractor, vectors of the
configured MiniLM embedder). Every question is asked of

* ``memvault``  the recaller (``Recaller.recall``, not recorded, limit 10);
* ``bm25``      a library BM25 (rank-bm25 Okapi, English stop words dropped, no stemming);
* ``dense``     cosine over the same stored vectors alone;

and scored by hit@5 (a gold turn in the top 5), recall@5 / recall@10 (share of the gold
turns found) and MRR (1 / rank of the first gold turn within the top 10). The recaller's own
time per question (index built beforehand) is printed as p50 / p95, to see a change to the
search cost nothing it should not.

The stores above hold turns, entities and mentions only, as the offline path leaves them:
without an LLM, extraction finds entities and no facts, so currency (superseded facts ranked
below current ones) has nothing to act on. For a set whose conversations record the facts
their turns state (the generated set's ``current`` questions: a role and a home city that
change), a fourth row is asked of a second store per conversation:

* ``mv+night``  memvault after extraction and a night, with an ORACLE extractor: the planted
  facts are written as the extraction's triple records (subject the speaker's entity, source
  the turn, true from when it was said) through the same ingest, then the dream's conflict
  resolution runs (``plan_conflicts`` with the rules-only judge, ``apply_conflict_plan``), so
  it is the project's rules that supersede the older fact. It measures the ranking given
  correct extraction, not extraction.

REALTALK records no facts, so it has no such row.

Run ``python -m tests.perf.recall_eval.evaluate [cache dir [set ...]]`` to print the tables;
vectors are cached by text in the cache dir (the first run embeds ~4k texts for the generated
set, ~9k for REALTALK).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from bm25s.stopwords import STOPWORDS_EN
from rank_bm25 import BM25Okapi

import memvault
from memvault.embed import Embedder, MiniLMEmbedder
from memvault.extract import HeuristicExtractor, extract_records
from memvault.ingest import Numbered, ingest_records
from memvault.judge.heuristic import HeuristicJudge
from memvault.recall import Recaller
from memvault.records import BlockRecord, EntityRecord, Record, SessionRecord, TripleRecord
from memvault.store import Store
from memvault.temporal import apply_conflict_plan, plan_conflicts
from memvault.vectors import embed_missing, load_vectors
from tests.perf.recall_eval import realtalk
from tests.perf.recall_eval.conversations import Conversation, conversations

KINDS = (
    "paraphrase", "date", "speaker", "multihop", "current", "neighbour", "temporal", "commonsense",
)  # fmt: skip
SETS = ("generated", "realtalk")
SYSTEMS = ("memvault", "mv+night", "bm25", "dense")
#: The mode "after extraction and a night" with the planted facts (an oracle extractor).
NIGHT = "mv+night"
_WORD = re.compile(r"\w+")
_STOP = frozenset(STOPWORDS_EN)


class CachedEmbedder:
    """The real embedder behind a by-text cache kept in one .npz file (same model name)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner, self.path = inner, path
        self.model_name, self.dim = inner.model_name, inner.dim
        self.cache: dict[str, np.ndarray] = {}
        if path.is_file():
            data = np.load(path)
            self.cache = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self.dirty = False

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.md5(text.encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}.items())  # fmt: skip
        if todo:
            vectors = self.inner.embed([t for _, t in todo])
            self.cache.update({k: v for (k, _), v in zip(todo, vectors, strict=True)})
            self.dirty = True
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = self.cache[k]
        return out

    def save(self) -> None:
        if self.dirty:
            keys = sorted(self.cache)
            np.savez(self.path, keys=np.asarray(keys), vectors=np.stack([self.cache[k] for k in keys]))  # fmt: skip


def records_of(conv: Conversation, facts: bool = False) -> list[Record]:
    """Sessions, one block per turn, and the extractor's entities and mentions; with
    ``facts``, also the facts the turns state as triples (the oracle extractor)."""
    out: list[Record] = []
    blocks: list[BlockRecord] = []
    for s, day in enumerate(conv.dates):
        out.append(SessionRecord(id=f"{conv.id}_s{s}", started_at=day, title=f"session {s + 1}"))
    for k, turn in enumerate(conv.turns):
        at = turn.at or conv.dates[turn.session] + dt.timedelta(seconds=30 * k)
        blocks.append(BlockRecord(id=turn.id, session_id=f"{conv.id}_s{turn.session}", text=turn.block, created_at=at, role="user"))  # fmt: skip
    entities, mentions = extract_records(blocks, HeuristicExtractor())
    triples = oracle_triples(conv, blocks, entities) if facts else []
    return [*out, *blocks, *entities, *mentions, *triples]


def oracle_triples(
    conv: Conversation, blocks: list[BlockRecord], entities: list[EntityRecord]
) -> list[Record]:
    """The planted facts as the extraction records them: the speaker's entity as subject
    (a place object as its entity, when the extractor found it), true from when it was said,
    the turn as source. Not extraction: the generator says what each turn states."""
    by_name = {(e.canonical_name, e.entity_type): e.id for e in entities}
    at = {b.id: (b.created_at, b.session_id) for b in blocks}
    extra: list[Record] = []
    out: list[Record] = []
    for fact in conv.facts:
        subject = by_name.get((EntityRecord(name=fact.subject).canonical_name, "person"))
        if subject is None:  # the speaker, as the extraction would name it
            person = EntityRecord(name=fact.subject, entity_type="person")
            extra.append(person)
            subject = by_name[(person.canonical_name, "person")] = person.derive_id()
        object_id = None
        if fact.object_is_entity:
            key = (EntityRecord(name=fact.object).canonical_name, "place")
            if key not in by_name:
                place = EntityRecord(name=fact.object, entity_type="place")
                extra.append(place)
                by_name[key] = place.derive_id()
            object_id = by_name[key]
        when, session = at[fact.turn]
        out.append(TripleRecord(subject=subject, predicate=fact.predicate, object=fact.object, object_id=object_id, valid_at=when, created_at=when, source_session=session, source_block=fact.turn, confidence=0.9))  # fmt: skip
    return [*extra, *out]


def night(store: Store, conv: Conversation) -> dict[str, int]:
    """The dream's conflict resolution, rules-only judge (no LLM), stamped a day after the
    last session; returns the actions applied, by kind."""
    now = max(conv.dates) + dt.timedelta(days=1)
    plan = plan_conflicts(store, HeuristicJudge(), now=now)
    return dict(apply_conflict_plan(store, plan, f"recall-eval-night-{conv.id}"))


def build_store(conv: Conversation, folder: Path, embedder: Embedder, facts: bool = False) -> Store:
    """A store of the conversation; with ``facts``, the oracle's facts and a night too."""
    name = f"{conv.id}-night" if facts else conv.id
    store = memvault.open(f"duckdb://{folder / f'{name}.duckdb'}")
    items = [Numbered(i + 1, r) for i, r in enumerate(records_of(conv, facts))]
    ingest_records(store, items, source=f"{name}.jsonl")
    embed_missing(store, embedder, kinds=("block",))
    if facts:
        night(store, conv)
    return store


def _tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def _score(ranked: list[str], gold: list[str]) -> dict[str, float]:
    first = next((i for i, b in enumerate(ranked[:10]) if b in gold), None)
    return {
        "hit@5": float(any(b in gold for b in ranked[:5])),
        "recall@5": len(set(ranked[:5]) & set(gold)) / len(gold),
        "recall@10": len(set(ranked[:10]) & set(gold)) / len(gold),
        "MRR": 0.0 if first is None else 1.0 / (first + 1),
    }


Result = dict[str, dict[str, dict[str, float]]]


def labelled(name: str) -> list[Conversation]:
    """The conversations of one set (``generated`` or ``realtalk``)."""
    if name == "generated":
        return conversations()
    if name == "realtalk":
        return realtalk.load()[0]
    raise ValueError(f"no set {name!r}; the sets are {', '.join(SETS)}")


def available_sets() -> tuple[str, ...]:
    """The sets this machine can measure: REALTALK only where ``MEMVAULT_REALTALK`` names it."""
    return SETS if realtalk.location() is not None else ("generated",)


def evaluate_all(cache: Path, sets: Sequence[str] | None = None) -> dict[str, Result]:
    """set -> system -> question kind (and ``all``) -> metric -> mean, one embedder cache."""
    sets = available_sets() if sets is None else sets
    cache.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(MiniLMEmbedder(), cache / "minilm-vectors.npz")
    try:
        return {name: run(labelled(name), embedder) for name in sets}
    finally:
        embedder.save()


def evaluate(cache: Path) -> Result:
    """The generated set alone (system -> question kind -> metric -> mean)."""
    return evaluate_all(cache, ("generated",))["generated"]


def run(convs: list[Conversation], embedder: CachedEmbedder) -> Result:
    """Ask every question of ``convs`` of the three systems; means per system and kind."""
    scores: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    latency: list[float] = []
    with tempfile.TemporaryDirectory(prefix="recall-eval-") as tmp:
        for conv in convs:
            store = build_store(conv, Path(tmp), embedder)
            try:
                recaller = Recaller(embedder)  # type: ignore[arg-type]
                ids, matrix = load_vectors(store, "block", embedder.model_name)
                docs = [t.id for t in conv.turns]
                bm25 = BM25Okapi([_tokens(t.block) for t in conv.turns])
                recaller.ready(store)  # the index build is not a recall's latency
                for q in conv.questions:
                    began = time.perf_counter()
                    got = recaller.recall(store, q.text, limit=10, record=False, facts=False)
                    latency.append((time.perf_counter() - began) * 1000)
                    ranked = {
                        "memvault": [h.block_id for h in got.results],
                        "bm25": [
                            docs[i]
                            for i in np.argsort(-bm25.get_scores(_tokens(q.text)), kind="stable")[
                                :10
                            ]
                        ],
                        "dense": [
                            ids[i]
                            for i in np.argsort(
                                -(matrix @ embedder.embed([q.text])[0]), kind="stable"
                            )[:10]
                        ],
                    }
                    for system, found in ranked.items():
                        s = _score(found, q.gold)
                        scores[system][q.kind].append(s)
                        scores[system]["all"].append(s)
            finally:
                store.close()
            if conv.facts:  # the same questions, after the oracle's facts and a night
                store = build_store(conv, Path(tmp), embedder, facts=True)
                try:
                    recaller = Recaller(embedder)  # type: ignore[arg-type]
                    for q in conv.questions:
                        got = recaller.recall(store, q.text, limit=10, record=False, facts=False)
                        s = _score([h.block_id for h in got.results], q.gold)
                        scores[NIGHT][q.kind].append(s)
                        scores[NIGHT]["all"].append(s)
                finally:
                    store.close()
    result = {
        system: {
            kind: {"n": float(len(rows))}
            | {m: float(np.mean([s[m] for s in rows])) for m in rows[0]}
            for kind, rows in by_kind.items()
        }
        for system, by_kind in scores.items()
    }
    if latency:
        result["memvault"]["all"] |= {
            "p50_ms": float(np.percentile(latency, 50)), "p95_ms": float(np.percentile(latency, 95))
        }  # fmt: skip
    return result


def table(result: Result) -> str:
    """One row per (question kind, system): means, kinds in a fixed order, with the count."""
    lines = [f"{'type':<11} {'n':>4} {'system':<9} {'hit@5':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}"]
    for kind in (*KINDS, "all"):
        for system in SYSTEMS:
            m = result.get(system, {}).get(kind)
            if m:
                lines.append(f"{kind:<11} {m['n']:4.0f} {system:<9} {m['hit@5']:6.3f} {m['recall@5']:6.3f} {m['recall@10']:6.3f} {m['MRR']:6.3f}")  # fmt: skip
    mine = result["memvault"]["all"]
    if "p50_ms" in mine:
        lines.append(f"memvault recall (not recorded, fresh store): p50 {mine['p50_ms']:.1f} ms, p95 {mine['p95_ms']:.1f} ms")  # fmt: skip
    if NIGHT in result:
        lines.append(f"{NIGHT}: after extraction and a night, ORACLE extractor (the planted facts, not extracted)")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    started = time.perf_counter()
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "memvault-recall-eval"  # fmt: skip
    for name, result in evaluate_all(folder, sys.argv[2:] or None).items():
        print(f"\n{name}\n{table(result)}")
    print(f"({time.perf_counter() - started:.0f} s)")
