"""What the command line says is in plain words: no internal clause ids in help or output.

Skill levels ("can teach (L3)") are a product word the owner sees and stay; lint layers,
garden phases and dream stages are named by what they do.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from tests.cli.test_store_option import command_names
from tests.helpers import internal_codes

runner = CliRunner()


@pytest.mark.parametrize("command", ["", *command_names()])
def test_help_has_no_internal_codes(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert len(result.output) > 80
    assert not internal_codes(result.output), (command, internal_codes(result.output))


def test_skill_levels_stay_with_their_words() -> None:
    result = runner.invoke(app, ["skills", "--help"], env={"COLUMNS": "200"})
    assert "can teach (L3)" in result.output
    assert internal_codes("the L3 layer proposes") == ["L3"]
    assert internal_codes("Skipped: GD5 reconnect") == ["GD5"]
