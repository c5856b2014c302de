"""What every ``memvault`` command shares: the typer app, consoles, options, error handling.

Every command takes ``--store URL`` (else ``MEMVAULT_STORE``, else
``duckdb://.memvault/memvault.duckdb``); ``--json`` prints one JSON object for
machines. A failure prints one line naming the cause and exits non-zero.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

import memvault
from memvault.config import store_url
from memvault.errors import IngestError, MemvaultError
from memvault.store import Store

app = typer.Typer(
    name="memvault",
    help="Keeps an AI agent's long-term memory healthy (see README.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Memory text is data: never turn ":smile:" into an emoji (markup is escaped where printed).
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)

StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store", "-s", help="Store URL (default: MEMVAULT_STORE, else the local DuckDB file)"
    ),
]
OwnerOpt = Annotated[
    str | None,
    typer.Option(
        "--owner",
        help="Whose memory (an owner of `memvault owners list`; default: the one store)",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text")]
F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Errors a user can act on become one line on stderr and exit code 1, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _refuse_undecodable([*args, *kwargs.values()])
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.ClickException):
            raise
        except IngestError as exc:
            for problem in exc.problems:
                err.print(f"[red]error:[/] {escape(str(problem))}", highlight=False, soft_wrap=True)
            more = exc.total - len(exc.problems)
            tail = f" ({more} more not shown)" if more > 0 else ""
            err.print(
                f"[red]error:[/] {exc.total} problem(s){tail}; nothing from this input was written",
                highlight=False,
            )
            raise typer.Exit(1) from None
        except MemvaultError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except BrokenPipeError:  # e.g. `memvault export | head`
            sys.stderr.close()
            raise typer.Exit(0) from None
        except KeyboardInterrupt:
            err.print("[red]interrupted[/]; the open transaction was rolled back")
            raise typer.Exit(130) from None
        except Exception as exc:
            if os.environ.get("MEMVAULT_DEBUG"):
                raise
            err.print(
                f"[red]error:[/] unexpected {type(exc).__name__}: {escape(str(exc))} "
                "(set MEMVAULT_DEBUG=1 for the traceback)",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _refuse_undecodable(values: list[Any]) -> None:
    """An argument with bytes that are no UTF-8 (Python passes them on as surrogates) is
    refused before anything runs: it could be neither stored nor printed."""
    for value in values:
        for text in value if isinstance(value, list | tuple) else [value]:
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                given = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                raise MemvaultError(
                    f"argument '{given}' is not valid UTF-8 text; nothing was done"
                ) from None


_global_store: str | None = None
_global_owner: str | None = None


@app.callback()
def _global_options(
    store: Annotated[
        str | None, typer.Option("--store", "-s", help="Store URL for every command")
    ] = None,
    owner: Annotated[
        str | None,
        typer.Option("--owner", help="Whose memory, for every command (see `memvault owners`)"),
    ] = None,
    llm_url: Annotated[
        str | None,
        typer.Option("--llm-url", help="OpenAI-compatible endpoint (MEMVAULT_LLM_BASE_URL)"),
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option("--llm-model", help="Primary model (MEMVAULT_LLM_MODEL)")
    ] = None,
    llm_escalation_model: Annotated[
        str | None,
        typer.Option(
            "--llm-escalation-model", help="Escalation model (MEMVAULT_LLM_ESCALATION_MODEL)"
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder", help="minilm | hashing[:dim] | openai:<model> (MEMVAULT_EMBEDDER)"
        ),
    ] = None,
) -> None:
    """Options given before the command name; they override the environment for this invocation."""
    global _global_store, _global_owner
    _global_store = store
    _global_owner = owner
    for variable, value in (
        ("MEMVAULT_LLM_BASE_URL", llm_url),
        ("MEMVAULT_LLM_MODEL", llm_model),
        ("MEMVAULT_LLM_ESCALATION_MODEL", llm_escalation_model),
        ("MEMVAULT_EMBEDDER", embedder),
    ):
        if value:
            os.environ[variable] = value


def chosen_store(store: str | None, owner: str | None = None) -> str:
    """The command's ``--store``, else its ``--owner``'s store, else the global ``--store``,
    else the global ``--owner``'s store, else MEMVAULT_STORE, else the default."""
    from memvault.owners import owner_store

    return store_url(store or owner_store(owner) or _global_store or owner_store(_global_owner))


def chosen_owner(owner: str | None = None) -> str | None:
    """The command's ``--owner``, else the one given before the command name."""
    return owner or _global_owner


@contextmanager
def opened(store: str | None, owner: str | None = None) -> Iterator[Store]:
    # A running `memvault serve` lets go of a DuckDB file when asked (memvault.store.backends
    # asks it), so a command opens the store while an agent is connected.
    with memvault.open(chosen_store(store, owner)) as handle:
        yield handle


def emit_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, default=str, indent=2) + "\n")


def counts_table(title: str, before: dict[str, int] | None, after: dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("table")
    if before is not None:
        table.add_column("before", justify="right")
    table.add_column("after" if before is not None else "rows", justify="right")
    for name, n in after.items():
        row = [name, f"{before.get(name, 0):,}"] if before is not None else [name]
        table.add_row(*row, f"{n:,}")
    return table


def byte_progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err,
    )


def global_store() -> str | None:
    """The ``--store`` given before the command name, if any."""
    return _global_store


def note(message: str) -> None:
    """Something the user should know while a command goes on (stderr, one line)."""
    err.print(f"[yellow]note:[/] {escape(message)}", highlight=False, soft_wrap=True)


def flat_figures(metadata: dict[str, Any]) -> str:
    """An asset's plain figures on one line (tables, reports and long text left to the UI)."""
    shown = {
        k: v
        for k, v in metadata.items()
        if isinstance(v, int | float | bool)
        or (isinstance(v, str) and len(v) < 60 and "\n" not in v)
    }
    return escape(", ".join(f"{k}={v}" for k, v in shown.items()))
