"""The ``memvault`` command's entry point, with a fast path for a running server.

``memvault recall`` and ``memvault feedback`` in a shell, while ``memvault serve`` holds
the store, are answered by that server: this module parses those two commands with the
standard library, reads the server's discovery file and asks it over its Unix socket,
and imports nothing of the store, the search index or the rest of the CLI (a Python
start and one local request). A server that does not answer within
``MEMVAULT_SERVE_TIMEOUT`` seconds is an error naming its process. Anything else — another command, an option it does not know, no server, a
server that does not answer — goes to the full CLI (:mod:`pipelines.cli.app`), which does
the same work in-process.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


class _Unsure(Exception):
    """Not a command line the fast path takes: the full CLI handles it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # no exit, no usage text: the full CLI says it
        raise _Unsure(message)


def _parse(argv: list[str]) -> tuple[str, dict[str, Any], str | None, bool] | None:
    """(tool, arguments, --store, --json) of a recall or feedback command line, else None."""
    store = None
    while argv and argv[0] in ("--store", "-s") and len(argv) > 1:
        store, argv = argv[1], argv[2:]
    if not argv or argv[0] not in ("recall", "feedback"):
        return None
    command, rest = argv[0], argv[1:]
    parser = _Parser(add_help=False, allow_abbrev=False)
    parser.add_argument("--store", "-s", default=None)
    parser.add_argument("--json", action="store_true", dest="as_json")
    if command == "recall":
        parser.add_argument("query")
        parser.add_argument("--limit", "-n", type=int, default=5)
        parser.add_argument("--session", default=None)
    else:
        parser.add_argument("recall_id")
        parser.add_argument("verdict")
        parser.add_argument("--block", default=None)
        parser.add_argument("--note", default=None)
    try:
        given = vars(parser.parse_args(rest))
    except _Unsure:
        return None
    for value in given.values():
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return None
    if command == "recall":
        if given["limit"] < 1:
            return None
        arguments = {"query": given["query"], "limit": given["limit"], "session_id": given["session"]}  # fmt: skip
    else:
        arguments = {
            "recall_id": given["recall_id"],
            "verdict": given["verdict"],
            "block_id": given["block"],
            "note": given["note"],
        }
    return command, arguments, given["store"] or store, given["as_json"]


def fast(argv: list[str]) -> int | None:
    """The exit code when a running server answered this command line, else None."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    tool, arguments, store, as_json = parsed
    from memvault.config import store_url
    from memvault.errors import MemvaultError
    from memvault.serve.client import ServerRefused, ask

    try:
        answer = ask(store_url(store), tool, arguments)
    except (ServerRefused, MemvaultError) as exc:  # refused, or a server stuck or lost
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True, emoji=False).print(
            f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True
        )
        return 1
    if answer is None:
        return None
    answer["served_by"] = "server"
    if as_json:
        sys.stdout.write(json.dumps(answer, default=str, indent=2) + "\n")
        return 0
    from rich.console import Console

    from pipelines.cli.recall_view import print_feedback, print_recall

    out = Console(emoji=False)
    if tool == "recall":
        print_recall(out, answer)
    elif not print_feedback(out, answer, arguments["verdict"]):
        Console(stderr=True).print("[red]error:[/] nothing was recorded")
        return 1
    return 0


def main() -> None:
    code = fast(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from pipelines.cli.app import main as full

    full()


if __name__ == "__main__":
    main()
