"""Which backend a store URL names, opened (:func:`connect`).

It stands above both kinds of DuckDB backend, the plain one (:mod:`memvault.store.backends`)
and the one ``memvault serve`` can let go of (:mod:`memvault.store.attached`), so that
neither of those imports the other's user.
"""

from __future__ import annotations

from pathlib import Path

from memvault.errors import StoreError
from memvault.store.attached import AttachedBackend
from memvault.store.backends import Backend, DuckDBBackend, PostgresBackend


def connect(url: str, *, read_only: bool = False, detachable: bool = False) -> Backend:
    """Open the backend a store URL names. ``detachable``: a DuckDB file is held so that it
    can be let go of and taken back (:mod:`memvault.store.attached`, what ``memvault serve``
    uses); other stores open as usual."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "duckdb":
        # duckdb:///abs/path.duckdb, duckdb://relative/path.duckdb, duckdb:relative.duckdb, duckdb:///:memory:
        path = url[len("duckdb://") :] if url.startswith("duckdb://") else url[len("duckdb:") :]
        if path in ("", "/:memory:", ":memory:"):
            path = ":memory:"
        elif path.startswith("//"):  # duckdb:////abs (SQLAlchemy's spelling) is /abs, not //abs
            path = "/" + path.lstrip("/")
        if detachable and not read_only and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            return AttachedBackend(url, path)
        return DuckDBBackend(url, path, read_only=read_only)
    if scheme in ("postgresql", "postgres"):
        return PostgresBackend(url)
    raise StoreError(
        f"unsupported store URL {url!r}: use duckdb:///path/to/file.duckdb or postgresql://user@host:port/db"
    )
