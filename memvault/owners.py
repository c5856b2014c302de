"""Many owners on one deployment: the registry of owners and where each one's store is.

An owner is a person (or customer) whose agent's memory memvault tends. Each owner has a
store of their own, never shared: by default a DuckDB file per owner under the registry's
folder (``.memvault/owners/NAME.duckdb``), or a PostgreSQL schema per owner on a shared
server (``owner_NAME``; the connection's ``search_path`` is that schema alone). Nothing
queries two owners' stores at once, so no query crosses owners.

The registry is a small JSON file (``MEMVAULT_OWNERS``, default ``.memvault/owners.json``),
written owner-only and never through a symbolic link. Without it memvault has one implicit
owner, ``default``, whose store is the usual one (``--store`` / ``MEMVAULT_STORE``): a
single-owner install never names an owner. Once it exists (the first ``memvault owners
add``), the Dagster code location partitions the nightly assets by owner.

An owner's name becomes a file name, a schema name and a Dagster partition key, so it is
held to a strict pattern: a lowercase letter, then up to 39 lowercase letters, digits or
underscores. Anything else (a path, quotes, SQL) is refused before it reaches any of them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from memvault.errors import MemvaultError

#: Where the registry lives unless ``MEMVAULT_OWNERS`` names another file.
DEFAULT_REGISTRY = ".memvault/owners.json"
REGISTRY_VARIABLE = "MEMVAULT_OWNERS"
#: The owner of a single-owner install: every command that names no owner means this one.
DEFAULT_OWNER = "default"
#: The Dagster dynamic partitions definition that holds the owners.
PARTITIONS_NAME = "owners"
#: The prefix of an owner's PostgreSQL schema (``owner_alice``).
SCHEMA_PREFIX = "owner_"

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class OwnerError(MemvaultError):
    """An owner name refused, unknown or already taken."""


def check_name(name: str) -> str:
    """``name`` if it is a valid owner name, else an error saying what one looks like."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise OwnerError(
            f"owner name {name!r} refused: use a lowercase letter, then up to 39 lowercase "
            "letters, digits or underscores (it becomes a file, a schema and a partition name)"
        )
    return name


@dataclass(frozen=True)
class Owner:
    """One owner and the URL of their own store."""

    name: str
    store: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "store": self.store}


def registry_path() -> Path:
    """The registry file: ``MEMVAULT_OWNERS``, else ``.memvault/owners.json``."""
    return Path(os.environ.get(REGISTRY_VARIABLE) or DEFAULT_REGISTRY)


def multi_owner() -> bool:
    """Whether this installation tends several owners (the registry exists)."""
    return registry_path().is_file()


def default_store(name: str, base: str | None, registry: Path) -> str:
    """Where a new owner's store goes: a PostgreSQL ``base`` gets the schema ``owner_NAME``
    (unless it names one), a DuckDB ``base`` is taken as given, and without one, a DuckDB
    file per owner next to the registry (``owners/NAME.duckdb``)."""
    check_name(name)
    if base is None:
        folder = registry.resolve().parent / "owners"
        return f"duckdb://{folder / (name + '.duckdb')}"
    scheme = base.split(":", 1)[0].lower()
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit(base)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        query.setdefault("schema", SCHEMA_PREFIX + name)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
    if scheme == "duckdb":
        return base
    raise OwnerError(
        f"unsupported store URL {base!r} for owner {name!r}: use duckdb:///path/file.duckdb "
        "or postgresql://user@host:port/db (a schema per owner)"
    )


def _same_store(a: str, b: str) -> bool:
    """Whether two store URLs name the same store (a DuckDB file, or a server's schema)."""
    from memvault.config import unmasked_url

    def key(url: str) -> tuple[str, ...]:
        url = unmasked_url(url)
        scheme = url.split(":", 1)[0].lower()
        if scheme == "duckdb":
            path = url.removeprefix("duckdb://").removeprefix("duckdb:")
            return ("duckdb", str(Path(path).resolve()))
        parts = urlsplit(url)
        schema = parse_qs(parts.query).get("schema", ["memvault"])[-1]
        return ("pg", parts.hostname or "", str(parts.port or 5432), parts.path, schema)

    return key(a) == key(b)


class Registry:
    """The owners of this installation, in one JSON file (``{"owners": {NAME: {"store": URL}}}``)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or registry_path()

    def owners(self) -> dict[str, Owner]:
        """Every registered owner by name (none when there is no registry)."""
        if not self.path.is_file():
            return {}
        if self.path.is_symlink():
            raise OwnerError(f"{self.path} is a symbolic link: the owners registry is read only from a plain file")  # fmt: skip
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = data["owners"]
            return {check_name(n): Owner(n, str(e["store"])) for n, e in sorted(entries.items())}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise OwnerError(f"{self.path}: not an owners registry ({exc})") from None

    def names(self) -> list[str]:
        return list(self.owners())

    def get(self, name: str) -> Owner:
        """The registered owner ``name`` (the implicit ``default`` owner when none is registered
        under that name: the usual store)."""
        check_name(name)
        found = self.owners().get(name)
        if found is not None:
            return found
        if name == DEFAULT_OWNER:
            from memvault.config import store_url

            return Owner(DEFAULT_OWNER, store_url())
        known = ", ".join(self.owners()) or "none"
        raise OwnerError(
            f"no owner {name!r} (registered: {known}); add one with `memvault owners add {name}`"
        )

    def add(self, name: str, store: str | None = None) -> Owner:
        """Register ``name`` with its own store (see :func:`default_store`); an owner already
        registered, or a store another owner has, is refused. The store is not created here."""
        check_name(name)
        with self._locked() as owners:
            if name in owners:
                raise OwnerError(f"owner {name!r} exists already (store {owners[name].store})")
            if store is None and name == DEFAULT_OWNER:
                from memvault.config import store_url

                url = store_url()  # the single owner's store becomes the default owner's
                if url.startswith("duckdb://") and not url.startswith("duckdb:///"):
                    url = "duckdb://" + str(Path(url.removeprefix("duckdb://")).resolve())
            else:
                url = default_store(name, store, self.path)
            for other in owners.values():
                if _same_store(other.store, url):
                    raise OwnerError(
                        f"store {url} belongs to owner {other.name!r}: each owner has a store "
                        "of their own"
                    )
            if store is None and name != DEFAULT_OWNER:  # the owners' files: theirs alone
                (self.path.resolve().parent / "owners").mkdir(mode=0o700, exist_ok=True)
            owner = Owner(name, url)
            owners[name] = owner
            self._write(owners)
        return owner

    def remove(self, name: str) -> Owner:
        """Take ``name`` off the registry; their store and its data stay where they are."""
        check_name(name)
        with self._locked() as owners:
            if name not in owners:
                raise OwnerError(f"no owner {name!r} to remove")
            owner = owners.pop(name)
            self._write(owners)
        return owner

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Owner]]:
        """The owners, read and rewritten under an exclusive lock (two ``owners add`` at once)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield self.owners()
        finally:
            os.close(fd)

    def _write(self, owners: dict[str, Owner]) -> None:
        """Replace the file at once (a temporary file renamed over it), readable by its owner."""
        payload = {"owners": {n: {"store": o.store} for n, o in sorted(owners.items())}}
        tmp = self.path.with_name(self.path.name + ".partial")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2)
            fh.write("\n")
        os.replace(tmp, self.path)


def owner_store(owner: str | None) -> str | None:
    """The store URL of ``owner`` (None: no owner named, the caller's usual store applies)."""
    if owner is None:
        return None
    return Registry().get(owner).store


#: The run tags Dagster gives a partitioned run (one partition, a multi-partition's owner
#: dimension, or the two ends of a range).
_PARTITION_TAG = "dagster/partition"
_OWNER_DIMENSION_TAG = "dagster/partition/owner"
_RANGE_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")


def _owner_in(key: str) -> str:
    """The owner in a partition key: the key itself, or the owner of ``DAY|OWNER``."""
    return key.rsplit("|", 1)[-1]


def run_owner(tags: Mapping[str, str]) -> str | None:
    """The owner a Dagster run's partition tags name (None: an unpartitioned run). A range
    over two owners is refused: a run tends one owner's store."""
    if _OWNER_DIMENSION_TAG in tags:
        return check_name(tags[_OWNER_DIMENSION_TAG])
    if _PARTITION_TAG in tags:
        return check_name(_owner_in(tags[_PARTITION_TAG]))
    ends = [tags[t] for t in _RANGE_TAGS if t in tags]
    if not ends:
        return None
    owners = {_owner_in(k) for k in ends}
    if len(owners) != 1:
        raise OwnerError(f"a run spans owners {sorted(owners)}: a run tends one owner's store")
    return check_name(owners.pop())
