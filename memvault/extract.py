"""Offline, deterministic entity extraction for sessions ingested without an LLM.

The knowledge graph needs entities and mentions from every session, but an LLM
call per block is slow and costly (cheap first, expensive last). This extractor
finds the obvious entities with a built-in gazetteer (tools, places, a few large
organizations) and a handful of capitalization and context rules. It would
rather miss an entity than invent one, gives the same answer every time, and
handles thousands of short texts per second on one core.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

from memvault.normalize import canonical_name
from memvault.records import BlockRecord, EntityRecord, MentionRecord
from memvault.text_tokens import ENTITY_TOKEN
from memvault.text_tokens import STOPWORDS as FUNCTION_WORDS

# ---------------------------------------------------------------------------
# Data tables. Gazetteer entries are "Canonical | other spelling | ...", one
# entry per line or separated by ";". Names in an *_ANY_CASE table match in any
# letter case; names in an *_EXACT_CASE table are also common words or first
# names, so they match only as spelled here and never as a sentence's first word.
# ---------------------------------------------------------------------------

TOOLS_ANY_CASE = """
Python; JavaScript; TypeScript; Java; Kotlin; Scala; Rust; PHP; Perl; Objective-C; C++; C#; F#
Haskell; OCaml; Elixir; Erlang; Clojure; Lua; Zig; MATLAB; Fortran; COBOL; SQL; Bash; Zsh
PowerShell; WebAssembly | Wasm
PostgreSQL | Postgres | psql; MySQL; MariaDB; SQLite; DuckDB; MongoDB; Redis; Cassandra
ClickHouse; Elasticsearch; OpenSearch; Neo4j; DynamoDB; BigQuery; Redshift; CockroachDB
InfluxDB; TimescaleDB; Supabase; Firebase; pgvector; Qdrant; Pinecone; Weaviate; Milvus; FAISS
LanceDB; Memcached; etcd; Kafka | Apache Kafka; RabbitMQ
Vue.js | Vue; Svelte; SvelteKit; Next.js; Nuxt; Node.js | NodeJS; Deno; Django; Flask; FastAPI
Ruby on Rails; Spring Boot; Laravel; .NET; ASP.NET; pandas; NumPy; Polars; SciPy
scikit-learn | sklearn; PyTorch; TensorFlow; Keras; LangChain; LlamaIndex; Pydantic; SQLAlchemy
Alembic; Celery; Airflow | Apache Airflow; Dagster; dbt; Apache Spark | PySpark; Hadoop; Flink
Dask; Jupyter | JupyterLab; Streamlit; Gradio; Tailwind CSS | Tailwind; jQuery; Redux; GraphQL
gRPC; Protobuf; OpenAPI; Swagger; htmx; pytest; Jest; Vitest; Playwright; Selenium; Cypress
mypy; Ruff; ESLint; Prettier; Webpack; Vite; npm; pnpm; Yarn; pip; conda; Maven; Gradle
Homebrew; CMake; Bazel; pre-commit
Git; GitHub; GitLab; Bitbucket; GitHub Actions; CircleCI; Travis CI; Docker; Docker Compose
Podman; Kubernetes | k8s; Terraform; Ansible; Pulumi; Vagrant; AWS | Amazon Web Services
Google Cloud | GCP | Google Cloud Platform; EC2; AWS Lambda; Vercel; Netlify; Heroku; Fly.io
DigitalOcean; Nginx; Caddy; Linux; Ubuntu; Debian; Fedora; Arch Linux; macOS; WSL; Vim; Neovim
Emacs; VS Code | Visual Studio Code | VSCode; IntelliJ IDEA | IntelliJ; PyCharm; Xcode; tmux
Grafana; Prometheus; Datadog; Sentry; Kibana; Jira; Confluence; Figma; Postman; Claude Code
ChatGPT; GitHub Copilot | Copilot; Ollama; vLLM; llama.cpp; OpenTelemetry; ffmpeg; curl; jq
Tableau; Power BI; Metabase; Looker; Great Expectations; Parquet | Apache Parquet
Apache Arrow | PyArrow; ONNX | ONNX Runtime; CUDA
"""

TOOLS_EXACT_CASE = """
Go | Golang | golang; Ruby; Swift; Julia; Dart; R; React; Angular; Rails; Spark; Prefect; Poetry
Cargo; Snowflake; Jenkins; Helm; Azure; S3; Slack; Notion; Excel; Claude; uv; Bun; Nix; JS; TS
"""

PLACES_ANY_CASE = """
United States | USA | U.S.; United Kingdom | UK; Germany; France; Spain; Portugal; Italy
Netherlands; Belgium; Switzerland; Austria; Poland; Czechia | Czech Republic; Sweden; Norway
Denmark; Finland; Ireland; Iceland; Greece; Ukraine; Russia; Israel; Egypt; Nigeria; Kenya
South Africa; Morocco; India; Pakistan; Japan; South Korea; Taiwan; Vietnam; Thailand; Singapore
Indonesia; Philippines; Malaysia; Australia; New Zealand; Canada; Mexico; Brazil; Argentina
Chile; Colombia; Peru
Berlin; Munich | München; Hamburg; Frankfurt; Cologne | Köln; Vienna | Wien; Zurich | Zürich
Geneva; Paris; Lyon; London; Manchester; Edinburgh; Dublin; Amsterdam; Rotterdam; Brussels
Copenhagen; Stockholm; Oslo; Helsinki; Warsaw; Kraków | Krakow; Prague; Budapest; Lisbon; Porto
Madrid; Barcelona; Rome; Milan; Athens; Istanbul; Kyiv | Kiev; Moscow; Tel Aviv; Dubai; Cairo
Lagos; Nairobi; Cape Town; Mumbai; Bengaluru | Bangalore; New Delhi | Delhi; Beijing; Shanghai
Shenzhen; Hong Kong; Tokyo; Osaka; Kyoto; Seoul; Taipei; Bangkok; Hanoi; Jakarta; Manila
Melbourne; Auckland; Toronto; Vancouver; Montreal; New York City | New York | NYC
San Francisco; Seattle; Boston; Chicago; Denver; Atlanta; Miami; Mexico City
São Paulo | Sao Paulo; Rio de Janeiro; Buenos Aires; Bogotá | Bogota; Palo Alto; Mountain View
Silicon Valley
"""

PLACES_EXACT_CASE = """
US; Turkey; China; Korea; Jordan; Georgia; Sydney; Austin; Portland; Washington; Santiago
"""

ORGANIZATIONS_ANY_CASE = """
Google; Microsoft; Anthropic; OpenAI; Netflix; IBM; Intel; Nvidia; AMD; Spotify; Shopify; Airbnb
Uber; Salesforce; Siemens; Mozilla; Red Hat; Databricks; Cloudflare; Atlassian; Hugging Face
DeepMind; Samsung; Zalando
"""

ORGANIZATIONS_EXACT_CASE = """
Amazon; Apple; Meta; Oracle; Stripe; SAP
"""

CONCEPTS_ANY_CASE = """
JSON; JSONL; YAML; TOML; CSV; XML; HTML; CSS; HTTP; HTTPS; REST; OAuth; JWT; WebSocket; SSH
TLS; DNS; CI/CD; LLM; RAG; machine learning; knowledge graph; vector search; embeddings
"""

GAZETTEER: tuple[tuple[str, bool, str], ...] = (
    # (entity type, exact case?, table)
    ("tool", False, TOOLS_ANY_CASE),
    ("tool", True, TOOLS_EXACT_CASE),
    ("place", False, PLACES_ANY_CASE),
    ("place", True, PLACES_EXACT_CASE),
    ("organization", False, ORGANIZATIONS_ANY_CASE),
    ("organization", True, ORGANIZATIONS_EXACT_CASE),
    ("concept", False, CONCEPTS_ANY_CASE),
)

#: Capitalized words that are never an entity by themselves (compared case-folded): the
#: function words (:data:`memvault.text_tokens.STOPWORDS`) and these; the verbs keep a
#: sentence like "Use Grafana" or "Ask Lena" from passing as a person's name.
STOPWORD_TABLE = """
    mine myself ours yours he him his she her hers
    theirs whom whose
    but nor yet if else because since while though although
    onto after before between through
    during without within along across behind beyond up down out off again once too
    am would shall
    may might must yes ok okay sure thanks thank please hi hello hey dear cheers
    both each few other such only own same now here
    today tomorrow yesterday tonight morning afternoon evening night week month year
    first second third next last finally actually maybe perhaps however therefore meanwhile
    still already anyway otherwise instead indeed great good nice cool fine done
    let note update summary step steps example todo fixme warning error tip
    use run try add install open check see read write make get set put keep fix remove delete
    create build start stop ask tell ping call send show give find look help wait
    monday tuesday wednesday thursday friday saturday sunday
    january february march april june july august september october november december
    mr mrs ms dr prof sir madam
"""
STOPWORDS = FUNCTION_WORDS | frozenset(STOPWORD_TABLE.split())

#: Words after which a period does not end the sentence.
ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "e.g", "i.e", "etc", "vs"}
)

#: Lowercase words allowed inside a capitalized name ("Bank of X", "Ludwig van Y").
JOINERS = frozenset({"of", "van", "von", "de", "da", "der", "del", "la", "le"})

#: A last word that makes a capitalized phrase an organization.
ORG_SUFFIXES = frozenset(
    {"inc", "corp", "corporation", "gmbh", "ltd", "llc", "labs", "ag", "sa", "plc", "co",
     "company", "group", "technologies", "systems", "university", "institute", "foundation"}
)  # fmt: skip

#: The word(s) right before a capitalized phrase that decide its type.
CUES: dict[tuple[str, ...], str] = {
    ("at",): "organization",
    ("joined",): "organization",
    ("join",): "organization",
    ("work", "for"): "organization",
    ("works", "for"): "organization",
    ("working", "for"): "organization",
    ("worked", "for"): "organization",
    ("hired", "by"): "organization",
    ("employed", "by"): "organization",
    ("in",): "place",
    ("moved", "to"): "place",
    ("move", "to"): "place",
    ("moving", "to"): "place",
    ("relocated", "to"): "place",
    ("flew", "to"): "place",
    ("near",): "place",
    ("visiting",): "place",
    ("told",): "person",
    ("tell",): "person",
    ("ask",): "person",
    ("ping",): "person",
    ("met",): "person",
    ("asked",): "person",
    ("thanked",): "person",
    ("pinged",): "person",
    ("emailed",): "person",
    ("colleague",): "person",
    ("coworker",): "person",
    ("teammate",): "person",
    ("manager",): "person",
    ("boss",): "person",
    ("hi",): "person",
    ("hello",): "person",
    ("hey",): "person",
    ("thanks",): "person",
    ("dear",): "person",
    ("mr",): "person",
    ("mrs",): "person",
    ("ms",): "person",
    ("dr",): "person",
    ("prof",): "person",
    ("project",): "project",
    ("repo",): "project",
    ("repository",): "project",
}
PROJECT_WORDS = frozenset({"project", "repo", "repository"})

#: Word endings of common nouns, which keep "Machine Learning" from passing as a person.
NOUN_ENDINGS = ("tion", "sion", "ment", "ness", "ity", "ism", "ogy", "ics", "ing")

_BOUNDARY = re.compile(r"[.!?:\n]")
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]+`", re.DOTALL)
_KEBAB = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z][A-Za-z0-9]*)+")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """One occurrence of an entity: its name as it should be stored, its type, where it starts."""

    name: str
    entity_type: str
    start: int


class Extractor(Protocol):
    """Anything that finds entities in a text (the heuristic one, or an LLM-backed one)."""

    def extract(self, text: str) -> list[ExtractedEntity]: ...


# ---------------------------------------------------------------------------
# The gazetteer, compiled once at import.
# ---------------------------------------------------------------------------


def _entries(table: str) -> Iterator[list[str]]:
    for entry in re.split(r"[;\n]", table):
        names = [name.strip() for name in entry.split("|") if name.strip()]
        if names:
            yield names


def _gap_key(gap: str) -> str:
    return " " if gap.isspace() else gap


def _name_key(name: str) -> tuple[str, str, int]:
    """A name's lookup key (its words joined by their normalized gaps), first word, word count."""
    words = list(ENTITY_TOKEN.finditer(name))
    key = words[0].group()
    for before, word in pairwise(words):
        key += _gap_key(name[before.end() : word.start()]) + word.group()
    return key, words[0].group(), len(words)


@dataclass(frozen=True)
class _Gazetteer:
    any_case: dict[str, tuple[str, str]]  # case-folded key -> (canonical, type)
    exact_case: dict[str, tuple[str, str]]
    first_words: frozenset[str]  # case-folded first words of multi-word names
    longest: int  # most words in one name


def _build_gazetteer() -> _Gazetteer:
    any_case: dict[str, tuple[str, str]] = {}
    exact_case: dict[str, tuple[str, str]] = {}
    first_words: set[str] = set()
    longest = 1
    for entity_type, exact, table in GAZETTEER:
        for names in _entries(table):
            for name in names:
                key, first_word, size = _name_key(name)
                if exact:
                    exact_case[key] = (names[0], entity_type)
                else:
                    any_case[key.casefold()] = (names[0], entity_type)
                if size > 1:
                    first_words.add(first_word.casefold())
                longest = max(longest, size)
    return _Gazetteer(any_case, exact_case, frozenset(first_words), longest)


_GAZETTEER = _build_gazetteer()


# ---------------------------------------------------------------------------
# Word shapes.
# ---------------------------------------------------------------------------


def _is_capitalized(word: str) -> bool:
    return word[0].isupper()


def _is_name_word(word: str) -> bool:
    """Looks like a part of a personal or place name: "Lena", "Okafor", "Jean-Luc", "Zoë"."""
    return all(
        part[:1].isupper() and part[1:].islower() and part.isalpha() for part in word.split("-")
    )


def _is_spacing(gap: str) -> bool:
    return gap == " " or (gap.isspace() and "\n" not in gap)


# ---------------------------------------------------------------------------
# The extractor.
# ---------------------------------------------------------------------------


class _Scan:
    """One text split into words, with what the rules need to know about each word."""

    def __init__(self, text: str) -> None:
        matches = list(ENTITY_TOKEN.finditer(text))
        self.words = [m.group() for m in matches]
        self.folded = [w.casefold() for w in self.words]
        self.starts = [m.start() for m in matches]
        ends = [m.end() for m in matches]
        # gaps[i] is the text before word i; gaps[-1] the text after the last word.
        self.gaps = [text[a:b] for a, b in zip([0, *ends], [*self.starts, len(text)], strict=True)]
        self.taken = [False] * len(self.words)
        self.initial = [self._starts_sentence(i) for i in range(len(self.words))]
        self.in_code = self._code_words(text) if "`" in text else [False] * len(self.words)
        self._counts: Counter[str] | None = None

    def _starts_sentence(self, i: int) -> bool:
        if i == 0:
            return True
        gap = self.gaps[i]
        if not _BOUNDARY.search(gap):
            return False
        return "\n" in gap or self.folded[i - 1] not in ABBREVIATIONS

    def _code_words(self, text: str) -> list[bool]:
        flags = [False] * len(self.words)
        spans = [m.span() for m in _CODE.finditer(text)]
        k = 0
        for i, start in enumerate(self.starts):
            while k < len(spans) and spans[k][1] <= start:
                k += 1
            flags[i] = k < len(spans) and spans[k][0] <= start
        return flags

    def count(self, word: str) -> int:
        if self._counts is None:
            self._counts = Counter(self.words)
        return self._counts[word]

    def cue(self, i: int) -> str | None:
        """The type the one or two words before word ``i`` point to, if any."""
        if i == 0 or self.gaps[i].strip() not in ("", ".", ","):
            return None
        if i >= 2 and _is_spacing(self.gaps[i - 1]):
            cue = CUES.get((self.folded[i - 2], self.folded[i - 1]))
            if cue:
                return cue
        return CUES.get((self.folded[i - 1],))

    def backticked(self, i: int) -> bool:
        """Word ``i`` is the whole content of an inline code span."""
        return self.gaps[i].endswith("`") and self.gaps[i + 1].startswith("`")


class HeuristicExtractor:
    """Gazetteer first, then capitalized phrases typed by their shape and the words before them."""

    def extract(self, text: str) -> list[ExtractedEntity]:
        scan = _Scan(text)
        found = list(self._gazetteer_matches(scan))
        found.extend(self._phrases(scan))
        found.sort(key=lambda entity: entity.start)
        return found

    def _gazetteer_matches(self, scan: _Scan) -> Iterator[ExtractedEntity]:
        words, folded, gaps = scan.words, scan.folded, scan.gaps
        n, i = len(words), 0
        while i < n:
            keys = [words[i]]
            if folded[i] in _GAZETTEER.first_words:
                for k in range(i + 1, min(i + _GAZETTEER.longest, n)):
                    if "\n" in gaps[k] or len(gaps[k]) > 2:
                        break
                    keys.append(keys[-1] + _gap_key(gaps[k]) + words[k])
            for size in range(len(keys), 0, -1):
                hit = _GAZETTEER.any_case.get(keys[size - 1].casefold())
                if hit is None and not scan.initial[i]:
                    hit = _GAZETTEER.exact_case.get(keys[size - 1])
                if hit is not None:
                    yield ExtractedEntity(hit[0], hit[1], scan.starts[i])
                    scan.taken[i : i + size] = [True] * size
                    i += size
                    break
            else:
                i += 1

    def _phrases(self, scan: _Scan) -> Iterator[ExtractedEntity]:
        words, n = scan.words, len(scan.words)
        sentence_lead = False  # word i follows only capitalized stopwords since the sentence start
        i = 0
        while i < n:
            lead = scan.initial[i] or sentence_lead
            sentence_lead = False
            if scan.taken[i]:
                i += 1
                continue
            if self._is_project_word(scan, i):
                yield ExtractedEntity(words[i], "project", scan.starts[i])
                i += 1
                continue
            if scan.in_code[i] or not _is_capitalized(words[i]):
                i += 1
                continue
            if scan.folded[i] in STOPWORDS:
                sentence_lead = lead and _is_spacing(scan.gaps[i + 1])
                i += 1
                continue
            end = self._phrase_end(scan, i)
            entity_type = self._classify(scan, i, end, lead)
            if entity_type:
                name = " ".join(words[i:end])
                yield ExtractedEntity(name, entity_type, scan.starts[i])
            i = end

    @staticmethod
    def _is_phrase_word(scan: _Scan, k: int) -> bool:
        return (
            not scan.taken[k]
            and not scan.in_code[k]
            and _is_capitalized(scan.words[k])
            and scan.folded[k] not in STOPWORDS
        )

    def _phrase_end(self, scan: _Scan, i: int) -> int:
        """One past the last word of the capitalized phrase starting at word ``i``."""
        n, end, k = len(scan.words), i + 1, i + 1
        while k < n and _is_spacing(scan.gaps[k]):
            if self._is_phrase_word(scan, k):
                end = k = k + 1
            elif scan.words[k] in JOINERS and k + 1 < n and _is_spacing(scan.gaps[k + 1]):
                if not self._is_phrase_word(scan, k + 1):
                    break
                k += 1
            else:
                break
        return end

    @staticmethod
    def _classify(scan: _Scan, i: int, end: int, lead: bool) -> str | None:
        words = scan.words[i:end]
        cue = scan.cue(i)
        if len(words) > 1 and scan.folded[end - 1] in ORG_SUFFIXES:
            return "organization"
        if cue in ("organization", "project"):
            return cue
        names = all(_is_name_word(w) for w in words if w not in JOINERS)
        if cue in ("place", "person") and names:
            return cue
        if all(w.isupper() or w in JOINERS for w in words):
            return None  # acronyms say too little without a cue
        word = words[0]
        if len(words) == 1 and lead and (scan.count(word) < 2 or word in _GAZETTEER.exact_case):
            return None  # any sentence may start with a capital; "Go" there is a verb
        if names and 2 <= len(words) <= 3 and not any(w.endswith(NOUN_ENDINGS) for w in words):
            return "person"
        return "concept"

    @staticmethod
    def _is_project_word(scan: _Scan, i: int) -> bool:
        """`acme-api`, `memvault` beside "project"/"repo", or repo acme-api."""
        word = scan.words[i]
        if not scan.backticked(i):
            return not scan.in_code[i] and scan.cue(i) == "project" and bool(_KEBAB.fullmatch(word))
        if _KEBAB.fullmatch(word):
            return True
        before = scan.folded[i - 1] if i else ""
        after = scan.folded[i + 1] if i + 1 < len(scan.words) else ""
        return bool(_IDENTIFIER.fullmatch(word)) and not PROJECT_WORDS.isdisjoint((before, after))


# ---------------------------------------------------------------------------
# From blocks to entity and mention records.
# ---------------------------------------------------------------------------


def _settle(found: list[ExtractedEntity]) -> dict[tuple[str, str], tuple[str, str]]:
    """Better (name, type) for entities that the rest of the batch explains.

    A lone first name ("Lena") is the batch's only person with that first name
    ("Lena Okafor"); a name seen both as a concept and as something specific
    takes the specific type. Keys are (canonical name, type) as extracted.
    """
    specific: dict[str, Counter[str]] = {}
    full_names: dict[str, dict[str, str]] = {}  # first word -> canonical full name -> name
    for entity in found:
        name = canonical_name(entity.name)
        if entity.entity_type != "concept":
            specific.setdefault(name, Counter())[entity.entity_type] += 1
        if entity.entity_type == "person" and " " in name:
            full_names.setdefault(name.split(" ")[0], {}).setdefault(name, entity.name)
    settled: dict[tuple[str, str], tuple[str, str]] = {}
    for entity in found:
        name = canonical_name(entity.name)
        people = full_names.get(name, {})
        if entity.entity_type in ("concept", "person") and len(people) == 1:
            settled[(name, entity.entity_type)] = (next(iter(people.values())), "person")
        elif entity.entity_type == "concept" and name in specific:
            settled[(name, "concept")] = (entity.name, specific[name].most_common(1)[0][0])
    return settled


def extract_records(
    blocks: list[BlockRecord], extractor: Extractor
) -> tuple[list[EntityRecord], list[MentionRecord]]:
    """One entity per distinct (canonical name, type); one mention per (block, entity)."""
    found = [(block, extractor.extract(block.text)) for block in blocks]
    settled = _settle([entity for _, entities in found for entity in entities])
    entities: dict[tuple[str, str], EntityRecord] = {}
    mentions: list[MentionRecord] = []
    for block, block_entities in found:
        mentioned: set[str] = set()
        for extracted in block_entities:
            found_as = (canonical_name(extracted.name), extracted.entity_type)
            if not found_as[0]:
                continue
            name, entity_type = settled.get(found_as, (extracted.name, extracted.entity_type))
            key = (canonical_name(name), entity_type)
            entity = entities.get(key)
            if entity is None:
                entity = entities[key] = EntityRecord(name=name, entity_type=entity_type)
            assert entity.id is not None  # derived by the record
            if entity.id in mentioned:
                continue
            mentioned.add(entity.id)
            mentions.append(
                MentionRecord(
                    entity=entity.id,
                    block_id=block.id,
                    session_id=block.session_id,
                    mentioned_at=block.created_at,
                )
            )
    return list(entities.values()), mentions
