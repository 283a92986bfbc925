"""The Embedder protocol, the identity vectors are made with, and the embedding errors."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from apus.errors import ApusError

# How vectors.faiss stores vectors (memory.search.vectorIndex): float32, or float16 codes.
IndexKind = Literal["flat", "fp16"]

EmbedKind = Literal["query", "document"]


@dataclass(frozen=True)
class EmbeddingIdentity:
    """What a vector depends on; two vectors are comparable only if their identities match."""

    provider: str
    model: str
    model_sha256: str
    prefix_scheme: str
    dims: int

    @property
    def family(self) -> str:
        """The model family: the prefix scheme's name without its version (`name@version`)."""
        return self.prefix_scheme.split("@", 1)[0]

    def key(self) -> str:
        """A stable short hash of every field (used in cache keys and index meta)."""
        canonical = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


class EmbeddingError(ApusError):
    """Base of the embedding errors; `reason` is already redacted."""

    def __init__(self, reason: str, fix: str | None = None) -> None:
        super().__init__(redact(reason), fix)


class EmbeddingUnavailable(EmbeddingError):
    """The provider cannot be started or is not configured (no model, bad GGUF, no URL)."""


class EmbeddingRequestError(EmbeddingError):
    """A request to a provider that was available failed."""


class EmbeddingConnectionError(EmbeddingRequestError):
    """The provider could not be reached, or dropped the connection mid-request."""


class EmbeddingTimeout(EmbeddingRequestError):
    """A request (or a probe) ran past its time budget."""


class EmbeddingAuthError(EmbeddingRequestError):
    """The service refused the credentials: a wrong, expired or missing key or token."""


class EmbeddingRateLimited(EmbeddingRequestError):
    """The service kept answering 429, or asked to wait longer than the caller's budget."""

    def __init__(
        self, reason: str, fix: str | None = None, *, retry_after: float | None = None
    ) -> None:
        super().__init__(reason, fix)
        self.retry_after = retry_after


_SINGLE_ATTEMPT: ContextVar[bool] = ContextVar("apus_embed_single_attempt", default=False)


@contextmanager
def single_attempt() -> Iterator[None]:
    """Requests made inside this block are tried once: a probe reports a 429, it never waits."""
    token = _SINGLE_ATTEMPT.set(True)
    try:
        yield
    finally:
        _SINGLE_ATTEMPT.reset(token)


def retries_allowed() -> bool:
    """False inside `single_attempt()`."""
    return not _SINGLE_ATTEMPT.get()


@runtime_checkable
class Embedder(Protocol):
    """Turns already-prefixed texts into L2-normalised float32 vectors."""

    @property
    def identity(self) -> EmbeddingIdentity: ...

    def query_text(self, query: str) -> str: ...

    def document_text(self, text: str, title: str | None) -> str: ...

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind, timeout: float | None = None
    ) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one end-to-end embedding request made to check a provider."""

    ok: bool
    seconds: float
    dims: int | None
    error: str | None
    fix: str | None = None  # what the error says to do, when it says


PROBE_TEXT = "apus embedding probe"
PROBE_BUDGET_REMOTE_S = 60.0  # a remote endpoint that takes longer than this is not usable
PROBE_BUDGET_LOCAL_S = 300.0  # a cold local server may load a model from a slow disk first


def probe_budget(remote: bool) -> float:
    """Seconds a probe of a remote provider, or of the managed local server, may take."""
    return PROBE_BUDGET_REMOTE_S if remote else PROBE_BUDGET_LOCAL_S


def probe(
    embedder: Embedder, timeout_s: float, *, documents: Sequence[str] | None = None
) -> ProbeResult:
    """Embed one query (or these already-prefixed `documents`, in one call) within
    `timeout_s` seconds, whatever the provider does meanwhile.

    The request runs on a daemon thread so a provider that hangs (a server still loading a
    model, a remote endpoint that never answers) cannot hold the caller past its budget. It is
    made once, without retries: a rate-limited or failing service is reported as it is.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            with single_attempt():
                if documents is None:
                    query = [embedder.query_text(PROBE_TEXT)]
                    vectors = embedder.embed(query, kind="query", timeout=timeout_s)
                else:
                    vectors = embedder.embed(documents, kind="document", timeout=timeout_s)
            outcome["dims"] = int(vectors.shape[1])
        except Exception as exc:  # reported, not raised: a probe describes, it never fails
            outcome["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=run, name="apus-embed-probe", daemon=True)
    worker.start()
    worker.join(timeout_s)
    seconds = time.monotonic() - started
    timed_out_message = f"embedding probe timed out after {timeout_s:g}s"
    if worker.is_alive():
        return ProbeResult(ok=False, seconds=seconds, dims=None, error=timed_out_message)
    error = outcome.get("error")
    if isinstance(error, EmbeddingTimeout):
        return ProbeResult(ok=False, seconds=seconds, dims=None, error=timed_out_message)
    if isinstance(error, EmbeddingError):
        return ProbeResult(False, seconds, None, error.reason, error.fix)
    if error is not None:
        return ProbeResult(ok=False, seconds=seconds, dims=None, error=redact(str(error)))
    return ProbeResult(ok=True, seconds=seconds, dims=outcome["dims"], error=None)


_SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password|authorization)\s*[=:]\s*)[^\s&,;\"']+"),
    # Vendor key shapes (sk-..., hf_...): long and with a digit, so `hf_hub_download` survives.
    re.compile(r"\b(?:sk|pk|rk|hf|gsk|xai)[-_](?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{16,}"),
)
_registered_secrets: set[str] = set()
_registered_lock = threading.Lock()


def register_secret(secret: str) -> None:
    """Make `redact` hide this exact value from now on (API keys we hold, server keys)."""
    if len(secret) >= 4:
        with _registered_lock:
            _registered_secrets.add(secret)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove API keys and bearer tokens from a message that may reach a user or a log."""
    with _registered_lock:
        known = [*_registered_secrets, *secrets]
    for secret in sorted(known, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    text = _SECRET_PATTERNS[0].sub(r"\1***", text)
    text = _SECRET_PATTERNS[1].sub(r"\1***", text)
    return _SECRET_PATTERNS[2].sub("***", text)


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row as float32; an all-zero row stays zero instead of becoming NaN."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbeddingRequestError(f"expected a 2-D batch of vectors, got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingRequestError("the provider returned non-finite numbers (NaN or inf)")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit
