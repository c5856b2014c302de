"""Dates a block means, written out for keyword search.

People say "last Friday", "yesterday", "three days ago"; they ask "what did Sam do on
5 May 2023". At index time each block's keyword text gets the month and year it was written
and the calendar date of every relative date it says, resolved against the time it was
written (``created_at``), as "5 May 2023 2023-05-05 Friday". The stored text is untouched;
only what keyword search matches grows. A small rule set, no guessing: a phrase it does not
know adds nothing.
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
    r"\b(?P<yesterday>yesterday)\b"
    r"|\b(?P<today>today|tonight|this morning|this afternoon|this evening)\b"
    rf"|\b(?P<n>{_NUMBER})\s+(?P<unit>days?|weeks?)\s+ago\b"
    r"|\b(?P<which>last|on|this past)\s+(?P<weekday>" + "|".join(WEEKDAYS) + r")\b"
    r"|\blast\s+(?P<period>week|weekend|month|year)\b",
    re.IGNORECASE,
)


def _day(day: dt.date) -> str:
    return f"{day.day} {day:%B} {day.year} {day.isoformat()} {day:%A}"


def resolve(text: str, said: dt.date) -> list[str]:
    """The dates the relative phrases of ``text`` mean, said on ``said``, written out."""
    out: list[str] = []
    for m in _RELATIVE.finditer(text):
        if m["yesterday"]:
            out.append(_day(said - dt.timedelta(days=1)))
        elif m["today"]:
            out.append(_day(said))
        elif m["n"]:
            n = NUMBERS.get(m["n"].lower()) or int(m["n"])
            days = n * (7 if m["unit"].lower().startswith("week") else 1)
            out.append(_day(said - dt.timedelta(days=days)))
        elif m["weekday"]:
            back = (said.weekday() - WEEKDAYS.index(m["weekday"].lower())) % 7 or 7
            out.append(_day(said - dt.timedelta(days=back)))
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
