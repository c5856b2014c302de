"""Normalization of text and time at the edge of the store (documented in docs/format.md).

Everything that enters the store passes through here, so the rest of the code
can rely on: NFC text without NUL or other control characters, LF line ends,
and naive UTC datetimes inside a sane range.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata

from memvault import clock

# Control characters other than TAB and LF are dropped; PostgreSQL cannot store NUL.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NEEDS_CLEANING = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n\"'`.,;:!?()[]{}<>"

#: Texts longer than this are split into consecutive parts (nothing is cut off).
MAX_TEXT_CHARS = 32_000

#: Observation times (created_at, started_at, ...) may run ahead of this clock by this much.
CLOCK_SKEW = dt.timedelta(days=1)
#: Valid times (valid_at, invalid_at) may lie in the future, but not beyond this.
MAX_VALID_AHEAD = dt.timedelta(days=3650)
EARLIEST = dt.datetime(1900, 1, 1)


def normalize_text(text: str) -> str:
    """NFC, CRLF to LF, control characters dropped, outer whitespace stripped."""
    if _NEEDS_CLEANING.search(text):
        text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text.strip()


def canonical_name(name: str) -> str:
    """The key entities are matched by: NFKC, case-folded, single spaces, no edge punctuation."""
    name = unicodedata.normalize("NFKC", normalize_text(name)).casefold()
    return _SPACES.sub(" ", name).strip(_EDGE_PUNCT)


def split_text(text: str, limit: int = MAX_TEXT_CHARS) -> list[str]:
    """Split an over-long text into parts of at most ``limit`` characters.

    Cuts prefer a paragraph break, then a line break, then a space, so parts
    read naturally; joining the parts with the separator that was cut gives
    the original text back.
    """
    parts: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = -1
        for sep in ("\n\n", "\n", " "):
            pos = window.rfind(sep)
            if pos > limit // 2:
                cut = pos + len(sep)
                break
        if cut <= 0:
            cut = limit
        parts.append(rest[:cut])
        rest = rest[cut:]
    parts.append(rest)
    return parts


def to_utc_naive(value: dt.datetime) -> dt.datetime:
    """Aware datetimes are converted to UTC; naive ones are taken as UTC already.

    Raises ``ValueError`` (not ``OverflowError``) when the time leaves the calendar in UTC
    (``0001-01-01T00:30+01:00``), so callers report it like any other bad time."""
    if value.tzinfo is not None and not value.utcoffset():
        return value.replace(tzinfo=None)
    if value.tzinfo is not None and value.utcoffset():
        try:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        except OverflowError:
            raise ValueError(f"{value.isoformat()} is out of range once converted to UTC") from None
    return value


def check_time(value: dt.datetime, *, field: str, valid_time: bool, now: dt.datetime) -> str | None:
    """Return why ``value`` is not acceptable for ``field``, or None when it is."""
    if value < EARLIEST:
        return f"{field} {value.isoformat()} is before {EARLIEST.year}"
    ahead = MAX_VALID_AHEAD if valid_time else CLOCK_SKEW
    if value > now + ahead:
        kind = "valid time" if valid_time else "observation time"
        return (
            f"{field} {value.isoformat()} lies in the future "
            f"(a {kind} may be at most {ahead.days} day(s) ahead of now)"
        )
    return None


def iso(value: dt.datetime | None) -> str | None:
    """The one timestamp spelling of the interchange format: UTC, microseconds, 'Z'."""
    if value is None:
        return None
    return to_utc_naive(value).isoformat(timespec="microseconds") + "Z"


def utcnow() -> dt.datetime:
    """Now in naive UTC, by memvault's one clock (:mod:`memvault.clock`)."""
    return clock.utcnow()
