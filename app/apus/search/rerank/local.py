"""The local reranker: a cross-encoder ONNX model run by onnxruntime, fed by its own
tokenizer (the `tokenizers` library), on this machine's CPU."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from apus.config import RerankSettings
from apus.search.rerank.catalog import RerankerManifest, get_reranker
from apus.search.rerank.scorer import RerankError

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

# Pairs per onnxruntime call. On two shared cores, 20 pairs of ~210 tokens took 650 ms of
# CPU in runs of 4, 820 ms in runs of 10 and 920 ms in one run of 20 (less padding, warmer
# caches); a run is also what the deadline waits for at most.
BATCH_PAIRS = 4
# A query longer than this many tokens is cut: the passage is what the model must read.
_QUERY_TOKENS = 64
_MODEL_PATH_FIX = (
    "set memory.search.rerank.local.modelPath to a cross-encoder .onnx file with its "
    "tokenizer.json beside it (or clear it to use the catalogue model)"
)


class CrossEncoder:
    """Scores (query, passage) pairs with one forward pass each: the [CLS] logit of a
    BERT-shaped cross-encoder (`input_ids`, `attention_mask`, optional `token_type_ids` in;
    one logit a pair out). Thread-safe: onnxruntime runs concurrent calls, and the
    tokenizer is never changed after loading."""

    def __init__(
        self,
        model_file: Path,
        tokenizer_file: Path,
        *,
        name: str,
        max_tokens: int = 512,
        threads: int = 1,
    ) -> None:
        import onnxruntime  # type: ignore[import-untyped]  # ships no type information
        from tokenizers import Tokenizer

        self.name = name
        self._max_tokens = max_tokens
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # the library's own error types are not exported
            raise RerankError(
                f"{tokenizer_file} is not a usable tokenizer ({exc})", fix=_MODEL_PATH_FIX
            ) from exc
        tokenizer.no_padding()  # padded here, to the longest pair of each run
        tokenizer.no_truncation()  # cut here: the passage, never the query
        self._tokenizer: Tokenizer = tokenizer
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: never print into a terminal app
        try:
            self._session = onnxruntime.InferenceSession(
                str(model_file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own (unexported) exception types
            raise RerankError(
                f"{model_file} is not a usable ONNX model ({type(exc).__name__}: {exc})",
                fix=_MODEL_PATH_FIX,
            ) from exc
        self._inputs = {item.name for item in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise RerankError(
                f"{model_file.name} does not take {', '.join(sorted(missing))}: it is not a "
                "BERT-shaped cross-encoder",
                fix=_MODEL_PATH_FIX,
            )
        self._lock = threading.Lock()  # a search at a time: the CPU is the limit anyway

    @property
    def label(self) -> str:
        return f"{self.name} (local)"

    @property
    def batch_size(self) -> int:
        return BATCH_PAIRS

    def score(
        self, query: str, passages: Sequence[str], *, timeout: float, passage_tokens: int
    ) -> list[float]:
        """The model's logit for each passage, read up to `passage_tokens` (`timeout` is the
        stage's to keep: a run is never cut short)."""
        if not passages:
            return []
        tokenizer = self._tokenizer
        asked = tokenizer.encode(query, add_special_tokens=False)
        asked.truncate(_QUERY_TOKENS)
        room = max(1, min(passage_tokens, self._max_tokens - len(asked.ids) - 4))
        pairs: list[Encoding] = []
        for encoded in tokenizer.encode_batch(list(passages), add_special_tokens=False):
            encoded.truncate(room)
            pairs.append(tokenizer.post_process(asked, encoded, add_special_tokens=True))
        feed = self._feed(pairs)
        with self._lock:
            try:
                outputs = self._session.run(None, feed)
            except Exception as exc:  # onnxruntime's own exception types
                raise RerankError(
                    f"the reranking model {self.name} failed ({type(exc).__name__}: {exc})",
                    fix=_MODEL_PATH_FIX,
                ) from exc
        return _logits(outputs[0], len(pairs), self.name)

    def _feed(self, pairs: list[Encoding]) -> dict[str, Any]:
        width = max(len(pair.ids) for pair in pairs)
        ids = np.zeros((len(pairs), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, pair in enumerate(pairs):
            length = len(pair.ids)
            ids[row, :length] = pair.ids
            mask[row, :length] = 1
            types[row, :length] = pair.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        return feed

    def close(self) -> None:
        """The session is freed with the object; nothing to stop."""


def _logits(output: Any, expected: int, name: str) -> list[float]:
    """One score a pair from the model's output: [pairs, 1] or [pairs]."""
    scores = np.asarray(output, dtype=np.float64)
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.shape != (expected,):
        raise RerankError(
            f"the reranking model {name} answered shape {scores.shape} for {expected} pairs; "
            "a cross-encoder answers one score a pair",
            fix=_MODEL_PATH_FIX,
        )
    return [float(value) for value in scores]


def local_scorer(settings: RerankSettings) -> CrossEncoder:
    """The cross-encoder the settings name: `local.modelPath` (its tokenizer.json beside
    it), else the catalogue model, downloaded and verified."""
    local = settings.local
    if local.model_path:
        model_file = Path(local.model_path).expanduser()
        tokenizer_file = model_file.with_name("tokenizer.json")
        for path in (model_file, tokenizer_file):
            if not path.is_file():
                raise RerankError(
                    f"memory.search.rerank.local.modelPath: {path} does not exist",
                    fix=_MODEL_PATH_FIX,
                )
        name, max_tokens = model_file.name, 512
    else:
        manifest = _catalogue_model(settings.model)
        model_file, tokenizer_file = _verified(manifest)
        name, max_tokens = manifest.name, manifest.max_tokens
    return CrossEncoder(
        model_file,
        tokenizer_file,
        name=name,
        max_tokens=max_tokens,
        threads=local.threads,
    )


def _catalogue_model(name: str) -> RerankerManifest:
    from apus.errors import ConfigError

    try:
        return get_reranker(name)
    except ConfigError as exc:
        raise RerankError(exc.reason, fix=exc.fix) from exc


def _verified(manifest: RerankerManifest) -> tuple[Path, Path]:
    """The model's two files, each checked by size and sha256 (once per file: the verdict
    is remembered beside it until the file changes)."""
    from apus.embed.local.download import DownloadError, verified_download

    try:
        return (
            verified_download(manifest.model, model=manifest.name, kind="reranking model"),
            verified_download(manifest.tokenizer, model=manifest.name, kind="reranking model"),
        )
    except DownloadError as exc:
        raise RerankError(exc.reason, fix=exc.fix) from exc
