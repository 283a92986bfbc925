"""What the installed llama.cpp build can run on, read from the build itself.

The expectation of a GPU test must not come from the call the product makes
(`llama_supports_gpu_offload`): it is read here from the backend libraries the build
installed (`libggml-cuda.so`, `libggml-metal.dylib`, ...), which is what decides it.
"""

from __future__ import annotations

from pathlib import Path

import llama_cpp

# ggml's backends that offload to a GPU or another accelerator (not cpu, blas or rpc).
GPU_BACKENDS = ("cuda", "hip", "metal", "vulkan", "sycl", "opencl", "musa", "cann", "kompute")


def backend_libraries() -> list[str]:
    """The file names of the ggml backend libraries installed with llama-cpp-python."""
    lib = Path(llama_cpp.__file__).resolve().parent / "lib"
    return sorted(path.name for path in lib.iterdir() if "ggml" in path.name)


def gpu_backends() -> list[str]:
    """The GPU backends this build has, by their library: empty for a CPU-only build."""
    names = backend_libraries()
    return [b for b in GPU_BACKENDS if any(n.split(".")[0].endswith(f"ggml-{b}") for n in names)]


def build_offloads() -> bool:
    return bool(gpu_backends())


# llama.cpp's names for instruction sets, and the flag /proc/cpuinfo gives each.
_CPU_FLAGS = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX_VNNI": "avx_vnni",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}


def cpu_features(system_info: str) -> set[str]:
    """The instruction sets llama.cpp's system line says its CPU backend uses (`AVX2 = 1`)."""
    cpu = system_info.split("CPU : ", 1)[1] if "CPU : " in system_info else ""
    pairs = (part.split("=") for part in cpu.split("|") if part.count("=") == 1)
    return {name.strip() for name, value in pairs if value.strip() == "1"} & set(_CPU_FLAGS)


def cpu_has(feature: str) -> bool:
    """Whether this CPU has `feature` (by /proc/cpuinfo; True where there is none to read)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return True
    lines = [line for line in text.splitlines() if line.startswith("flags")]
    flags = {flag for line in lines for flag in line.split()}
    return _CPU_FLAGS[feature] in flags
