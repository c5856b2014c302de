"""What an answer may cost the agent: each memory's text and the whole answer, in characters.

An agent's client caps what a tool may return (Claude Code near 25k tokens) and every
character of it is read by the model. One long memory made a recall of three hits 97k
characters; an entity with a hundred facts made ``asof`` 68k. So:

* each hit's text is cut at ``MEMVAULT_SERVE_HIT_CHARS`` (default 2,000), marked in the text
  and by ``text_cut: true`` and ``text_chars`` (its full length);
* a whole answer is kept within ``MEMVAULT_SERVE_RESULT_CHARS`` (default 24,000) of compact
  JSON: the lowest-ranked hits (or the last facts) are left out and ``omitted`` says how many;
* a recall that matched nothing well (``weak_match``) returns its nearest ``WEAK_HITS`` only;
* ``asof`` returns at most ``MEMVAULT_SERVE_MAX_FACTS`` facts (default 50); ``more_facts``
  says how many more there are and how to narrow the question.

Nothing is cut from the store: the full text of a memory is what ``memvault show`` prints.
Shaping an answer twice gives the same answer (a server passing on another's answer).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memvault.errors import MemvaultError

HIT_CHARS_VARIABLE = "MEMVAULT_SERVE_HIT_CHARS"
RESULT_CHARS_VARIABLE = "MEMVAULT_SERVE_RESULT_CHARS"
MAX_FACTS_VARIABLE = "MEMVAULT_SERVE_MAX_FACTS"
DEFAULT_HIT_CHARS = 2_000
DEFAULT_RESULT_CHARS = 24_000
DEFAULT_MAX_FACTS = 50
#: Hits a recall returns at most when nothing matched well (``weak_match``): the nearest few
#: show what memory holds nearby, more would only look like an answer.
WEAK_HITS = 3
#: The least each may be set to (a smaller cap leaves the agent nothing to read).
LEAST = {HIT_CHARS_VARIABLE: 100, RESULT_CHARS_VARIABLE: 2_000, MAX_FACTS_VARIABLE: 1}


def _setting(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    least = LEAST[name]
    if not raw.isdigit() or int(raw) < least:
        raise MemvaultError(f"{name}={raw!r}: give a whole number of {least:,} or more (default {default:,})")  # fmt: skip
    return int(raw)


@dataclass(frozen=True)
class Limits:
    """The caps of one server (read once, when it starts)."""

    hit_chars: int = DEFAULT_HIT_CHARS
    result_chars: int = DEFAULT_RESULT_CHARS
    max_facts: int = DEFAULT_MAX_FACTS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        env = os.environ if environ is None else environ
        return cls(
            _setting(env, HIT_CHARS_VARIABLE, DEFAULT_HIT_CHARS),
            _setting(env, RESULT_CHARS_VARIABLE, DEFAULT_RESULT_CHARS),
            _setting(env, MAX_FACTS_VARIABLE, DEFAULT_MAX_FACTS),
        )


def size(answer: Any) -> int:
    """The answer's length as the agent receives it: compact JSON, characters."""
    return len(compact(answer))


def compact(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"), default=str)


def cut_text(text: str, chars: int) -> str:
    """``text`` within ``chars`` characters, its end replaced by a mark saying how much is left
    out; unchanged when it fits."""
    if len(text) <= chars:
        return text
    longest = len(_mark(len(text)))  # the count it names is at most the whole length
    keep = max(chars - longest, 0)
    return text[:keep] + _mark(len(text) - keep)


def _mark(left: int) -> str:
    return f" [… {left:,} more characters not shown]"


def _cut_hit(hit: dict[str, Any], chars: int) -> dict[str, Any]:
    text = hit.get("text")
    if not isinstance(text, str) or len(text) <= chars:
        return hit
    full = int(hit.get("text_chars") or len(text))
    return hit | {"text": cut_text(text, chars), "text_cut": True, "text_chars": full}


def shape_recall(answer: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """A recall answer within the caps: each hit's text, then the whole (the lowest-ranked
    hits left out first, the last one's text cut further if it alone is too long)."""
    hits = [_cut_hit(h, limits.hit_chars) for h in answer.get("results") or []]
    if answer.get("weak_match"):
        hits = hits[:WEAK_HITS]
    omitted = int(answer.get("omitted") or 0)
    out = _omitting(answer, hits, omitted, limits)
    while len(hits) > 1 and size(out) > limits.result_chars:
        hits, omitted = hits[:-1], omitted + 1
        out = _omitting(answer, hits, omitted, limits)
    if hits and (over := size(out) - limits.result_chars) > 0:
        text = hits[0].get("text") or ""
        hits = [_cut_hit(hits[0], max(len(text) - over - 64, 100))]
        out = _omitting(answer, hits, omitted, limits)
    return out


def _omitting(
    answer: dict[str, Any], hits: list[dict[str, Any]], omitted: int, limits: Limits
) -> dict[str, Any]:
    out = answer | {"results": hits}
    if omitted:
        out["omitted"] = omitted
        out["omitted_note"] = (
            f"{omitted} lower-ranked memories left out to keep this answer within "
            f"{limits.result_chars:,} characters; ask a narrower question or a smaller limit"
        )
    return out


def shape_asof(answer: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """An asof answer within the caps: at most ``max_facts`` facts (the empty fields of each
    left out), fewer when they would pass the answer's cap; ``more_facts`` counts the rest."""
    facts = [
        {k: v for k, v in f.items() if v not in (None, [], "")} for f in answer.get("facts") or []
    ]
    more = int(answer.get("more_facts") or 0) + max(len(facts) - limits.max_facts, 0)
    facts = facts[: limits.max_facts]
    out = _more(answer, facts, more)
    while facts and size(out) > limits.result_chars:
        facts, more = facts[:-1], more + 1
        out = _more(answer, facts, more)
    return out


def _more(answer: dict[str, Any], facts: list[dict[str, Any]], more: int) -> dict[str, Any]:
    out = answer | {"facts": facts}
    if more:
        out["more_facts"] = more
        out["more_note"] = (
            f"{more} more facts not shown: ask for one predicate (see 'predicates') or a time"
        )
    return out
