"""``memvault owners add | list | remove``: the owners one deployment tends.

Each owner is a name in the registry (``MEMVAULT_OWNERS``, default ``.memvault/owners.json``)
with a store of their own, and a partition of the Dagster code location's ``owners``
dynamic partitions (on the instance ``memvault ui`` uses). Removing an owner removes the
registry entry and the partition, never the store: adding the same name again with the same
store finds every memory where it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

import memvault
from memvault.owners import PARTITIONS_NAME, Registry
from pipelines.cli.common import JsonOpt, emit_json, err, global_store, handles_errors, out

if TYPE_CHECKING:
    from dagster import DagsterInstance

owners_app = typer.Typer(
    help="The owners this deployment tends, each with a store of their own (see docs/deploy.md).",
    no_args_is_help=True,
)

NameArg = Annotated[str, typer.Argument(help="The owner: a lowercase letter, then a-z, 0-9, _")]


def _instance() -> DagsterInstance:
    """The Dagster instance the UI and the daemon read (DAGSTER_HOME, else .dagster/)."""
    from pipelines.runner import persistent_instance

    return persistent_instance()


@owners_app.command("add")
@handles_errors
def add(
    name: NameArg,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            "-s",
            help="The owner's store: a PostgreSQL server (the schema owner_NAME on it) or a "
            "DuckDB file (default: a DuckDB file per owner next to the registry)",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Register an owner, create their store, and add their Dagster partition."""
    registry = Registry()
    owner = registry.add(name, store or global_store())
    try:
        memvault.open(owner.store).close()  # created now: a wrong URL fails here, not at night
    except BaseException:
        registry.remove(name)
        raise
    instance = _instance()
    instance.add_dynamic_partitions(PARTITIONS_NAME, [owner.name])
    if as_json:
        emit_json(owner.as_dict() | {"registry": str(registry.path)})
        return
    out.print(f"owner {owner.name}: store {escape(owner.store)}", highlight=False)
    err.print(
        f"registry {escape(str(registry.path))}; the Dagster partition {owner.name!r} was added "
        "(reload the code location in the UI after the first owner)",
        highlight=False,
    )


@owners_app.command("list")
@handles_errors
def list_owners(as_json: JsonOpt = False) -> None:
    """The registered owners and their stores."""
    owners = Registry().owners()
    if as_json:
        emit_json([o.as_dict() for o in owners.values()])
        return
    if not owners:
        out.print("no owners registered: one store, the default owner (`memvault owners add`)")
        return
    table = Table("owner", "store")
    for owner in owners.values():
        table.add_row(owner.name, escape(owner.store))
    out.print(table)


@owners_app.command("remove")
@handles_errors
def remove(name: NameArg, as_json: JsonOpt = False) -> None:
    """Take an owner off the registry and the partitions; their store stays as it is."""
    owner = Registry().remove(name)
    instance = _instance()
    if instance.has_dynamic_partition(PARTITIONS_NAME, owner.name):
        instance.delete_dynamic_partition(PARTITIONS_NAME, owner.name)
    if as_json:
        emit_json(owner.as_dict() | {"removed": True, "data_kept": True})
        return
    out.print(
        f"owner {owner.name} removed; the store {escape(owner.store)} was left as it is "
        f"(`memvault owners add {owner.name} --store URL` brings it back)",
        highlight=False,
    )
