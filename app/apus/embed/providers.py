"""Provider name -> Embedder, and the auto/local/none decision between semantic and keyword-only."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard

from apus.config import SearchSettings
from apus.embed.base import Embedder, EmbeddingIdentity, EmbeddingUnavailable, IndexKind
from apus.embed.clients import (
    LMSTUDIO_DEFAULT_URL,
    OLLAMA_DEFAULT_URL,
    create_client,
    provider_config,
)
from apus.embed.local.catalog import get_manifest
from apus.embed.local.filehash import cached_sha256
from apus.embed.local.gguf_info import GGUFFormatError, cached_gguf_info
from apus.embed.prefixes import PrefixScheme, detect_family, scheme_for_family
from apus.embed.remote import RemoteEmbedder, UnavailableEmbedder
from apus.embedding_services import is_remote
from apus.errors import ConfigError

if TYPE_CHECKING:
    from apus.embed.local.embedder import LocalEmbedder

__all__ = [
    "LMSTUDIO_DEFAULT_URL",
    "OLLAMA_DEFAULT_URL",
    "ProviderResolution",
    "create_embedder",
    "create_local_embedder",
    "is_remote",
    "known_failure",
    "resolve_provider",
    "retry_after_crashes",
]
# A model file of unknown origin may declare a huge context (Qwen3: 32768); each input is
# processed in one micro-batch whose attention buffer grows with its square, so ask for what
# the catalogue models use (notes are chunked to ~400 tokens). local.contextSize overrides it.
MAX_UNKNOWN_CONTEXT = 2048


@dataclass
class ProviderResolution:
    """What search and indexing can use: semantic (an embedder), keyword-only, or off.

    "unavailable": an explicitly named provider could not be set up; its embedder fails on
    use with the reason and the fix, so callers treat it like a provider that went down.
    """

    embedder: Embedder | None
    state: Literal["semantic", "keyword-only", "off", "unavailable"]
    reason: str
    fix: str = ""
    vector_dims: int = 0  # memory.search.vectorDims: the width vectors.faiss searches at
    vector_index: IndexKind = "flat"  # memory.search.vectorIndex: how it stores them


def resolve_provider(settings: SearchSettings) -> ProviderResolution:
    """Decide without starting anything; a local server starts on the first embed call."""
    if settings.provider == "none":
        return ProviderResolution(None, "off", "provider is none")
    try:
        embedder = create_embedder(settings)
    except EmbeddingUnavailable as exc:
        if is_remote(settings.provider):
            failing = UnavailableEmbedder(settings.provider, exc)
            return ProviderResolution(failing, "unavailable", exc.reason, exc.fix)
        return ProviderResolution(None, "keyword-only", exc.reason, exc.fix)
    if _is_local(embedder):
        reason = f"local model {embedder.identity.model}"
    else:
        info = embedder.describe()
        reason = f"{settings.provider} model {info['model']} at {info['endpoint']}"
    return ProviderResolution(
        embedder,
        "semantic",
        reason,
        vector_dims=settings.vector_dims,
        vector_index=settings.vector_index,
    )


def known_failure(embedder: Embedder | None) -> EmbeddingUnavailable | None:
    """A failure the provider knows before any request: the local server stopped being
    restarted after crashes in a row."""
    return embedder.known_failure() if _is_local(embedder) else None


def retry_after_crashes(embedder: Embedder | None) -> None:
    """Let a local server that crashed again and again start once more (a run by hand)."""
    if _is_local(embedder):
        embedder.retry_after_crashes()


def _is_local(embedder: Embedder | None) -> TypeGuard[LocalEmbedder]:
    if embedder is None:
        return False
    # Imported once there is an embedder: the local one's module brings httpx, which a
    # command without embeddings (a keyword search) never needs.
    from apus.embed.local.embedder import LocalEmbedder

    return isinstance(embedder, LocalEmbedder)


def create_embedder(
    settings: SearchSettings, *, environ: Mapping[str, str] | None = None
) -> Embedder:
    """The configured provider's Embedder; EmbeddingUnavailable if it cannot be set up.

    Nothing is contacted here: keys are checked for presence only, and a hosted service
    first hears from Apus on the first embedding request.
    """
    provider = settings.provider
    if provider == "none":
        raise EmbeddingUnavailable(
            "provider is none", fix="set memory.search.provider to local (or auto)"
        )
    if provider in ("auto", "local"):
        return create_local_embedder(settings)
    config = provider_config(settings, os.environ if environ is None else environ)
    client, scheme, dims = create_client(config, settings)
    details: dict[str, Any] = {"key": config.key_source or "none"}
    if config.api != provider:
        details["api"] = config.api
    return RemoteEmbedder(
        provider=provider,
        model=config.model,
        client=client,
        scheme=scheme,
        dims=dims,
        details=details,
    )


def create_local_embedder(settings: SearchSettings) -> LocalEmbedder:
    """The managed-server Embedder for `local.modelPath` or the catalogue model (not started)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise EmbeddingUnavailable(
            "llama-cpp-python is not installed, so local embeddings cannot run",
            fix="pip install llama-cpp-python  (or choose a remote provider)",
        )
    local = settings.local
    if local.model_path:
        path, name, sha256, family, dims, context = _model_from_path(Path(local.model_path))
    else:
        path, name, sha256, family, dims, context = _model_from_catalogue(settings.model)
    scheme = _scheme(local.prefix_scheme or family)
    context = local.context_size or context
    # Imported once there is a model to serve (they bring httpx).
    from apus.embed.local.embedder import LocalEmbedder
    from apus.embed.local.server_manager import ManagedServer, ServerSpec

    spec = ServerSpec(
        model_path=path,
        model_sha256=sha256,
        context=context,
        gpu_layers=local.gpu_layers,
        threads=local.threads,
        idle_stop_seconds=local.idle_stop_seconds,
        startup_timeout_seconds=local.startup_timeout_seconds,
    )
    return LocalEmbedder(
        server=ManagedServer(spec),
        identity=EmbeddingIdentity("local", name, sha256, scheme.label, dims),
        scheme=scheme,
        model_file=path,
        batch_tokens=local.batch_tokens,
    )


def _model_from_catalogue(name: str) -> tuple[Path, str, str, str, int, int]:
    from apus.embed.local.download import DownloadError, verified_download

    try:
        manifest = get_manifest(name)
    except ConfigError as exc:
        raise EmbeddingUnavailable(exc.reason, fix=exc.fix) from exc
    try:
        path = verified_download(manifest, model=manifest.name, kind="embedding model")
    except DownloadError as exc:
        raise EmbeddingUnavailable(exc.reason, fix=exc.fix) from exc
    return path, manifest.name, manifest.sha256, manifest.family, manifest.dims, manifest.context


def _model_from_path(raw: Path) -> tuple[Path, str, str, str, int, int]:
    path = raw.expanduser()
    fix = "set memory.search.local.modelPath to a GGUF embedding model (or clear it)"
    if not path.is_file():
        raise EmbeddingUnavailable(f"memory.search.local.modelPath {path} does not exist", fix=fix)
    try:
        info = cached_gguf_info(path)
    except (GGUFFormatError, OSError) as exc:
        raise EmbeddingUnavailable(f"{path} is not a usable GGUF file: {exc}", fix=fix) from exc
    dims = info.embedding_length
    if not dims:
        raise EmbeddingUnavailable(f"{path.name} does not declare its embedding size", fix=fix)
    context = min(info.context_length or 2048, MAX_UNKNOWN_CONTEXT)
    return path, path.name, cached_sha256(path), detect_family(info.metadata), dims, context


def _scheme(family: str) -> PrefixScheme:
    try:
        return scheme_for_family(family)
    except ValueError as exc:
        raise EmbeddingUnavailable(
            str(exc), fix="set memory.search.local.prefixScheme to one of the known schemes"
        ) from exc
