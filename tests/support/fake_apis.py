"""Local fakes of the hosted embedding APIs: OpenAI-shaped (OpenAI, Mistral, DeepInfra,
Voyage), Gemini, Bedrock (verifying SigV4 with botocore) and GitHub Copilot (token exchange,
model list, embeddings). Each answers and fails the way the real service does."""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from support.fake_service import FakeService, Recorded, Reply, vector_for


def _openai_401(key: str) -> dict[str, Any]:
    # OpenAI repeats the key it was given, which is exactly what must never reach the user.
    return {
        "error": {
            "message": f"Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }


UNAUTHORIZED: dict[str, Callable[[str], Any]] = {
    "openai": _openai_401,
    "voyage": lambda key: {"detail": "Provided API key is invalid."},
    "mistral": lambda key: {"message": "Unauthorized", "request_id": "a1b2c3"},
    "deepinfra": lambda key: {"detail": {"error": f"Invalid token {key}"}},
}


class OpenAIShapedFake(FakeService):
    """POST {prefix}/embeddings with a bearer key; the vector width follows `dims_field`."""

    def __init__(
        self,
        *,
        api_key: str,
        style: str = "openai",
        prefix: str = "/v1",
        dims: int = 8,
        dims_field: str = "dimensions",
        max_items: int = 2048,
    ) -> None:
        super().__init__()
        self.api_key, self.style, self.prefix = api_key, style, prefix
        self.dims, self.dims_field, self.max_items = dims, dims_field, max_items

    def answer(self, request: Recorded) -> Reply:
        if (request.method, request.path) != ("POST", f"{self.prefix}/embeddings"):
            return Reply(404, {"error": {"message": f"no route {request.path}"}})
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        if given != self.api_key:
            return Reply(401, UNAUTHORIZED[self.style](given))
        body = request.body
        texts = body["input"]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return Reply(400, {"error": {"message": "input must be a list of strings"}})
        if len(texts) > self.max_items or not isinstance(body.get("model"), str):
            return Reply(400, {"error": {"message": "too many inputs, or no model"}})
        width = body.get(self.dims_field) or self.dims
        data = [
            {"object": "embedding", "index": i, "embedding": vector_for(text, width)}
            for i, text in enumerate(texts)
        ]
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return Reply(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})


GEMINI_BAD_KEY = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ],
    }
}


def gemini_quota(delay: str) -> dict[str, Any]:
    return {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}],
        }
    }


def media_vector(data: bytes, dims: int) -> list[float]:
    return vector_for(hashlib.sha256(data).hexdigest(), dims)


class GeminiFake(FakeService):
    """/v1beta/models/{model}:batchEmbedContents (<= 100 requests) and :embedContent."""

    def __init__(self, *, api_key: str, model: str = "gemini-embedding-001", dims: int = 8) -> None:
        super().__init__()
        self.api_key, self.model, self.dims = api_key, model, dims
        self.media: list[tuple[str, bytes]] = []  # (mimeType, decoded data) received
        # Text containing one of these phrases embeds as that file does: what a multimodal
        # model does with a caption of a picture ("a sunset over the harbour" ~ the photo).
        self.meanings: dict[str, bytes] = {}

    def answer(self, request: Recorded) -> Reply:
        if "key=" in request.path or request.headers.get("x-goog-api-key") != self.api_key:
            return Reply(400, GEMINI_BAD_KEY)
        base = f"/v1beta/models/{self.model}:"
        if request.path == base + "batchEmbedContents":
            return self._batch(request.body["requests"])
        if request.path == base + "embedContent":
            return self._single(request.body)
        return Reply(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})

    def _batch(self, requests: list[dict[str, Any]]) -> Reply:
        if len(requests) > 100:
            message = (
                "* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch"
            )
            return Reply(
                400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
            )
        embeddings = []
        for item in requests:
            if item.get("model") != f"models/{self.model}":
                return Reply(400, {"error": {"code": 400, "message": "model mismatch"}})
            text = item["content"]["parts"][0]["text"]
            width = item.get("outputDimensionality") or self.dims
            meant = [data for phrase, data in self.meanings.items() if phrase in text]
            values = media_vector(meant[0], width) if meant else vector_for(text, width)
            embeddings.append({"values": values})
        return Reply(200, {"embeddings": embeddings})

    def _single(self, body: dict[str, Any]) -> Reply:
        inline = body["content"]["parts"][0]["inlineData"]
        data = base64.b64decode(inline["data"], validate=True)
        self.media.append((inline["mimeType"], data))
        width = body.get("outputDimensionality") or self.dims
        return Reply(200, {"embedding": {"values": media_vector(data, width)}})


_SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
    r"(?P<service>[a-z0-9-]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)
BEDROCK_BAD_SIGNATURE = {
    "message": "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method."
}


class BedrockFake(FakeService):
    """POST /model/{id}/invoke, refused unless the SigV4 signature verifies with the secret."""

    def __init__(
        self, *, access_key: str, secret_key: str, region: str, token: str | None = None
    ) -> None:
        super().__init__()
        self.access_key, self.secret_key, self.region, self.token = (
            access_key,
            secret_key,
            region,
            token,
        )
        self.dims = 8

    def answer(self, request: Recorded) -> Reply:
        refusal = self._check_signature(request)
        if refusal is not None:
            return refusal
        match = re.fullmatch(r"/model/([^/]+)/invoke", request.path)
        if request.method != "POST" or match is None:
            return Reply(404, {"message": f"no route {request.path}"})
        model, body = unquote(match.group(1)), request.body
        if model.startswith("cohere."):
            if len(body["texts"]) > 96 or body.get("input_type") not in (
                "search_query",
                "search_document",
            ):
                return Reply(400, {"message": "Malformed input request"})
            vectors = [vector_for(text, self.dims) for text in body["texts"]]
            return Reply(200, {"embeddings": vectors, "id": "x", "texts": body["texts"]})
        width = body.get("dimensions") or self.dims
        vector = vector_for(body["inputText"], width)
        return Reply(200, {"embedding": vector, "inputTextTokenCount": 3})

    def _check_signature(self, request: Recorded) -> Reply | None:
        parsed = _SIGV4.fullmatch(request.headers.get("authorization", ""))
        if parsed is None:
            return Reply(403, {"message": "Missing Authentication Token"})
        if parsed["key"] != self.access_key:
            return Reply(403, {"message": "The security token included in the request is invalid."})
        date = request.headers.get("x-amz-date", "")
        scope_ok = (parsed["region"], parsed["service"]) == (self.region, "bedrock")
        if not scope_ok or not date.startswith(parsed["date"]):
            return Reply(403, {"message": "Credential should be scoped to a valid region."})
        if self.token is not None and request.headers.get("x-amz-security-token") != self.token:
            return Reply(403, {"message": "The security token included in the request is invalid."})
        if self.expected_signature(request, parsed["signed"].split(";")) != parsed["signature"]:
            return Reply(403, BEDROCK_BAD_SIGNATURE)
        return None

    def expected_signature(self, request: Recorded, signed: list[str]) -> str:
        """What AWS computes: botocore's SigV4 over what arrived, with our copy of the secret."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        headers = {name: request.headers[name] for name in signed}
        aws = AWSRequest(
            method=request.method,
            url=f"{self.url}{request.path}",
            data=request.raw,
            headers=headers,
        )
        aws.context["timestamp"] = request.headers["x-amz-date"]
        auth = SigV4Auth(
            Credentials(self.access_key, self.secret_key, self.token), "bedrock", self.region
        )
        return auth.signature(auth.string_to_sign(aws, auth.canonical_request(aws)), aws)


COPILOT_MODELS: list[dict[str, Any]] = [
    {
        "id": "gpt-4.1",
        "name": "GPT-4.1",
        "object": "model",
        "vendor": "Azure OpenAI",
        "capabilities": {"type": "chat", "family": "gpt-4.1", "limits": {}},
        "model_picker_enabled": True,
    },
    {
        "id": "text-embedding-3-small",
        "name": "Embedding V3 small",
        "object": "model",
        "vendor": "Azure OpenAI",
        "capabilities": {
            "type": "embeddings",
            "family": "text-embedding-3-small",
            "limits": {"max_inputs": 512},
            "supports": {"dimensions": True},
            "tokenizer": "cl100k_base",
        },
        "model_picker_enabled": False,
    },
    {
        "id": "text-embedding-ada-002",
        "name": "Embedding V2 Ada",
        "object": "model",
        "vendor": "Azure OpenAI",
        "capabilities": {"type": "embeddings", "limits": {"max_inputs": 256}},
    },
]


class CopilotFake(FakeService):
    """GitHub's token exchange, and the Copilot API's /models and /embeddings behind it."""

    def __init__(
        self, *, github_token: str, ttl: int = 1500, models: list[Any] | None = None
    ) -> None:
        super().__init__()
        self.github_token, self.ttl = github_token, ttl
        self.models = COPILOT_MODELS if models is None else models
        self.issued: list[str] = []
        self._serial = itertools.count(1)

    def answer(self, request: Recorded) -> Reply:
        if request.path == "/copilot_internal/v2/token" and request.method == "GET":
            return self._exchange(request)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if not self.issued or bearer != self.issued[-1]:
            return Reply(401, {"error": {"message": "unauthorized: token expired"}})
        if not request.headers.get("copilot-integration-id"):
            return Reply(400, {"error": {"message": "missing Copilot-Integration-Id header"}})
        if (request.method, request.path) == ("GET", "/models"):
            return Reply(200, {"data": self.models, "object": "list"})
        if (request.method, request.path) == ("POST", "/embeddings"):
            body = request.body
            width = body.get("dimensions") or 8
            data = [
                {"object": "embedding", "index": i, "embedding": vector_for(text, width)}
                for i, text in enumerate(body["input"])
            ]
            return Reply(200, {"object": "list", "data": data, "model": body["model"]})
        return Reply(404, {"message": "Not Found"})

    def _exchange(self, request: Recorded) -> Reply:
        if request.headers.get("authorization") != f"token {self.github_token}":
            return Reply(
                401,
                {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
            )
        expires = int(time.time()) + self.ttl
        token = (
            f"tid={next(self._serial)};exp={expires};sku=copilot_individual;"
            "proxy-ep=proxy.individual.githubcopilot.com;8kp=1:" + "f" * 40
        )
        self.issued.append(token)
        endpoints = {
            "api": "https://api.individual.githubcopilot.com",
            "proxy": "https://proxy.individual.githubcopilot.com",
        }
        body = {
            "token": token,
            "expires_at": expires,
            "refresh_in": self.ttl - 300,
            "endpoints": endpoints,
        }
        return Reply(200, body)
