"""A provider's settings, resolved, and the client that speaks its protocol.

Each named provider (built in, or a [models.providers.<id>] entry) resolves to a
ProviderConfig: the protocol, base URL, key and model after the entry, memory.search and the
service's own defaults are layered. `create_client` then builds the client for that protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from apus.config import SearchSettings
from apus.embed.base import EmbeddingUnavailable, EmbedKind
from apus.embed.prefixes import PrefixScheme, detect_family, scheme_for_family
from apus.embed.retry import RetryPolicy
from apus.embedding_services import SERVICES, HostedService

if TYPE_CHECKING:
    from apus.embed.remote import EmbeddingClient

LMSTUDIO_DEFAULT_URL = "http://127.0.0.1:1234/v1"
OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"


@dataclass(frozen=True)
class ProviderConfig:
    """A provider's settings once its [models.providers] entry and defaults are applied.

    Each field comes from the entry if it sets it, else from memory.search (model,
    remote.baseUrl, remote.apiKey), else from the service's defaults and environment.
    """

    name: str  # what memory.search.provider says
    api: str  # the protocol spoken
    base_url: str  # "" means the protocol's default
    api_key: str
    key_source: str  # where the key came from, for describe() ("" when there is none)
    key_names: tuple[str, ...]  # where a key may be set, for error fixes
    model: str


def provider_config(settings: SearchSettings, environ: Mapping[str, str]) -> ProviderConfig:
    name = settings.provider
    entry = settings.custom_providers.get(name)
    api = entry.protocol(name) if entry else name
    service = SERVICES.get(api)
    remote = settings.remote
    base_url = (entry.base_url if entry else "") or remote.base_url
    if not base_url and service:
        base_url = service.base_url
    sources: list[tuple[str, str]] = []
    if entry:
        sources.append((entry.api_key, f"apiKey in [models.providers.{name}]"))
    sources.append((remote.api_key, "memory.search.remote.apiKey"))
    # The environment only fills a key the configuration leaves empty.
    env_names = service.key_env if service else ()
    sources += [(environ.get(env, ""), env) for env in env_names]
    api_key, key_source = next(((key, src) for key, src in sources if key), ("", ""))
    # How to fix a missing key: the entry's own field, the usual variable, then the rest.
    places = [src for _key, src in sources if src not in env_names]
    key_names = (*places[:1], *env_names, *places[1:]) if entry else (*env_names, *places)
    model = (entry.model if entry else "") or settings.model
    if not model and service:
        model = service.default_model
    return ProviderConfig(name, api, base_url, api_key, key_source, key_names, model.strip())


def key_fix(config: ProviderConfig) -> str:
    """Where to put the key, in the words the user will type."""
    steps = [f"export {n}=…" if n.isupper() else f"set {n}" for n in config.key_names]
    return steps[0] + (f" (or {', or '.join(steps[1:])})" if steps[1:] else "")


def create_client(
    config: ProviderConfig, settings: SearchSettings
) -> tuple[EmbeddingClient, PrefixScheme, int | None]:
    """The protocol client, the model's prefix scheme, and its vector width when known."""
    service = SERVICES.get(config.api)
    if service is None:
        client = _self_hosted(config, settings)
        return client, scheme_for_family(detect_family(config.model)), None
    if service.family != "bedrock" and not config.api_key:
        raise EmbeddingUnavailable(
            f"{service.label} needs an API key and none is set", fix=key_fix(config)
        )
    builders = {
        "openai": _openai_shaped,
        "gemini": _gemini,
        "bedrock": _bedrock,
        "github-copilot": _copilot,
    }
    client = builders[service.family](config, settings, service)
    if service.family == "gemini":
        from apus.embed.gemini import gemini_scheme

        scheme = gemini_scheme(config.model)
    else:
        scheme = scheme_for_family(detect_family(config.model))
    dims = settings.output_dimensionality or service.native_dims.get(config.model)
    return client, scheme, dims


class _Budgets(TypedDict):
    timeout_s: float
    batch_timeout_s: float
    retry: RetryPolicy


def _budgets(settings: SearchSettings) -> _Budgets:
    remote = settings.remote
    return _Budgets(
        timeout_s=remote.timeout_seconds,
        batch_timeout_s=remote.batch_timeout_seconds,
        retry=RetryPolicy(retries=remote.max_retries),
    )


def _labels(settings: SearchSettings) -> dict[EmbedKind, str]:
    return {"query": settings.query_input_type, "document": settings.document_input_type}


def _self_hosted(config: ProviderConfig, settings: SearchSettings) -> EmbeddingClient:
    # The HTTP clients (httpx) are imported when a client is made, not by every command
    # that reads the settings.
    from apus.embed.http import OllamaEmbeddingsClient, OpenAIEmbeddingsClient

    if not config.model:
        raise EmbeddingUnavailable(
            f"the {config.name} provider needs a model id",
            fix="set memory.search.model (e.g. the name the server lists for the model)",
        )
    remote = settings.remote
    if config.api == "ollama":
        return OllamaEmbeddingsClient(
            config.base_url or OLLAMA_DEFAULT_URL,
            model=config.model,
            batch_size=remote.batch_size,
            **_budgets(settings),
        )
    base_url = config.base_url or (LMSTUDIO_DEFAULT_URL if config.api == "lmstudio" else "")
    if not base_url:
        raise EmbeddingUnavailable(
            f"the {config.name} provider needs a base URL",
            fix="set memory.search.remote.baseUrl (e.g. http://127.0.0.1:8080/v1)",
        )
    extra = {"dimensions": settings.output_dimensionality} if settings.output_dimensionality else {}
    return OpenAIEmbeddingsClient(
        base_url,
        model=config.model,
        api_key=config.api_key,
        labels=_labels(settings),
        extra_body=extra,
        batch_size=remote.batch_size,
        **_budgets(settings),
    )


def _openai_shaped(
    config: ProviderConfig, settings: SearchSettings, service: HostedService
) -> EmbeddingClient:
    from apus.embed.http import OpenAIEmbeddingsClient
    from apus.embed.transport import ServiceErrors

    labels = _labels(settings)
    if service.labels:
        # The API always wants a label; configured ones take precedence over its own.
        query, document = service.labels
        labels = {"query": labels["query"] or query, "document": labels["document"] or document}
    dims = settings.output_dimensionality
    return OpenAIEmbeddingsClient(
        config.base_url,
        model=config.model,
        api_key=config.api_key,
        labels=labels,
        extra_body={service.dims_field: dims} if dims else {},
        append_v1=False,
        batch_size=min(settings.remote.batch_size, service.max_items),
        batch_tokens=service.max_tokens,
        errors=ServiceErrors(service.label, key_fix(config)),
        **_budgets(settings),
    )


def _gemini(
    config: ProviderConfig, settings: SearchSettings, service: HostedService
) -> EmbeddingClient:
    from apus.embed.gemini import GeminiClient

    return GeminiClient(
        config.base_url,
        model=config.model,
        api_key=config.api_key,
        dims=settings.output_dimensionality,
        batch_size=min(settings.remote.batch_size, service.max_items),
        key_fix=key_fix(config),
        **_budgets(settings),
    )


def _bedrock(
    config: ProviderConfig, settings: SearchSettings, service: HostedService
) -> EmbeddingClient:
    from apus.embed.bedrock import BedrockClient, region_for

    return BedrockClient(
        model=config.model,
        region=region_for(config.base_url),
        base_url=config.base_url,
        dims=settings.output_dimensionality,
        batch_size=min(settings.remote.batch_size, service.max_items),
        **_budgets(settings),
    )


def _copilot(
    config: ProviderConfig, settings: SearchSettings, service: HostedService
) -> EmbeddingClient:
    from apus.embed.copilot import CopilotEmbeddingsClient, CopilotSession
    from apus.embed.transport import ServiceErrors

    budgets = _budgets(settings)
    session = CopilotSession(config.api_key, key_fix(config), retry=budgets["retry"])
    dims = settings.output_dimensionality
    return CopilotEmbeddingsClient(
        session,
        base_url=config.base_url,
        configured=config.base_url != service.base_url,
        model=config.model,
        extra_body={"dimensions": dims} if dims else {},
        batch_size=min(settings.remote.batch_size, service.max_items),
        errors=ServiceErrors(service.label, key_fix(config)),
        **budgets,
    )
