"""`apus bench embed`: tokens/s through the whole pipeline vs raw `llama_cpp.Llama.embed`.

Both sides embed exactly the same texts (the prefixed chunks the pipeline sends) with the
same model in the same run, so the ratio says what the pipeline costs on top of llama.cpp.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from apus.config import load_settings


@dataclass(frozen=True)
class EmbedBenchResult:
    files: int
    chunks: int
    tokens: int
    pipeline_seconds: float
    raw_seconds: float

    @property
    def pipeline_tokens_per_s(self) -> float:
        return self.tokens / self.pipeline_seconds if self.pipeline_seconds else 0.0

    @property
    def raw_tokens_per_s(self) -> float:
        return self.tokens / self.raw_seconds if self.raw_seconds else 0.0

    @property
    def ratio(self) -> float:
        return self.pipeline_tokens_per_s / self.raw_tokens_per_s if self.raw_tokens_per_s else 0.0


def _copy_subset(corpus: Path, target: Path, limit_files: int) -> int:
    """The first `limit_files` Markdown files (sorted, so runs compare) into a scratch vault."""
    files = sorted(p for p in corpus.rglob("*.md") if p.is_file())[:limit_files]
    for path in files:
        destination = target / path.relative_to(corpus)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return len(files)


def run_embed_bench(model: Path, corpus: Path, *, limit_files: int = 200) -> EmbedBenchResult:
    import llama_cpp

    from apus.index.store import Store
    from apus.index.vectors import _title_for_prefix
    from apus.memory import Memory

    with tempfile.TemporaryDirectory(prefix="apus-bench-embed-") as scratch:
        vault = Path(scratch) / "vault"
        files = _copy_subset(corpus, vault, limit_files)
        index_dir = Path(scratch) / "index"
        settings = load_settings(
            overrides={
                "vault": str(vault),
                "memory.search.provider": "local",
                "memory.search.local.modelPath": str(model),
                "memory.search.store.path": str(index_dir),
            }
        )
        memory = Memory(settings=settings)
        embedder = memory.provider.embedder
        if embedder is None:
            raise RuntimeError(f"the model cannot be used: {memory.provider.reason}")
        # Start the server before the clock runs: a user's server is already warm.
        embedder.embed([embedder.query_text("warm up")], kind="query")
        started = time.perf_counter()
        report = memory.sync()
        pipeline_seconds = time.perf_counter() - started
        if not report.embedding.ok:
            raise RuntimeError(report.embedding.message())
        store = Store(index_dir, readonly=True)
        try:
            texts = [
                embedder.document_text(c.text, _title_for_prefix(c.title, c.path))
                for c in store.iter_chunks()
            ]
        finally:
            store.close()
        context = int(embedder.describe().get("context", 2048) or 2048)
        batch_tokens = settings.search.local.batch_tokens
        memory.close()

    llm = llama_cpp.Llama(
        model_path=str(model),
        embedding=True,
        n_ctx=context,
        n_batch=context,
        n_ubatch=context,
        verbose=False,
    )
    counts = [len(llm.tokenize(text.encode("utf-8"))) for text in texts]
    llm.embed(texts[:2])  # same warm start as the pipeline
    started = time.perf_counter()
    for pack in _packs(texts, counts, batch_tokens):
        llm.embed(pack)
    raw_seconds = time.perf_counter() - started
    llm.close()
    return EmbedBenchResult(files, len(texts), sum(counts), pipeline_seconds, raw_seconds)


def _packs(texts: list[str], counts: list[int], budget: int) -> list[list[str]]:
    """Texts grouped up to `budget` tokens per call, as the pipeline groups its requests:
    both sides then pay the same attention cost, and the ratio is the pipeline's overhead."""
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
