"""One exchange with an embedding service: the caller's deadline, retries, redirects, errors.

Every client (OpenAI-shaped, Gemini, Bedrock, Copilot, Ollama, the managed local server) sends
its requests through `ServiceTransport`, so they all retry 429 and 5xx the same way, honour
Retry-After within the caller's budget, never carry a key to another host, and fail with an
EmbeddingError that has a redacted reason and a separate fix.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from apus import __version__
from apus.embed.base import (
    EmbeddingAuthError,
    EmbeddingConnectionError,
    EmbeddingError,
    EmbeddingRateLimited,
    EmbeddingRequestError,
    EmbeddingTimeout,
    redact,
    register_secret,
    retries_allowed,
)
from apus.embed.retry import RETRY_STATUSES, Deadline, RetryPolicy, parse_retry_after

log = logging.getLogger("apus.embed")

_ERROR_BODY_CHARS = 300
_MAX_REDIRECTS = 3
# Connecting is quick or hopeless; only the answer itself may legitimately take long.
_CONNECT_TIMEOUT_S = 10.0
DEFAULT_KEY_FIX = "set memory.search.remote.apiKey (or APUS_MEMORY__SEARCH__REMOTE__API_KEY)"
TIMEOUT_FIX = (
    "raise memory.search.remote.timeoutSeconds (searches) or batchTimeoutSeconds (indexing)"
)


def status_is_auth_failure(response: httpx.Response, payload: Any) -> bool:
    return response.status_code in (401, 403)


def retry_after_header(response: httpx.Response, payload: Any) -> float | None:
    return parse_retry_after(response.headers.get("retry-after"))


@dataclass(frozen=True)
class ServiceErrors:
    """How a service is named in errors, what fixes its credentials, and how it signals both."""

    service: str
    key_fix: str = DEFAULT_KEY_FIX
    is_auth_failure: Callable[[httpx.Response, Any], bool] = status_is_auth_failure
    retry_hint: Callable[[httpx.Response, Any], float | None] = retry_after_header


class _Dropped(Exception):
    """The connection broke mid-exchange: worth another attempt, unlike a refused connect."""

    def __init__(self, error: EmbeddingConnectionError) -> None:
        super().__init__(error.reason)
        self.error = error


class ServiceTransport:
    """An httpx client that answers parsed JSON or raises an EmbeddingError subclass."""

    def __init__(
        self,
        errors: ServiceErrors,
        *,
        retry: RetryPolicy | None = None,
        secrets: Sequence[str] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.errors = errors
        self.retry = retry or RetryPolicy()
        self._secrets: set[str] = set()
        for secret in secrets:
            self.add_secret(secret)
        base_headers = {"User-Agent": f"apus/{__version__}", **(headers or {})}
        # Redirects are followed by hand, and only to the same origin (see _send).
        self._client = httpx.Client(headers=base_headers, follow_redirects=False)

    def add_secret(self, secret: str) -> None:
        """A value that must never show in an error or a log (keys, tokens)."""
        if secret:
            register_secret(secret)
            self._secrets.add(secret)

    def close(self) -> None:
        self._client.close()

    def request(
        self,
        method: str,
        url: str,
        *,
        deadline: Deadline,
        json_body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        sign: Callable[[httpx.Request], None] | None = None,
    ) -> Any:
        """Send until a success, a final failure, or the deadline; return the JSON answer."""
        attempt = 0
        while True:
            try:
                response = self._send(method, url, deadline, json_body, content, headers, sign)
            except _Dropped as dropped:
                wait = self._wait(attempt, None, deadline)
                if wait is None:
                    raise dropped.error from None
                self._pause(wait, f"{url} dropped the connection")
                attempt += 1
                continue
            if response.status_code < 300:
                return self._json(response, url)
            payload = _json_or_none(response)
            hint = self.errors.retry_hint(response, payload)
            retryable = response.status_code in RETRY_STATUSES
            wait = self._wait(attempt, hint, deadline) if retryable else None
            if wait is None:
                raise self._failure(response, payload, url, attempt + 1, hint, deadline)
            self._pause(wait, f"{url} answered HTTP {response.status_code}")
            attempt += 1

    def _wait(self, attempt: int, hint: float | None, deadline: Deadline) -> float | None:
        if not retries_allowed() or attempt >= self.retry.retries:
            return None
        wait = self.retry.delay(attempt, hint)
        # Waiting past the deadline would only deliver the same failure later.
        return wait if wait < deadline.remaining() else None

    def _pause(self, seconds: float, why: str) -> None:
        log.info("%s; retrying in %.1fs", redact(why, self._secrets), seconds)
        time.sleep(seconds)

    def _send(
        self,
        method: str,
        url: str,
        deadline: Deadline,
        json_body: Any,
        content: bytes | None,
        headers: Mapping[str, str] | None,
        sign: Callable[[httpx.Request], None] | None,
    ) -> httpx.Response:
        target = url
        for _hop in range(_MAX_REDIRECTS + 1):
            remaining = deadline.remaining()
            if remaining <= 0:
                raise self._timeout(deadline)
            timeout = httpx.Timeout(remaining, connect=min(remaining, _CONNECT_TIMEOUT_S))
            request = self._client.build_request(
                method, target, json=json_body, content=content, headers=headers, timeout=timeout
            )
            if sign is not None:
                sign(request)
            try:
                response = self._client.send(request)
            except httpx.TimeoutException as exc:
                raise self._timeout(deadline) from exc
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                reason = f"{target} closed the connection mid-request"
                raise _Dropped(EmbeddingConnectionError(reason)) from exc
            except (httpx.TransportError, httpx.InvalidURL) as exc:
                raise EmbeddingConnectionError(
                    _transport_reason(target, exc),
                    fix="check memory.search.remote.baseUrl and the network",
                ) from exc
            following = self._redirect(response, target)
            if following is None:
                return response
            target = following
        raise EmbeddingRequestError(f"{url} redirected more than {_MAX_REDIRECTS} times")

    def _redirect(self, response: httpx.Response, url: str) -> str | None:
        """The same-origin 307/308 target to follow; None when `response` is not a redirect."""
        if not response.is_redirect:
            return None
        target = response.url.join(response.headers["location"])
        same_origin = (target.scheme, target.host, target.port) == (
            response.url.scheme,
            response.url.host,
            response.url.port,
        )
        # 307/308 repeat the POST as it was; 301-303 would turn it into a GET without a body.
        if same_origin and response.status_code in (307, 308):
            return str(target)
        raise EmbeddingRequestError(
            f"{self.errors.service} redirected {url} to {target.scheme}://{target.host}; "
            "Apus does not follow it, so the key is only ever sent to the configured host",
            fix="set memory.search.remote.baseUrl to the address it redirects to, "
            "if you trust that host",
        )

    def _json(self, response: httpx.Response, url: str) -> Any:
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise EmbeddingRequestError(
                f"{url} answered with something that is not JSON",
                fix="check memory.search.remote.baseUrl: it should point at the service's API",
            ) from exc

    def _timeout(self, deadline: Deadline) -> EmbeddingTimeout:
        return EmbeddingTimeout(
            f"{self.errors.service} did not answer within {deadline.seconds:g}s",
            fix=TIMEOUT_FIX,
        )

    def _failure(
        self,
        response: httpx.Response,
        payload: Any,
        url: str,
        attempts: int,
        hint: float | None,
        deadline: Deadline,
    ) -> EmbeddingError:
        status = response.status_code
        detail = redact(error_message(response, payload), self._secrets)
        service = self.errors.service
        if self.errors.is_auth_failure(response, payload):
            return EmbeddingAuthError(
                f"{service} refused the credentials (HTTP {status}: {detail})",
                fix=self.errors.key_fix,
            )
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        if status == 429:
            waited = ""
            if hint is not None and hint >= deadline.remaining():
                waited = f"; it asked to wait {hint:g}s, more than this call's budget has left"
            return EmbeddingRateLimited(
                f"{service} is rate limiting requests (HTTP 429{tried}: {detail}){waited}",
                fix="wait and try again; an index run keeps every finished batch and "
                "`apus memory index` continues from there",
                retry_after=hint,
            )
        if status >= 500:
            return EmbeddingRequestError(
                f"{service} failed (HTTP {status}{tried}: {detail}) at {url}",
                fix="try again later; keyword search keeps working meanwhile",
            )
        return EmbeddingRequestError(
            f"{service} rejected the request (HTTP {status}: {detail}) at {url}",
            fix="check memory.search.model and memory.search.outputDimensionality",
        )


def error_message(response: httpx.Response, payload: Any) -> str:
    """The service's own words from the usual error shapes, else the start of the body."""
    if isinstance(payload, dict):
        error = payload.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message[:_ERROR_BODY_CHARS]
        for key in ("message", "Message", "detail", "error"):
            value = payload.get(key)
            if isinstance(value, str):
                return value[:_ERROR_BODY_CHARS]
    text = response.text.strip()
    return text[:_ERROR_BODY_CHARS] or response.reason_phrase


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _transport_reason(url: str, exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url} (is the server running, is the address right?)"
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return f"{url} is not a usable address"
    return f"request to {url} failed: {type(exc).__name__}"
