"""A fake OpenAI-compatible server on loopback that misbehaves on purpose.

Each request to ``/v1/chat/completions`` is answered by ``FakeLLM.answer``: a
function of the request body that returns (status, body bytes, seconds to
wait first). The tests give it faults: a 200 with a body that is not JSON, a
reply outside the schema, 429s and 500s, a hang, or a well-formed verdict that
the data contradicts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, bytes, float]


def completion(arguments: dict[str, Any], name: str) -> bytes:
    """A chat completion whose forced tool call carries ``arguments``."""
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    ).encode()


class FakeLLM:
    def __init__(self, answer: Callable[[dict[str, Any]], Answer]) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""

    @contextmanager
    def serving(self) -> Iterator[FakeLLM]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append(body)
                status, payload, delay = fake.answer(body)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout): that is the point

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
