"""Content normalization in the dream's consolidate stage (docs/dream-normalization.md).

Ingest normalizes what it reads (``memvault.normalize``), but text also reaches the
store by other paths (the gardener, MCP servers, older versions, tools that decoded
UTF-8 as Windows-1252). Before conflicts are planned, the dream repairs the memories'
text and the facts' values:

* encoding — text that was UTF-8 read as Windows-1252 or Latin-1 (``cafÃ©`` → ``café``,
  ``â€™`` → ``’``; only byte sequences that form valid UTF-8 are decoded, repeated
  until stable), surrogates (a pair joined, a lone one replaced by U+FFFD), control
  characters (C0 other than TAB and LF, DEL, C1, a stray byte-order mark; CR LF → LF),
  Unicode NFC;
* whitespace — exotic spaces (no-break, em, ideographic ...) become spaces, runs of
  spaces and tabs inside a line become one space (indentation and fenced code blocks
  keep theirs), trailing spaces go, more than one blank line becomes one, outer
  whitespace is stripped; a fact's value becomes one line;
* length — a memory longer than the ingest limit (``MAX_TEXT_CHARS``) is split as
  ingest splits it: the block keeps its id and the first part, parts 2.. are new blocks
  ``<id>~p<k>`` with ``parent_id`` = the block, every part tagged ``part:k/n``; joining
  the parts gives the text back.

Parts (tagged ``part:``) only get the encoding repairs: their edges are the cuts of one
text and must stay as they are. Every change goes through the audited path (phase
``dream_consolidate``; the before-image holds the original text, so ``memvault undo``
restores it and removes the added parts). A second run finds nothing to do.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.normalize import MAX_TEXT_CHARS, split_text, utcnow
from memvault.store import Store
from memvault.store.queries.blocks import active_blocks_to_tidy, existing_blocks
from memvault.store.queries.triples import current_objects

PHASE = "dream_consolidate"
ENCODING_KINDS: tuple[str, ...] = ("mojibake", "surrogates", "control_characters", "unicode_form")

# -- text repairs ----------------------------------------------------------------------------

_CP1252_SPECIALS = "€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"
#: A character that stands for a UTF-8 continuation byte (0x80-0xBF) once read as cp1252/latin-1.
_CONT = "[\u0080-\u00bf" + _CP1252_SPECIALS + "]"
_MOJIBAKE = re.compile(
    f"(?:[\u00c2-\u00df]{_CONT}|[\u00e0-\u00ef]{_CONT}{{2}}|[\u00f0-\u00f4]{_CONT}{{3}})+"
)
_CP1252_BYTE = {ch: ch.encode("cp1252")[0] for ch in _CP1252_SPECIALS}
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufeff]")
_ODD_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INNER_RUN = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")
_BLANK_LINES = re.compile(r"\n{3,}")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _byte(ch: str) -> int:
    return _CP1252_BYTE.get(ch, ord(ch))


def _unmojibake(match: re.Match[str]) -> str:
    run = match.group(0)
    try:
        return bytes(_byte(ch) for ch in run).decode("utf-8")
    except (UnicodeDecodeError, ValueError):
        return run


def fix_encoding(text: str) -> tuple[str, set[str]]:
    """``text`` with surrogates, mojibake, control characters and NFC repaired; the kinds fixed."""
    kinds: set[str] = set()
    if _SURROGATE.search(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        kinds.add("surrogates")
    for _ in range(3):  # double-encoded text takes two rounds
        fixed = _MOJIBAKE.sub(_unmojibake, text)
        if fixed == text:
            break
        text = fixed
        kinds.add("mojibake")
    if "\r" in text or _CONTROL.search(text):
        cleaned = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
        if cleaned != text:
            kinds.add("control_characters")
            text = cleaned
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
        kinds.add("unicode_form")
    return text, kinds


def collapse_whitespace(text: str, *, single_line: bool = False) -> str:
    """Exotic spaces to spaces, inner runs to one space (not indentation, not fenced code),
    no trailing spaces, at most one blank line, no outer whitespace."""
    text = _ODD_SPACES.sub(" ", text)
    if single_line:
        return " ".join(text.split())
    lines, fenced = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            lines.append(line.rstrip(" \t"))
        elif fenced:
            lines.append(line.rstrip(" \t"))
        else:
            lines.append(_INNER_RUN.sub(" ", line).rstrip(" \t"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def fix_text(
    text: str, *, whitespace: bool = True, single_line: bool = False
) -> tuple[str, set[str]]:
    """Every repair, to a fixed point (a second call changes nothing); the kinds applied."""
    kinds: set[str] = set()
    for _ in range(3):
        fixed, found = fix_encoding(text)
        if whitespace:
            spaced = collapse_whitespace(fixed, single_line=single_line)
            if spaced != fixed:
                found.add("whitespace")
            fixed = spaced
        if fixed == text:
            break
        kinds |= found
        text = fixed
    return text, kinds


# -- the dream step --------------------------------------------------------------------------

#: Rows that may need a repair (the rest are plain, tidy ASCII); read with polars, not Python.
_SUSPECT = r"[^\x20-\x7E\n]| {2}|[ \t]\n|\n{3}|^\s|\s$"


@dataclass
class ContentReport:
    run_id: str
    dry_run: bool
    blocks_scanned: int = 0
    blocks_changed: int = 0
    facts_changed: int = 0
    encoding_fixed: int = 0
    whitespace_collapsed: int = 0
    split: int = 0
    parts_created: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}

    @property
    def actions(self) -> dict[str, int]:
        return {
            "normalize-text": self.blocks_changed + self.facts_changed,
            "split-part": self.parts_created,
        }


def _part_ids(store: Store, block_id: str, n: int) -> list[str]:
    """Ids for parts 2..n of a block, as ingest names them, avoiding ids already taken."""
    wanted = [f"{block_id}~p{k}" for k in range(2, n + 1)]
    taken = existing_blocks(store, wanted)
    if not taken:
        return wanted
    stamp = f"{utcnow():%Y%m%d%H%M%S}"
    return [f"{block_id}~n{stamp}~p{k}" for k in range(2, n + 1)]


def _kinds_reason(kinds: frozenset[str]) -> str:
    return "content normalization: " + ", ".join(sorted(kinds))


def normalize_content(
    store: Store,
    run_id: str,
    *,
    dry_run: bool = False,
    limit: int = MAX_TEXT_CHARS,
    now: dt.datetime | None = None,
) -> ContentReport:
    """Repair the active memories' text and the current facts' values (see the module doc)."""
    now = now or utcnow()
    report = ContentReport(run_id=run_id, dry_run=dry_run)
    kinds_seen: Counter[str] = Counter()
    blocks = active_blocks_to_tidy(store)
    report.blocks_scanned = blocks.height
    suspects = (
        blocks.filter(
            pl.col("text").str.contains(_SUSPECT) | (pl.col("text").str.len_chars() > limit)
        )
        if blocks.height
        else blocks
    )
    updates: dict[frozenset[str], list[dict[str, Any]]] = {}
    parts: list[dict[str, Any]] = []
    for row in suspects.iter_rows(named=True):
        tags = json.loads(row["tags"] or "[]")
        is_part = any(str(t).startswith("part:") for t in tags)
        text, kinds = fix_text(row["text"], whitespace=not is_part)
        change: dict[str, Any] = {"id": row["id"], "text": text, "updated_at": now}
        if len(text) > limit and not is_part:
            pieces = split_text(text, limit)
            kinds.add("split")
            change |= {"text": pieces[0], "tags": json.dumps([*tags, f"part:1/{len(pieces)}"])}
            for k, (part_id, piece) in enumerate(
                zip(_part_ids(store, row["id"], len(pieces)), pieces[1:], strict=True), 2
            ):
                parts.append(
                    {**{c: row[c] for c in ("session_id", "kind", "role", "importance", "pinned",
                                            "tier", "status", "created_at")},
                     "id": part_id, "text": piece, "parent_id": row["id"], "updated_at": now,
                     "tags": json.dumps([*tags, f"part:{k}/{len(pieces)}"])}
                )  # fmt: skip
        if not kinds:
            continue
        kinds_seen.update(kinds)
        updates.setdefault(frozenset(kinds), []).append(change)
        report.blocks_changed += 1
        report.encoding_fixed += bool(kinds & set(ENCODING_KINDS))
        report.whitespace_collapsed += "whitespace" in kinds
        report.split += "split" in kinds
        if len(report.examples) < 5:
            report.examples.append(f"block {row['id']}: {', '.join(sorted(kinds))}")
    report.parts_created = len(parts)

    facts = current_objects(store)
    fact_updates: dict[frozenset[str], list[dict[str, Any]]] = {}
    if facts.height:
        for row in facts.filter(pl.col("object").str.contains(_SUSPECT)).iter_rows(named=True):
            value, kinds = fix_text(row["object"], single_line=True)
            if not kinds or not value:
                continue
            kinds_seen.update(kinds)
            fact_updates.setdefault(frozenset(kinds), []).append({"id": row["id"], "object": value})
            report.facts_changed += 1
            report.encoding_fixed += bool(kinds & set(ENCODING_KINDS))
            report.whitespace_collapsed += "whitespace" in kinds
            if len(report.examples) < 5:
                report.examples.append(f"fact {row['id']}: {', '.join(sorted(kinds))}")
    report.by_kind = dict(sorted(kinds_seen.items()))
    if dry_run or not (updates or fact_updates):
        return report
    with store.mutation(run_id, PHASE) as m:
        for group, rows in sorted(updates.items(), key=lambda item: sorted(item[0])):
            frame = pl.DataFrame(rows, schema_overrides={"updated_at": pl.Datetime("us")})
            m.update_many("blocks", frame, action="normalize-text", reason=_kinds_reason(group))
        if parts:
            frame = pl.DataFrame(parts).with_columns(pl.col("updated_at").cast(pl.Datetime("us")))
            m.insert("blocks", frame, action="split-part",
                     reason="content normalization: over-long text split into parts")  # fmt: skip
        for group, rows in sorted(fact_updates.items(), key=lambda item: sorted(item[0])):
            m.update_many(
                "triples", pl.DataFrame(rows), action="normalize-text", reason=_kinds_reason(group)
            )
    return report
