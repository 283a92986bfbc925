"""Read the few GGUF header keys Apus needs (family, dims, context) without the `gguf` package."""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from apus.embed.local.filehash import cached_fact

GGUF_MAGIC = b"GGUF"

# GGUF value type ids -> struct format of one scalar (little-endian).
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING = 8
_ARRAY = 9
# A header larger than this is not a model header; refuse instead of reading a huge file.
_MAX_STRING = 1 << 24
_MAX_KV = 1 << 20


class GGUFFormatError(ValueError):
    """The file is not a GGUF file, or its header is truncated or malformed."""


@dataclass(frozen=True)
class GGUFInfo:
    """Scalar header values of a GGUF file (arrays such as the vocabulary are skipped)."""

    version: int
    tensor_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))

    @property
    def basename(self) -> str:
        return str(self.metadata.get("general.basename", ""))

    def arch_value(self, key: str) -> Any:
        return self.metadata.get(f"{self.architecture}.{key}")

    @property
    def embedding_length(self) -> int | None:
        """Output width: a model with a projection head declares `embedding_length_out`."""
        value = self.arch_value("embedding_length_out") or self.arch_value("embedding_length")
        return int(value) if value else None

    @property
    def context_length(self) -> int | None:
        value = self.arch_value("context_length")
        return int(value) if value else None

    @property
    def pooling_type(self) -> int | None:
        value = self.arch_value("pooling_type")
        return int(value) if value is not None else None


def has_gguf_magic(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


def cached_gguf_info(path: Path) -> GGUFInfo:
    """`read_gguf_info`, remembered beside the file's sha256 until the file changes: stepping
    over a 262k-token vocabulary costs 30 ms of every command that resolves the model."""
    data = cached_fact(path, "gguf", lambda: asdict(read_gguf_info(path)))
    return GGUFInfo(int(data["version"]), int(data["tensor_count"]), dict(data["metadata"]))


def read_gguf_info(path: Path) -> GGUFInfo:
    """Parse the key/value header of `path`; raise GGUFFormatError if it is not valid GGUF."""
    try:
        with path.open("rb", buffering=1 << 20) as handle:
            return _read(handle)
    except struct.error as exc:
        raise GGUFFormatError(f"{path.name}: truncated GGUF header") from exc
    except UnicodeDecodeError as exc:
        raise GGUFFormatError(f"{path.name}: a GGUF header string is not UTF-8") from exc


def _read(handle: BinaryIO) -> GGUFInfo:
    if handle.read(4) != GGUF_MAGIC:
        raise GGUFFormatError("not a GGUF file (the first bytes are not 'GGUF')")
    (version,) = _unpack(handle, "<I")
    if version not in (2, 3):
        raise GGUFFormatError(f"unsupported GGUF version {version}")
    tensor_count, kv_count = _unpack(handle, "<QQ")
    if kv_count > _MAX_KV:
        raise GGUFFormatError(f"implausible GGUF header ({kv_count} keys)")
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = _read_string(handle)
        (value_type,) = _unpack(handle, "<I")
        if value_type == _ARRAY:
            _skip_array(handle)
        else:
            metadata[key] = _read_value(handle, value_type)
    return GGUFInfo(version=version, tensor_count=tensor_count, metadata=metadata)


def _unpack(handle: BinaryIO, fmt: str) -> tuple[Any, ...]:
    return struct.unpack(fmt, handle.read(struct.calcsize(fmt)))


def _read_string(handle: BinaryIO) -> str:
    (length,) = _unpack(handle, "<Q")
    if length > _MAX_STRING:
        raise GGUFFormatError(f"implausible GGUF string length {length}")
    raw = handle.read(length)
    if len(raw) != length:
        raise GGUFFormatError("truncated GGUF header")
    return raw.decode("utf-8")


def _read_value(handle: BinaryIO, value_type: int) -> Any:
    if value_type == _STRING:
        return _read_string(handle)
    fmt = _SCALARS.get(value_type)
    if fmt is None:
        raise GGUFFormatError(f"unknown GGUF value type {value_type}")
    return _unpack(handle, fmt)[0]


def _skip_array(handle: BinaryIO) -> None:
    item_type, count = _unpack(handle, "<IQ")
    if item_type == _STRING:
        _skip_strings(handle, count)
    elif item_type == _ARRAY:
        for _ in range(count):
            _skip_array(handle)
    else:
        fmt = _SCALARS.get(item_type)
        if fmt is None:
            raise GGUFFormatError(f"unknown GGUF array item type {item_type}")
        handle.seek(struct.calcsize(fmt) * count, 1)


_LENGTH = struct.Struct("<Q")
_WINDOW = 1 << 20


def _skip_strings(handle: BinaryIO, count: int) -> None:
    """Step over `count` length-prefixed strings (a vocabulary: 262k of them in
    EmbeddingGemma) by walking a window of bytes in memory; a read and a seek per string
    cost about 50 ms, which every command that resolves the local model paid."""
    unpack = _LENGTH.unpack_from
    window = handle.read(_WINDOW)
    at = 0
    left = count
    while left:
        last = len(window) - 8  # the last offset a whole length can be read from
        while left and at <= last:
            (length,) = unpack(window, at)
            at += 8 + length
            left -= 1
        if not left:
            break
        if at > len(window):  # the last string read runs past the window: skip its rest
            handle.seek(at - len(window), 1)
            window = b""
        else:
            window = window[at:]
        at = 0
        while len(window) < 8:
            more = handle.read(_WINDOW)
            if not more:
                raise GGUFFormatError("truncated GGUF header")
            window += more
    handle.seek(at - len(window), 1)  # give back what was read past the last string
