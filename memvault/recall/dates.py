"""Dates a block means, written out for keyword search.

People say "last Friday", "yesterday", "last night", "tomorrow", "three days ago"; they ask "what did Sam do on
5 May 2023". At index time each block's keyword text gets the month and year it was written
and the calendar date of every relative date it says, resolved against the time it was
written (``created_at``), as "5 May 2023 2023-05-05 Friday". The stored text is untouched;
only what keyword search matches grows. A small rule set, no guessing: a phrase it does not
know adds nothing.

A query can name a day too ("what did Paola cook on 22.01.2024", "on January 6th, 2024",
"29 Dec 2023"): :func:`days_asked` reads it, and the blocks written that day or meaning it
(:func:`days_meant`) are favoured by the search (a day it cannot read is no signal). A day
after "before", "after", "since" or "until" bounds the question; it is not the day asked.
"""

from __future__ import annotations

import datetime as dt
import re

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {
    "a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3,
}  # fmt: skip
_NUMBER = "|".join(sorted((re.escape(n) for n in NUMBERS), key=len, reverse=True)) + r"|\d{1,2}"
_RELATIVE = re.compile(
    r"\b(?P<yesterday>yesterday|last night)\b"
    r"|\b(?P<tomorrow>tomorrow)\b"
    r"|\b(?P<today>today|tonight|this morning|this afternoon|this evening)\b"
    rf"|\b(?P<n>{_NUMBER})\s+(?P<unit>days?|weeks?)\s+ago\b"
    r"|\b(?P<which>last|on|this past)\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")\b"
    r"|\blast\s+(?P<period>week|weekend|month|year)\b",
    re.IGNORECASE,
)


MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH = r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"  # fmt: skip
_ORD = r"(?:st|nd|rd|th)?"
_BOUND = r"(?P<bound>\b(?:before|after|since|until|till|by)\s+(?:the\s+)?)?"
_ASKED = re.compile(
    _BOUND + r"(?:\b(?P<iso_y>\d{4})-(?P<iso_m>\d{1,2})-(?P<iso_d>\d{1,2})\b"
    r"|\b(?P<dot_d>\d{1,2})\.(?P<dot_m>\d{1,2})\.(?P<dot_y>\d{4})\b"
    r"|\b(?P<sl_a>\d{1,2})/(?P<sl_b>\d{1,2})/(?P<sl_y>\d{4})\b"
    rf"|\b(?P<dm_d>\d{{1,2}}){_ORD}(?:\s+of)?\s+{_MONTH.replace('month', 'dm_m')}(?:,?\s+(?P<dm_y>\d{{4}}))?\b"
    rf"|\b{_MONTH}\s+(?:the\s+)?(?P<md_d>\d{{1,2}}){_ORD}\b(?:,?\s+(?P<md_y>\d{{4}})\b)?)",
    re.IGNORECASE,
)


def _month(name: str) -> int:
    return next(k for k, m in enumerate(MONTHS, 1) if m.startswith(name.lower().rstrip(".")[:3]))


def days_asked(query: str) -> list[tuple[int | None, int, int]]:
    """The days ``query`` names, as (year or None, month, day); bounds ("before 5 May") and
    impossible dates are left out. Dotted dates are day first (22.01.2024), slashed ones month
    first (01/22/2024) unless the first number cannot be a month."""
    out: list[tuple[int | None, int, int]] = []
    for m in _ASKED.finditer(query):
        if m["bound"]:
            continue
        year: int | None
        if m["iso_y"]:
            year, month, day = int(m["iso_y"]), int(m["iso_m"]), int(m["iso_d"])
        elif m["dot_y"]:
            year, month, day = int(m["dot_y"]), int(m["dot_m"]), int(m["dot_d"])
        elif m["sl_y"]:
            a, b = int(m["sl_a"]), int(m["sl_b"])
            year, month, day = int(m["sl_y"]), *((b, a) if a > 12 else (a, b))
        elif m["dm_d"]:
            year = int(m["dm_y"]) if m["dm_y"] else None
            month, day = _month(m["dm_m"]), int(m["dm_d"])
        else:
            year = int(m["md_y"]) if m["md_y"] else None
            month, day = _month(m["month"]), int(m["md_d"])
        try:
            dt.date(year or 2000, month, day)
        except ValueError:
            continue
        out.append((year, month, day))
    return out


def days_meant(text: str, written: dt.datetime | None) -> set[dt.date]:
    """The days a block is about: the day it was written and the days its relative dates
    ("yesterday", "last Friday", "three days ago") mean."""
    if written is None:
        return set()
    said = written.date()
    return {said, *_resolve_days(text, said)}


def _resolve_days(text: str, said: dt.date) -> list[dt.date]:
    """The single days the relative phrases of ``text`` mean (periods left out)."""
    return [d for m in _RELATIVE.finditer(text) if (d := _one_day(m, said)) is not None]


def _one_day(m: re.Match[str], said: dt.date) -> dt.date | None:
    """The day one relative phrase means, or None for a period ("last week")."""
    if m["yesterday"]:
        return said - dt.timedelta(days=1)
    if m["tomorrow"]:
        return said + dt.timedelta(days=1)
    if m["today"]:
        return said
    if m["n"]:
        n = NUMBERS.get(m["n"].lower()) or int(m["n"])
        return said - dt.timedelta(days=n * (7 if m["unit"].lower().startswith("week") else 1))
    if m["weekday"]:
        back = (said.weekday() - WEEKDAYS.index(m["weekday"].lower())) % 7 or 7
        return said - dt.timedelta(days=back)
    return None


def _day(day: dt.date) -> str:
    return f"{day.day} {day:%B} {day.year} {day.isoformat()} {day:%A}"


def resolve(text: str, said: dt.date) -> list[str]:
    """The dates the relative phrases of ``text`` mean, said on ``said``, written out."""
    out: list[str] = []
    for m in _RELATIVE.finditer(text):
        if (day := _one_day(m, said)) is not None:
            out.append(_day(day))
        elif m["period"]:
            period = m["period"].lower()
            if period in ("week", "weekend"):
                monday = said - dt.timedelta(days=said.weekday() + 7)
                span = range(5, 7) if period == "weekend" else range(7)
                out.extend(_day(monday + dt.timedelta(days=k)) for k in span)
            elif period == "month":
                last = said.replace(day=1) - dt.timedelta(days=1)
                out.append(f"{last:%B} {last.year}")
            else:
                out.append(str(said.year - 1))
    return out


def with_dates(text: str, written: dt.datetime | None) -> str:
    """``text`` and, after it, the month it was written and the dates it means."""
    if written is None:
        return text
    said = written.date()
    return " ".join([text, f"{said:%B} {said.year}", *resolve(text, said)])
