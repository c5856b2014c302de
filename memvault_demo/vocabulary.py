"""Word lists and sentence templates for the demo history generator.

Kept as plain data so the generated history can be made richer by editing
tables, not code. Templates use ``str.format`` slots; the generator fills only
the slots a template names (see ``generator._Renderer._slot``). Every list is a
tuple so that the generator's random choices are reproducible.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- names

FIRST_NAMES: tuple[str, ...] = (
    "Aaliyah", "Aarav", "Abebe", "Adaeze", "Aditi", "Ahmed", "Aiko", "Akira", "Alba", "Aleksander",
    "Alice", "Amara", "Amir", "Ana", "Anders", "Andrea", "Anika", "Anjali", "Antoine", "Aroha",
    "Astrid", "Ayesha", "Bao", "Beatriz", "Bela", "Benedikt", "Bilal", "Bjorn", "Bongani", "Bruno",
    "Camila", "Carmen", "Chen", "Chiara", "Chidi", "Clara", "Dalia", "Daniel", "Darius", "Dawit",
    "Deepa", "Diego", "Dmitri", "Duc", "Elena", "Elif", "Elijah", "Emeka", "Emil", "Esme",
    "Ewa", "Farah", "Fatima", "Felix", "Finn", "Freya", "Gabriel", "Gita", "Greta", "Hana",
    "Hamid", "Hannah", "Haruto", "Helga", "Hiroshi", "Ines", "Ingrid", "Isaac", "Ivana", "Jakob",
    "Jamal", "Javier", "Jin", "Joana", "Jonas", "Julia", "Kai", "Kalani", "Kamala", "Karim",
    "Katarina", "Kenji", "Kofi", "Lars", "Layla", "Lea", "Leila", "Leon", "Lucia", "Luka",
    "Magnus", "Maja", "Malik", "Mariam", "Marek", "Mateo", "Maya", "Mei", "Mina", "Mira",
    "Nadia", "Naveen", "Nia", "Nikhil", "Nils", "Noa", "Noor", "Olga", "Omar", "Oskar",
    "Paulo", "Pia", "Priya", "Rafael", "Rahul", "Rania", "Ravi", "Rosa", "Ruth", "Saanvi",
    "Samir", "Sanne", "Santiago", "Sara", "Sebastian", "Selin", "Sina", "Siobhan", "Sofia", "Soren",
    "Tariq", "Tendai", "Theo", "Tomas", "Uma", "Valentina", "Vikram", "Wanjiru", "Wei", "Xin",
    "Yara", "Yasmin", "Yuki", "Yusuf", "Zainab", "Zara", "Zeynep", "Zhi", "Zofia", "Zoltan",
)  # fmt: skip

LAST_NAMES: tuple[str, ...] = (
    "Abara", "Adeyemi", "Ahn", "Alvarez", "Andersen", "Arslan", "Bakker", "Banerjee", "Barros", "Becker",
    "Bergstrom", "Bianchi", "Bose", "Brandt", "Carvalho", "Castillo", "Chaudhry", "Chowdhury", "Costa", "Dahl",
    "Das", "Delgado", "Demir", "Dubois", "Eriksen", "Esposito", "Farouk", "Fernandes", "Fischer", "Fontaine",
    "Gallo", "Garcia", "Gomes", "Gupta", "Haddad", "Hansen", "Hartmann", "Hayashi", "Horvath", "Huang",
    "Ibrahim", "Ito", "Iyer", "Jansen", "Jovanovic", "Kamau", "Kapoor", "Kaya", "Keller", "Khan",
    "Kim", "Kowalski", "Kruger", "Kumar", "Lambert", "Larsen", "Laurent", "Lindqvist", "Lopez", "Lund",
    "Mahlangu", "Marino", "Martins", "Matsumoto", "Mendes", "Meyer", "Mohammed", "Molina", "Moreau", "Morales",
    "Mwangi", "Nakamura", "Navarro", "Nguyen", "Nielsen", "Novak", "Nowak", "Nunes", "Obi", "Okafor",
    "Okonkwo", "Oliveira", "Olsen", "Ortiz", "Osei", "Ozturk", "Park", "Patel", "Pereira", "Petrov",
    "Popescu", "Quispe", "Rahman", "Ramos", "Rao", "Reyes", "Ribeiro", "Rossi", "Saito", "Santos",
    "Sato", "Schmidt", "Schneider", "Sharma", "Silva", "Singh", "Sokolov", "Suzuki", "Svensson", "Tanaka",
    "Tan", "Teixeira", "Thapa", "Torres", "Tran", "Uchenna", "Vargas", "Varga", "Vasquez", "Vogel",
    "Volkov", "Wagner", "Walsh", "Wang", "Weber", "Wojcik", "Wu", "Yamamoto", "Yilmaz", "Yusuf",
    "Zhang", "Zhou", "Zimmermann", "Zuniga", "Achterberg", "Bellamy", "Castellano", "Devlin", "Eklund", "Fairweather",
)  # fmt: skip

#: Common names; one is given to two different people (a colleague and a neighbour).
SHARED_NAMES: tuple[str, ...] = (
    "Sam Lee", "Alex Kim", "Chris Taylor", "Jordan Smith", "Robin Chen", "Max Muller",
)  # fmt: skip

# --------------------------------------------------------------------------- the owner's world

#: (first employer, how it is restated later). The restatement names the same organization.
FIRST_EMPLOYERS: tuple[tuple[str, str], ...] = (
    ("Acme Corp", "ACME Corporation"),
    ("Initech", "Initech Inc."),
    ("Hooli", "Hooli, Inc."),
    ("Vandelay Industries", "Vandelay Industries Ltd"),
)

LATER_EMPLOYERS: tuple[str, ...] = (
    "Northwind Labs", "Globex", "Stark Analytics", "Umbrella Data", "Tyrell Systems",
    "Wayne Logistics", "Cyberdyne Cloud", "Soylent Health", "Massive Dynamic", "Oscorp Energy",
)  # fmt: skip

#: (home city, country, city moved to for a while, its country).
CITY_PAIRS: tuple[tuple[str, str, str, str], ...] = (
    ("Berlin", "Germany", "Lisbon", "Portugal"),
    ("Toronto", "Canada", "Montreal", "Canada"),
    ("Seattle", "USA", "Portland", "USA"),
    ("Amsterdam", "Netherlands", "Barcelona", "Spain"),
    ("Melbourne", "Australia", "Auckland", "New Zealand"),
    ("Stockholm", "Sweden", "Copenhagen", "Denmark"),
)

CITIES: tuple[tuple[str, str], ...] = (
    ("Munich", "Germany"), ("Hamburg", "Germany"), ("Porto", "Portugal"), ("Madrid", "Spain"),
    ("Valencia", "Spain"), ("Paris", "France"), ("Lyon", "France"), ("Milan", "Italy"),
    ("Turin", "Italy"), ("Vienna", "Austria"), ("Zurich", "Switzerland"), ("Prague", "Czechia"),
    ("Warsaw", "Poland"), ("Krakow", "Poland"), ("Budapest", "Hungary"), ("Athens", "Greece"),
    ("Dublin", "Ireland"), ("London", "UK"), ("Manchester", "UK"), ("Edinburgh", "UK"),
    ("Oslo", "Norway"), ("Helsinki", "Finland"), ("Tallinn", "Estonia"), ("Riga", "Latvia"),
    ("Brussels", "Belgium"), ("Rotterdam", "Netherlands"), ("Istanbul", "Turkey"), ("Cairo", "Egypt"),
    ("Nairobi", "Kenya"), ("Lagos", "Nigeria"), ("Cape Town", "South Africa"), ("Accra", "Ghana"),
    ("Bangalore", "India"), ("Pune", "India"), ("Mumbai", "India"), ("Singapore", "Singapore"),
    ("Tokyo", "Japan"), ("Osaka", "Japan"), ("Seoul", "South Korea"), ("Taipei", "Taiwan"),
    ("Sydney", "Australia"), ("Brisbane", "Australia"), ("Vancouver", "Canada"), ("Austin", "USA"),
    ("Denver", "USA"), ("Chicago", "USA"), ("Boston", "USA"), ("New York", "USA"),
    ("San Francisco", "USA"), ("Mexico City", "Mexico"), ("Bogota", "Colombia"), ("Sao Paulo", "Brazil"),
    ("Buenos Aires", "Argentina"), ("Santiago", "Chile"), ("Montevideo", "Uruguay"), ("Lima", "Peru"),
)  # fmt: skip

#: Syllables for synthetic town names once the real cities run out (at large scale).
TOWN_HEADS: tuple[str, ...] = (
    "Ash", "Bram", "Clay", "Dun", "Elm", "Fair", "Glen", "Hart", "Ivy", "Kings", "Lark", "Mill",
    "North", "Oak", "Pen", "Quarry", "Red", "Stone", "Thorn", "Wood", "West", "Marsh", "Brook", "Hazel",
)  # fmt: skip
TOWN_PREFIXES: tuple[str, ...] = (
    "North",
    "South",
    "East",
    "West",
    "Upper",
    "Lower",
    "Little",
    "Great",
)
TOWN_TAILS: tuple[str, ...] = (
    "ford", "bridge", "field", "haven", "wick", "worth", "stead", "mouth", "bury", "combe",
    "dale", "gate", "holm", "ley", "more", "port", "ridge", "ton", "vale", "water",
)  # fmt: skip

ORG_ROOTS: tuple[str, ...] = (
    "Bright", "North", "Blue", "Iron", "Silver", "Green", "Clear", "Deep", "Swift", "True",
    "Red", "High", "Open", "Bold", "Quiet", "Solid", "Next", "Prime", "Keen", "Wide",
    "Cedar", "Harbor", "Summit", "Beacon", "Atlas", "Vector", "Pioneer", "Orbit", "Lumen", "Nimbus",
)  # fmt: skip
ORG_STEMS: tuple[str, ...] = (
    "wave", "stone", "field", "leaf", "path", "forge", "line", "point", "gate", "bridge",
    "works", "light", "peak", "grid", "loop", "mark", "scale", "shift", "stack", "well",
)  # fmt: skip
ORG_KINDS: tuple[str, ...] = (
    "Labs", "Analytics", "Systems", "Health", "Logistics", "Bank", "Insurance", "Media",
    "Robotics", "Software", "Energy", "Foods", "Mobility", "Games", "Security", "Consulting",
)  # fmt: skip

ROLES_ENGINEERING: tuple[str, ...] = (
    "software engineer", "senior engineer", "staff engineer", "engineering manager",
    "product manager", "data scientist", "data engineer", "site reliability engineer",
    "frontend engineer", "security engineer", "designer", "tech lead", "QA engineer",
    "analytics engineer", "developer advocate", "principal engineer", "ML engineer",
)  # fmt: skip
ROLES_OTHER: tuple[str, ...] = (
    "nurse", "teacher", "architect", "veterinarian", "chef", "photographer", "lawyer",
    "journalist", "physiotherapist", "musician", "accountant", "carpenter",
)  # fmt: skip

#: The owner's role timeline: before, after a promotion (learned late), after the second move.
OWNER_ROLES: tuple[str, str, str] = ("software engineer", "senior engineer", "staff engineer")

# --------------------------------------------------------------------------- tools and skills

#: Real tools with what they are used for (a phrase that reads after "for").
TOOLS: tuple[tuple[str, str], ...] = (
    ("pytest", "testing"), ("ruff", "linting"), ("mypy", "type checking"), ("uv", "dependency management"),
    ("Poetry", "packaging"), ("pre-commit", "commit hooks"), ("DuckDB", "local analytics"),
    ("PostgreSQL", "the main database"), ("SQLite", "small embedded stores"), ("Redis", "caching"),
    ("Kafka", "event streaming"), ("RabbitMQ", "job queues"), ("Celery", "background jobs"),
    ("Dagster", "orchestration"), ("Airflow", "legacy scheduling"), ("dbt", "SQL transformations"),
    ("Spark", "batch processing"), ("Polars", "dataframes"), ("pandas", "quick analysis"),
    ("NumPy", "numerics"), ("FastAPI", "HTTP services"), ("Django", "the admin app"),
    ("Flask", "small internal APIs"), ("React", "the dashboard"), ("Vite", "frontend builds"),
    ("Docker", "containers"), ("Kubernetes", "deployments"), ("Helm", "release charts"),
    ("Terraform", "infrastructure"), ("ArgoCD", "GitOps deploys"), ("GitHub Actions", "CI"),
    ("GitLab CI", "pipelines"), ("Grafana", "dashboards"), ("Prometheus", "metrics"),
    ("OpenTelemetry", "tracing"), ("Sentry", "error tracking"), ("Vault", "secrets"),
    ("nginx", "reverse proxying"), ("ClickHouse", "event analytics"), ("Elasticsearch", "search"),
    ("Snowflake", "the warehouse"), ("BigQuery", "ad-hoc warehouse queries"), ("S3", "object storage"),
    ("Jupyter", "notebooks"), ("Neovim", "editing"), ("VS Code", "debugging"), ("tmux", "terminal sessions"),
    ("Claude Code", "pair programming"), ("Codex CLI", "quick refactors"), ("git bisect", "hunting regressions"),
    ("Pydantic", "data validation"), ("SQLAlchemy", "database access"), ("Alembic", "migrations"),
    ("Great Expectations", "data quality checks"), ("Playwright", "browser tests"),
    ("Hypothesis", "property-based tests"), ("Locust", "load testing"), ("Jaeger", "trace inspection"),
    ("MinIO", "local object storage"), ("Tailscale", "remote access"), ("Obsidian", "notes"),
    ("Linear", "issue tracking"), ("Notion", "design docs"), ("Figma", "mockups"),
)  # fmt: skip

#: Synthetic internal tools for large scales: stem + suffix ("ledgerctl", "deploy-bot").
TOOL_STEMS: tuple[str, ...] = (
    "ledger", "deploy", "log", "trace", "shard", "queue", "batch", "schema", "flag", "seed",
    "mirror", "audit", "cost", "quota", "snap", "patch", "probe", "relay", "sync", "vault",
)  # fmt: skip
TOOL_SUFFIXES: tuple[str, ...] = (
    "ctl", "-bot", "-cli", "kit", "-agent", "-proxy", "-lint", "-watch", "-runner", "-gen",
)  # fmt: skip

#: Skills with (base proficiency, growth over the history). Frequencies live in the generator.
SKILLS: dict[str, tuple[float, float]] = {
    "Python": (0.82, 0.08),
    "SQL": (0.7, 0.1),
    "Dagster": (0.35, 0.3),
    "Scala": (0.55, 0.0),
    "Rust": (0.15, 0.0),
    "TypeScript": (0.45, 0.05),
    "Terraform": (0.4, 0.1),
    "Go": (0.3, 0.15),
    "Docker": (0.6, 0.05),
    "Kubernetes": (0.35, 0.15),
    "DuckDB": (0.4, 0.25),
    "Bash": (0.55, 0.05),
}

SKILL_EVIDENCE: dict[str, tuple[str, ...]] = {
    "Python": ("refactored {file}", "wrote {func} with tests", "fixed a typing bug in {file}"),
    "SQL": ("tuned a slow join on {table}", "wrote a window query over {table}", "fixed a migration for {table}"),
    "Dagster": ("added an asset for {table}", "wrote a sensor for {project}", "fixed a partitioned backfill"),
    "Scala": ("patched the Spark job in {file}", "reviewed a Scala PR for {project}"),
    "Rust": ("tried a Rust rewrite of {func}",),
    "TypeScript": ("fixed a React hook in {project}", "typed the API client for {project}"),
    "Terraform": ("added a bucket module for {project}", "fixed state drift in {project}"),
    "Go": ("wrote a small Go health checker", "read the Go source of a proxy"),
    "Docker": ("slimmed the {project} image", "fixed a multi-stage build"),
    "Kubernetes": ("tuned resource limits for {project}", "debugged a CrashLoopBackOff"),
    "DuckDB": ("profiled a query over {table} in DuckDB", "exported {table} to parquet"),
    "Bash": ("wrote a backup script", "fixed quoting in a deploy script"),
}  # fmt: skip

# --------------------------------------------------------------------------- projects and concepts

#: Side projects the owner runs across employers; one of them gets the status timeline.
FLAGSHIP_PROJECTS: tuple[str, ...] = ("Harbor", "Lighthouse", "Quill", "Driftwood", "Kestrel")

PROJECT_DOMAINS: tuple[str, ...] = (
    "billing", "ingest", "search", "payments", "identity", "catalog", "pricing", "inventory",
    "shipping", "reporting", "notifications", "checkout", "onboarding", "analytics", "ledger",
    "scheduling", "routing", "metering", "feature-store", "audit", "consent", "fraud", "ranking",
    "recommendations", "support", "forecasting", "telemetry", "exports", "media", "geo",
)  # fmt: skip
PROJECT_PARTS: tuple[str, ...] = (
    "api", "worker", "sync", "service", "pipeline", "gateway", "indexer", "dashboard",
    "scheduler", "cli", "sdk", "loader", "backfill", "monitor", "proxy", "migrator",
)  # fmt: skip
PROJECT_ADJECTIVES: tuple[str, ...] = (
    "next", "legacy", "mobile", "internal", "public", "realtime", "batch", "regional", "v2", "edge",
)  # fmt: skip

CONCEPT_MODIFIERS: tuple[str, ...] = (
    "schema", "idempotent", "incremental", "eventual", "optimistic", "distributed", "streaming",
    "bitemporal", "vector", "cache", "retry", "rate", "backfill", "feature", "blue-green",
    "canary", "zero-downtime", "columnar", "write-ahead", "read-replica", "multi-tenant",
    "content", "semantic", "query", "cost", "dead-letter", "exactly-once", "consistent",
    "probabilistic", "structured", "contract", "chaos", "load", "data", "model", "prompt",
    "token", "embedding", "access", "event",
)  # fmt: skip
CONCEPT_NOUNS: tuple[str, ...] = (
    "drift", "migrations", "writes", "consistency", "locking", "tracing", "joins", "versioning",
    "search", "invalidation", "budgets", "limiting", "strategies", "flags", "deployments",
    "releases", "storage", "logging", "replicas", "isolation", "hashing", "ranking",
    "planning", "attribution", "queues", "delivery", "snapshots", "sketches", "logs",
    "testing", "engineering", "shedding", "lineage", "evaluation", "caching", "budgeting",
    "indexes", "control", "sourcing", "compaction",
)  # fmt: skip
CONCEPT_DOMAINS: tuple[str, ...] = PROJECT_DOMAINS

# --------------------------------------------------------------------------- code-ish slots

CODE_DIRS: tuple[str, ...] = (
    "src/ingest", "src/api", "src/core", "app/services", "app/models", "pipelines", "jobs",
    "lib/storage", "lib/auth", "scripts", "internal/sync", "cmd/server", "web/src/hooks",
    "infra/modules", "tests/unit", "tests/integration", "migrations", "notebooks",
)  # fmt: skip
CODE_MODULES: tuple[str, ...] = (
    "loader", "client", "schema", "handlers", "retry", "config", "models", "tasks", "queries",
    "cache", "parser", "export", "views", "settings", "utils", "dedupe", "backfill", "auth",
    "metrics", "routes", "session", "pricing", "webhooks", "scheduler", "checks",
)  # fmt: skip
CODE_EXTENSIONS: tuple[str, ...] = (
    ".py",
    ".py",
    ".py",
    ".sql",
    ".ts",
    ".rs",
    ".go",
    ".tf",
    ".yaml",
)

FUNC_VERBS: tuple[str, ...] = (
    "load", "merge", "parse", "flush", "resolve", "fetch", "build", "sync", "validate", "render",
    "compact", "score", "split", "emit", "collect", "normalize", "retry", "archive", "hydrate", "diff",
)  # fmt: skip
FUNC_NOUNS: tuple[str, ...] = (
    "events", "batches", "invoices", "sessions", "tokens", "rows", "snapshots", "users", "orders",
    "partitions", "embeddings", "webhooks", "manifests", "segments", "accounts", "metrics",
)  # fmt: skip

TABLES: tuple[str, ...] = (
    "events", "orders", "invoices", "customers", "sessions", "payments", "audit_log", "shipments",
    "subscriptions", "page_views", "line_items", "accounts", "feature_flags", "daily_metrics",
    "refunds", "deliveries", "tickets", "price_history", "inventory_moves", "signups",
)  # fmt: skip

ERRORS: tuple[str, ...] = (
    "KeyError: '{col}'",
    "TimeoutError after {k}0s",
    "psycopg.OperationalError: connection refused",
    "deadlock detected while updating {table}",
    "HTTP 502 from the gateway",
    "ValueError: invalid literal for int() with base 10: '{col}'",
    "AssertionError in test_{func}",
    "OOMKilled at {mib} MiB",
    "duplicate key value violates unique constraint \"{table}_pkey\"",
    "ModuleNotFoundError: No module named '{module}'",
    "TypeError: 'NoneType' object is not subscriptable",
    "ruff F821 undefined name '{func}'",
    "mypy: Incompatible return value type in {module}",
    "a flaky failure in test_{func} on CI",
    "p99 latency of {ms} ms on /{endpoint}",
    "segfault in the {module} extension",
    "ConnectionResetError while streaming {table}",
    "a 40x slowdown after the last deploy",
)  # fmt: skip

COLUMNS: tuple[str, ...] = (
    "customer_id", "created_at", "amount_cents", "tenant", "sku", "currency", "status", "region",
    "plan_id", "email", "country_code", "event_type", "order_id", "batch_id",
)  # fmt: skip

ENDPOINTS: tuple[str, ...] = (
    "search", "checkout", "v1/orders", "v2/events", "healthz", "login", "export", "graphql",
    "invoices", "reports/daily",
)  # fmt: skip

COMMANDS: tuple[str, ...] = (
    "make test", "make lint", "uv run pytest -x", "docker compose up -d", "terraform plan",
    "kubectl rollout restart", "dagster dev", "just migrate", "npm run build", "cargo test",
    "make seed-db", "tox -e py311", "alembic upgrade head", "helm upgrade --install", "make docs",
)  # fmt: skip

WEEKDAYS: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MEETINGS: tuple[str, ...] = (
    "platform sync", "architecture review", "sprint planning", "1:1 with the manager",
    "on-call handover", "data guild meeting", "incident review", "design critique",
    "roadmap check-in", "reading group",
)  # fmt: skip
CLOCK_TIMES: tuple[str, ...] = (
    "9:00",
    "9:30",
    "10:00",
    "10:30",
    "11:00",
    "13:30",
    "14:00",
    "15:00",
    "16:00",
)

# --------------------------------------------------------------------------- sessions

#: Task kinds with title templates; weights live in the generator.
TASK_TITLES: dict[str, tuple[str, ...]] = {
    "debug": ("Debug {error_short} in {project}", "Fix failing {test} in {project}", "Investigate {project} {metric}"),
    "feature": ("Add {func} to {project}", "Implement {concept} for {project}", "New endpoint /{endpoint} in {project}"),
    "refactor": ("Refactor {file}", "Split {module} in {project}", "Clean up {concept} code in {project}"),
    "review": ("Review PR #{n} for {project}", "Review {person_first}'s change to {file}"),
    "docs": ("Write docs for {project}", "Document {concept} in {project}", "README for {project}"),
    "infra": ("Deploy {project} with {tool}", "Set up {tool} for {project}", "Tune {project} resources"),
    "data": ("Analyse {table} with {tool}", "Backfill {table} for {project}", "Query {table} growth"),
    "learning": ("Learn {concept}", "Read about {concept}", "Try {tool} on a toy project"),
    "planning": ("Plan {project} roadmap", "Design {concept} for {project}", "Estimate {project} migration"),
}  # fmt: skip

METRICS: tuple[str, ...] = (
    "latency spike", "memory growth", "error rate", "queue lag", "cold start time", "disk usage",
    "CPU throttling", "cache hit rate", "build time", "test runtime",
)  # fmt: skip

#: User turns per task. Slots: see generator._SLOT_FILLERS.
USER_TURNS: dict[str, tuple[str, ...]] = {
    "debug": (
        "{project} is throwing {error} since this morning. Can you look at {file}?",
        "CI on {branch} fails with {error}. I think it's in {func}, but I'm not sure.",
        "We're seeing {metric} in {project} after the {tool} upgrade. Where would you start?",
        "Can you reproduce {error} locally? The stack trace points at {file}, line {n}.",
        "{test} is flaky again on {project}. It failed {k} times this week.",
        "Something in {func} drops rows: {table} has {n} fewer than yesterday.",
        "The {project} job hangs at the {module} step. Logs end with {error}.",
        "Users report {error_short} on /{endpoint} in {project}. Nothing changed on our side, supposedly.",
        "Bisect this for me: {test} passed on {version} and fails on main.",
        "Why is {project} using {pct}% CPU at idle? It started after {person_first} merged {branch}.",
    ),
    "feature": (
        "Let's add {func} to {file}. It should handle {table} rows in batches of {batch}.",
        "I want {project} to support {concept}. Sketch the smallest change that works?",
        "Add an endpoint /{endpoint} to {project} that returns {table} for one {col}.",
        "Can you wire {tool} into {project} so we get {concept}?",
        "Please implement a {func} helper with a {ms} ms timeout and a unit test.",
        "New requirement from {person_first}: {project} must export {table} as parquet nightly.",
    ),
    "refactor": (
        "{file} is over {loc} lines. Split it so {func} lives in its own module.",
        "Rename {func} to something clearer and update the callers in {project}.",
        "Can we replace the hand-rolled retry loop in {file} with {tool}?",
        "Pull the {concept} logic out of {module} into a small class with tests.",
        "Remove the dead code around {func}; nothing has called it since {version}.",
    ),
    "review": (
        "Review PR #{n} from {person_first}: it touches {file} and the {table} migration.",
        "Can you check whether {person_first}'s change to {func} is safe under concurrency?",
        "Give me three review comments on PR #{n}, most important first.",
        "Is the {concept} approach in PR #{n} sound, or should we push back?",
        "Does PR #{n} need a migration guide? It renames {func} and drops {col}.",
        "Check PR #{n} for anything that would break {project} on {tool}.",
    ),
    "docs": (
        "Write a short README section on how {project} handles {concept}.",
        "Document the {func} function and its failure modes.",
        "Turn my notes on {concept} into a design doc outline for {project}.",
        "Update the runbook for {project}: the restart command is now `{cmd}`.",
        "Add a troubleshooting section for {error_short} to the {project} docs.",
        "Write the changelog entry for {version} of {project}, user-facing changes only.",
    ),
    "infra": (
        "Deploy {project} to staging with {tool}; the image tag is {version}.",
        "The {project} pods restart every {k} minutes. Check the memory limits?",
        "Set up {tool} alerts for {project} when {metric} exceeds {pct}%.",
        "Move the {project} secrets from env files into {tool}.",
        "Write the {tool} config for a new {table} bucket with lifecycle rules.",
    ),
    "data": (
        "How many {table} rows per day over the last {n} days? Use {tool}.",
        "Backfill {table} from {version} onward; watch the {col} column for nulls.",
        "Why did {table} grow {pct}% last week? Break it down by {col}.",
        "Compare {table} counts between the warehouse and {project}'s export.",
        "Find duplicate {col} values in {table} and tell me where they come from.",
    ),
    "learning": (
        "Explain {concept} like I know databases but not this corner of them.",
        "What's the difference between {concept} and {concept2}, in practice?",
        "I want to try {tool} this weekend. What's a good first exercise?",
        "Summarize the trade-offs of {concept} for a team our size.",
        "Quiz me on {concept}: five questions, increasing difficulty.",
        "Is {tool} a good fit for {concept}, or is that the wrong tool?",
    ),
    "planning": (
        "Help me plan the {project} migration: {k} services, one quarter.",
        "Draft milestones for {concept} in {project}; {person_first} owns the API part.",
        "What are the risks of moving {project} to {tool}? Be blunt.",
        "Estimate the work to add {concept} to {project}, in days, with assumptions.",
        "Which parts of {project} should we cut to ship {concept} by {weekday} next week?",
        "Write a one-page proposal for replacing {tool} in {project}; {person_first} will review it.",
    ),
}  # fmt: skip

ASSISTANT_TURNS: dict[str, tuple[str, ...]] = {
    "debug": (
        "Found it: {func} in {file} assumes {col} is never null. I added a guard and a regression test.",
        "The failure comes from a race between {func} and the {module} cleanup; I serialized them.",
        "I reproduced {error} locally. Root cause: the {tool} client reuses a closed connection.",
        "The {metric} started with commit {sha}; reverting the {module} change fixes it.",
        "{test} depends on wall-clock time. I froze the clock in the fixture; it passed {n} runs in a row.",
        "Bisected to {sha}: it changed the default timeout in {module} to {ms} ms. Restored it and added a test.",
        "The idle CPU comes from a busy loop in {func}; a blocking wait brings it down to {pct}%.",
        "It was a stale {tool} cache; clearing it and pinning {version} fixes {test}.",
        "{error_short} came from an unguarded {col} in {file}; patched and covered by a test.",
    ),
    "feature": (
        "Added {func} in {file} with batching ({batch} rows) and {k} tests; all green.",
        "Implemented /{endpoint}: it reads {table} by {col} and paginates with a cursor.",
        "Wired {tool} into {project}; the new code path is behind the `{flag}` flag.",
        "Done. The smallest working version of {concept} is {n} lines in {module}.",
        "Added {func} with a {ms} ms timeout, a retry on {error_short}, and tests for both paths.",
        "The parquet export of {table} now runs nightly; first file is about {rows} rows.",
        "Sketch ready on {branch}: {concept} in {module}, {n} lines, no new dependencies.",
    ),
    "refactor": (
        "Split {file} into three modules; {func} now lives in {module}. No behaviour change.",
        "Renamed {func} and updated {n} call sites; ruff and mypy are clean.",
        "Replaced the retry loop with {tool}; backoff is exponential, capped at {ms} ms.",
        "Removed {n} lines of dead code around {func}; the test suite still passes.",
        "Moved the {concept} logic into a class in {module}; {k} new tests cover the edge cases.",
        "Pulled {func} out of {file}; the public API is unchanged and coverage went up to {pct}%.",
    ),
    "review": (
        "PR #{n}: the {table} migration locks the table; suggest a batched backfill instead.",
        "Looks good overall. One issue: {func} swallows {error}; it should re-raise.",
        "Three comments: naming in {module}, a missing index on {table}.{col}, and a test for the empty case.",
        "The {concept} approach is sound, but PR #{n} needs a feature flag and a rollback note.",
        "{func} is not safe under concurrency: two workers can claim the same {table} row. Suggest SELECT ... FOR UPDATE SKIP LOCKED.",
        "Approve with nits: rename {func}, drop the debug print in {file}, add a changelog line.",
    ),
    "docs": (
        "Drafted the README section on {concept} with a diagram description and an example.",
        "Documented {func}: arguments, return value, the two ways it can fail, and an example.",
        "Updated the runbook: restart with `{cmd}`, then check the {metric} panel.",
        "Design doc outline for {concept}: context, goals, non-goals, options, decision, rollout.",
        "Wrote the {project} section on {concept} and linked the {tool} dashboard.",
    ),
    "infra": (
        "Staging deploy of {project} {version} succeeded; health checks pass on /{endpoint}.",
        "Raised the memory limit to {mib} MiB; the restarts were OOM kills during {func}.",
        "Alert added: {metric} above {pct}% for 10 minutes pages the on-call.",
        "Secrets moved to {tool}; the env file is gone from the repo and the CI job reads them at runtime.",
        "The lifecycle rule moves {table} objects to cold storage after {n} days and deletes them after a year.",
        "Rolled {project} back to {version}; the new image had a missing env var for {tool}.",
    ),
    "data": (
        "{table}: about {rows} rows per day; the peak was on a {weekday}. Query saved as {func}.sql.",
        "Backfill done for {table}; {n} rows had null {col}, I logged them separately.",
        "{table} grew {pct}% mostly from one {col}; it looks like a retrying client.",
        "Found {n} duplicate {col} values in {table}, all written by the {module} job.",
        "Warehouse and {project} export differ by {n} rows; all are late-arriving {table} updates.",
        "Saved the query as {func}.sql; it runs in {ms} ms on {tool} against a day of {table}.",
    ),
    "learning": (
        "Short version: {concept} trades write cost for read simplicity. Here is a worked example.",
        "{concept} and {concept2} overlap, but the first is about data, the second about control flow.",
        "A good first exercise with {tool}: rebuild a tiny {table} pipeline end to end.",
        "For a team your size, {concept} pays off once more than {k} services share the data.",
        "Here is {concept} in four steps, with the failure mode at each step and how to detect it.",
    ),
    "planning": (
        "Proposed plan: {k} milestones, the riskiest ({concept}) first, with a rollback point after each.",
        "Main risks: data migration, {tool} expertise on the team, and the {metric} budget.",
        "Estimate: {k} to {n2} days, assuming {person_first} can review within a day.",
        "Moving {project} to {tool} is feasible; the blocker is the {table} migration, not the code.",
        "Milestone 1 is {concept} behind a flag; milestone 2 removes the old path after {n} days.",
    ),
}  # fmt: skip

#: Lead-ins for memories written by the agent.
MEMORY_LEADS: tuple[str, ...] = (
    "", "", "", "Note: ", "Remember: ", "FYI: ", "From today's session: ", "Learned: ", "Context: ",
)  # fmt: skip

#: Notes (memories without a triple): how things are, tips, decisions.
MEMORY_NOTES: tuple[str, ...] = (
    "{project}'s {module} job needs {tool} {version} or newer; older versions break {func}.",
    "When {test} fails on CI, rerun it once before digging in; it is timing-sensitive.",
    "Decision: {project} keeps {table} in {tool} until the {concept} work lands.",
    "The {project} staging database is reset every {weekday} night; don't keep test data there.",
    "{owner_first} wants PR descriptions to start with the user-visible change, then the why.",
    "Use `{cmd}` before pushing to {project}; CI runs the same thing and is slower.",
    "The {table} table is partitioned by {col}; queries without it scan everything.",
    "Known issue: {error} in {project} under load; workaround is a smaller batch ({batch}).",
    "{project} deploys go out on {weekday}s only, after the {meeting}.",
    "{owner_first} is trying to cut context switches: batching reviews after lunch.",
    "Postmortem takeaway for {project}: alert on {metric} before users notice.",
    "The {func} helper in {file} is the one to reuse for {concept}.",
    "Cost note: the {project} {tool} cluster is the biggest line item; {pct}% idle at night.",
    "{owner_first} keeps a scratch notebook for {table} investigations in {tool}.",
    "The {endpoint} endpoint in {project} is rate limited to {n} requests per minute.",
    "Benchmark: {func} handles {rows} rows in {ms} ms on a laptop.",
)  # fmt: skip

#: Fact sentences per predicate; ``{s}`` is the subject, ``{o}`` the object.
FACT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "works_at": ("{s} works at {o}", "{s} is with {o}", "{s} is employed by {o}", "{s} is on staff at {o}"),
    "lives_in": ("{s} lives in {o}", "{s} is based in {o}", "{s} has a flat in {o}", "{s} calls {o} home"),
    "works_on": ("{s} works on {o}", "{s} is contributing to {o}", "{s} is on the team behind {o}", "{s} helps out on {o}"),
    "project_status": ("{s} is {o}", "{s} status: {o}", "{s} is now {o}", "{s} moved to {o}"),
    "uses_tool": ("{s} uses {o}", "{s} relies on {o}", "{s} reaches for {o}", "{s} works with {o} daily"),
    "knows": ("{s} knows {o}", "{s} is friends with {o}", "{s} has worked with {o} before", "{s} met {o} a while back"),
    "prefers": ("{s} prefers {o}",),
    "has_role": ("{s} is a {o}", "{s} works as a {o}", "{s}'s role: {o}", "{s} has the title {o}"),
    "depends_on": ("{s} depends on {o}", "{s} needs {o} to run", "{s} is built on {o}", "{s} pulls in {o}"),
    "interested_in": ("{s} is interested in {o}", "{s} keeps reading about {o}", "{s} wants to learn more about {o}", "{s} is curious about {o}"),
    "related_to": ("{s} is closely tied to {o}", "{s} goes hand in hand with {o}", "{s} overlaps with {o}", "{s} is related to {o}"),
    "located_in": ("{s} is headquartered in {o}", "{s} has its main office in {o}", "{s} sits in {o}", "{s} is based in {o}"),
}  # fmt: skip

#: How a person came to be known (for person introductions).
MET_CONTEXTS: tuple[str, ...] = (
    "at a meetup", "through {project}", "at a conference in {place}", "on a code review",
    "from the {meeting}", "through {person}", "at university", "in an incident call",
    "on the {org} Slack", "at a hackathon",
)  # fmt: skip

#: Sentences for bloated memories: several topics run together in one item.
BLOAT_SENTENCES: tuple[str, ...] = (
    "Also, {person} mentioned that {project} will need {tool} before the end of the quarter, which nobody has budgeted for yet.",
    "Separately, the {meeting} moved to {weekday}s at {clock}, and {owner_first} wants the agenda sent the day before.",
    "On the personal side, {owner_first} is planning a trip to {place} and asked for a packing list and train times.",
    "There was a long tangent about {concept}: the team agreed it matters for {project} but not this sprint.",
    "{owner_first} also asked to remember that {person_first} prefers written feedback over calls.",
    "The {table} backfill is half done; {n} partitions remain and the {module} step is the slow part.",
    "Reminder to renew the {tool} license; the invoice goes to {org}.",
    "Someone suggested moving {project} off {tool}, but the migration cost was unclear.",
    "{owner_first} thinks the {error} we saw last week might come back when traffic doubles.",
    "Dinner with {person} on {weekday}; they want to talk about {concept} and maybe a side project.",
    "The new laptop needs {tool}, {tool2}, dotfiles, and the VPN profile before Monday.",
    "A podcast episode on {concept} was recommended; {owner_first} wants a summary later.",
    "The {project} README is out of date: the setup steps still mention `{cmd}`.",
    "Budget for the {project} cluster is {pct}% over plan; finance wants a note by {weekday}.",
    "{person_first} is on leave until {weekday}, so reviews for {file} go to someone else.",
    "Idea for later: use {concept} to make {func} restartable after a crash.",
    "The gym closes early on {weekday}s now, so {owner_first} moved the workout to the morning.",
    "There is an open question about whether {table} should keep soft-deleted rows.",
)  # fmt: skip

# --------------------------------------------------------------------------- near-duplicate propositions

#: Kinds of statements that get said again in other words; each frame is one wording.
PARAPHRASES: dict[str, tuple[str, ...]] = {
    "tool_pref": (
        "{owner} prefers {a} over {b} for {purpose}.",
        "For {purpose}, {owner_first} would rather use {a} than {b}.",
        "{owner_first} likes {a} better than {b} when it comes to {purpose}.",
        "Reminder: {a}, not {b}, is {owner_first}'s choice for {purpose}.",
    ),
    "runbook": (
        "To {action} {project}, run `{cmd}` {when}.",
        "{project}: `{cmd}` is how you {action} it, {when}.",
        "Running `{cmd}` {when} is the way to {action} {project}.",
        "How to {action} {project}: `{cmd}`, {when}.",
    ),
    "expert": (
        "{person} is the go-to person for {concept} questions.",
        "Ask {person} about anything related to {concept}.",
        "For {concept}, {person_first} is the expert to talk to.",
        "{person} knows {concept} inside out; ask {person_first} first.",
    ),
    "schedule": (
        "The {meeting} is every {weekday} at {clock}.",
        "{meeting}: {weekday}s, {clock}.",
        "Every {weekday} at {clock} there is the {meeting}.",
        "{owner_first} has the {meeting} on {weekday}s at {clock}.",
    ),
    "setting": (
        "Keep {setting} for {project} at {value}; {reason}.",
        "{project} needs {setting} = {value} ({reason}).",
        "Don't change {project}'s {setting} from {value}: {reason}.",
        "{setting} in {project} has to stay at {value}, since {reason}.",
    ),
    "quiet_hours": (
        "{owner} prefers no meetings before {clock}.",
        "Avoid scheduling anything for {owner_first} before {clock}.",
        "{owner_first} keeps mornings free until {clock}; no calls earlier.",
        "No meetings before {clock}: that's {owner_first}'s rule.",
    ),
}  # fmt: skip

RUNBOOK_ACTIONS: tuple[str, ...] = (
    "deploy", "roll back", "reindex", "reset the test data of", "rotate the keys of", "warm the cache of",
    "rebuild the docs of", "run the smoke tests of",
)  # fmt: skip
RUNBOOK_WHEN: tuple[str, ...] = (
    "from the repo root", "after the migrations", "with the VPN on", "on a clean checkout",
    "outside business hours", "with the staging profile",
)  # fmt: skip
SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("the worker concurrency", "{n}", "more workers exhaust the database connections"),
    ("the batch size", "{batch}", "larger batches time out on the gateway"),
    ("the request timeout", "{ms} ms", "the upstream retries otherwise double the load"),
    ("the cache TTL", "{n} minutes", "prices change faster than that"),
    ("the retry limit", "{n}", "the queue fills with poison messages otherwise"),
    ("the pool size", "{n}", "the managed database caps connections"),
    ("log retention", "{n} days", "compliance asks for exactly that"),
)  # fmt: skip

# --------------------------------------------------------------------------- attitudes

#: Statements per attitude category. The generator picks a version chain from these.
ATTITUDE_STATEMENTS: dict[str, tuple[str, ...]] = {
    "writing_style": (
        "prefers concise answers with the conclusion first",
        "prefers detailed explanations with the reasoning spelled out",
        "wants bullet points rather than paragraphs in summaries",
    ),
    "tech_choice": (
        "prefers PostgreSQL for anything with more than one writer",
        "prefers DuckDB for local analytics and embedded stores",
        "prefers boring, well-documented libraries over new frameworks",
    ),
    "design_principle": (
        "favours small modules with one clear responsibility",
        "favours explicit data contracts between pipeline stages",
        "avoids premature abstraction: three copies before a helper",
    ),
    "pace": (
        "likes to ship small increments daily",
        "prefers fewer, larger releases with a proper review week",
        "wants a spike first, then a commitment",
    ),
    "aesthetic": (
        "likes minimal dashboards with few colours",
        "likes dense, information-rich terminal output",
        "prefers dark themes and monospace everywhere",
    ),
    "communication": (
        "prefers async written updates over meetings",
        "prefers a quick call when a thread passes ten messages",
        "wants blunt feedback without softening",
    ),
    "workflow": (
        "writes the test first when fixing a bug",
        "keeps a running worklog in plain text",
        "works in two focus blocks a day with notifications off",
    ),
    "tooling": (
        "uses Neovim with a small config",
        "switched to VS Code for the debugger",
        "uses the terminal for git, never a GUI",
    ),
    "learning": (
        "learns by rebuilding small versions of a system",
        "learns from papers and then a toy implementation",
        "prefers video courses for new languages",
    ),
    "values": (
        "cares about reproducibility above speed",
        "cares about the on-call experience of the team",
        "values written decisions that can be revisited",
    ),
}  # fmt: skip

# --------------------------------------------------------------------------- recall

#: Query templates per intent. ``{e}`` is the entity the query is about.
RECALL_QUERIES: dict[str, tuple[str, ...]] = {
    "employer_lookup": ("where does {owner_first} work", "current employer of {owner}", "which company is {owner_first} at"),
    "location_lookup": ("where does {owner_first} live", "which city is {owner_first} in now", "home city of {owner}"),
    "project_status": ("status of {e}", "is {e} still active", "where are we with {e}"),
    "person_lookup": ("who is {e}", "what do we know about {e}", "how does {owner_first} know {e}"),
    "dependency_lookup": ("what does {e} depend on", "dependencies of {e}", "which services does {e} need"),
    "preference_lookup": ("how does {owner_first} like {topic}", "{owner_first}'s preference on {topic}", "what style for {topic}"),
    "howto": ("how do I deploy {e}", "steps to release {e}", "runbook for {e}"),
    "tool_usage": ("how do we use {e}", "what is {e} used for here", "{e} setup notes"),
    "concept_lookup": ("what did we decide about {e}", "notes on {e}", "summary of {e} discussion"),
}  # fmt: skip

PREFERENCE_TOPICS: tuple[str, ...] = (
    "commit messages", "code review comments", "summaries", "test layout", "naming", "dashboards",
    "meeting notes", "error messages",
)  # fmt: skip

FEEDBACK_NOTES_UP: tuple[str, ...] = (
    "exactly what I needed",
    "useful reminder",
    "good catch",
    "right context",
)
FEEDBACK_NOTES_DOWN: tuple[str, ...] = (
    "too long, split this", "outdated", "not relevant to this project", "wrong person",
)  # fmt: skip

# --------------------------------------------------------------------------- introductions

#: Memories that introduce a new entity ``{x}``. Each entry is (template, facts); a fact is
#: "predicate:subject_slot>object_slot". ``x_*`` slots are the new entity's own attributes;
#: a template is only used when the entity has every attribute it names.
INTRO_TEMPLATES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "person": (
        ("Met {x} {met}: {x_first} is a {x_role} at {x_org}.", ("knows:owner>x", "has_role:x>x_role", "works_at:x>x_org")),
        ("New contact: {x}, {x_role} at {x_org}. {owner_first} knows {x_first} {met}.", ("has_role:x>x_role", "works_at:x>x_org", "knows:owner>x")),
        ("{x} ({x_role}, {x_org}) joined the {project} discussion.", ("has_role:x>x_role", "works_at:x>x_org", "works_on:x>project")),
        ("{x} is a {x_role} at {x_org} and works on {project}; {x_first} uses {tool} a lot.", ("has_role:x>x_role", "works_at:x>x_org", "works_on:x>project", "uses_tool:x>tool")),
        ("{x} works as a {x_role} at {x_org} and lives in {x_city}.", ("has_role:x>x_role", "works_at:x>x_org", "lives_in:x>x_city")),
        ("{x}, a {x_role} living in {x_city}, is a friend of {owner_first}; they met {met}.", ("has_role:x>x_role", "lives_in:x>x_city", "knows:owner>x")),
        ("{owner_first} met {x} {met}; {x_first} works as a {x_role} and knows {person}.", ("knows:owner>x", "has_role:x>x_role", "knows:x>person")),
    ),
    "family": (
        ("{x} is {owner_first}'s {x_relation}, a {x_role} living in {x_city}.", ("knows:owner>x", "has_role:x>x_role", "lives_in:x>x_city")),
    ),
    "project": (
        ("{x} is a new project; it is {x_status} and depends on {tool} and {tool2}.", ("project_status:x>x_status", "depends_on:x>tool", "depends_on:x>tool2")),
        ("Started tracking {x}: {x_status}, built on {tool}; {person} works on it.", ("project_status:x>x_status", "depends_on:x>tool", "works_on:person>x")),
        ("{owner_first} joined {x} ({x_status}); it depends on {tool}.", ("works_on:owner>x", "project_status:x>x_status", "depends_on:x>tool")),
        ("{x} came up today: {x_status}, related to {concept}, runs on {tool}.", ("project_status:x>x_status", "related_to:x>concept", "depends_on:x>tool")),
    ),
    "organization": (
        ("{x} is a {x_kind} company headquartered in {x_city}.", ("located_in:x>x_city",)),
        ("{x} ({x_kind}, based in {x_city}) uses {tool} heavily.", ("located_in:x>x_city", "uses_tool:x>tool")),
        ("First call with {x}, a {x_kind} shop in {x_city}; they care about {concept}.", ("located_in:x>x_city", "interested_in:x>concept")),
    ),
    "concept": (
        ("{owner_first} started reading about {x}; it is closely tied to {concept}.", ("interested_in:owner>x", "related_to:x>concept")),
        ("{x} came up in the {project} work; it overlaps with {concept} and {concept2}.", ("related_to:x>concept", "related_to:x>concept2", "related_to:project>x")),
        ("{person} is interested in {x}, which goes hand in hand with {concept}.", ("interested_in:person>x", "related_to:x>concept")),
        ("Open question for {project}: do we need {x}? It is related to {concept}.", ("related_to:project>x", "related_to:x>concept")),
    ),
    "tool": (
        ("{project} now uses {x} for {x_purpose}.", ("depends_on:project>x",)),
        ("{owner_first} is trying {x} for {x_purpose}; {person} recommended it.", ("uses_tool:owner>x", "uses_tool:person>x")),
        ("{x} ({x_purpose}) is related to the {concept} work in {project}.", ("related_to:x>concept", "depends_on:project>x")),
    ),
    "place": (
        ("There is a conference on {concept} in {x}, {x_country}; {owner_first} is interested.", ("interested_in:owner>concept",)),
        ("{person} is visiting {x} ({x_country}) next month and asked for tips.", ()),
        ("{owner_first} might spend a week working from {x}, {x_country}, in the spring.", ()),
    ),
}  # fmt: skip

#: How a standalone fact sentence is attached to a transcript turn.
USER_FACT_LEADS: tuple[str, ...] = (
    "FYI, ",
    "Context: ",
    "Also, ",
    "By the way, ",
    "For the record, ",
    "Note that ",
)
ASSISTANT_FACT_LEADS: tuple[str, ...] = (
    "Noted: ",
    "I also saw that ",
    "Side note: ",
    "Worth knowing: ",
)

ERROR_SHORT: tuple[str, ...] = (
    "KeyError", "timeout", "deadlock", "OOM kill", "flaky test", "502s", "segfault",
    "import error", "null pointer", "race condition",
)  # fmt: skip
BRANCH_PREFIXES: tuple[str, ...] = ("fix", "feat", "chore", "refactor", "spike")
GENERIC_PURPOSES: tuple[str, ...] = (
    "quick scripts", "internal dashboards", "batch jobs", "incident tooling", "code generation",
    "release automation", "cost reports", "schema checks", "log search", "load tests",
)  # fmt: skip

#: (preferred, instead of, what for); a preference said again in other words.
TOOL_RIVALS: tuple[tuple[str, str, str], ...] = (
    ("Polars", "pandas", "dataframe work"), ("ruff", "flake8", "linting"),
    ("uv", "pip-tools", "dependency management"), ("pytest", "unittest", "tests"),
    ("DuckDB", "SQLite", "local analytics"), ("PostgreSQL", "MySQL", "production databases"),
    ("Neovim", "VS Code", "quick edits"), ("FastAPI", "Flask", "new HTTP services"),
    ("Dagster", "Airflow", "orchestration"), ("Terraform", "hand-written scripts", "infrastructure changes"),
    ("tmux", "terminal tabs", "long-running jobs"), ("Grafana", "ad-hoc notebooks", "monitoring"),
    ("Kafka", "RabbitMQ", "event streams"), ("Playwright", "Selenium", "browser tests"),
    ("Obsidian", "Notion", "personal notes"), ("ClickHouse", "Elasticsearch", "log analytics"),
)  # fmt: skip

# --------------------------------------------------------------------------- the owner's timeline

#: Memories that carry the owner's changing facts. Slots are filled by the generator.
EVENT_TEMPLATES: dict[str, str] = {
    "intro": "{owner} is a {role} at {employer} and lives in {city}.",
    "restated_employer": "{owner_first}'s employer: {employer_alias} (the platform team).",
    "project_planning": "{owner_first} is planning a side project, {flagship}, around {concept}. Status: planning.",
    "project_active": "{flagship} is now active: the first users try it next month.",
    "employer_2": "{owner_first} left {old_employer} and started at {employer} this week.",
    "role_late": "Correction: {owner_first} was promoted to {role} back on {valid_date}; it never made it into memory.",
    "move_away": "Looking back: {owner_first} lived in {city} ({country}) from {valid_date}, with the flat in {old_city} sublet; it never made it into memory.",
    "project_paused": "{flagship} is paused while {owner_first} settles in at {employer}.",
    "employer_3": "{owner_first} joined {employer} as a {role}; the last day at {old_employer} was Friday.",
    "project_shipped": "{flagship} shipped: version 1.0 is public and the launch post is out.",
    "move_back": "{owner_first} is back in {city} for good after the months in {old_city}.",
}

#: The colleague and the neighbour who share a name, each with context that tells them apart.
SAME_NAME_INTROS: dict[str, str] = {
    "colleague": "{sam} is a {sam_role} at {sam_org}; {owner_first} works with {sam} on {project}.",
    "neighbour": "{sam} is {owner_first}'s neighbour in {sam_city}, a {sam_role} by trade.",
}
SAME_NAME_NOTES: dict[str, tuple[str, ...]] = {
    "colleague": (
        "{sam} from {sam_org} reviewed the {table} migration for {project}.",
        "{sam} ({sam_role}, {sam_org}) shared a notebook on {concept}.",
        "Pairing with {sam} from {sam_org} on {func} tomorrow.",
        "{sam} at {sam_org} asked how {project} handles {concept}.",
    ),
    "neighbour": (
        "{sam}, the neighbour in {sam_city}, is watering the plants while {owner_first} is in {place}.",
        "{sam} from next door ({sam_role}) recommended a {trade} in {sam_city}.",
        "Borrowed a {item} from {sam}, the neighbour downstairs in {sam_city}.",
        "{sam} (neighbour, {sam_role}) invited {owner_first} to a {gathering} on {weekday}.",
        "Parcel for {sam} next door arrived at {owner_first}'s flat in {sam_city}; hand it over on {weekday}.",
    ),
}

NEIGHBOUR_ITEMS: tuple[str, ...] = (
    "ladder", "drill", "cake tin", "bike pump", "folding table", "extension cord", "tent",
    "pasta machine", "spirit level", "wheelbarrow",
)  # fmt: skip
TRADES: tuple[str, ...] = (
    "plumber", "electrician", "bike shop", "dentist", "bakery", "tailor", "locksmith", "vet",
    "piano teacher", "window cleaner",
)  # fmt: skip
GATHERINGS: tuple[str, ...] = (
    "barbecue", "house-warming", "board game night", "street party", "birthday dinner", "book swap",
)  # fmt: skip

ATTITUDE_MEMORY: tuple[str, ...] = (
    "Preference ({category}): {owner_first} {statement}.",
    "{owner_first} {statement} (preference, {category}).",
    "Updated preference on {category}: {owner_first} {statement}.",
)  # fmt: skip

#: Tools a person uses but a service never depends on.
PERSONAL_TOOLS: frozenset[str] = frozenset(
    {
        "Neovim", "VS Code", "tmux", "Claude Code", "Codex CLI", "git bisect", "Obsidian",
        "Linear", "Notion", "Figma", "Jupyter", "Tailscale",
    }
)  # fmt: skip
