"""The embedding check of `apus doctor`: the provider resolves, one real embedding, its speed,
and how long the chunks still waiting for vectors will take at that speed."""

from __future__ import annotations

from typing import Any

from apus.config import SearchSettings, Settings
from apus.embed.base import Embedder, probe, probe_budget
from apus.embed.local.catalog import get_manifest
from apus.embed.local.download import DownloadError, model_path, verify_model_file
from apus.embed.local.offload import Offload
from apus.embed.providers import is_remote, known_failure, resolve_provider
from apus.errors import ConfigError
from apus.index.store import Store
from apus.memory.doctor_report import Check
from apus.units import human_duration
from apus.vault.text import count_tokens

# What the speed is measured on: note-like prose, a few requests' worth for a local model.
_SAMPLE = (
    "Meeting notes: we agreed to move the release to the second week of March, after the "
    "migration of the billing service is done and the support team has read the new runbook. "
    "Open questions remain about the retention policy for archived projects and who owns the "
    "dashboards once the data team moves to the new warehouse."
)
_SAMPLE_PASSAGES = 8
# Pending chunks whose length is measured to estimate the tokens of them all.
_PENDING_SAMPLE = 200


def check_embedding(settings: Settings) -> Check:
    search = settings.search
    facts: dict[str, Any] = {"provider": search.provider, "device": None, "tokens_per_second": None}
    if search.provider == "none":
        return Check(
            "embedding", True, "provider = none: keyword search only, by choice", facts=facts
        )
    problem = _model_file_problem(search)
    if problem is not None:
        return Check("embedding", False, problem.reason, problem.fix, facts)
    provider = resolve_provider(search)
    embedder = provider.embedder
    if embedder is None:
        # auto without a model is keyword-only by design; an explicit local is not.
        ok = search.provider == "auto"
        return Check(
            "embedding", ok, f"keyword search only: {provider.reason}", provider.fix, facts
        )
    try:
        return _measure(settings, embedder, facts)
    finally:
        embedder.close()


def _model_file_problem(search: SearchSettings) -> DownloadError | ConfigError | None:
    """The catalogue model re-hashed in full: bytes changed with the mtime put back are
    caught here, not trusted from the cached verdict."""
    if search.provider not in ("auto", "local") or search.local.model_path:
        return None
    try:
        manifest = get_manifest(search.model)
    except ConfigError as exc:
        return exc
    path = model_path(manifest)
    if not path.is_file():
        return None  # resolving the provider says it is not downloaded, with the fix
    try:
        verify_model_file(path, manifest, quarantine=False, rehash=True)
    except DownloadError as exc:
        return exc
    return None


def _measure(settings: Settings, embedder: Embedder, facts: dict[str, Any]) -> Check:
    identity = embedder.identity
    facts["model"] = identity.model
    stopped = known_failure(embedder)
    if stopped is not None:
        return Check("embedding", False, stopped.reason, stopped.fix, facts)
    remote = is_remote(settings.search.provider)
    budget = probe_budget(remote)
    if not remote:  # start (or attach to) the server first: loading is not embedding speed
        warm = probe(embedder, budget)
        if not warm.ok:
            return _failed(warm.error, warm.fix, facts, embedder)
    texts = [
        embedder.document_text(_SAMPLE, None) for _ in range(_SAMPLE_PASSAGES if not remote else 1)
    ]
    timed = probe(embedder, budget, documents=texts)
    if not timed.ok:
        return _failed(timed.error, timed.fix, facts, embedder)
    tokens = sum(count_tokens(text) for text in texts)
    speed = tokens / max(timed.seconds, 1e-6)
    described = embedder.describe()
    facts.update(
        device=described.get("device") or ("remote" if remote else None),
        tokens_per_second=round(speed, 1),
        dims=timed.dims,
    )
    where = str(facts["device"])
    if not remote:
        # llama.cpp's own answers: whether the build offloads, and the layers it put there.
        facts.update(
            gpu_offload=described.get("gpu_offload"),
            gpu_layers=described.get("gpu_layers"),
            offloaded_layers=described.get("offloaded_layers"),
            model_layers=described.get("model_layers"),
            system_info=described.get("system_info"),
        )
        where += f" ({_offload_words(facts)})"
    pending_chunks, pending_tokens = _pending(settings, embedder)
    pending_seconds = pending_tokens / speed if speed > 0 else None
    facts.update(pending_chunks=pending_chunks, pending_seconds=_rounded(pending_seconds))
    detail = f"{identity.model} on {where}: {speed:,.0f} tokens/s"
    if pending_chunks:
        detail += (
            f"; {pending_chunks:,} chunks wait for vectors, about {_duration(pending_seconds)}"
        )
    else:
        detail += "; no chunk waits for vectors"
    return Check("embedding", True, detail, facts=facts)


def _offload_words(facts: dict[str, Any]) -> str:
    offload = Offload(
        bool(facts.get("gpu_offload")),
        int(facts.get("offloaded_layers") or 0),
        facts.get("model_layers"),
    )
    return offload.describe()


def _failed(error: str | None, fix: str | None, facts: dict[str, Any], embedder: Embedder) -> Check:
    described = embedder.describe()
    facts.update(device=described.get("device"), log=described.get("log"))
    return Check(
        "embedding",
        False,
        error or "the embedding request failed",
        fix or "apus memory status --deep  (after fixing the provider)",
        facts,
    )


def _pending(settings: Settings, embedder: Embedder) -> tuple[int, float]:
    """Chunks without a vector of this identity, and about how many tokens they hold."""
    index_dir = settings.index_dir()
    if not Store.exists(index_dir):
        return 0, 0.0
    store = Store(index_dir, readonly=True)
    try:
        missing = store.chunks_missing_vectors(embedder.identity.key())
        sample = store.chunks_by_id(missing[:_PENDING_SAMPLE])
    finally:
        store.close()
    if not sample:
        return len(missing), 0.0
    measured = [count_tokens(embedder.document_text(c.text, c.title)) for c in sample.values()]
    return len(missing), len(missing) * sum(measured) / len(measured)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _duration(seconds: float | None) -> str:
    return "an unknown time" if seconds is None else human_duration(seconds)
