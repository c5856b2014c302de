"""This user's private directories: used only when they are ours alone, files in them never
written through a link someone planted. (The tests run as root; ``chown`` to ``nobody``
stands in for a directory another local user made.)"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memvault import private
from memvault.private import NotPrivate

NOBODY = 65534


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    return tmp_path / "run" / "memvault"


def test_the_runtime_and_state_dirs_are_made_ours_with_mode_0700(
    tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    previous = os.umask(0o077)  # the mode is 0700 whatever the umask leaves
    try:
        assert private.runtime_dir() == runtime
    finally:
        os.umask(previous)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "deep" / "state"))
    state = private.state_dir()
    assert state == tmp_path / "deep" / "state" / "memvault"
    for made in (runtime, runtime.parent, state, state.parent, state.parent.parent):
        info = os.lstat(made)
        assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700, made


def test_without_xdg_the_runtime_dir_is_under_the_temp_dir_by_uid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert private.runtime_dir() == tmp_path / f"memvault-{os.getuid()}"


@pytest.mark.skipif(os.getuid() != 0, reason="making a directory of another user needs root")
def test_a_dir_another_user_made_first_is_refused_and_nothing_is_written_in_it(
    runtime: Path,
) -> None:
    runtime.parent.mkdir(mode=0o700)
    runtime.mkdir(mode=0o700)
    os.chown(runtime, NOBODY, NOBODY)
    with pytest.raises(NotPrivate, match=rf"{runtime} belongs to uid {NOBODY}, not to you"):
        private.runtime_dir()
    with pytest.raises(NotPrivate):
        private.write_file(runtime / "x.json", b"{}")
    assert os.listdir(runtime) == []


def test_a_dir_others_may_read_or_a_symlink_is_refused(runtime: Path, tmp_path: Path) -> None:
    runtime.parent.mkdir(mode=0o700)
    runtime.mkdir(mode=0o755)
    with pytest.raises(NotPrivate, match=r"mode 0755, not 0700.*chmod 700"):
        private.runtime_dir()
    runtime.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    runtime.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(NotPrivate, match="is a symlink"):
        private.runtime_dir()


def test_a_parent_others_can_write_without_the_sticky_bit_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(NotPrivate, match="can be changed by another user"):
        private.private_dir(shared / "memvault")
    shared.chmod(0o1777)  # /tmp's way: others cannot rename what is ours
    assert private.private_dir(shared / "memvault").is_dir()


def test_a_planted_symlink_is_replaced_never_followed(runtime: Path, tmp_path: Path) -> None:
    folder = private.runtime_dir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (folder / "serve.json").symlink_to(victim)
    private.write_file(folder / "serve.json", b"new")
    assert victim.read_text() == "precious"
    assert not (folder / "serve.json").is_symlink()
    assert (folder / "serve.json").read_bytes() == b"new"
    assert stat.S_IMODE(os.lstat(folder / "serve.json").st_mode) == 0o600
    assert sorted(os.listdir(folder)) == ["serve.json"]  # no temporary file left


def test_reading_refuses_a_symlink_and_a_file_others_may_read(
    runtime: Path, tmp_path: Path
) -> None:
    folder = private.runtime_dir()
    assert private.read_file(folder / "missing.json") is None
    (tmp_path / "target").write_text("{}")
    (folder / "link.json").symlink_to(tmp_path / "target")
    with pytest.raises(NotPrivate, match="symlink"):
        private.read_file(folder / "link.json")
    loose = folder / "loose.json"
    loose.write_text("{}")
    loose.chmod(0o644)
    with pytest.raises(NotPrivate, match="mode 0644"):
        private.read_file(loose)
    with pytest.raises(NotPrivate, match="is a symlink"):
        private.open_file(folder / "link.json")


@pytest.mark.skipif(os.getuid() != 0, reason="making a file of another user needs root")
def test_reading_refuses_a_file_of_another_user(runtime: Path) -> None:
    folder = private.runtime_dir()
    foreign = folder / "foreign.json"
    foreign.write_text("{}")
    foreign.chmod(0o600)
    os.chown(foreign, NOBODY, NOBODY)
    with pytest.raises(NotPrivate, match=f"belongs to uid {NOBODY}"):
        private.read_file(foreign)
