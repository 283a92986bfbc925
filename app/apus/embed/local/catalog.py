"""Model manifests shipped in `models/*.toml`: where each GGUF comes from and what it is."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Protocol, TypeVar

from apus import paths
from apus.embed.prefixes import scheme_for_family
from apus.errors import ConfigError

DEFAULT_MODEL = "embeddinggemma-300m"

_SHA256 = re.compile(r"[0-9a-f]{64}")
_REVISION = re.compile(r"[0-9a-f]{40}")


class HubFile(Protocol):
    """One file on the model hub, pinned to a commit and checked by size and sha256: what
    `apus models pull` downloads and verifies (an embedding GGUF, a reranker's ONNX file or
    its tokenizer)."""

    @property
    def name(self) -> str: ...  # the catalogue model it belongs to (`apus models pull NAME`)

    @property
    def repo(self) -> str: ...

    @property
    def file(self) -> str: ...  # its path in the repository

    @property
    def revision(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def sha256(self) -> str: ...


@dataclass(frozen=True)
class ModelManifest:
    """One downloadable model, pinned to a commit and checked by size and sha256."""

    name: str
    repo: str
    file: str
    revision: str
    size: int
    sha256: str
    dims: int
    context: int
    family: str
    description: str


class _Named(Protocol):
    @property
    def name(self) -> str: ...


NamedManifest = TypeVar("NamedManifest", bound=_Named)


def load_manifests(
    folder: Path, parse: Callable[[Path], NamedManifest], what: str
) -> dict[str, NamedManifest]:
    """Every `*.toml` manifest in `folder`, parsed by `parse`, by name; a name defined twice
    is refused (`what` names the kind: the embedding models' and the rerankers' catalogues)."""
    found: dict[str, NamedManifest] = {}
    for file in sorted(folder.glob("*.toml")):
        manifest = parse(file)
        if manifest.name in found:
            raise ValueError(f"{file.name}: {what} {manifest.name!r} is defined twice")
        found[manifest.name] = manifest
    return found


def load_catalog(directory: Path | None = None) -> dict[str, ModelManifest]:
    """Every manifest in `directory` (default: the bundled models folder), by name."""
    return load_manifests(directory or paths.bundled_models_dir(), _parse, "model name")


def get_manifest(name: str, catalog: dict[str, ModelManifest] | None = None) -> ModelManifest:
    """The manifest called `name`, or a ConfigError naming the models that exist."""
    models = catalog if catalog is not None else load_catalog()
    wanted = name or DEFAULT_MODEL
    if wanted not in models:
        known = ", ".join(sorted(models)) or "none"
        raise ConfigError(
            f"Unknown embedding model {wanted!r} (catalogue: {known}).",
            fix="apus models list  (then set memory.search.model to one of them)",
        )
    return models[wanted]


def _parse(file: Path) -> ModelManifest:
    with file.open("rb") as handle:
        data: dict[str, Any] = tomllib.load(handle)
    names = [item.name for item in fields(ModelManifest)]
    missing = [name for name in names if name not in data]
    unknown = sorted(set(data) - set(names))
    if missing or unknown:
        raise ValueError(f"{file.name}: missing keys {missing}, unknown keys {unknown}")
    manifest = ModelManifest(**{name: data[name] for name in names})
    if not _SHA256.fullmatch(manifest.sha256):
        raise ValueError(f"{file.name}: sha256 must be 64 lowercase hex digits")
    if not _REVISION.fullmatch(manifest.revision):
        raise ValueError(f"{file.name}: revision must be a 40-digit commit hash")
    scheme_for_family(manifest.family)  # ValueError names the known families
    for key in ("size", "dims", "context"):
        value = getattr(manifest, key)
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{file.name}: {key} must be a positive integer")
    return manifest
