"""Rerank services as a search meets them: real HTTP on 127.0.0.1 that answers best first
(out of the order asked), fails, keeps its answer past the deadline, or wants a key; the
fused order stands, with the reason and the fix, whenever the service cannot score."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.config import Settings
from apus.embed.base import redact
from support.fake_rerank import BedrockRerankFake, RerankFake
from support.fake_service import Reply
from support.vaults import make_settings, search_response, sync, write_note

QUERY = "harbour beacon"
NOTES = {
    "gravel.md": "# Gravel\n\nharbour beacon harbour beacon notes about the gravel shed\n",
    "keeper.md": "# Keeper\n\nthe harbour and the lighthouse keeper of the granite island\n",
    "path.md": "# Path\n\nthe beacon on the coast path\n",
}
KEYS = {"jina": "JINAkey00000000000000000000", "voyage": "pa-VOYAGErerank111111111111"}
KEY_VARIABLES = ("JINA_API_KEY", "VOYAGE_API_KEY", "COHERE_API_KEY", "CO_API_KEY")


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (*KEY_VARIABLES, "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for name, text in NOTES.items():
        write_note(root, name, text)
    return root


def _settings(vault: Path, provider: str, url: str, **flags: object) -> Settings:
    settings = make_settings(
        vault,
        memory__search__rerank__enabled=True,
        memory__search__rerank__provider=provider,
        memory__search__rerank__remote__baseUrl=url,
        **flags,
    )
    sync(settings)
    return settings


def _fused(settings: Settings) -> list[str]:
    hits = search_response(settings, QUERY, mode="keyword", rerank=False).hits
    return [hit.path for hit in hits]


@pytest.fixture
def llama() -> Iterator[RerankFake]:
    with RerankFake("llama-cpp") as fake:
        yield fake


def test_an_answer_best_first_is_read_back_by_index(vault: Path, llama: RerankFake) -> None:
    settings = _settings(vault, "llama-cpp", llama.url)
    response = search_response(settings, QUERY, mode="keyword")
    assert response.legs["rerank"].ran
    assert response.hits[0].path == "keeper.md"
    scores = {hit.path: hit.explain.rerank for hit in response.hits}
    # The service's scores (good words less bad ones, the heading's included), by passage.
    assert scores == {"keeper.md": 4.0, "gravel.md": -3.0, "path.md": 0.0}
    (request,) = llama.requests
    assert request.path == "/v1/rerank" and "authorization" not in request.headers
    body = request.body
    assert body["query"] == QUERY and body["top_n"] == 3 and "model" not in body
    # Every passage was asked once; the service answered best first, in another order.
    asked = [document.splitlines()[-1] for document in body["documents"]]
    assert sorted(asked) == sorted(text.splitlines()[-1] for text in NOTES.values())
    assert asked[0] != NOTES["keeper.md"].splitlines()[-1]


@pytest.mark.parametrize(
    ("provider", "path", "count_field"),
    [
        ("jina", "/v1/rerank", "top_n"),
        ("voyage", "/v1/rerank", "top_k"),
        ("cohere", "/v2/rerank", "top_n"),
    ],
)
def test_hosted_services_get_their_own_request_and_key(
    vault: Path, monkeypatch: pytest.MonkeyPatch, provider: str, path: str, count_field: str
) -> None:
    key = KEYS.get(provider, "COHEREkey222222222222222222")
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", key)
    with RerankFake(provider, key=key) as fake:
        base = fake.url + path.removesuffix("/rerank")
        settings = _settings(vault, provider, base)
        response = search_response(settings, QUERY, mode="keyword")
    assert response.legs["rerank"].ran, response.legs["rerank"]
    assert response.hits[0].path == "keeper.md"
    (request,) = fake.requests
    assert request.path == path
    assert request.headers["authorization"] == f"Bearer {key}"
    assert request.body[count_field] == 3 and request.body["model"]


def test_a_hosted_service_without_a_key_is_reported_with_where_to_put_it(vault: Path) -> None:
    settings = _settings(vault, "jina", "http://127.0.0.1:9")
    leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert (leg.ran, leg.reason) == (False, "no API key for the Jina reranker")
    assert leg.fix == "set memory.search.rerank.remote.apiKey (or JINA_API_KEY)"


def test_a_refused_key_is_reported_never_shown(vault: Path) -> None:
    with RerankFake("jina", key="the-right-key-0000000") as fake:
        settings = _settings(
            vault, "jina", fake.url + "/v1", memory__search__rerank__remote__apiKey=KEYS["jina"]
        )
        leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert not leg.ran and "refused the credentials (HTTP 401" in leg.reason
    assert KEYS["jina"] not in leg.reason + leg.fix
    assert redact(KEYS["jina"]) == "***"
    assert "memory.search.rerank.remote.apiKey" in leg.fix


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            Reply(400, {"error": {"message": "bad model"}}),
            "rejected the request (HTTP 400: bad model)",
        ),
        (Reply(200, {"results": [{"index": 0, "relevance_score": 1.0}]}), "scored 1 of 3 passages"),
        (Reply(200, {"results": [{"index": 7, "relevance_score": 1.0}]}), "unreadable `results`"),
        (Reply(200, "<html>proxy error</html>"), "something that is not JSON"),
    ],
)
def test_a_failing_service_leaves_the_fused_order_and_says_why(
    vault: Path, llama: RerankFake, reply: Reply, reason: str
) -> None:
    settings = _settings(vault, "llama-cpp", llama.url)
    llama.fail("/v1/rerank", reply)
    response = search_response(settings, QUERY, mode="keyword")
    leg = response.legs["rerank"]
    assert not leg.ran and reason in leg.reason, leg.reason
    assert leg.fix
    assert [hit.path for hit in response.hits] == _fused(settings)
    assert all(hit.explain.rerank is None for hit in response.hits)


def test_a_server_error_is_not_retried_past_the_deadline(vault: Path, llama: RerankFake) -> None:
    # A retry waits about a second: more than this deadline has left, so none is made.
    settings = _settings(vault, "llama-cpp", llama.url, memory__search__rerank__deadlineMs=200)
    llama.fail("/v1/rerank", Reply(503, {"error": {"message": "loading model"}}))
    leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert not leg.ran and "failed (HTTP 503: loading model)" in leg.reason
    assert len(llama.requests) == 1


def test_an_answer_kept_past_the_deadline_leaves_the_fused_order(
    vault: Path, llama: RerankFake
) -> None:
    settings = _settings(vault, "llama-cpp", llama.url, memory__search__rerank__deadlineMs=300)
    llama.hold()
    try:
        response = search_response(settings, QUERY, mode="keyword")
    finally:
        llama.release()
    leg = response.legs["rerank"]
    assert not leg.ran
    # Within what the deadline had left when the request went out.
    assert re.fullmatch(r"llama.cpp server did not answer within \d+ ms", leg.reason)
    assert "memory.search.rerank.deadlineMs" in leg.fix
    assert [hit.path for hit in response.hits] == _fused(settings)


def test_a_server_that_is_not_there_is_reported(vault: Path) -> None:
    from support.ports import refusing_port

    with refusing_port() as port:
        settings = _settings(vault, "llama-cpp", f"http://127.0.0.1:{port}")
        leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert not leg.ran and "cannot connect to" in leg.reason
    assert leg.fix == "check memory.search.rerank.remote.baseUrl and the network"


def test_llama_cpp_needs_its_server_address(vault: Path) -> None:
    settings = _settings(vault, "llama-cpp", "")
    leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert (leg.ran, leg.reason) == (
        False,
        "the llama.cpp server reranker needs the server's address",
    )


ACCESS, SECRET, REGION = (
    "AKIAAPUSRERANK000001",
    "AWSrerankSecret77777777777777777777777777",
    "eu-west-1",
)


def test_bedrock_rerank_is_signed_and_names_the_model_by_its_arn(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", REGION)
    with BedrockRerankFake(access_key=ACCESS, secret_key=SECRET, region=REGION) as fake:
        settings = _settings(vault, "bedrock", fake.url)
        response = search_response(settings, QUERY, mode="keyword")
    assert response.legs["rerank"].ran, response.legs["rerank"]
    assert response.hits[0].path == "keeper.md"
    (request,) = fake.requests
    assert re.match(
        rf"AWS4-HMAC-SHA256 Credential={ACCESS}/\d{{8}}/{REGION}/bedrock/",
        request.headers["authorization"],
    )
    config = request.body["rerankingConfiguration"]["bedrockRerankingConfiguration"]
    assert config["modelConfiguration"]["modelArn"] == (
        f"arn:aws:bedrock:{REGION}::foundation-model/amazon.rerank-v1:0"
    )
    assert config["numberOfResults"] == 3
    assert request.body["queries"] == [{"type": "TEXT", "textQuery": {"text": QUERY}}]


def test_bedrock_without_credentials_says_how_to_give_them(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", REGION)
    with BedrockRerankFake(access_key=ACCESS, secret_key=SECRET, region=REGION) as fake:
        settings = _settings(vault, "bedrock", fake.url)
        leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
        assert fake.requests == []
    assert not leg.ran and leg.reason == "no AWS credentials were found"
    assert "AWS_PROFILE" in leg.fix
