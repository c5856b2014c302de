"""A second agent session: its calls go to the server that holds the store, until it goes.

Claude Code starts one ``memvault serve`` per session. The first holds the store; the
next ones find it (:func:`memvault.serve.discovery.read`) and pass each call to it over
its Unix socket. When the holder ends (its session closed, or it was killed), the lock
it held is free: a watcher thread here takes it at once and this process opens the store
and serves it itself, socket and discovery file included, so the other sessions and the
shell find it in turn. A call that finds the holder gone before the watcher noticed does
the same.

A call is sent again only when the holder got none of it (no connection), or when it
only reads (``recall``, ``asof``): a ``remember`` or ``feedback`` cut off mid-way is
reported, not risked twice.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from memvault.errors import MemvaultError
from memvault.serve import client, discovery

#: Seconds between two looks at the holder's lock.
WATCH_INTERVAL = 0.2
#: Seconds a call waits for the store to have a server again (another session taking over).
FIND_WAIT = 30.0


class ServerLost(MemvaultError):
    """The holder ended while answering a call that writes: it may or may not be done."""


class Relay:
    """The tools of a session that does not hold the store (see the module)."""

    def __init__(
        self,
        store_url: str,
        holder: discovery.ServerInfo | None,
        take_over: Callable[[discovery.Claim], Any],
    ) -> None:
        self.store_url = store_url
        self._holder = holder
        self._take_over = take_over
        self._local: Any = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        #: What :meth:`close` undoes once this session has taken the store over.
        self.closers: list[Callable[[], None]] = []

    @property
    def serving(self) -> bool:
        """Whether this session serves the store itself (it took it over)."""
        return self._local is not None

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + FIND_WAIT
        while True:
            if self._local is not None:
                return dict(self._local.call(tool, arguments))
            holder = self._holder or discovery.read(self.store_url)
            if holder is not None:
                try:
                    return client.call(holder, tool, arguments)
                except client.ServerRefused as exc:
                    raise MemvaultError(str(exc)) from None
                except client.ServerUnavailable as exc:
                    self._holder = None
                    if exc.sent and tool not in client.READ_ONLY:
                        raise ServerLost(
                            f"the memvault server that held the store, {holder.describe()}, "
                            f"ended while answering this {tool}; check whether it was done "
                            "before asking again"
                        ) from None
            self._try_take_over()
            if self._local is None and time.monotonic() > deadline:
                raise MemvaultError(
                    "the store's memvault server ended and no session could take it over "
                    f"within {FIND_WAIT:g} s; start `memvault serve` again"
                )
            if self._local is None:
                time.sleep(WATCH_INTERVAL)

    def _try_take_over(self) -> None:
        """Serve the store here when no live server holds its lock."""
        with self._lock:
            if self._local is not None or self._stop.is_set():
                return
            claim = discovery.claim(self.store_url)
            if claim is None:
                return  # a live server holds it (the old one, or another session took over)
            try:
                self._local = self._take_over(claim)
            except BaseException:
                claim.release()
                raise

    def watch(self) -> None:
        """Take the store over as soon as its holder goes (a thread of its own)."""

        def loop() -> None:
            while not self._stop.wait(WATCH_INTERVAL) and self._local is None:
                if discovery.held(self.store_url):
                    continue
                with contextlib.suppress(Exception):  # a failed takeover is retried by a call
                    self._try_take_over()

        self._watcher = threading.Thread(target=loop, name="memvault-relay-watch", daemon=True)
        self._watcher.start()

    def close(self) -> None:
        """Stop watching; give the store up if this session took it over."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        with self._lock:
            for close in reversed(self.closers):
                close()
            self.closers.clear()
