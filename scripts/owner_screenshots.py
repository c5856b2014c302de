"""Screenshots of Dagster's UI for docs/deploy.md: the owner partitions and a multi-owner night.

In a temporary folder it registers five owners (a DuckDB file each), gives four of them a
small generated history (6 sessions over 20 days), runs each of those four owners' night
(``collect_job`` then ``dream_job`` on the owner's partition, the code location's own
multiprocess executor, a SQLite Dagster instance), then starts ``dagster-webserver`` over
that instance on a free port and captures, with Debian's chromium driven by Playwright (the
test extras), the partitions page of the dream's last stage (four owners materialized, the
fifth not yet) and the Runs page. Nothing outside the temporary folder is read or written
but the two PNG files.

Run (from the repository, after ``scripts/setup.sh --test``; 25 minutes on a loaded 2-core
machine, the nights' runs most of it)::

    .venv/bin/python scripts/owner_screenshots.py            # writes docs/images/owners-*.png
    .venv/bin/python scripts/owner_screenshots.py --out /tmp/shots --keep
    .venv/bin/python scripts/owner_screenshots.py --out /tmp/shots --again /tmp/memvault-shots-XXXX
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NIGHT = ("collect_job", "dream_job")
OWNERS = ("alice", "bob", "carol", "dave")
WAITING = "erin"  # registered, no night yet: her partitions show as missing
ASSET = "dream_prune"  # the dream's last stage, partitioned by owner
#: Debian's chromium, headless, with nothing that calls home.
BROWSER_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run")  # fmt: skip


def _environment(folder: Path, fresh: bool) -> None:
    """This process's (and its children's) settings: everything under ``folder``."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_"):
            del os.environ[name]
    if fresh:
        (folder / "dagster").mkdir()
        shutil.copy(ROOT / "dagster.yaml", folder / "dagster" / "dagster.yaml")
    os.environ.update(
        {
            "DAGSTER_HOME": str(folder / "dagster"),
            "MEMVAULT_OWNERS": str(folder / "owners.json"),
            "MEMVAULT_INBOX": str(folder / "inbox"),
            "MEMVAULT_STORE": f"duckdb://{folder / 'single.duckdb'}",
            "MEMVAULT_EMBEDDER": "hashing",
            "MEMVAULT_CLAUDE_PROJECTS": "none",
            "PYTHONPATH": str(ROOT),
        }
    )


def _owners(folder: Path) -> None:
    """The registry, each owner's store, the four histories and the partitions."""
    import dagster as dg

    import memvault
    from memvault.owners import PARTITIONS_NAME, Registry
    from memvault_demo.generator import DemoConfig, generate, write_jsonl

    registry = Registry()
    for k, name in enumerate((*OWNERS, WAITING)):
        registry.add(name)
        memvault.open(registry.get(name).store).close()
        if name in OWNERS:
            records, _ = generate(DemoConfig(sessions=6, days=20, seed=11 + k))
            (folder / "inbox" / name).mkdir(parents=True)
            write_jsonl(records, folder / "inbox" / name / "history.jsonl")
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(PARTITIONS_NAME, [*OWNERS, WAITING])


def _nights() -> None:
    """Each owner's night, one run per job and owner, as the daemon would launch them."""
    import dagster as dg
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    repository = ReconstructableRepository.for_module(
        "pipelines.definitions", "defs", working_directory=str(ROOT)
    )
    with dg.DagsterInstance.get() as instance:
        for job in NIGHT:
            for owner in OWNERS:
                result = dg.execute_job(
                    repository.get_reconstructable_job(job),
                    instance=instance,
                    tags={"dagster/partition": owner, "memvault/owner": owner},
                    raise_on_error=False,
                )
                print(f"{job} for {owner}: {'success' if result.success else 'FAILED'}")
                if not result.success:
                    raise SystemExit(f"{job} for {owner} failed: see run {result.run_id}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _webserver(folder: Path) -> Iterator[str]:
    """``dagster-webserver`` over the instance, on a free port; its base URL once it answers."""
    port = _free_port()
    log = (folder / "webserver.log").open("w")
    command = [str(BIN / "dagster-webserver"), "-m", "pipelines.definitions"]
    server = subprocess.Popen(
        [*command, "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/server_info", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit((folder / "webserver.log").read_text()[-3000:]) from None
                time.sleep(1)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def _shoot(base: str, out: Path) -> list[Path]:
    """The asset's partitions page and the Runs page, each once its owners are on screen."""
    from playwright.sync_api import sync_playwright

    shots = [
        (out / "owners-partitions.png", f"{base}/assets/{ASSET}?view=partitions", WAITING),
        (out / "owners-runs.png", f"{base}/runs", OWNERS[0]),
    ]
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=list(BROWSER_ARGS),
        )
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        for path, url, text in shots:
            page.goto(url)
            page.get_by_text(text).first.wait_for(timeout=120_000)
            page.wait_for_timeout(3000)  # the rest of the page's queries
            skip = page.get_by_role("button", name="Skip")  # Dagster's newsletter dialog
            if skip.count():
                skip.first.click()
            if path.name == "owners-partitions.png":  # one owner's dream, beside the list
                page.get_by_text(OWNERS[0], exact=True).first.click()
                page.get_by_text("No partition selected").wait_for(state="detached")
            page.wait_for_timeout(4000)
            page.screenshot(path=str(path))
            print(f"{path}: {path.stat().st_size // 1024} KB")
        browser.close()
    return [path for path, _, _ in shots]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--again", type=Path, help="a folder kept by --keep: only take the screenshots again"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = args.again or Path(tempfile.mkdtemp(prefix="memvault-shots-"))
    try:
        _environment(folder, fresh=args.again is None)
        if args.again is None:
            _owners(folder)
            _nights()
        with _webserver(folder) as base:
            _shoot(base, args.out.resolve())
    finally:
        if args.keep or args.again:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
