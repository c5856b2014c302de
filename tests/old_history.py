"""An old conversation for the tiering-and-recall tests: 60 turns from 2023, one block each.

Each turn opens with a short reply naming the two speakers ("Melanie: Thanks, Caroline!"),
then tells one fact in a long sentence (what, with whom, where), so a one-line headline
keeps the greeting only. Twenty labelled questions each ask for the fact of one turn, in
words only that turn's long sentence holds.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from memvault.recall import Recaller
from memvault.store import Store

START = dt.datetime(2023, 3, 4, 18, 0)
SPEAKERS = ("Melanie", "Caroline")
OPENERS = ("Thanks, {other}!", "Oh wow, {other}!", "That sounds lovely, {other}.", "Ha, {other}!")
ACTIVITIES = (
    "pottery", "kayaking", "archery", "beekeeping", "calligraphy", "orienteering", "woodcarving",
    "birdwatching", "fencing", "juggling", "origami", "snorkeling", "quilting", "bouldering",
    "stargazing", "sailing", "embroidery", "foraging", "glassblowing", "rowing", "ceramics",
    "skateboarding", "bookbinding", "paragliding", "knitting", "canoeing", "mosaics", "surfing",
    "taxidermy", "weaving", "yodeling", "ziplining", "dowsing", "falconry", "geocaching",
    "harmonica", "ikebana", "jousting", "kitesurfing", "lacrosse", "macrame", "netball",
    "oboe", "parkour", "quoits", "rafting", "sculling", "tapestry", "ukulele", "ventriloquism",
    "wakeboarding", "xylophone", "yachting", "zumba", "acrobatics", "badminton", "curling",
    "dulcimer", "etching", "flamenco",
)  # fmt: skip
PLACES = (
    "Ashford", "Bexley", "Corran", "Dunmore", "Elstow", "Fenwick", "Glenarm", "Hexham", "Ilkley",
    "Jarrow", "Kelso", "Lanark", "Malton", "Nairn", "Oban", "Penrith", "Quorn", "Ripon", "Selby",
    "Thirsk", "Ulverston", "Ventnor", "Whitby", "Yarm", "Zennor", "Alnwick", "Brora", "Cromer",
    "Dornoch", "Eyam", "Frome", "Girvan", "Hythe", "Irvine", "Jedburgh", "Keswick", "Ledbury",
    "Moffat", "Nefyn", "Otley", "Padstow", "Reeth", "Settle", "Tenby", "Uig", "Wells", "Amble",
    "Bala", "Clun", "Deal", "Elgin", "Filey", "Goole", "Hawes", "Islay", "Kirkby", "Looe",
    "Mold", "Nevern", "Olney",
)  # fmt: skip
FRIENDS = ("Priya", "Tomasz", "Aiyana", "Bruno", "Chidi", "Dagny")
QUESTIONS = 20


def turn(i: int) -> str:
    speaker, other = SPEAKERS[i % 2], SPEAKERS[(i + 1) % 2]
    return (
        f"{speaker}: {OPENERS[i % len(OPENERS)].format(other=other)} Last weekend I finally "
        f"tried {ACTIVITIES[i]} with my friend {FRIENDS[i % len(FRIENDS)]} at the little club "
        f"in {PLACES[i]}, and we stayed until the lights went out. It was a good day."
    )


def block_id(i: int) -> str:
    return f"turn-{i:02d}"


def questions() -> list[tuple[str, str]]:
    """(question, the block that answers it): one in three turns, asked in its own words."""
    return [
        (f"when did {SPEAKERS[i % 2]} try {ACTIVITIES[i]} in {PLACES[i]}?", block_id(i))
        for i in range(0, 3 * QUESTIONS, 3)
    ]


def add_history(store: Store, turns: int = 60) -> dict[str, str]:
    """The turns as blocks (one a day from March 2023), written audited; id → text."""
    texts = {block_id(i): turn(i) for i in range(turns)}
    rows = [
        {
            "id": bid,
            "kind": "user_turn",
            "role": "user",
            "text": text,
            "importance": 0.5,
            "pinned": False,
            "tier": "hot",
            "status": "active",
            "tags": "[]",
            "created_at": START + dt.timedelta(days=k),
            "updated_at": START + dt.timedelta(days=k),
        }
        for k, (bid, text) in enumerate(texts.items())
    ]
    with store.mutation("seed-history", "seed") as m:
        m.insert("blocks", pl.DataFrame(rows))
    return texts


def hit_at(store: Store, recaller: Recaller, k: int = 5) -> float:
    """Share of the labelled questions whose answer is among recall's top ``k`` (nothing
    recorded)."""
    found = [
        answer in [h.block_id for h in recaller.recall(store, q, limit=k, record=False).results]
        for q, answer in questions()
    ]
    return float(np.mean(found))
