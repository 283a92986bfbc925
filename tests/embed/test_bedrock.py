"""Bedrock: InvokeModel with a SigV4 signature the fake verifies with botocore, Titan one
text per call, Cohere 96 per call with search_query / search_document."""

from __future__ import annotations

import re

import pytest

from apus.embed.bedrock import region_for
from apus.embed.providers import create_embedder
from support.fake_apis import BedrockFake

from .hosted import AWS_ACCESS_KEY, AWS_REGION, AWS_SECRET_KEY, DIMS, HARNESSES

HARNESS = HARNESSES["bedrock"]
SIGV4 = re.compile(
    rf"AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY}/\d{{8}}/{AWS_REGION}/bedrock/aws4_request, "
    r"SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*x-amz-date[a-z0-9;-]*, Signature=[0-9a-f]{64}"
)


def test_titan_gets_one_signed_request_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        embedder = create_embedder(HARNESS.settings(fake))
        vectors = embedder.embed(["first", "second", "third"], kind="document")
    assert vectors.shape == (3, DIMS)
    assert len(fake.requests) == 3
    request = fake.requests[0]
    assert (request.method, request.path) == (
        "POST",
        "/model/amazon.titan-embed-text-v2%3A0/invoke",
    )
    assert SIGV4.fullmatch(request.headers["authorization"])
    assert request.headers["content-type"] == request.headers["accept"] == "application/json"
    assert request.body == {"inputText": "first", "normalize": True, "dimensions": DIMS}
    signed = re.search(r"SignedHeaders=([^,]+)", request.headers["authorization"])
    assert signed is not None
    expected = fake.expected_signature(request, signed.group(1).split(";"))
    assert request.headers["authorization"].endswith(f"Signature={expected}")


def test_session_tokens_are_sent_and_signed(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN0000"
    fake = BedrockFake(
        access_key=AWS_ACCESS_KEY, secret_key=AWS_SECRET_KEY, region=AWS_REGION, token=token
    )
    with fake:
        for name, value in HARNESS.env(fake, AWS_SECRET_KEY).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AWS_SESSION_TOKEN", token)
        create_embedder(HARNESS.settings(fake)).embed(["a"], kind="query")
    (request,) = fake.requests
    assert request.headers["x-amz-security-token"] == token
    assert "x-amz-security-token" in request.headers["authorization"]


def test_cohere_models_batch_96_texts_with_search_input_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HARNESS.running(monkeypatch) as fake:
        settings = HARNESS.settings(fake, batch_size=200).model_copy(
            update={"model": "cohere.embed-english-v3"}
        )
        embedder = create_embedder(settings)
        embedder.embed([f"note {i}" for i in range(100)], kind="document")
        embedder.embed(["a question"], kind="query")
    bodies = [r.body for r in fake.requests]
    assert [len(b["texts"]) for b in bodies] == [96, 4, 1]
    assert [b["input_type"] for b in bodies] == ["search_document"] * 2 + ["search_query"]
    assert bodies[0]["truncate"] == "END"
    assert fake.requests[0].path == "/model/cohere.embed-english-v3/invoke"


def test_the_region_comes_from_the_endpoint_or_the_aws_configuration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert region_for("https://bedrock-runtime.ap-south-1.amazonaws.com") == "ap-south-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert region_for("") == "us-west-2"
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    assert region_for("http://127.0.0.1:9") == "eu-central-1"
