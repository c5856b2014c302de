"""Write the compact copy of REALTALK this harness reads (``realtalk.json.gz``).

Run: ``python -m tests.perf.recall_eval.realtalk.convert DATA_DIR OUT`` where DATA_DIR holds
the ten ``Chat_*.json`` files of https://github.com/danny911kr/REALTALK (``data/``, commit
b903e06). Only what recall is asked about is kept: the speakers, each session's start time,
each turn's dia_id, speaker, text (``clean_text``) and time, and the questions as given
(question, answer, evidence, category). Nothing is reworded, added or corrected here; how the
evidence ids are read is in :mod:`tests.perf.recall_eval.realtalk`. OUT is a path outside
the repository (it carries no copy); point ``MEMVAULT_REALTALK`` at it.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

SOURCE = "https://github.com/danny911kr/REALTALK"
COMMIT = "b903e06"
_SESSION = re.compile(r"session_(\d+)")


def compact(raw: dict) -> dict:
    """One conversation file, reduced to what the harness reads."""
    sessions = []
    for key in sorted((k for k in raw if _SESSION.fullmatch(k)), key=lambda k: int(k[8:])):
        turns = [[t["dia_id"], t["speaker"], t["clean_text"], t["date_time"]] for t in raw[key]]
        sessions.append({"n": int(key[8:]), "date_time": raw[f"{key}_date_time"], "turns": turns})
    qa = [
        {k: q[k] for k in ("question", "answer", "evidence", "category") if k in q}
        for q in raw["qa"]
    ]
    return {"speakers": raw["name"], "sessions": sessions, "qa": qa}


def main(folder: Path, out: Path) -> None:
    files = sorted(folder.glob("Chat_*.json"), key=lambda p: int(p.name.split("_")[1]))
    data = {
        "source": SOURCE,
        "commit": COMMIT,
        "conversations": {p.stem: compact(json.loads(p.read_text())) for p in files},
    }
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    with gzip.GzipFile(out, "wb", mtime=0) as out:  # mtime 0: the same input, the same bytes
        out.write(body)
    print(f"{out}: {len(files)} conversations, {out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
