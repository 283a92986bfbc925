"""How many of a model's layers llama.cpp put on the GPU, in its own words.

`gpuLayers = -1` asks for every layer; whether that happened depends on the llama.cpp build
(CUDA, Metal... or CPU only) and on the device it found. llama.cpp says it while loading, in
the server's log: `load_tensors: offloaded 25/25 layers to GPU`. A CPU-only build says
nothing of the kind: then no layer is offloaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from apus.embed.local.gguf_info import GGUFFormatError, read_gguf_info

_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
# Enough of the log's start for the load report of any model (it comes before serving).
_LOAD_LOG_BYTES = 4 << 20


@dataclass(frozen=True)
class Offload:
    """What the server's llama.cpp did with the model's layers."""

    supported: bool  # the build can offload (`llama_supports_gpu_offload`)
    layers: int  # layers llama.cpp put on the GPU: 0 for all on the CPU
    of: int | None  # the model's layers as llama.cpp counts them (blocks + output); None: unknown

    @property
    def device(self) -> str:
        return "gpu" if self.layers > 0 else "cpu"

    def describe(self) -> str:
        """ "3/3 layers offloaded", or why none was."""
        if self.layers:
            return f"{self.layers}/{self.of or '?'} layers offloaded"
        return "no layer offloaded" if self.supported else "no GPU offload in this llama.cpp build"


def read_offload(log_file: Path, model: Path, *, supported: bool) -> Offload:
    """The offload llama.cpp reported in `log_file` while loading `model`."""
    try:
        with log_file.open("rb") as handle:
            text = handle.read(_LOAD_LOG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        text = ""
    return offload_from_log(text, supported=supported, model_layers=model_layers(model))


def offload_from_log(text: str, *, supported: bool, model_layers: int | None) -> Offload:
    found = _OFFLOADED.findall(text)
    if not found:
        return Offload(supported, 0, model_layers)
    layers, of = found[-1]
    return Offload(supported, int(layers), int(of))


def model_layers(model: Path) -> int | None:
    """The model's layers as llama.cpp counts them for offloading: its blocks and the output."""
    try:
        blocks = read_gguf_info(model).arch_value("block_count")
    except (GGUFFormatError, OSError):
        return None
    return int(blocks) + 1 if blocks is not None else None
