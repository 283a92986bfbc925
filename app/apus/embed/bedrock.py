"""Amazon Bedrock's InvokeModel for embedding models, signed with SigV4 by botocore.

botocore finds the credentials (environment, profile, SSO, instance role: the usual AWS
chain) and signs each attempt; the request itself goes through the same transport as every
other provider, so retries, deadlines and error messages behave alike. Titan models embed one
text per call; Cohere models take up to 96 and want search_query / search_document labels.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import numpy as np

from apus.embed.base import EmbeddingRequestError, EmbeddingUnavailable, EmbedKind, normalise_rows
from apus.embed.http import as_matrix, batches
from apus.embed.retry import Deadline, RetryPolicy
from apus.embed.transport import ServiceErrors, ServiceTransport

COHERE_MAX_TEXTS = 96
COHERE_INPUT_TYPES: dict[EmbedKind, str] = {"query": "search_query", "document": "search_document"}
CREDENTIALS_FIX = (
    "configure AWS credentials: AWS_PROFILE (or `aws sso login`), or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, and grant access to the model in the Bedrock console"
)
REGION_FIX = "export AWS_REGION=<a region where the model is enabled> (or set it in ~/.aws/config)"
_HOST_REGION = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")
_JSON = "application/json"


def region_for(base_url: str) -> str:
    """The region of a bedrock-runtime URL, else the AWS configuration's (AWS_REGION, profile)."""
    match = _HOST_REGION.search(urlsplit(base_url).netloc) if base_url else None
    if match:
        return match.group(1)
    import botocore.session

    # AWS_REGION is what the other AWS SDKs read; botocore itself knows AWS_DEFAULT_REGION.
    region = os.environ.get("AWS_REGION") or botocore.session.get_session().get_config_variable(
        "region"
    )
    if not region:
        raise EmbeddingUnavailable("no AWS region is configured for Bedrock", fix=REGION_FIX)
    return str(region)


def is_cohere(model: str) -> bool:
    # Cross-region inference profiles prefix the model id with a geography ("us.cohere...").
    return model.startswith("cohere.") or ".cohere." in model


class BedrockClient:
    """POST {base}/model/{model id}/invoke with a SigV4 `bedrock` signature."""

    def __init__(
        self,
        *,
        model: str,
        region: str,
        base_url: str = "",
        dims: int = 0,
        timeout_s: float = 60.0,
        batch_timeout_s: float = 600.0,
        batch_size: int = COHERE_MAX_TEXTS,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.region = region
        self.base_url = (base_url or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
        self.dims = dims
        self.timeout_s = timeout_s
        self.batch_timeout_s = batch_timeout_s
        self.batch_size = max(1, min(batch_size, COHERE_MAX_TEXTS))
        errors = ServiceErrors("Amazon Bedrock", f"{CREDENTIALS_FIX} (region {region})")
        self._transport = ServiceTransport(errors, retry=retry)
        self._signer = BedrockSigner(region, self._transport.add_secret)

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/model/{quote(self.model, safe='')}/invoke"

    def close(self) -> None:
        self._transport.close()

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind = "document", timeout: float | None = None
    ) -> np.ndarray:
        if timeout is not None:
            deadline = Deadline(timeout)
        else:
            deadline = Deadline(self.timeout_s if kind == "query" else self.batch_timeout_s)
        if is_cohere(self.model):
            rows = [
                self._cohere([texts[i] for i in indexes], kind, deadline)
                for indexes in batches(texts, max_items=self.batch_size)
            ]
            matrix = np.concatenate(rows, axis=0)
        else:
            vectors = [self._titan(text, deadline) for text in texts]
            matrix = as_matrix(vectors, expected=len(texts), url=self.endpoint)
        return normalise_rows(matrix)

    def _titan(self, text: str, deadline: Deadline) -> Any:
        body: dict[str, Any] = {"inputText": text}
        if "titan-embed-text-v2" in self.model:
            # v2 may be asked for 256, 512 or 1024 dimensions; v1 takes the text alone.
            body["normalize"] = True
            if self.dims:
                body["dimensions"] = self.dims
        answer = self._invoke(body, deadline)
        vector = answer.get("embedding") if isinstance(answer, dict) else None
        if not isinstance(vector, list):
            raise EmbeddingRequestError(f"{self.endpoint} answered without `embedding`")
        return vector

    def _cohere(self, texts: list[str], kind: EmbedKind, deadline: Deadline) -> np.ndarray:
        body = {"texts": texts, "input_type": COHERE_INPUT_TYPES[kind], "truncate": "END"}
        answer = self._invoke(body, deadline)
        vectors = answer.get("embeddings") if isinstance(answer, dict) else None
        if isinstance(vectors, dict):  # asked with embedding_types, the floats are keyed
            vectors = vectors.get("float")
        if not isinstance(vectors, list):
            raise EmbeddingRequestError(f"{self.endpoint} answered without `embeddings`")
        return as_matrix(vectors, expected=len(texts), url=self.endpoint)

    def _invoke(self, body: dict[str, Any], deadline: Deadline) -> Any:
        return self._transport.request(
            "POST",
            self.endpoint,
            deadline=deadline,
            content=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": _JSON, "Accept": _JSON},
            sign=self._signer.sign,
        )


class BedrockSigner:
    """SigV4 `bedrock` signatures from the AWS credential chain, for Bedrock's runtime and
    its rerank API alike; each secret it loads is handed to `keep_secret` (never shown)."""

    def __init__(self, region: str, keep_secret: Callable[[str], None]) -> None:
        self.region = region
        self._keep_secret = keep_secret
        self._credentials: Any = None

    def sign(self, request: httpx.Request) -> None:
        """Add SigV4 headers for exactly the URL, headers and body about to be sent."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        signed = AWSRequest(
            method=request.method,
            url=str(request.url),
            data=request.content,
            headers={"Content-Type": _JSON, "Accept": _JSON},
        )
        SigV4Auth(self._frozen_credentials(), "bedrock", self.region).add_auth(signed)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in signed.headers:
                request.headers[name] = signed.headers[name]

    def _frozen_credentials(self) -> Any:
        import botocore.exceptions
        import botocore.session

        try:
            if self._credentials is None:
                self._credentials = botocore.session.get_session().get_credentials()
            # Refreshable credentials (SSO, roles) renew themselves here when they expire.
            frozen = self._credentials.get_frozen_credentials() if self._credentials else None
        except botocore.exceptions.BotoCoreError as exc:
            raise EmbeddingUnavailable(
                f"AWS credentials could not be loaded: {exc}", fix=CREDENTIALS_FIX
            ) from exc
        if frozen is None or not frozen.access_key:
            raise EmbeddingUnavailable("no AWS credentials were found", fix=CREDENTIALS_FIX)
        self._keep_secret(frozen.secret_key)
        if frozen.token:
            self._keep_secret(frozen.token)
        return frozen
