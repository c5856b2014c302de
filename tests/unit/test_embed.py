"""Embedders: the offline MiniLM model, feature hashing, the OpenAI client and the factory."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memvault.embed import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    make_embedder,
)
from memvault.errors import MemvaultError

MOVED = "I moved to Berlin last week"
RELOCATED = "Last week I relocated to Berlin"
UNRELATED = "The database index is corrupted"


def assert_unit_rows(vectors: np.ndarray, n: int, dim: int) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


# --- MiniLM -----------------------------------------------------------------------------


def test_minilm_vectors_are_unit_float32(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed([MOVED, RELOCATED, UNRELATED, "", "word " * 400])
    assert isinstance(minilm, Embedder)
    assert (minilm.model_name, minilm.dim) == ("all-MiniLM-L6-v2-onnx-int8", 384)
    assert_unit_rows(vectors, 5, 384)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_is_semantic(minilm: MiniLMEmbedder) -> None:
    moved, relocated, unrelated = minilm.embed([MOVED, RELOCATED, UNRELATED])
    assert float(moved @ relocated) > float(moved @ unrelated) + 0.3


def test_minilm_is_deterministic_and_order_preserving(minilm: MiniLMEmbedder) -> None:
    texts = [UNRELATED, "a much longer memory about a trip to the mountains with friends", MOVED]
    batch = minilm.embed(texts)
    np.testing.assert_array_equal(batch, minilm.embed(texts))
    singles = np.vstack([minilm.embed([t]) for t in texts])
    np.testing.assert_allclose(batch, singles, atol=1e-5)


# --- hashing ----------------------------------------------------------------------------


def test_hashing_vectors_and_name() -> None:
    embedder = HashingEmbedder(dim=512)
    vectors = embedder.embed([MOVED, "ünïcödé Straße", "x"])
    assert isinstance(embedder, Embedder)
    assert embedder.model_name == "hashing-512"
    assert_unit_rows(vectors, 3, 512)
    assert HashingEmbedder().dim == 256
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=0)


def test_hashing_is_deterministic_and_batch_independent() -> None:
    texts = [f"note {i}: user {i % 7} prefers tool{i % 5}" for i in range(5000)]
    vectors = HashingEmbedder().embed(texts)
    np.testing.assert_array_equal(vectors, HashingEmbedder().embed(texts))
    np.testing.assert_array_equal(vectors[4321:4324], HashingEmbedder().embed(texts[4321:4324]))


def test_hashing_is_lexical() -> None:
    moved, relocated, unrelated, cased = HashingEmbedder().embed(
        [MOVED, RELOCATED, UNRELATED, MOVED.upper()]
    )
    assert float(moved @ relocated) > float(moved @ unrelated) + 0.3
    np.testing.assert_array_equal(moved, cased)


def test_hashing_text_without_features_is_zero() -> None:
    vectors = HashingEmbedder().embed(["", "   \n\t "])
    assert not vectors.any()
    assert HashingEmbedder().embed([]).shape == (0, 256)


@pytest.mark.perf
def test_throughput() -> None:
    texts = [
        f"memory {i} about user {i % 97} who uses tool{i % 13} in city {i % 50}"
        for i in range(50_000)
    ]
    start = time.perf_counter()
    HashingEmbedder().embed(texts)
    hashing_rate = len(texts) / (time.perf_counter() - start)
    minilm = MiniLMEmbedder()
    minilm.embed(["warm up"])
    start = time.perf_counter()
    minilm.embed(texts[:1000])
    minilm_rate = 1000 / (time.perf_counter() - start)
    print(f"hashing {hashing_rate:,.0f} texts/s, minilm {minilm_rate:,.0f} sentences/s")
    assert hashing_rate >= 20_000


# --- OpenAI-compatible endpoint ---------------------------------------------------------


@pytest.fixture
def embeddings_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback /v1/embeddings that returns unnormalized vectors in reverse index order."""
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(text)), 0.0, 3.0]}
                for i, text in enumerate(body["input"])
            ][::-1]
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            payload = json.dumps(
                {"object": "list", "data": data, "model": body["model"], "usage": usage}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    server.shutdown()
    server.server_close()


def test_openai_embedder_batches_orders_and_normalizes(
    embeddings_server: tuple[str, list[dict[str, Any]]],
) -> None:
    url, bodies = embeddings_server
    embedder = OpenAIEmbedder(url, "key", "text-embedding-3-small", batch_size=2)
    vectors = embedder.embed(["a", "bbbb", "", "cc", "ddddd"])

    assert [len(b["input"]) for b in bodies] == [2, 2, 1]
    assert bodies[0]["model"] == "text-embedding-3-small"
    assert_unit_rows(vectors, 5, 3)
    expected = np.array([[n, 0.0, 3.0] for n in (1, 4, 0, 2, 5)])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert (embedder.model_name, embedder.dim) == ("openai:text-embedding-3-small", 3)
    assert len(bodies) == 3  # dim came from the first reply, not a probe


# --- factory ----------------------------------------------------------------------------


def test_make_embedder_specs() -> None:
    assert isinstance(make_embedder(environ={}), MiniLMEmbedder)
    assert isinstance(make_embedder("minilm", environ={}), MiniLMEmbedder)
    assert make_embedder("hashing", environ={}).model_name == "hashing-256"
    assert make_embedder(environ={"MEMVAULT_EMBEDDER": "hashing:512"}).dim == 512
    assert make_embedder("hashing:64", environ={"MEMVAULT_EMBEDDER": "minilm"}).dim == 64

    llm_env = {"MEMVAULT_LLM_BASE_URL": "http://127.0.0.1:1/v1", "MEMVAULT_LLM_API_KEY": "k1"}
    embedder = make_embedder("openai:nomic-embed", environ=llm_env)
    assert isinstance(embedder, OpenAIEmbedder)
    assert (embedder.base_url, embedder.model) == ("http://127.0.0.1:1/v1", "nomic-embed")
    own = make_embedder(
        "openai:e5", environ={**llm_env, "MEMVAULT_EMBED_BASE_URL": "http://127.0.0.1:2/v1"}
    )
    assert isinstance(own, OpenAIEmbedder)
    assert own.base_url == "http://127.0.0.1:2/v1"


@pytest.mark.parametrize(
    "spec", ["bogus", "hashing:abc", "hashing:0", "hashing:-3", "openai:", "minilm:large"]
)
def test_make_embedder_rejects_unknown_specs(spec: str) -> None:
    with pytest.raises(MemvaultError, match=r"use 'minilm', 'hashing', 'hashing:<dim>'"):
        make_embedder(spec, environ={})
