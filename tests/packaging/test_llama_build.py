"""packaging/llama_build.py: which instruction sets the llama.cpp build may use.

The inputs are /proc/cpuinfo texts of real processors (in cpuinfo/): a virtual machine whose
host advertises AMX, a Haswell desktop, a Skylake server without VNNI, a Zen 4 and an ARM
server, whose cpuinfo has `Features` instead of `flags`.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "packaging" / "llama_build.py"
CPUINFO = Path(__file__).parent / "cpuinfo"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("llama_build", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


llama_build = _load()


def options_for(name: str) -> dict[str, str]:
    args = llama_build.choose_cmake_args({}, "x86_64", (CPUINFO / name).read_text())
    pairs = (arg.removeprefix("-D").split("=") for arg in args.split())
    return dict(pairs)


def test_a_vm_advertising_amx_gets_avx512_but_never_amx() -> None:
    options = options_for("sapphire-rapids-vm.txt")
    assert options["GGML_NATIVE"] == "OFF"
    for on in ("AVX", "AVX2", "FMA", "F16C", "BMI2", "AVX_VNNI", "AVX512"):
        assert options[f"GGML_{on}"] == "ON", on
    for on in ("AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"):
        assert options[f"GGML_{on}"] == "ON", on
    assert "amx_tile" in llama_build.cpu_flags((CPUINFO / "sapphire-rapids-vm.txt").read_text())
    assert [options[f"GGML_AMX_{x}"] for x in ("TILE", "INT8", "BF16")] == ["OFF"] * 3


def test_haswell_gets_avx2_and_no_avx512() -> None:
    options = options_for("haswell.txt")
    assert options["GGML_AVX2"] == options["GGML_FMA"] == options["GGML_F16C"] == "ON"
    assert options["GGML_AVX512"] == "OFF"
    assert options["GGML_AVX_VNNI"] == "OFF"


def test_skylake_server_gets_avx512_without_its_later_extensions() -> None:
    options = options_for("skylake-avx512.txt")
    assert options["GGML_AVX512"] == "ON"
    assert options["GGML_AVX512_VNNI"] == options["GGML_AVX512_BF16"] == "OFF"
    assert options["GGML_AVX512_VBMI"] == "OFF"


def test_zen4_gets_its_avx512_extensions_but_no_avx_vnni() -> None:
    options = options_for("zen4.txt")
    assert options["GGML_AVX512"] == options["GGML_AVX512_BF16"] == "ON"
    assert options["GGML_AVX512_VNNI"] == options["GGML_AVX512_VBMI"] == "ON"
    assert options["GGML_AVX_VNNI"] == "OFF"


def test_avx512_needs_all_five_of_its_base_flags() -> None:
    text = (CPUINFO / "skylake-avx512.txt").read_text().replace(" avx512bw", "")
    args = llama_build.choose_cmake_args({}, "x86_64", text)
    assert "-DGGML_AVX512=OFF" in args.split()


def test_every_option_is_set_explicitly() -> None:
    """No option falls back to ggml's defaults, which differ between its versions."""
    options = options_for("haswell.txt")
    names = {name for name, _ in llama_build._OPTIONS} | set(llama_build._NEVER)
    assert names | {"GGML_NATIVE"} == set(options)


def test_a_users_cmake_args_are_passed_on_unchanged() -> None:
    cuda = "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=89"
    text = (CPUINFO / "sapphire-rapids-vm.txt").read_text()
    assert llama_build.choose_cmake_args({"CMAKE_ARGS": cuda}, "x86_64", text) == cuda
    # Blank counts as unset.
    assert "-DGGML_NATIVE=OFF" in llama_build.choose_cmake_args({"CMAKE_ARGS": " "}, "x86_64", text)


@pytest.mark.parametrize(
    ("machine", "name"), [("aarch64", "arm64.txt"), ("arm64", None), ("x86_64", "arm64.txt")]
)
def test_llama_cpp_defaults_where_there_are_no_x86_flags(machine: str, name: str | None) -> None:
    text = (CPUINFO / name).read_text() if name else None
    assert llama_build.choose_cmake_args({}, machine, text) == ""


def test_wheel_folder_is_keyed_by_version_and_exact_arguments(tmp_path: Path) -> None:
    portable = options_for("haswell.txt")
    args = " ".join(f"-D{k}={v}" for k, v in portable.items())
    first = llama_build.wheel_folder(tmp_path, "0.3.36", args)
    assert first == llama_build.wheel_folder(tmp_path, "0.3.36", args)
    assert first != llama_build.wheel_folder(tmp_path, "0.3.37", args)
    assert first != llama_build.wheel_folder(tmp_path, "0.3.36", args + " -DGGML_CUDA=on")
    assert first != llama_build.wheel_folder(tmp_path, "0.3.36", "")
    assert first.parent == tmp_path and first.name.startswith("0.3.36-")


def test_the_pin_is_read_from_the_projects_dependencies() -> None:
    requirement, version = llama_build.pinned_requirement(REPO_ROOT / "pyproject.toml")
    assert requirement == f"llama-cpp-python=={version}"
    assert f'"llama-cpp-python=={version}"' in (REPO_ROOT / "pyproject.toml").read_text()


def test_the_script_prints_what_it_would_build_with() -> None:
    """The command line, as the Makefile runs it, with a cpuinfo file and the environment."""
    env = {k: v for k, v in os.environ.items() if k != "CMAKE_ARGS"}
    cpuinfo = str(CPUINFO / "haswell.txt")
    command = [sys.executable, str(SCRIPT), "--print-cmake-args", "--cpuinfo", cpuinfo]
    printed = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    if os.uname().machine in ("x86_64", "amd64"):
        assert "-DGGML_AVX2=ON" in printed.stdout.split()
        assert "-DGGML_AVX512=OFF" in printed.stdout.split()
    metal = {**env, "CMAKE_ARGS": "-DGGML_METAL=on"}
    printed = subprocess.run(command, env=metal, capture_output=True, text=True, check=True)
    assert printed.stdout.strip() == "-DGGML_METAL=on"


def test_wheels_live_in_pips_cache_directory_or_the_checkout_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pip_cache = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert llama_build.wheel_cache(sys.executable) == Path(pip_cache) / "apus-llama-cpp-python"
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")  # pip refuses `cache dir` then
    assert llama_build.wheel_cache(sys.executable) == REPO_ROOT / ".cache" / "llama-cpp-python"
