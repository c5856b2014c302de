"""``memvault serve``: the read and write path as a long-lived MCP server.

One process holds the store open and its recall index warm, and serves the tools
``recall``, ``remember``, ``feedback`` and ``asof`` over MCP (stdio and streamable HTTP).
See :mod:`memvault.serve.runner` (the process), :mod:`memvault.serve.service` (the tools'
work), :mod:`memvault.serve.app` (MCP and HTTP), :mod:`memvault.serve.discovery` and
:mod:`memvault.serve.client` (how the shell finds and asks a running server).

Nothing heavy is imported here: the shell's fast path imports the client modules only.
"""
