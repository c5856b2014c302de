"""How often recall says ``weak_match``: on questions it can answer, and on nonsense.

The generated set's questions (:mod:`.conversations`) all have an answer in their
conversation; the nonsense queries are seeded strings of words no conversation holds
("zebra quantum paella"), some in a question's form. Each is asked of each conversation's
store (MiniLM vectors, as :mod:`.evaluate` builds it), and the evidence of the first hits
(:mod:`memvault.recall.relevance`) is kept, so the floors can be read off a grid:

    python -m tests.perf.recall_eval.relevance [cache dir]

prints, for each pair of floors, the share of answerable questions flagged weak and the share
of nonsense queries flagged, and the same for the floors in force. REALTALK is never used.
"""

from __future__ import annotations

import random
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from memvault.embed import HashingEmbedder, MiniLMEmbedder
from memvault.recall import Recaller
from memvault.recall.relevance import MIN_WORDS, Evidence, min_cosine
from tests.perf.recall_eval.conversations import conversations
from tests.perf.recall_eval.evaluate import CachedEmbedder, build_store

#: Words for nonsense: things no generated conversation talks about (checked per store).
NONSENSE_WORDS = (
    "zebra", "quantum", "paella", "volcano", "saxophone", "glacier", "tuba", "origami",
    "asteroid", "platypus", "kazoo", "submarine", "meteorite", "chandelier", "walrus",
    "tsunami", "igloo", "accordion", "lighthouse", "cactus", "hovercraft", "narwhal",
    "trombone", "galaxy", "pyramid", "blizzard", "harpoon", "catapult", "emerald",
    "parachute", "moose", "labyrinth", "avalanche", "pelican", "tornado", "xylophone",
    "mammoth", "plankton", "sphinx", "zeppelin", "quasar", "penguin", "bagpipes", "nebula",
    "iceberg", "gondola", "flamingo", "compass", "mosaic", "turbine",
)  # fmt: skip
FORMS = ("{a} {b} {c}", "what about the {a} {b}?", "{a} and {b} near the {c}", "tell me about {a} {b}")  # fmt: skip
_WORD = re.compile(r"[a-z]+")


def nonsense(count: int, seed: int, avoid: set[str]) -> list[str]:
    """``count`` seeded nonsense queries of words not in ``avoid``."""
    rng = random.Random(seed)
    words = [w for w in NONSENSE_WORDS if w not in avoid]
    out = []
    for _ in range(count):
        a, b, c = rng.sample(words, 3)
        out.append(rng.choice(FORMS).format(a=a, b=b, c=c))
    return out


@dataclass
class Measured:
    answerable: list[Evidence] = field(default_factory=list)
    nonsense: list[Evidence] = field(default_factory=list)


def measure(cache: Path, model: str = "minilm", per_conversation: int = 20) -> Measured:
    """The evidence of every generated question and of ``per_conversation`` nonsense queries
    per conversation, each asked of its conversation's store (vectors of ``model``: minilm,
    or hashing)."""
    cache.mkdir(parents=True, exist_ok=True)
    inner = MiniLMEmbedder() if model == "minilm" else HashingEmbedder()
    embedder = CachedEmbedder(inner, cache / f"{model}-vectors.npz")
    out = Measured()
    try:
        with tempfile.TemporaryDirectory(prefix="recall-relevance-") as tmp:
            for k, conv in enumerate(conversations()):
                store = build_store(conv, Path(tmp), embedder)
                try:
                    recaller = Recaller(embedder)  # type: ignore[arg-type]
                    said = {w for t in conv.turns for w in _WORD.findall(t.block.lower())}
                    asked = [(q.text, out.answerable) for q in conv.questions]
                    asked += [(q, out.nonsense) for q in nonsense(per_conversation, k, said)]
                    for text, into in asked:
                        intent, ids, _ = recaller.understand(store, text)
                        ranking = recaller.rank(store, text, ids, 10, intent=intent)
                        assert ranking.evidence is not None
                        into.append(ranking.evidence)
                finally:
                    store.close()
    finally:
        embedder.save()
    return out


def flagged(found: list[Evidence], words: float, cosine: float) -> float:
    """The share of ``found`` weak under these floors."""
    weak = [e.words < words and (e.meaning is None or e.meaning < cosine) for e in found]
    return sum(weak) / len(weak) if weak else 0.0


def grid(measured: Measured) -> str:
    lines = ["words  cosine  answerable-weak  nonsense-weak"]
    for words in (0.3, 0.4, 0.5, 0.6, 0.7):
        for cosine in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 2.0):
            a = flagged(measured.answerable, words, cosine)
            n = flagged(measured.nonsense, words, cosine)
            lines.append(f"{words:5.2f}  {cosine:6.2f}  {a:15.3f}  {n:13.3f}")
    return "\n".join(lines)


def in_force(measured: Measured, model_name: str) -> tuple[float, float]:
    """(answerable flagged, nonsense flagged) with the floors memvault uses for the model."""
    cosine = min_cosine(model_name)
    floor = 2.0 if cosine is None else cosine  # no floor: the meaning never counts
    return flagged(measured.answerable, MIN_WORDS, floor), flagged(measured.nonsense, MIN_WORDS, floor)  # fmt: skip


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "memvault-recall-eval"  # fmt: skip
    model = sys.argv[2] if len(sys.argv) > 2 else "minilm"
    found = measure(folder, model)
    print(grid(found))
    name = MiniLMEmbedder.model_name if model == "minilm" else HashingEmbedder().model_name
    a, n = in_force(found, name)
    print(f"{model}, in force (words {MIN_WORDS}, cosine {min_cosine(name)}): "
          f"{a:.1%} of {len(found.answerable)} answerable questions flagged weak, "
          f"{n:.1%} of {len(found.nonsense)} nonsense queries")  # fmt: skip
