"""The managed embedding server's HTTP face: OpenAI's `/v1/embeddings` over one loaded model.

Apus asks this server for one thing only, so it serves one Starlette app of two routes rather
than llama-cpp-python's whole OpenAI-compatible FastAPI server (chat, completions, their
pydantic schemas): importing that took about half of every server start. What the two must
share with that server they do: a bearer key on every route, one request in the model at a
time, and the OpenAI response shape. What they leave out on purpose: CORS (a web page must not
read a server on 127.0.0.1; browsers keep their same-origin rule) and any route that would load
the model for someone other than Apus.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from apus.embed.local.server_process import EMBEDDINGS_PATH, MODELS_PATH

log = logging.getLogger("apus.embed.serve")


class EmbeddingModel(Protocol):
    """What the app needs of a loaded `llama_cpp.Llama`."""

    def create_embedding(self, input: str | list[str], model: str | None = None) -> Any: ...


class UseMeter(Protocol):
    """Told when an embedding request starts and ends (the watchdog's idle clock)."""

    def request_started(self) -> None: ...

    def request_finished(self) -> None: ...


def _error(status: int, message: str, kind: str) -> JSONResponse:
    """OpenAI's error shape, which every Apus client reads its message from."""
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def _authorised(request: Request, api_key: str) -> bool:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(token.encode(), api_key.encode())


def _unauthorised() -> JSONResponse:
    return _error(401, "Invalid API key", "authentication_error")


def _texts(body: Any) -> list[str] | None:
    """The request's `input` as a list of strings, or None when it is not one."""
    if not isinstance(body, dict):
        return None
    value = body.get("input")
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def create_app(model: EmbeddingModel, *, alias: str, api_key: str, meter: UseMeter) -> Starlette:
    """The app serving `model` to holders of `api_key`; `meter` hears of every embedding."""
    if not api_key:
        raise ValueError("the embedding server needs an API key")
    model_lock = threading.Lock()  # llama.cpp's context serves one batch at a time

    def embed(texts: list[str]) -> Any:
        with model_lock:
            return model.create_embedding(texts, model=alias)

    async def embeddings(request: Request) -> JSONResponse:
        if not _authorised(request, api_key):
            return _unauthorised()
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request body is not JSON", "invalid_request_error")
        texts = _texts(body)
        if texts is None:
            return _error(
                400, "`input` must be a string or a list of strings", "invalid_request_error"
            )
        meter.request_started()  # a long batch is use, not idleness
        try:
            answer = await run_in_threadpool(embed, texts)
        except Exception as exc:  # the client shows the message; the log keeps the trace
            log.exception("embedding %d texts failed", len(texts))
            return _error(500, f"embedding failed: {exc}", "server_error")
        finally:
            meter.request_finished()
        return JSONResponse(answer)

    async def models(request: Request) -> JSONResponse:
        if not _authorised(request, api_key):
            return _unauthorised()
        entry = {"id": alias, "object": "model", "owned_by": "apus"}
        return JSONResponse({"object": "list", "data": [entry]})

    return Starlette(
        routes=[
            Route(EMBEDDINGS_PATH, embeddings, methods=["POST"]),
            Route(MODELS_PATH, models, methods=["GET"]),
        ]
    )
