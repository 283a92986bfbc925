"""The layout vectors.faiss holds: Matryoshka truncation, the key its stamp names, defaults."""

from __future__ import annotations

import numpy as np
import pytest

from apus.embed.base import EmbeddingIdentity, EmbeddingUnavailable
from apus.index.vector_layout import MATRYOSHKA_WIDTHS, VectorLayout, layout_for

GEMMA = EmbeddingIdentity("local", "gemma.gguf", "ab" * 32, "embeddinggemma@1", 768)
MINILM = EmbeddingIdentity("local", "minilm.gguf", "cd" * 32, "none@1", 384)


def test_fit_keeps_the_head_of_each_vector_at_unit_length() -> None:
    rows = np.random.default_rng(3).standard_normal((5, 768)).astype(np.float32)
    fitted = VectorLayout(256, 768).fit(rows)
    assert fitted.shape == (5, 256) and fitted.dtype == np.float32
    assert np.allclose(np.linalg.norm(fitted, axis=1), 1.0, atol=1e-6)
    # The same direction as the head: only the length changed.
    cosines = np.sum(fitted * rows[:, :256], axis=1) / np.linalg.norm(rows[:, :256], axis=1)
    assert np.allclose(cosines, 1.0, atol=1e-6)
    one = VectorLayout(256, 768).fit(rows[0])
    assert one.shape == (256,) and np.allclose(one, fitted[0])


def test_full_width_vectors_pass_through_unchanged() -> None:
    rows = np.random.default_rng(4).standard_normal((3, 384)).astype(np.float32)
    assert VectorLayout(384, 384).fit(rows) is rows


def test_the_key_names_the_width_unless_it_is_the_plain_full_index() -> None:
    # A full-width flat file keeps the key it had before layouts existed: nothing rebuilds.
    assert VectorLayout(768, 768).key(GEMMA) == GEMMA.key()
    narrow = VectorLayout(256, 768).key(GEMMA)
    assert narrow == f"{GEMMA.key()}:flat@256"
    assert len({GEMMA.key(), narrow, VectorLayout(512, 768).key(GEMMA)}) == 3


def test_the_default_width_is_the_measured_one_for_matryoshka_models_only() -> None:
    assert layout_for(GEMMA).dims == MATRYOSHKA_WIDTHS["embeddinggemma"]
    assert layout_for(MINILM).dims == 384  # not trained for truncation: its full width
    assert layout_for(GEMMA, 512).dims == 512
    assert layout_for(MINILM, 384).key(MINILM) == MINILM.key()


def test_a_width_wider_than_the_model_is_refused() -> None:
    with pytest.raises(EmbeddingUnavailable) as raised:
        layout_for(MINILM, 768)
    assert raised.value.reason == (
        "memory.search.vectorDims 768 is wider than the model's 384 dimensions"
    )
    assert raised.value.fix is not None and "memory.search.vectorDims" in raised.value.fix
