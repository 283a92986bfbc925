"""The shipped model catalogue and the pure-Python GGUF header reader."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from apus.embed.local.catalog import DEFAULT_MODEL, get_manifest, load_catalog
from apus.embed.local.gguf_info import GGUFFormatError, has_gguf_magic, read_gguf_info
from apus.embed.prefixes import detect_family
from apus.errors import ConfigError


def test_default_model_matches_the_public_repo_facts() -> None:
    manifest = load_catalog()[DEFAULT_MODEL]
    assert manifest.repo == "ggml-org/embeddinggemma-300m-qat-q8_0-GGUF"
    assert manifest.file == "embeddinggemma-300m-qat-Q8_0.gguf"
    assert manifest.revision == "66f974f8cd48cc3b9c41c516b95508e75b4bee64"
    assert manifest.size == 328_577_056
    assert manifest.sha256 == "6fa0c02a9c302be6f977521d399b4de3a46310a4f2621ee0063747881b673f67"
    assert (manifest.dims, manifest.context, manifest.family) == (768, 2048, "embeddinggemma")


def test_catalogue_offers_alternatives_with_their_own_prefix_family() -> None:
    catalog = load_catalog()
    assert catalog["qwen3-embedding-0.6b"].family == "qwen3-embedding"
    assert catalog["qwen3-embedding-0.6b"].dims == 1024
    assert catalog["nomic-embed-text-v1.5"].family == "nomic"
    for manifest in catalog.values():
        # The file name alone must lead to the same family as the manifest declares.
        assert detect_family(manifest.file) == manifest.family


def test_unknown_model_names_the_catalogue() -> None:
    with pytest.raises(ConfigError, match=DEFAULT_MODEL):
        get_manifest("no-such-model")
    assert get_manifest("").name == DEFAULT_MODEL


def test_a_manifest_with_a_bad_checksum_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(
        'name = "bad"\nrepo = "o/r"\nfile = "f.gguf"\n'
        f'revision = "{"a" * 40}"\nsize = 10\nsha256 = "not-a-sha"\n'
        'dims = 8\ncontext = 64\nfamily = "none"\ndescription = ""\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="sha256"):
        load_catalog(tmp_path)


def test_header_reader_reads_the_tiny_model(tiny_model: Path) -> None:
    info = read_gguf_info(tiny_model)
    assert info.version == 3
    assert info.architecture == "bert"
    assert info.name == "tiny-embeddinggemma"
    assert (info.embedding_length, info.context_length, info.pooling_type) == (32, 512, 1)
    assert info.metadata["tokenizer.ggml.model"] == "bert"
    assert "tokenizer.ggml.tokens" not in info.metadata  # arrays are skipped, not loaded
    assert detect_family(info.metadata) == "embeddinggemma"


def test_header_reader_refuses_what_is_not_gguf(tmp_path: Path, tiny_model: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("# just a note\n", encoding="utf-8")
    assert not has_gguf_magic(text)
    with pytest.raises(GGUFFormatError, match="not a GGUF file"):
        read_gguf_info(text)

    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(tiny_model.read_bytes()[:100])
    assert has_gguf_magic(truncated)
    with pytest.raises(GGUFFormatError, match="truncated"):
        read_gguf_info(truncated)

    future = tmp_path / "future.gguf"
    future.write_bytes(b"GGUF" + struct.pack("<IQQ", 99, 0, 0))
    with pytest.raises(GGUFFormatError, match="version 99"):
        read_gguf_info(future)


@pytest.mark.parametrize("window", [1, 9, 64, 1 << 20])
def test_keys_after_a_vocabulary_are_read_whatever_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    import gguf

    # Strings of every length up to longer than the window, then keys the reader must find.
    tokens = [("tok" * (n % 40)) + str(n) for n in range(3000)]
    path = tmp_path / "vocab.gguf"
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_token_list(tokens)
    writer.add_embedding_length(48)
    writer.add_context_length(256)
    writer.add_string("general.after_the_vocabulary", "found")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    monkeypatch.setattr("apus.embed.local.gguf_info._WINDOW", window)
    info = read_gguf_info(path)
    assert (info.embedding_length, info.context_length) == (48, 256)
    assert info.metadata["general.after_the_vocabulary"] == "found"

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(GGUFFormatError, match="truncated"):
        read_gguf_info(cut)


def test_the_header_is_read_once_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gguf

    from apus.embed.local import gguf_info

    def write(path: Path, dims: int) -> None:
        writer = gguf.GGUFWriter(str(path), "bert")
        # A vocabulary as long as the width: the rewritten file differs in size, which the
        # cache compares (timestamps of two writes a moment apart can be equal).
        writer.add_token_list([f"tok{n}" for n in range(dims * 10)])
        writer.add_embedding_length(dims)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.close()

    reads: list[Path] = []
    real_read = gguf_info.read_gguf_info

    def counted(path: Path) -> gguf_info.GGUFInfo:
        reads.append(path)
        return real_read(path)

    monkeypatch.setattr(gguf_info, "read_gguf_info", counted)
    model = tmp_path / "model.gguf"
    write(model, 48)
    first = gguf_info.cached_gguf_info(model)
    again = gguf_info.cached_gguf_info(model)
    assert first == again == real_read(model)
    assert len(reads) == 1
    write(model, 64)  # another file under the same name: read again
    assert gguf_info.cached_gguf_info(model).embedding_length == 64
    assert len(reads) == 2
