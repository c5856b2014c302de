"""One word per track: from it a newcomer names the track's core package, its asset module,
its resource and its command line (docs/design.md, "Tracks and their names").

``WORD`` gives ``memvault/WORD``, ``assets/WORD``, ``resources/WORD.py`` (a resource named
after the word) and ``pipelines/cli/WORD.py`` (or, for a track run by one store-wide command,
that command in ``pipelines/cli/app.py``). The commands, job names and asset keys users type
or see in Dagster's history are public and kept: the table below names the commands, and
fails when one is gone.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

import pipelines.definitions
import resources
from pipelines.cli.app import app


@dataclass(frozen=True)
class Track:
    """What a track's word does not say by itself."""

    #: Its resource class in ``resources/WORD.py``, or None for a track that needs only the
    #: shared ones (store, judge, embedder).
    resource: str | None
    #: The top-level commands and command groups of ``memvault`` that run or read it.
    commands: tuple[str, ...]
    #: Dagster asset groups of its assets besides the word itself.
    other_groups: frozenset[str] = frozenset()
    #: Command modules besides ``pipelines/cli/WORD.py`` and ``app.py``.
    other_cli: frozenset[str] = frozenset()


TRACKS: dict[str, Track] = {
    "collector": Track("CollectorSourcesResource", ("collect",)),
    "dream": Track(
        "DreamResource", ("dream", "asof", "inbox"), other_cli=frozenset({"pipelines.cli.inbox"})
    ),
    "gardener": Track("GardenerResource", ("garden",)),
    "lint": Track(
        "LintResource",
        ("lint", "review"),
        other_groups=frozenset({"review"}),
        other_cli=frozenset({"pipelines.cli.review"}),
    ),
    "profile": Track(None, ("profile", "diary", "gaps", "backfill")),
    "layers": Track("LayersResource", ("attitudes", "skills")),
    "lifecycle": Track("LifecycleResource", ("tier", "usage")),
    "recall": Track(None, ("recall", "feedback", "show")),
}

#: Commands of ``pipelines/cli/app.py`` that belong to a track, and those that are the
#: store's and the UI's.
APP_COMMANDS = {"collect": "collector", "lint": "lint"}
STORE_COMMANDS = {"init", "status", "ingest", "export", "runs", "undo", "demo", "ui"}


def _commands() -> dict[str, str]:
    """Every top-level command and group of ``memvault``, with the module that defines it."""
    found = {
        (info.name or info.callback.__name__).replace("_", "-"): info.callback.__module__
        for info in app.registered_commands
        if info.callback is not None
    }
    for group in app.registered_groups:
        assert group.name is not None and group.typer_instance is not None
        commands = group.typer_instance.registered_commands
        found[group.name] = commands[0].callback.__module__
    return found


def test_every_track_is_in_the_table() -> None:
    """A new track gets its word here (and in docs/design.md) or this fails."""
    modules = {track.__name__ for track in pipelines.definitions.TRACKS}
    assert modules == {f"assets.{word}" for word in TRACKS}


@pytest.mark.parametrize("word", sorted(TRACKS))
def test_a_track_is_named_by_one_word(word: str) -> None:
    track = TRACKS[word]
    # The core package, and the asset module the code location loads.
    core = importlib.import_module(f"memvault.{word}")
    assert core.__doc__, f"memvault.{word} says what it is"
    module = importlib.import_module(f"assets.{word}")
    defs: dg.Definitions = module.defs
    groups = {
        spec.group_name
        for asset in defs.assets or ()
        if isinstance(asset, dg.AssetsDefinition)
        for spec in asset.specs
    }
    assert groups <= {word, *track.other_groups}, groups
    # The resource, named after the word, in the module named by the word.
    if track.resource is not None:
        assert track.resource.lower().startswith(word)
        cls = getattr(resources, track.resource)
        assert issubclass(cls, dg.ConfigurableResource)
        assert cls.__module__ == f"resources.{word}"
    # The command line: each command exists and lives in the track's module (or app.py).
    commands = _commands()
    for command in track.commands:
        assert command in commands, f"memvault {command} is gone"
    where = {commands[c] for c in track.commands}
    assert where <= {"pipelines.cli.app", f"pipelines.cli.{word}", *track.other_cli}, where


def test_each_resource_lives_in_the_module_of_its_track() -> None:
    """A resource named after a track is in ``resources/WORD.py`` (not beside another's)."""
    misplaced = {}
    for name, cls in inspect.getmembers(resources, inspect.isclass):
        for word in TRACKS:
            if name.lower().startswith(word) and cls.__module__ != f"resources.{word}":
                misplaced[name] = cls.__module__
    assert misplaced == {}


def test_app_commands_of_a_track_are_listed_with_it() -> None:
    """Every command of ``app.py`` is the store's or the UI's, or listed with its track: a
    track's command added there without its word fails here."""
    in_app = {name for name, module in _commands().items() if module == "pipelines.cli.app"}
    assert in_app - STORE_COMMANDS == set(APP_COMMANDS)
    for command, word in APP_COMMANDS.items():
        assert command in TRACKS[word].commands


def test_the_design_page_table_says_the_same() -> None:
    """docs/design.md's table of tracks names the same words, resources and commands."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "design.md").read_text("utf-8")
    section = page.split("## Tracks and their names", 1)[1].split("\n## ", 1)[0]
    rows = {
        cells[0]: cells
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith(("| track", "| ---"))
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == set(TRACKS)
    for word, track in TRACKS.items():
        core, assets_cell, resource, commands = rows[word][1:5]
        assert f"memvault/{word}" in core and f"assets/{word}" in assets_cell
        assert (f"`{track.resource}`" in resource) if track.resource else resource == "—"
        assert re.findall(r"`([a-z-]+)`", commands) == list(track.commands)


def test_the_layers_go_by_one_name_in_the_python_api() -> None:
    """The preference and skill layers are imported from their track's package, and
    ``memvault`` holds no second name for them (an alias that worked as an attribute but not
    in ``from memvault.attitudes import ...`` was a trap)."""
    import memvault
    from memvault.layers import attitudes, skills

    assert callable(attitudes.upsert) and callable(skills.record_use)
    for alias in ("attitudes", "skills"):
        assert not hasattr(memvault, alias)
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"memvault.{alias}")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "from memvault.layers import attitudes, skills" in readme
    assert not re.search(r"memvault\.(attitudes|skills)\.", readme)
