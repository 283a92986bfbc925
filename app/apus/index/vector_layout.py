"""How vectors.faiss holds the store's vectors: the index kind and the width searched.

The store keeps every vector at the model's full width (it is the embedding cache); the FAISS
file may hold only the first `dims` dimensions of each, made unit length again. Models trained
for it (Matryoshka representation learning) rank almost as well on such a head, and a flat
search reads a third of the bytes at 256 of 768 dimensions. A change of width or kind
rebuilds the file once from the store, never re-embeds: the layout is part of the key the
file's stamp records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from apus.embed.base import EmbeddingIdentity, EmbeddingUnavailable, IndexKind

if TYPE_CHECKING:
    import faiss


# Prefix families trained to be truncated, and the width Apus searches them at by default:
# measured (`apus eval` on SciFact and LoCoMo, `apus bench vectors`; docs/architecture.md).
MATRYOSHKA_WIDTHS: dict[str, int] = {"embeddinggemma": 768}

_FIX = "set memory.search.vectorDims to the model's width or less (0: the model's default)"


@dataclass(frozen=True)
class VectorLayout:
    """The FAISS index kind and the width of the vectors it holds."""

    dims: int
    full_dims: int  # the model's width (what the store holds)
    # flat: float32 vectors; fp16: float16 codes, still searched exhaustively (half the bytes
    # to read per query, cosines within ~1e-3 of float32's)
    kind: IndexKind = "flat"

    @property
    def tag(self) -> str:
        return f"{self.kind}@{self.dims}"

    def key(self, identity: EmbeddingIdentity) -> str:
        """What the file's stamp must name: the identity, and the layout unless it is the
        plain full-width flat index (the key files written before layouts existed carry)."""
        if self.kind == "flat" and self.dims == self.full_dims:
            return identity.key()
        return f"{identity.key()}:{self.tag}"

    @property
    def tolerance(self) -> float:
        """How far a vector read back from the index may be from the one put in."""
        return 1e-6 if self.kind == "flat" else 2e-3

    def new_index(self) -> faiss.IndexIDMap:
        """An empty inner-product index of this kind and width (chunk ids added on top)."""
        import faiss

        if self.kind == "fp16":
            codes = faiss.ScalarQuantizer.QT_fp16
            inner: faiss.Index = faiss.IndexScalarQuantizer(
                self.dims, codes, faiss.METRIC_INNER_PRODUCT
            )
        else:
            inner = faiss.IndexFlatIP(self.dims)
        return faiss.IndexIDMap2(inner)

    def fit(self, vectors: np.ndarray) -> np.ndarray:
        """Vectors (one, or rows) as the index holds them: the first `dims`, unit length."""
        rows = np.asarray(vectors, dtype=np.float32)
        if rows.shape[-1] == self.dims:
            return rows
        head = rows[..., : self.dims]
        norms = np.linalg.norm(head, axis=-1, keepdims=True)
        fitted: np.ndarray = np.ascontiguousarray(head / np.maximum(norms, 1e-12))
        return fitted


def layout_for(
    identity: EmbeddingIdentity, vector_dims: int = 0, kind: IndexKind = "flat"
) -> VectorLayout:
    """The layout for the model `identity` names under `memory.search.vectorDims`
    (0: the model's default: its Matryoshka width when it has one, else its full width) and
    `memory.search.vectorIndex` (`kind`)."""
    full = identity.dims
    if vector_dims > full:
        raise EmbeddingUnavailable(
            f"memory.search.vectorDims {vector_dims} is wider than the model's {full} dimensions",
            fix=_FIX,
        )
    dims = vector_dims or min(full, MATRYOSHKA_WIDTHS.get(identity.family, full))
    return VectorLayout(dims, full, kind)
