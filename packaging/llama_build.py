"""Build llama-cpp-python for the instructions this CPU can really run, then install it.

    python packaging/llama_build.py --python .venv/bin/python

pip compiles llama-cpp-python from source with llama.cpp's default `GGML_NATIVE=ON`, which
means `-march=native`: every instruction set the build machine *advertises*. Some virtual
machines advertise AMX (`amx_tile`, `amx_int8`) that they cannot execute, and a native build
then dies with SIGILL on its first real embedding. This script turns native detection off and
names the instruction sets itself, from the `flags` line of /proc/cpuinfo, AMX never included.

A `CMAKE_ARGS` already set by the user (a CUDA or Metal build) is passed on unchanged.

pip's wheel cache is keyed by the source archive, not by `CMAKE_ARGS`, so a native wheel built
earlier would be reused silently. The wheel is therefore built without pip's cache, into a
folder of our own inside pip's cache directory, named after the version and the exact CMake
arguments (`<pip cache dir>/apus-llama-cpp-python/<version>-<hash>/`), and installed from
there: every checkout on the machine (and a fresh clone) reuses it with the same flags,
different flags build a new one. Without a pip cache directory it lives in the checkout's
`.cache/`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "llama-cpp-python"

# ggml's CMake option -> the /proc/cpuinfo flags it needs (all of them). GGML_AVX512 compiles
# with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw, so it needs all five.
_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512f", "avx512vbmi")),
    ("GGML_AVX512_VNNI", ("avx512f", "avx512_vnni")),
    ("GGML_AVX512_BF16", ("avx512f", "avx512_bf16")),
)
# Never on: advertised by hosts whose virtual machines cannot run them (SIGILL in tilezero).
_NEVER = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
_X86 = {"x86_64", "amd64", "i686", "i386"}


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The instruction-set flags of the first processor in a /proc/cpuinfo text."""
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def ggml_options(flags: frozenset[str]) -> list[str]:
    """`-D` options for a portable x86 build that uses exactly what `flags` offers."""
    options = ["-DGGML_NATIVE=OFF"]
    for option, needs in _OPTIONS:
        enabled = all(flag in flags for flag in needs)
        options.append(f"-D{option}={'ON' if enabled else 'OFF'}")
    options.extend(f"-D{option}=OFF" for option in _NEVER)
    return options


def choose_cmake_args(environ: Mapping[str, str], machine: str, cpuinfo: str | None) -> str:
    """The CMAKE_ARGS for the build: the user's own if set, else portable flags on x86 Linux.

    Elsewhere (Apple silicon, ARM Linux) llama.cpp's defaults are kept: the problem this
    solves is x86 hosts advertising instructions their guests cannot run."""
    own = environ.get("CMAKE_ARGS", "").strip()
    if own:
        return own
    if machine.lower() not in _X86 or cpuinfo is None:
        return ""
    flags = cpu_flags(cpuinfo)
    if not flags:
        return ""
    return " ".join(ggml_options(flags))


def pinned_requirement(pyproject: Path) -> tuple[str, str]:
    """(`llama-cpp-python==X`, X) from the project's dependencies, so the two never drift."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pattern = re.compile(rf"{PACKAGE}(?:\[[^\]]*\])?==([\w.+-]+)$")
    for requirement in project["dependencies"]:
        match = pattern.match(requirement.replace(" ", ""))
        if match:
            return f"{PACKAGE}=={match.group(1)}", match.group(1)
    raise SystemExit(f"{pyproject} pins no {PACKAGE}==<version>; pin one to build it")


def wheel_cache(python: str) -> Path:
    """Our folder in pip's cache directory (it outlives checkouts and venvs), else `.cache/`."""
    found = subprocess.run(
        [python, "-m", "pip", "cache", "dir"], capture_output=True, text=True, check=False
    )
    folder = found.stdout.strip()
    if found.returncode != 0 or not folder:  # PIP_NO_CACHE_DIR, or a pip without `cache`
        return ROOT / ".cache" / PACKAGE
    return Path(folder) / f"apus-{PACKAGE}"


def wheel_folder(cache: Path, version: str, cmake_args: str) -> Path:
    """Where the wheel for this version and these exact CMake arguments lives."""
    digest = hashlib.sha256(cmake_args.encode("utf-8")).hexdigest()[:12]
    return cache / f"{version}-{digest}"


def _build(python: str, requirement: str, cmake_args: str, folder: Path) -> Path:
    """Compile the wheel (minutes) into `folder`; a stopped build leaves no folder behind."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CMAKE_ARGS": cmake_args}
    if not cmake_args:
        env.pop("CMAKE_ARGS")
    partial = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=folder.parent))
    try:
        command = [python, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir"]
        command += ["--no-binary", PACKAGE, "--wheel-dir", str(partial), requirement]
        subprocess.run(command, env=env, check=True)
        (partial / "cmake-args.txt").write_text(cmake_args + "\n", encoding="utf-8")
        partial.rename(folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return _wheel_in(folder)


def _wheel_in(folder: Path) -> Path:
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {folder}, found {len(wheels)}; delete the folder")
    return wheels[0]


def _read_cpuinfo() -> str | None:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="The venv's interpreter.")
    parser.add_argument("--cpuinfo", type=Path, help="Read flags from this file instead.")
    parser.add_argument(
        "--print-cmake-args", action="store_true", help="Print the CMake arguments and stop."
    )
    args = parser.parse_args(argv)
    cpuinfo = args.cpuinfo.read_text(encoding="utf-8") if args.cpuinfo else _read_cpuinfo()
    cmake_args = choose_cmake_args(os.environ, platform.machine(), cpuinfo)
    if args.print_cmake_args:
        print(cmake_args)
        return 0
    requirement, version = pinned_requirement(ROOT / "pyproject.toml")
    folder = wheel_folder(wheel_cache(args.python), version, cmake_args)
    print(f"{PACKAGE} {version} with CMAKE_ARGS={cmake_args or '(llama.cpp defaults)'}")
    if folder.is_dir():
        wheel = _wheel_in(folder)
        print(f"reusing {wheel}")
    else:
        print(f"compiling into {folder} (about 10 minutes on 2 cores)", flush=True)
        wheel = _build(args.python, requirement, cmake_args, folder)
    # --force-reinstall: a llama-cpp-python of the same version, built natively, may be there.
    install = [args.python, "-m", "pip", "install", "--no-deps", "--force-reinstall"]
    subprocess.run([*install, "--progress-bar", "off", str(wheel)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
