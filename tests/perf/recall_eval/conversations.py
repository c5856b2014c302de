"""A seeded generator of multi-session conversations between two speakers, with labelled questions.

Each conversation is a handful of dated sessions; each turn is one block ``Speaker: text``.
Facts are planted in turns and asked about in other words; every question names the
turn id(s) that answer it. The question types are the ways recall was seen to miss:

``paraphrase``  the question rewords the turn (other words, other word forms); a turn of the
                other speaker that echoes the question's words is planted as a decoy.
``date``        the question names an absolute date; the turn says "last Friday" or "yesterday"
                in a session of a known date; the same event on another date is a decoy.
``speaker``     "what did A say about X": the other speaker greets A by name and mentions X.
``multihop``    two turns in different sessions together answer (both are gold).
``current``     a fact changed: the question asks what is true now (gold: the later turn).
``neighbour``   the question's words are in the other speaker's question; the answer is the reply.

For the ``current`` questions the generator also records the fact each planted turn states
(:class:`Fact`: the speaker, a predicate of the project's definitions, the object, the turn):
what a correct extractor would read from that turn. The harness's "after extraction and a
night" mode writes them as the extraction would (an oracle extractor: it measures ranking
given correct extraction, not extraction). The vehicle change has no fact: no defined
predicate means "drives" (``uses_tool`` is for tools, and multi-valued).

Chit-chat filler shares vocabulary with the facts, so no word alone gives the answer away.
This data is our own: recall is never tuned to a public benchmark.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

NAMES = [
    "Caroline", "Melanie", "Jonas", "Priya", "Tomas", "Aiko", "Daniel", "Fatima", "Marco",
    "Helena", "Oskar", "Leila", "Samuel", "Ines", "Ravi", "Greta", "Victor", "Nadia", "Elliot",
    "Sofia", "Kwame", "Yara", "Lukas", "Mei",
]  # fmt: skip
CITIES = ["Lisbon", "Denver", "Osaka", "Porto", "Krakow", "Austin", "Seville", "Bergen", "Quebec", "Tallinn", "Hobart", "Cusco"]  # fmt: skip
PETS = ["Biscuit", "Pepper", "Mango", "Ziggy", "Olive", "Noodle", "Juniper", "Toffee"]
KIDS = ["Sara", "Leo", "Nina", "Max", "Ruby", "Theo", "Ivy", "Finn"]
SIBS = ["Tom", "Anna", "Paul", "Rosa", "Ben", "Clara", "Hugo", "Lena"]
JOBS = [
    ("a nurse at the county hospital", "nurse"), ("a barista at a small cafe", "barista"),
    ("a math teacher at the middle school", "teacher"), ("a cook in a noodle bar", "cook"),
    ("an accountant for a shipping firm", "accountant"), ("a librarian downtown", "librarian"),
    ("a carpenter building kitchens", "carpenter"), ("a paramedic on night shifts", "paramedic"),
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

# (turn said by the subject, question about the subject, decoy said by the other speaker)
PARAPHRASE = [
    ("My daughter {kid} just started violin lessons, she practices every evening.",
     "Which instrument are {s}'s children learning to play?",
     "Do you think children should learn an instrument? Playing music seems hard to learn."),
    ("I finally adopted a rescue puppy and named him {pet}.",
     "What is the name of the dog {s} adopted?",
     "Adopting a dog is a big step, what name would you even give a dog?"),
    ("I've been painting watercolor landscapes of the lake on weekends.",
     "What kind of art does {s} make in their free time?",
     "Art in your free time is the best, what kind of art do you like?"),
    ("We redid the whole garden, planting tomatoes, basil and sunflowers.",
     "What vegetables and plants did {s} grow in the garden?",
     "Growing vegetables in a garden sounds relaxing, which plants grow best?"),
    ("I signed up for a pottery workshop and threw my first bowl.",
     "What did {s} make at the ceramics class?",
     "A ceramics class? What do people usually make at a class like that?"),
    ("Running the trail marathon last month was exhausting but I finished it.",
     "Which race did {s} complete?",
     "Did you ever complete a race? I always wonder which race to run."),
    ("I'm reading a biography of Marie Curie, it's fascinating.",
     "Whose life story is {s} reading about?",
     "Reading a life story is inspiring, whose story would you pick?"),
    ("My grandmother taught me to bake sourdough bread from her old recipe.",
     "Who showed {s} how to make bread?",
     "Making bread at home, who even shows people how to do that these days?"),
    ("I volunteer at the animal shelter every Saturday morning, walking the dogs.",
     "Where does {s} do volunteer work?",
     "Volunteer work is great, where do people usually volunteer?"),
    ("We bought a small sailboat and keep it at the harbor in {city}.",
     "Where is {s}'s boat moored?",
     "Owning a boat must be expensive, where do people keep a boat?"),
    ("I'm learning Portuguese with an app and a tutor twice a week.",
     "Which language is {s} studying?",
     "Studying a language as an adult is tough, which language would you study?"),
    # the same words in other forms (morphology), the decoy sharing the question's other words
    ("I've been photographing migrating cranes at the marshes near {city}.",
     "Which birds does {s} photograph when they migrate?",
     "Do you still take pictures? Which birds would you like to see?"),
    ("The renovation of our kitchen finally finished, new cabinets everywhere.",
     "Which room was {s} renovating?",
     "Which room would you change first if you could?"),
    ("My twins are obsessed with dinosaurs, they collect plastic fossils.",
     "What do {s}'s kids collect?",
     "What did you collect as a kid? Kids love collecting things."),
    ("I was promoted to shift supervisor at the warehouse.",
     "What promotion did {s} get?",
     "Did you get anything new at work lately?"),
    ("My son {kid} broke his arm falling off a skateboard.",
     "How did {s}'s child get injured?",
     "Kids get injured so often, did your child ever get hurt?"),
]  # fmt: skip
# (event with the relative date placeholder, question stem with {date}, decoy event)
DATED = [
    ("{when} I ran a half marathon along the river in {city}.",
     "Where did {s} run a half marathon on {date}?"),
    ("{when} I went to a jazz concert with my cousin in {city}.",
     "Where did {s} see a jazz concert on {date}?"),
    ("{when} we had a picnic at the botanical garden in {city}.",
     "Where did {s} have a picnic on {date}?"),
    ("{when} I gave a talk about recycling at the library in {city}.",
     "Where did {s} give a talk on {date}?"),
    ("{when} I went hiking up the hills outside {city}.",
     "Where did {s} go hiking on {date}?"),
    ("{when} we celebrated my birthday at a restaurant in {city}.",
     "Where did {s} celebrate a birthday on {date}?"),
]  # fmt: skip
SPEAKER = [
    ("I joined a climbing gym, bouldering twice a week now.", "climbing",
     "Hey {s}! Climbing? I went climbing once and hated it.",
     "What did {s} say about climbing?"),
    ("I've started keeping bees in the backyard, two hives so far.", "bees",
     "Hi {s}! Bees scare me, I'd never keep bees.",
     "What did {s} tell about the bees?"),
    ("I switched to cycling to work, it takes twenty minutes.", "cycling",
     "Hey {s}! Cycling to work? Not for me, too much traffic.",
     "What did {s} mention about cycling?"),
    ("I'm knitting a scarf for my mom, it's my first project.", "knitting",
     "Oh {s}, knitting! My aunt loves knitting.",
     "What did {s} say about knitting?"),
    ("I took up chess again and play online every night.", "chess",
     "Hey {s}! Chess is too slow for me honestly.",
     "What did {s} say about chess?"),
    ("I've been camping by the lake with my tent and a small stove.", "camping",
     "{s}! Camping by a lake sounds cold to me.",
     "What did {s} share about camping?"),
]  # fmt: skip
# two facts in different sessions that together answer
MULTIHOP = [
    ("My brother {sib} moved to {city} in the spring.",
     "{sib} got a job at a bakery there, he bakes croissants at dawn.",
     "What work does {s}'s brother do in the city he moved to?"),
    ("My best friend {sib} is getting married in {city}.",
     "I'm flying to the wedding of {sib} next month, I booked the tickets.",
     "Where is {s} flying next month?"),
    ("My sister {sib} opened a flower shop in {city}.",
     "{sib}'s shop sells tulips and orchids mostly.",
     "What does the shop of {s}'s sister sell, and in which city?"),
]  # fmt: skip
# (question the other speaker asks, reply by the subject, question about the subject)
NEIGHBOUR = [
    ("What did you name the kitten you rescued?", "{pet}, because of her fur color.",
     "What name did {s} give the rescued kitten?"),
    ("Which city did you pick for your honeymoon?", "{city}, we fell in love with it.",
     "Which city did {s} choose for the honeymoon?"),
    ("How long have you been playing the guitar?", "About six years, since college.",
     "How many years has {s} been playing the guitar?"),
    ("What made you quit your old band?", "We argued about money all the time.",
     "Why did {s} leave the old band?"),
    ("Where did you learn to surf?", "In {city}, a local taught me for a summer.",
     "Where did {s} learn surfing?"),
    ("What did your kids think of the new puppy?", "They adore him and fight over walks.",
     "How did {s}'s kids react to the new puppy?"),
]  # fmt: skip
FILLER = [
    "That sounds lovely, tell me more sometime.", "Haha, same here honestly.",
    "I've been so busy with work this week.", "The weather has been awful lately.",
    "Did you watch the game last night?", "I need a vacation, seriously.",
    "My neighbor's dog barks all night.", "We should grab coffee soon.",
    "I'm trying to read more books this year.", "Work has been stressful but okay.",
    "Kids keep me busy, as always.", "I tried a new recipe, it flopped.",
    "The city is so crowded in summer.", "I love a good walk in the park.",
    "Music always cheers me up.", "I'm thinking about learning something new.",
    "My family visited last weekend.", "That's wonderful news, congrats!",
    "I can't believe it's already this late in the year.", "Let's talk again soon!",
    "How is your garden doing?", "Art museums are my happy place.",
    "Did you ever try painting?", "I went to the lake once as a kid.",
]  # fmt: skip


@dataclass
class Turn:
    id: str
    session: int
    speaker: str
    text: str
    #: When it was said, if known (else the harness spaces a session's turns 30 s apart).
    at: dt.datetime | None = None

    @property
    def block(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class Question:
    kind: str
    text: str
    gold: list[str]


@dataclass
class Fact:
    """A fact a planted turn states, as an extractor that reads it correctly would record it."""

    subject: str  # the speaker's name
    predicate: str  # one of memvault/temporal/predicates.yaml
    object: str
    turn: str  # the turn (block) id that states it
    #: The object is an entity (a place) rather than a literal.
    object_is_entity: bool = False


@dataclass
class Conversation:
    id: str
    speakers: tuple[str, str]
    dates: list[dt.datetime]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)


def _relative(rng: random.Random, day: dt.date) -> tuple[str, dt.date]:
    """A relative date phrase said on ``day`` and the date it means."""
    choice = rng.randrange(4)
    if choice == 0:
        return "Yesterday", day - dt.timedelta(days=1)
    if choice == 1:
        back = rng.randint(2, 4)
        return f"{['', '', 'Two', 'Three', 'Four'][back]} days ago", day - dt.timedelta(days=back)
    wd = rng.randrange(7)
    delta = (day.weekday() - wd) % 7 or 7  # "last Friday": the most recent Friday before today
    if choice == 2:
        return f"Last {WEEKDAYS[wd]}", day - dt.timedelta(days=delta)
    return f"On {WEEKDAYS[wd]}", day - dt.timedelta(days=delta)


def _long_date(rng: random.Random, day: dt.date) -> str:
    month = day.strftime("%B")
    return rng.choice([f"{day.day} {month} {day.year}", f"{month} {day.day}, {day.year}"])


def conversation(k: int, rng: random.Random, sessions: int = 6) -> Conversation:
    """One conversation with its questions (about 45)."""
    a, b = rng.sample(NAMES, 2)
    start = dt.datetime(2022, 1, 3, 18) + dt.timedelta(days=rng.randrange(900))
    dates = [start + dt.timedelta(days=sum(rng.randint(5, 30) for _ in range(i))) for i in range(sessions)]  # fmt: skip
    dates.sort()  # session i+1 comes after session i: a later turn is said later
    conv = Conversation(f"c{k:02d}", (a, b), dates)
    plan: list[list[tuple[str, str]]] = [[] for _ in range(sessions)]
    follows: list[list[bool]] = [[] for _ in range(sessions)]
    # what goes into each session: a list of (speaker, text) lines, planted in order

    def plant(session: int, lines: list[tuple[str, str]]) -> list[tuple[int, int]]:
        """Lines said one after the other (no chit-chat between them)."""
        refs = []
        for k, (speaker, text) in enumerate(lines):
            plan[session].append((speaker, text))
            refs.append((session, len(plan[session]) - 1))
            follows[session].append(k > 0)
        return refs

    questions: list[tuple[str, str, list[tuple[int, int]]]] = []
    # (subject, predicate, object, object is an entity, where the turn is planted)
    facts: list[tuple[str, str, str, bool, tuple[int, int]]] = []
    fill = {"city": rng.choice(CITIES), "pet": rng.choice(PETS), "kid": rng.choice(KIDS)}
    for said, asked, decoy in rng.sample(PARAPHRASE, 10):
        s, o = rng.sample((a, b), 2)
        values = {**fill, "s": s, "city": rng.choice(CITIES), "kid": rng.choice(KIDS)}
        sess = rng.randrange(sessions)
        gold = plant(sess, [(s, said.format(**values))])
        plant(rng.randrange(sessions), [(o, decoy.format(**values))])
        questions.append(("paraphrase", asked.format(**values), gold))
    for said, asked in DATED:
        s = rng.choice((a, b))
        gold_sess, other_sess = rng.sample(range(sessions), 2)
        when, day = _relative(rng, dates[gold_sess].date())
        when2, _ = _relative(rng, dates[other_sess].date())
        city, city2 = rng.sample(CITIES, 2)
        gold = plant(gold_sess, [(s, said.format(when=when, city=city))])
        plant(other_sess, [(s, said.format(when=when2, city=city2))])
        asked_text = asked.format(s=s, date=_long_date(rng, day))
        questions.append(("date", asked_text, gold))
    for said, _topic, decoy, asked in SPEAKER:
        s, o = rng.sample((a, b), 2)
        sess = rng.randrange(sessions)
        refs = plant(sess, [(o, decoy.format(s=s)), (s, said)])
        questions.append(("speaker", asked.format(s=s), refs[1:]))
        # the decoy greets s before s speaks; a second decoy in another session, too
        plant(rng.randrange(sessions), [(o, decoy.format(s=s))])
    for first, second, asked in MULTIHOP:
        s = rng.choice((a, b))
        values = {"s": s, "sib": rng.choice(SIBS), "city": rng.choice(CITIES)}
        s1, s2 = sorted(rng.sample(range(sessions), 2))
        g1 = plant(s1, [(s, first.format(**values))])
        g2 = plant(s2, [(s, second.format(**values))])
        questions.append(("multihop", asked.format(**values), g1 + g2))
    for _ in range(6):
        s = rng.choice((a, b))
        (old, old_role), (new, new_role) = rng.sample(JOBS, 2)
        s1, s2 = sorted(rng.sample(range(sessions), 2))
        before = plant(s1, [(s, f"I work as {old}, it's a good job for now.")])
        gold = plant(s2, [(s, f"Big change: I quit, and now I'm {new}.")])
        facts += [(s, "has_role", old_role, False, before[0]), (s, "has_role", new_role, False, gold[0])]  # fmt: skip
        questions.append(("current", f"What does {s} do for a living now?", gold))
        break  # one job history per speaker pair keeps "now" unambiguous
    for where in ("live", "drive"):
        s = rng.choice((a, b))
        s1, s2 = sorted(rng.sample(range(sessions), 2))
        if where == "live":
            c1, c2 = rng.sample(CITIES, 2)
            before = plant(s1, [(s, f"I live in {c1}, in a flat near the station.")])
            gold = plant(s2, [(s, f"We moved! Our new home is in {c2}.")])
            facts += [(s, "lives_in", c1, True, before[0]), (s, "lives_in", c2, True, gold[0])]
            questions.append(("current", f"Which city does {s} live in at the moment?", gold))
        else:
            plant(s1, [(s, "I drive an old red hatchback to work.")])
            gold = plant(s2, [(s, "Sold the hatchback, I got an electric scooter instead.")])
            questions.append(("current", f"What vehicle does {s} use today?", gold))
    for asked_turn, reply, asked in NEIGHBOUR:
        s, o = rng.sample((a, b), 2)
        values = {"s": s, "pet": rng.choice(PETS), "city": rng.choice(CITIES)}
        refs = plant(rng.randrange(sessions), [(o, asked_turn), (s, reply.format(**values))])
        questions.append(("neighbour", asked.format(**values), refs[1:]))
    # chit-chat around the planted lines, then number the turns
    positions: list[list[int]] = []
    for sess in range(sessions):
        lines = plan[sess]
        out: list[tuple[str, str]] = []
        where: list[int] = []
        for line, follow in zip(lines, follows[sess], strict=True):
            for _ in range(0 if follow else rng.randint(1, 3)):
                out.append((rng.choice((a, b)), rng.choice(FILLER)))
            where.append(len(out))
            out.append(line)
        for i, (speaker, text) in enumerate(out):
            conv.turns.append(Turn(f"{conv.id}_s{sess}_t{i:03d}", sess, speaker, text))
        positions.append(where)
    for kind, text, refs in questions:
        gold = [f"{conv.id}_s{s}_t{positions[s][i]:03d}" for s, i in refs]
        conv.questions.append(Question(kind, text, gold))
    for subject, predicate, obj, is_entity, (s, i) in facts:
        turn = f"{conv.id}_s{s}_t{positions[s][i]:03d}"
        conv.facts.append(Fact(subject, predicate, obj, turn, is_entity))
    return conv


def conversations(n: int = 16, seed: int = 20260) -> list[Conversation]:
    """``n`` conversations, the same for the same seed."""
    rng = random.Random(seed)
    return [conversation(k, rng) for k in range(n)]
