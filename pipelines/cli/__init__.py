"""The ``memvault`` command: its typer app (:mod:`pipelines.cli.app`), one module per group of
commands, and the console entry point (:mod:`pipelines.cli.entry`).

Nothing is imported here: the entry point's fast path (recall and feedback answered by a
running server) must not load the rest of the CLI.
"""
