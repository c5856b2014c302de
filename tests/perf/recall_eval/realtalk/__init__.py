"""REALTALK (Lee et al. 2025) as a second labelled set: real two-person chats over 21 days.

The repository carries no copy of the data (the REALTALK repository has no licence
file): :mod:`.convert` writes a compact ``realtalk.json.gz`` from the ten conversation files
of https://github.com/danny911kr/REALTALK (commit b903e06, see NOTICE.md), and the harness
reads it from the path in the environment variable ``MEMVAULT_REALTALK``; without it the
REALTALK set is not measured. Each conversation becomes a :class:`Conversation` like the generated ones:
one turn per message (``Speaker: text``, with the message's own time), sessions starting at
the dataset's session time, and the dataset's questions with the turns its annotators gave
as evidence as gold. The question types are the dataset's categories:

``multihop``     (category 1) the answer gathers several turns, mostly of several sessions;
``temporal``     (category 2) when something happened, or what happened on a date;
``commonsense``  (category 3) an inference from what was said ("would X enjoy Y?").

The evidence lists are read as given, with only their notation normalized: several ids in
one string ("D5:12;D5:16", "D11:17; D16:1"), ranges ("D12:3-D12:5": every id between that
the conversation has), stray spaces and full stops ("D 2:18", "D5:3."), and ";" for ":"
("D17;39"). Ids the published files do not hold (messages missing from ``data/*.json``,
mostly shared photos) are left out; a question with no evidence left is not asked.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from tests.perf.recall_eval.conversations import Conversation, Question, Turn

#: The environment variable that names the converted file.
VARIABLE = "MEMVAULT_REALTALK"
KINDS = {1: "multihop", 2: "temporal", 3: "commonsense"}
_ID = re.compile(r"D\s*(\d+)\s*[:;]\s*(\d+)(?:\s*-\s*D?\s*(\d+)\s*:\s*(\d+))?")
_TIME = "%d.%m.%Y, %H:%M:%S"


@dataclass
class Counts:
    """How the dataset's questions and evidence ids were read."""

    questions: int = 0
    asked: int = 0
    ids_given: int = 0
    ids_found: int = 0
    ids_missing: int = 0


def evidence_ids(evidence: list[str], known: list[str]) -> tuple[list[str], int]:
    """The dia_ids an evidence list names, in order and once each, and how many it names
    that ``known`` (the conversation's dia_ids, in order) does not hold."""
    have = set(known)
    found: list[str] = []
    missing = 0
    for item in evidence:
        spans = list(_ID.finditer(item))
        if not spans:
            missing += bool(item.strip())
        for m in spans:
            first = f"D{int(m[1])}:{int(m[2])}"
            if m[4] is None:
                ids = [first]
            else:
                last = f"D{int(m[3])}:{int(m[4])}"
                if first in have and last in have:
                    ids = known[known.index(first) : known.index(last) + 1]
                else:
                    ids = [first, last]
            for i in ids:
                if i not in have:
                    missing += 1
                elif i not in found:
                    found.append(i)
    return found, missing


def location() -> Path | None:
    """The converted file ``MEMVAULT_REALTALK`` names, or None when it is not set."""
    value = os.environ.get(VARIABLE, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{VARIABLE}={value}: no such file (write it with convert.py)")
    return path


def load(path: Path | None = None) -> tuple[list[Conversation], Counts]:
    """The ten conversations with their questions, and the counts of what was read."""
    path = path or location()
    if path is None:
        raise LookupError(f"REALTALK is not in the repository: set {VARIABLE} to its file")
    data = json.loads(gzip.decompress(path.read_bytes()))
    counts = Counts()
    out: list[Conversation] = []
    for n, raw in enumerate(data["conversations"].values()):
        cid = f"rt{n + 1:02d}"
        conv = Conversation(
            id=cid,
            speakers=(raw["speakers"]["speaker_1"], raw["speakers"]["speaker_2"]),
            dates=[dt.datetime.strptime(s["date_time"], _TIME) for s in raw["sessions"]],
        )
        block_of: dict[str, str] = {}
        for s, session in enumerate(raw["sessions"]):
            for dia_id, who, text, at in session["turns"]:
                block_of[dia_id] = f"{cid}_{len(conv.turns):05d}"
                when = dt.datetime.strptime(at, _TIME)
                conv.turns.append(Turn(block_of[dia_id], s, who, text, at=when))
        known = list(block_of)
        for qa in raw["qa"]:
            counts.questions += 1
            gold, missing = evidence_ids(qa.get("evidence", []), known)
            counts.ids_found += len(gold)
            counts.ids_missing += missing
            counts.ids_given += len(gold) + missing
            if gold:
                counts.asked += 1
                kind = KINDS[int(qa["category"])]
                conv.questions.append(Question(kind, qa["question"], [block_of[g] for g in gold]))
        out.append(conv)
    return out, counts
