"""The managed llama.cpp server with a tiny real GGUF: embed, share, restart, refuse, no orphans."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from apus.config import LocalSettings, SearchSettings
from apus.embed.base import EmbeddingUnavailable
from apus.embed.local.embedder import LocalEmbedder
from apus.embed.local.offload import Offload, offload_from_log
from apus.embed.local.procs import pid_alive
from apus.embed.local.server_manager import ManagedServer, ServerSpec
from apus.embed.providers import create_embedder
from support.llama_build import backend_libraries, build_offloads
from support.tiny_gguf import LAYERS

SpecFactory = Callable[..., ServerSpec]

EXIT_WAIT_S = 30.0


def wait_for_exit(pid: int, limit_s: float = EXIT_WAIT_S) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return False


def direct_vectors(model: Path, texts: list[str]) -> np.ndarray:
    """The same texts embedded in-process by llama.cpp, normalised by hand."""
    import llama_cpp

    llama = llama_cpp.Llama(
        str(model), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512, verbose=False
    )
    try:
        raw = np.asarray(llama.embed(texts), dtype=np.float64)
    finally:
        llama.close()
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_local_embedder_serves_the_model_through_the_managed_server(tiny_model: Path) -> None:
    settings = SearchSettings(
        provider="local", local=LocalSettings(model_path=str(tiny_model), context_size=512)
    )
    embedder = create_embedder(settings)
    assert isinstance(embedder, LocalEmbedder)
    try:
        texts = [
            embedder.document_text("the cat sat on the mat", "garden"),
            embedder.query_text("where is the dog"),
            embedder.document_text("the cat sat on the mat", "garden"),
        ]
        assert texts[1] == "task: search result | query: where is the dog"
        vectors = embedder.embed(texts, kind="document")
        assert vectors.dtype == np.float32
        assert vectors.shape == (3, 32)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(vectors, direct_vectors(tiny_model, texts), atol=1e-5)
        assert not np.allclose(vectors[0], vectors[1])

        described = embedder.describe()
        assert described["state"] == "running"
        # All layers on the GPU when the build has a GPU backend (gpuLayers -1), else CPU:
        # the layers are those llama.cpp said it offloaded, of the model's blocks + output.
        offloads = build_offloads()
        assert (
            described["device"],
            described["gpu_layers"],
            described["gpu_offload"],
            described["offloaded_layers"],
            described["model_layers"],
        ) == (
            ("gpu", -1, True, LAYERS + 1, LAYERS + 1)
            if offloads
            else ("cpu", 0, False, 0, LAYERS + 1)
        ), backend_libraries()
        assert described["endpoint"].startswith("http://127.0.0.1:")
        assert pid_alive(described["pid"])
        assert described["file"] == str(tiny_model)
        assert embedder.embed([], kind="query").shape == (0, 32)
    finally:
        embedder.close()
    assert wait_for_exit(described["pid"])


def test_gpu_layers_0_runs_the_model_on_the_cpu(tiny_model: Path) -> None:
    local = LocalSettings(model_path=str(tiny_model), context_size=512, gpu_layers=0)
    embedder = create_embedder(SearchSettings(provider="local", local=local))
    try:
        assert embedder.embed(["the cat sat"], kind="query").shape == (1, 32)
        described = embedder.describe()
        # A GPU build is still one (gpu_offload), and llama.cpp offloaded nothing.
        assert (
            described["device"],
            described["gpu_layers"],
            described["gpu_offload"],
            described["offloaded_layers"],
        ) == ("cpu", 0, build_offloads(), 0), backend_libraries()
        log = Path(described["log"]).read_text(encoding="utf-8")
        if build_offloads():  # llama.cpp's own report, where the build has one to give
            assert f"offloaded 0/{LAYERS + 1} layers to GPU" in log
        else:
            assert "layers to GPU" not in log
    finally:
        embedder.close()
    assert wait_for_exit(described["pid"])


def test_the_layers_llama_cpp_offloaded_are_read_from_its_load_report() -> None:
    # The line as llama.cpp's load_tensors prints it (llama-model.cpp), among its neighbours.
    log = textwrap.dedent("""\
        load_tensors: offloading output layer to GPU
        load_tensors: offloading 24 repeating layers to GPU
        load_tensors: offloaded 25/25 layers to GPU
        load_tensors:        CUDA0 model buffer size =   225.44 MiB
    """)
    assert offload_from_log(log, supported=True, model_layers=25) == Offload(True, 25, 25)
    assert Offload(True, 25, 25).describe() == "25/25 layers offloaded"
    assert Offload(True, 25, 25).device == "gpu"
    partial = offload_from_log(
        "load_tensors: offloaded 0/25 layers to GPU\n", supported=True, model_layers=25
    )
    assert (partial.device, partial.describe()) == ("cpu", "no layer offloaded")
    cpu_only = offload_from_log(
        "load_tensors: CPU model buffer size\n", supported=False, model_layers=3
    )
    assert cpu_only == Offload(False, 0, 3)
    assert cpu_only.describe() == "no GPU offload in this llama.cpp build"


def test_two_handles_share_one_process_via_a_private_state_file(
    tiny_model: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    first = ManagedServer(fast_spec(tiny_model))
    second = ManagedServer(fast_spec(tiny_model))
    managed += [first, second]
    state = first.ensure_running()
    assert second.ensure_running().pid == state.pid
    assert stat.S_IMODE(first.state_file.stat().st_mode) == 0o600
    recorded = json.loads(first.state_file.read_text(encoding="utf-8"))
    assert (recorded["pid"], recorded["port"]) == (state.pid, state.port)

    second.close()
    assert pid_alive(state.pid)  # the first handle still uses it
    first.close()
    assert wait_for_exit(state.pid)
    assert not first.state_file.exists()


def test_a_killed_server_is_restarted_by_the_next_request(tiny_model: Path) -> None:
    settings = SearchSettings(provider="local", local=LocalSettings(model_path=str(tiny_model)))
    embedder = create_embedder(settings)
    assert isinstance(embedder, LocalEmbedder)
    try:
        before = embedder.embed(["the cat"], kind="document")
        old_pid = embedder.describe()["pid"]
        os.kill(old_pid, signal.SIGKILL)
        assert wait_for_exit(old_pid)
        after = embedder.embed(["the cat"], kind="document")
        new_pid = embedder.describe()["pid"]
        assert new_pid != old_pid
        np.testing.assert_allclose(after, before, atol=1e-6)
    finally:
        embedder.close()
    assert wait_for_exit(new_pid)


def test_a_corrupt_gguf_is_refused_with_the_server_log(
    tiny_model: Path, tmp_path: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    data = tiny_model.read_bytes()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(data[: len(data) - 4096])  # header intact, tensor data cut short
    server = ManagedServer(fast_spec(broken))
    managed.append(server)
    with pytest.raises(EmbeddingUnavailable) as caught:
        server.ensure_running()
    reason = caught.value.reason
    assert "while loading broken.gguf" in reason
    assert "cannot load model broken.gguf" in reason  # the server's own log line
    assert "Traceback" not in reason
    assert "apus models pull" in (caught.value.fix or "")
    assert server.describe()["state"] == "failed"
    # Asked again straight away, it answers from memory instead of starting another process.
    with pytest.raises(EmbeddingUnavailable) as again:
        server.ensure_running()
    assert again.value is caught.value


def test_a_file_that_is_not_gguf_is_refused_before_starting(
    tmp_path: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    server = ManagedServer(fast_spec(fake))
    managed.append(server)
    with pytest.raises(EmbeddingUnavailable, match="not a usable GGUF"):
        server.ensure_running()
    assert not server.state_file.exists()


def test_an_idle_server_stops_and_comes_back_on_demand(tiny_model: Path) -> None:
    """Idle time starts once the model is loaded (a load slower than the idle limit is
    covered in test_server_hardening.py), so the first request always finds the server."""
    local = LocalSettings(model_path=str(tiny_model), idle_stop_seconds=1)
    embedder = create_embedder(SearchSettings(provider="local", local=local))
    assert isinstance(embedder, LocalEmbedder)
    server = embedder.server
    try:
        embedder.embed(["the cat"], kind="document")
        first_pid = embedder.describe()["pid"]
        assert wait_for_exit(first_pid)
        assert not server.state_file.exists()  # a clean stop forgets its state
        log_text = Path(embedder.describe()["log"]).read_text(encoding="utf-8")
        assert "stopping: idle for 1s" in log_text
        embedder.embed(["the dog"], kind="document")
        assert embedder.describe()["pid"] != first_pid
        assert server.crashes.load() is None  # an idle stop is no crash
    finally:
        embedder.close()


ORPHAN_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from apus.embed.local.server_manager import ManagedServer, ServerSpec

    model, sha = sys.argv[1], sys.argv[2]
    spec = ServerSpec(model_path=Path(model), model_sha256=sha, context=512,
                      watchdog_interval_seconds=0.3)
    state = ManagedServer(spec).ensure_running()
    print(json.dumps({"pid": state.pid}), flush=True)
    time.sleep(600)
    """
)


def test_the_server_exits_when_its_client_is_killed(
    tiny_model: Path, fast_spec: SpecFactory
) -> None:
    spec = fast_spec(tiny_model)
    client = subprocess.Popen(
        [sys.executable, "-c", ORPHAN_SCRIPT, str(tiny_model), spec.model_sha256],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stdout is not None
        line = client.stdout.readline()
        server_pid = json.loads(line)["pid"]
        assert pid_alive(server_pid)
    finally:
        client.kill()  # SIGKILL: no cleanup code runs in the client
        client.wait()
    assert wait_for_exit(server_pid)
