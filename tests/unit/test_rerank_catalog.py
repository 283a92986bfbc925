"""The reranker catalogue: the shipped entry reads, and a malformed manifest is refused with
the file and the key named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from apus.errors import ConfigError
from apus.search.rerank.catalog import DEFAULT_RERANKER, get_reranker, load_rerankers

GOOD = """name = "tiny"
repo = "apus-tests/tiny-reranker"
revision = "0123456789abcdef0123456789abcdef01234567"
description = "a test cross-encoder"
max_tokens = 64

[model]
file = "onnx/model.onnx"
size = 10
sha256 = "{sha}"

[tokenizer]
file = "tokenizer.json"
size = 20
sha256 = "{sha}"
"""
SHA = "ab" * 32


def test_the_shipped_catalogue_has_the_default_reranker_with_both_files() -> None:
    manifest = get_reranker("")
    assert manifest.name == DEFAULT_RERANKER
    assert manifest.model.file.endswith(".onnx") and manifest.tokenizer.file == "tokenizer.json"
    assert manifest.size == manifest.model.size + manifest.tokenizer.size
    assert {part.name for part in manifest.files} == {DEFAULT_RERANKER}


def test_an_unknown_name_lists_the_catalogue() -> None:
    with pytest.raises(ConfigError, match="Unknown reranking model 'nope'") as raised:
        get_reranker("nope")
    assert "memory.search.rerank.model" in raised.value.fix


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace("max_tokens = 64\n", ""), "missing keys \\['max_tokens'\\]"),
        (lambda text: text.replace("0123456789abcdef" * 2, "main" * 8, 1), "40-digit commit"),
        (lambda text: text.replace(SHA, "XYZ", 1), "\\[model\\] sha256"),
        (lambda text: text.replace("size = 20", "size = 0"), "\\[tokenizer\\] size"),
        (lambda text: text.replace('file = "tokenizer.json"\n', ""), "\\[tokenizer\\] needs"),
    ],
)
def test_a_malformed_manifest_is_refused(
    tmp_path: Path, edit: Callable[[str], str], message: str
) -> None:
    (tmp_path / "tiny.toml").write_text(edit(GOOD.format(sha=SHA)), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_rerankers(tmp_path)


def test_a_name_defined_twice_is_refused(tmp_path: Path) -> None:
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text(GOOD.format(sha=SHA), encoding="utf-8")
    with pytest.raises(ValueError, match="defined twice"):
        load_rerankers(tmp_path)
