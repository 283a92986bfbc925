"""`apus bench embed`: the pipeline's tokens/s next to raw `llama_cpp.Llama` configurations.

Every row embeds exactly the same texts (the prefixed chunks the pipeline sends) with the same
model in the same run: one sequence per call, several sequences packed per call up to N tokens,
llama.cpp packing a whole list itself, thread counts, flash attention. The pipeline row is a
real sync through the product's embedder and managed server; its ratio to the fastest raw row
says what the product leaves on the table.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apus.config import load_settings
from apus.indexing.progress import SyncProgress
from apus.indexing.request import SyncRequest


@dataclass(frozen=True)
class RawConfig:
    """One way of calling llama.cpp directly."""

    label: str
    pack_tokens: int | None  # tokens per `embed` call; None: every text alone
    n_batch: int = 0  # n_batch = n_ubatch (non-causal models need one ubatch); 0: the context
    threads: int = 0  # n_threads = n_threads_batch; 0: llama-cpp-python's default
    flash_attn: bool = False


@dataclass(frozen=True)
class Figure:
    label: str
    tokens: int
    seconds: float
    detail: str = ""

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class EmbedBenchResult:
    files: int
    chunks: int
    tokens: int
    longest: int  # tokens of the longest text
    raw: list[Figure]
    pipeline: Figure
    sync_seconds: float  # the first sync, chunking and keyword index included
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def best_raw(self) -> Figure:
        return max(self.raw, key=lambda figure: figure.tokens_per_s)

    @property
    def ratio(self) -> float:
        best = self.best_raw.tokens_per_s
        return self.pipeline.tokens_per_s / best if best else 0.0


def default_configs(context: int, cpus: int) -> list[RawConfig]:
    """The configurations compared by default: packing sizes, llama.cpp's own packing,
    threads and flash attention, each next to the product's current way (packs of 512)."""
    configs = [RawConfig("one sequence per call", None)]
    sizes = sorted({n for n in (256, 512, 1024) if n < context} | {context})
    configs += [RawConfig(f"packed to {n} tokens per call", n) for n in sizes]
    configs += [
        RawConfig(f"whole list per call, n_batch=n_ubatch={n}", 10**9, n_batch=n)
        for n in (512, 1024)
        if n < context
    ]
    for threads in sorted({1, cpus} - {0}):
        configs.append(RawConfig(f"packed to 512, {threads} thread(s)", 512, threads=threads))
    configs.append(RawConfig("packed to 512, flash attention", 512, flash_attn=True))
    return configs


def _copy_subset(corpus: Path, target: Path, limit_files: int) -> int:
    """The first `limit_files` Markdown files (sorted, so runs compare) into a scratch vault."""
    files = sorted(p for p in corpus.rglob("*.md") if p.is_file())[:limit_files]
    for path in files:
        destination = target / path.relative_to(corpus)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return len(files)


def run_embed_bench(
    model: Path,
    corpus: Path,
    *,
    limit_files: int = 200,
    rounds: int = 1,
    configs: Sequence[RawConfig] | None = None,
    say: Callable[[str], None] = lambda _line: None,
) -> EmbedBenchResult:
    """Rows run interleaved, `rounds` times; each row keeps its fastest round (the machine
    is shared and noisy, and the fastest round is the one least disturbed)."""
    with tempfile.TemporaryDirectory(prefix="apus-bench-embed-") as scratch:
        vault = Path(scratch) / "vault"
        files = _copy_subset(corpus, vault, limit_files)
        pipeline = _Pipeline(model, vault, Path(scratch) / "index")
        try:
            say(f"first sync of {files} files through the product's pipeline…")
            sync_seconds, first = pipeline.run(reembed=False)
            texts = pipeline.texts()
            context = pipeline.context
            raw_rows = list(configs or default_configs(context, os.cpu_count() or 1))
            counts = _token_counts(model, texts, context)
            total = sum(counts)
            best: dict[str, Figure] = {}
            pipeline_best = Figure("pipeline", total, first, pipeline.detail())
            for round_number in range(rounds):
                if round_number:
                    say(f"round {round_number + 1}: pipeline (re-embed)…")
                    _sync, seconds = pipeline.run(reembed=True)
                    if seconds < pipeline_best.seconds:
                        pipeline_best = Figure("pipeline", total, seconds, pipeline.detail())
                for config in raw_rows:
                    say(f"round {round_number + 1}: raw {config.label}…")
                    figure = _run_raw(model, config, texts, counts, context)
                    if figure is not None and (
                        config.label not in best or figure.seconds < best[config.label].seconds
                    ):
                        best[config.label] = figure
            settings = pipeline.settings_used()
        finally:
            pipeline.close()
    return EmbedBenchResult(
        files=files,
        chunks=len(texts),
        tokens=total,
        longest=max(counts, default=0),
        raw=[best[c.label] for c in raw_rows if c.label in best],
        pipeline=pipeline_best,
        sync_seconds=sync_seconds,
        settings=settings,
    )


class _Pipeline:
    """The product's way: a Memory session on a scratch vault, syncing with the real embedder
    (its managed llama.cpp server started before the clock runs, as a user's is warm)."""

    def __init__(self, model: Path, vault: Path, index_dir: Path) -> None:
        from apus.memory import Memory

        self.index_dir = index_dir
        self.settings = load_settings(
            overrides={
                "vault": str(vault),
                "memory.search.provider": "local",
                "memory.search.local.modelPath": str(model),
                "memory.search.store.path": str(index_dir),
            }
        )
        self.memory = Memory(settings=self.settings)
        embedder = self.memory.provider.embedder
        if embedder is None:
            raise RuntimeError(f"the model cannot be used: {self.memory.provider.reason}")
        self.embedder = embedder
        embedder.embed([embedder.query_text("warm up")], kind="query")
        self.context = int(embedder.describe().get("context", 2048) or 2048)

    def run(self, *, reembed: bool) -> tuple[float, float]:
        """(whole sync seconds, embedding stage seconds: first embed event to the end)."""
        embed_started: list[float] = []

        def watch(event: SyncProgress) -> None:
            if event.phase == "embed" and not embed_started:
                embed_started.append(time.perf_counter())

        started = time.perf_counter()
        report = self.memory.sync(SyncRequest(reembed=reembed), progress=watch)
        ended = time.perf_counter()
        if not report.embedding.ok:
            raise RuntimeError(report.embedding.message())
        return ended - started, ended - (embed_started[0] if embed_started else started)

    def texts(self) -> list[str]:
        from apus.index.store import Store
        from apus.indexing.embedding import title_for_prefix

        store = Store(self.index_dir, readonly=True)
        try:
            return [
                self.embedder.document_text(c.text, title_for_prefix(c.title, c.path))
                for c in store.iter_chunks()
            ]
        finally:
            store.close()

    def settings_used(self) -> dict[str, Any]:
        described = self.embedder.describe()
        keys = ("context", "batch_tokens", "device")
        return {key: described.get(key) for key in keys} | {
            "threads": self.settings.search.local.threads
        }

    def detail(self) -> str:
        used = self.settings_used()
        return f"batchTokens {used['batch_tokens']}, threads {used['threads'] or 'default'}"

    def close(self) -> None:
        self.memory.close()


def _token_counts(model: Path, texts: list[str], context: int) -> list[int]:
    """Tokens of each text as llama.cpp counts them (with BOS/EOS), capped at the context."""
    import llama_cpp

    vocab = llama_cpp.Llama(model_path=str(model), vocab_only=True, verbose=False)
    try:
        return [min(len(vocab.tokenize(t.encode("utf-8"))), context) for t in texts]
    finally:
        vocab.close()


def _run_raw(
    model: Path, config: RawConfig, texts: list[str], counts: list[int], context: int
) -> Figure | None:
    """Time one configuration; None when it cannot take every text whole (it would truncate)."""
    import llama_cpp

    n_batch = config.n_batch or context
    if n_batch < max(counts, default=0):
        return None
    options: dict[str, Any] = {"n_threads": config.threads, "n_threads_batch": config.threads}
    llm = llama_cpp.Llama(
        model_path=str(model),
        embedding=True,
        n_ctx=context,
        n_batch=n_batch,
        n_ubatch=n_batch,
        flash_attn=config.flash_attn,
        verbose=False,
        **(options if config.threads else {}),
    )
    try:
        llm.embed(texts[:2])  # the same warm start as the pipeline's server
        calls = [[t] for t in texts] if config.pack_tokens is None else None
        calls = calls or _packs(texts, counts, config.pack_tokens or n_batch)
        started = time.perf_counter()
        for call in calls:
            llm.embed(call)
        seconds = time.perf_counter() - started
    finally:
        llm.close()
    return Figure(config.label, sum(counts), seconds, f"{len(calls)} calls")


def _packs(texts: list[str], counts: list[int], budget: int) -> list[list[str]]:
    """Texts grouped up to `budget` real tokens per call (a text longer than that alone)."""
    packs: list[list[str]] = []
    current: list[str] = []
    used = 0
    for text, count in zip(texts, counts, strict=True):
        if current and used + count > budget:
            packs.append(current)
            current, used = [], 0
        current.append(text)
        used += count
    if current:
        packs.append(current)
    return packs
