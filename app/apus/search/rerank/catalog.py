"""Reranking models shipped in `models/rerankers/*.toml`: a cross-encoder's ONNX file and its
tokenizer, each pinned to a commit and checked by size and sha256 like an embedding model."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apus import paths
from apus.embed.local.catalog import load_manifests
from apus.errors import ConfigError

DEFAULT_RERANKER = "ms-marco-minilm-l12-v2"

_SHA256 = re.compile(r"[0-9a-f]{64}")
_REVISION = re.compile(r"[0-9a-f]{40}")
_KEYS = {"name", "repo", "revision", "description", "max_tokens", "model", "tokenizer"}
_FILE_KEYS = {"file", "size", "sha256"}


@dataclass(frozen=True)
class RerankerFile:
    """One file of a reranking model on the hub (an `apus.embed.local.catalog.HubFile`)."""

    name: str  # the model it belongs to
    repo: str
    file: str
    revision: str
    size: int
    sha256: str


@dataclass(frozen=True)
class RerankerManifest:
    """A downloadable cross-encoder: its ONNX graph and the tokenizer that feeds it."""

    name: str
    repo: str
    revision: str
    description: str
    max_tokens: int  # the longest query + passage the model was trained on
    model: RerankerFile
    tokenizer: RerankerFile

    @property
    def files(self) -> tuple[RerankerFile, RerankerFile]:
        return self.model, self.tokenizer

    @property
    def size(self) -> int:
        return self.model.size + self.tokenizer.size


def rerankers_dir() -> Path:
    return paths.bundled_models_dir() / "rerankers"


def load_rerankers(directory: Path | None = None) -> dict[str, RerankerManifest]:
    """Every reranker manifest in `directory` (default: the bundled one), by name."""
    return load_manifests(directory or rerankers_dir(), _parse, "reranker")


def get_reranker(name: str, catalog: dict[str, RerankerManifest] | None = None) -> RerankerManifest:
    """The manifest called `name` (empty: the default), or a ConfigError naming the rest."""
    models = catalog if catalog is not None else load_rerankers()
    wanted = name or DEFAULT_RERANKER
    if wanted not in models:
        known = ", ".join(sorted(models)) or "none"
        raise ConfigError(
            f"Unknown reranking model {wanted!r} (catalogue: {known}).",
            fix="apus models list  (then set memory.search.rerank.model to one of them)",
        )
    return models[wanted]


def _parse(file: Path) -> RerankerManifest:
    with file.open("rb") as handle:
        data: dict[str, Any] = tomllib.load(handle)
    if set(data) != _KEYS:
        missing, unknown = sorted(_KEYS - set(data)), sorted(set(data) - _KEYS)
        raise ValueError(f"{file.name}: missing keys {missing}, unknown keys {unknown}")
    if not _REVISION.fullmatch(str(data["revision"])):
        raise ValueError(f"{file.name}: revision must be a 40-digit commit hash")
    if not isinstance(data["max_tokens"], int) or data["max_tokens"] <= 0:
        raise ValueError(f"{file.name}: max_tokens must be a positive integer")
    model, tokenizer = (_file(file, data, key) for key in ("model", "tokenizer"))
    return RerankerManifest(
        name=str(data["name"]),
        repo=str(data["repo"]),
        revision=str(data["revision"]),
        description=str(data["description"]),
        max_tokens=data["max_tokens"],
        model=model,
        tokenizer=tokenizer,
    )


def _file(source: Path, data: dict[str, Any], key: str) -> RerankerFile:
    table = data[key]
    if not isinstance(table, dict) or set(table) != _FILE_KEYS:
        raise ValueError(f"{source.name}: [{key}] needs exactly {sorted(_FILE_KEYS)}")
    if not _SHA256.fullmatch(str(table["sha256"])):
        raise ValueError(f"{source.name}: [{key}] sha256 must be 64 lowercase hex digits")
    if not isinstance(table["size"], int) or table["size"] <= 0:
        raise ValueError(f"{source.name}: [{key}] size must be a positive integer")
    return RerankerFile(
        name=str(data["name"]),
        repo=str(data["repo"]),
        file=str(table["file"]),
        revision=str(data["revision"]),
        size=table["size"],
        sha256=str(table["sha256"]),
    )
