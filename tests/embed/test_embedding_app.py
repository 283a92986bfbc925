"""The managed server's HTTP face, served by uvicorn on 127.0.0.1 over a real llama.cpp model
in the test's process: who it answers, what it refuses, and that a batch holding the model
never keeps the liveness probe waiting."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import llama_cpp
import pytest
import uvicorn

from apus.embed.local.embedding_app import create_app
from apus.embed.local.server_process import EMBEDDINGS_PATH, MODELS_PATH

KEY = "the-right-key"
WAIT_S = 60.0  # a bound for a signal that comes at once, never a measured time


class GatedModel:
    """The real model, with a gate its batches wait at: a batch that holds the model, on
    demand."""

    def __init__(self, model: llama_cpp.Llama) -> None:
        self.model = model
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def create_embedding(self, input: str | list[str], model: str | None = None) -> Any:
        self.entered.set()
        assert self.release.wait(WAIT_S)
        return self.model.create_embedding(input, model=model)


class CountingMeter:
    def __init__(self) -> None:
        self.started = 0
        self.finished = 0

    def request_started(self) -> None:
        self.started += 1

    def request_finished(self) -> None:
        self.finished += 1


@pytest.fixture(scope="module")
def llama(tiny_model: Path) -> Iterator[llama_cpp.Llama]:
    model = llama_cpp.Llama(model_path=str(tiny_model), embedding=True, n_ctx=512, verbose=False)
    yield model
    model.close()


@pytest.fixture
def gated(llama: llama_cpp.Llama) -> GatedModel:
    return GatedModel(llama)


@pytest.fixture
def meter() -> CountingMeter:
    return CountingMeter()


@pytest.fixture
def base_url(gated: GatedModel, meter: CountingMeter) -> Iterator[str]:
    app = create_app(gated, alias="tiny.gguf", api_key=KEY, meter=meter)
    # The socket listens before uvicorn runs: a request made at once waits in its backlog
    # until uvicorn takes it, so nothing has to wait for the server to say it started.
    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    server.should_exit = True
    thread.join(WAIT_S)
    listener.close()


def auth(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_embeddings_come_back_in_the_openai_shape(base_url: str, meter: CountingMeter) -> None:
    answer = httpx.post(
        base_url + EMBEDDINGS_PATH,
        headers=auth(),
        json={"input": ["the cat", "a dog"]},
        timeout=WAIT_S,
    )
    assert answer.status_code == 200
    body = answer.json()
    assert [item["index"] for item in body["data"]] == [0, 1]
    assert len({len(item["embedding"]) for item in body["data"]}) == 1
    assert body["data"][0]["embedding"] != body["data"][1]["embedding"]
    assert body["model"] == "tiny.gguf"
    assert (meter.started, meter.finished) == (1, 1)


@pytest.mark.parametrize("headers", [{}, auth("a-wrong-key"), {"Authorization": KEY}])
def test_every_route_refuses_a_caller_without_the_key(
    base_url: str, gated: GatedModel, headers: dict[str, str]
) -> None:
    embed = httpx.post(
        base_url + EMBEDDINGS_PATH, headers=headers, json={"input": ["x"]}, timeout=WAIT_S
    )
    models = httpx.get(base_url + MODELS_PATH, headers=headers, timeout=WAIT_S)
    for answer in (embed, models):
        assert answer.status_code == 401
        assert answer.json()["error"]["message"] == "Invalid API key"
    assert not gated.entered.is_set()  # the model never saw the request


@pytest.mark.parametrize(
    "body", [b"not json", b'{"input": 3}', b'{"input": ["a", 1]}', b'["a"]', b"{}"]
)
def test_a_malformed_request_is_told_what_is_wrong(
    base_url: str, gated: GatedModel, body: bytes
) -> None:
    answer = httpx.post(base_url + EMBEDDINGS_PATH, headers=auth(), content=body, timeout=WAIT_S)
    assert answer.status_code == 400
    assert "input" in answer.json()["error"]["message"] or "JSON" in answer.text
    assert not gated.entered.is_set()


def test_a_batch_holding_the_model_never_delays_the_probe(
    base_url: str, gated: GatedModel, meter: CountingMeter
) -> None:
    gated.release.clear()
    results: list[httpx.Response] = []
    batch = threading.Thread(
        target=lambda: results.append(
            httpx.post(
                base_url + EMBEDDINGS_PATH,
                headers=auth(),
                json={"input": ["a long batch"]},
                timeout=WAIT_S,
            )
        )
    )
    batch.start()
    assert gated.entered.wait(WAIT_S)

    probe = httpx.get(base_url + MODELS_PATH, headers=auth(), timeout=WAIT_S)
    assert probe.status_code == 200
    assert probe.json()["data"][0]["id"] == "tiny.gguf"
    assert (meter.started, meter.finished) == (1, 0)  # the batch is in flight: use, not idle

    gated.release.set()
    batch.join(WAIT_S)
    assert results[0].status_code == 200
    assert (meter.started, meter.finished) == (1, 1)


def test_a_failing_model_is_a_clear_error_not_a_dead_server(
    base_url: str, gated: GatedModel, meter: CountingMeter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(input: Any, model: str | None = None) -> Any:
        raise ValueError("llama_decode returned -3")

    monkeypatch.setattr(gated, "create_embedding", broken)
    answer = httpx.post(
        base_url + EMBEDDINGS_PATH, headers=auth(), json={"input": ["x"]}, timeout=WAIT_S
    )
    assert answer.status_code == 500
    assert "llama_decode returned -3" in answer.json()["error"]["message"]
    assert (meter.started, meter.finished) == (1, 1)
    assert httpx.get(base_url + MODELS_PATH, headers=auth(), timeout=WAIT_S).status_code == 200
