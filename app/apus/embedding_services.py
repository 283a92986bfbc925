"""What Apus knows about each embedding provider by name: protocol, default model, key, limits.

Pure data (no I/O, no heavy imports), so settings validation and the setup wizard can read the
provider names without loading any client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Family = Literal["openai", "gemini", "bedrock", "github-copilot"]


@dataclass(frozen=True)
class HostedService:
    """A hosted embedding API and the facts needed to talk to it."""

    id: str
    label: str
    family: Family
    default_model: str
    base_url: str  # "" when it depends on something else (Bedrock: the AWS region)
    key_env: tuple[str, ...]  # environment variables that may hold the key, first wins
    max_items: int  # texts per request the API accepts
    max_tokens: int | None = None  # tokens per request the API accepts (estimated client side)
    dims_field: str = "dimensions"  # request field for memory.search.outputDimensionality
    labels: tuple[str, str] | None = None  # (query, document) input_type the API always gets
    native_dims: Mapping[str, int] = field(default_factory=dict)  # width per model id


SERVICES: dict[str, HostedService] = {
    service.id: service
    for service in (
        HostedService(
            "openai",
            "OpenAI",
            "openai",
            "text-embedding-3-small",
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY",),
            # The embeddings API takes 2048 inputs and 300k tokens per request.
            max_items=2048,
            max_tokens=300_000,
            native_dims={
                "text-embedding-3-small": 1536,
                "text-embedding-3-large": 3072,
                "text-embedding-ada-002": 1536,
            },
        ),
        HostedService(
            "gemini",
            "Google Gemini",
            "gemini",
            "gemini-embedding-001",
            "https://generativelanguage.googleapis.com/v1beta",
            ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            max_items=100,  # batchEmbedContents takes at most 100 requests per call
            dims_field="outputDimensionality",
            native_dims={
                "gemini-embedding-001": 3072,
                "gemini-embedding-2": 3072,
                "gemini-embedding-2-preview": 3072,
            },
        ),
        HostedService(
            "voyage",
            "Voyage AI",
            "openai",
            "voyage-4-large",
            "https://api.voyageai.com/v1",
            ("VOYAGE_API_KEY",),
            # 1000 inputs per request; the large models take 120k tokens per request.
            max_items=1000,
            max_tokens=120_000,
            dims_field="output_dimension",
            labels=("query", "document"),
            native_dims={"voyage-4-large": 1024, "voyage-4": 1024, "voyage-4-lite": 1024},
        ),
        HostedService(
            "mistral",
            "Mistral",
            "openai",
            "mistral-embed",
            "https://api.mistral.ai/v1",
            ("MISTRAL_API_KEY",),
            # mistral-embed reads at most 16k tokens per request, over all its inputs.
            max_items=512,
            max_tokens=16_000,
            dims_field="output_dimension",
            native_dims={"mistral-embed": 1024},
        ),
        HostedService(
            "deepinfra",
            "DeepInfra",
            "openai",
            "BAAI/bge-m3",
            "https://api.deepinfra.com/v1/openai",
            ("DEEPINFRA_API_KEY",),
            max_items=1024,
            native_dims={"BAAI/bge-m3": 1024},
        ),
        HostedService(
            "bedrock",
            "Amazon Bedrock",
            "bedrock",
            "amazon.titan-embed-text-v2:0",
            "",
            (),  # the AWS credential chain: environment, profile, SSO, instance role
            max_items=96,  # Cohere models take 96 texts per call; Titan takes one
            native_dims={
                "amazon.titan-embed-text-v2:0": 1024,
                "amazon.titan-embed-text-v1": 1536,
                "cohere.embed-english-v3": 1024,
                "cohere.embed-multilingual-v3": 1024,
            },
        ),
        HostedService(
            "github-copilot",
            "GitHub Copilot",
            "github-copilot",
            "text-embedding-3-small",
            "https://api.githubcopilot.com",
            ("COPILOT_GITHUB_TOKEN", "GITHUB_TOKEN"),
            max_items=512,  # lowered to the model list's limits.max_inputs when it says so
            native_dims={"text-embedding-3-small": 1536},
        ),
    )
}

HOSTED_PROVIDERS: tuple[str, ...] = tuple(SERVICES)
# Servers the user runs (locally or on their network), spoken to over HTTP.
SELF_HOSTED_PROVIDERS: tuple[str, ...] = ("ollama", "lmstudio", "openai-compatible")
# Apus runs these itself, or runs nothing.
OWN_PROVIDERS: tuple[str, ...] = ("auto", "local", "none")
BUILTIN_PROVIDERS: tuple[str, ...] = (*OWN_PROVIDERS, *SELF_HOSTED_PROVIDERS, *HOSTED_PROVIDERS)
# What a [models.providers.<id>] entry may speak.
ENTRY_APIS: tuple[str, ...] = (*HOSTED_PROVIDERS, *SELF_HOSTED_PROVIDERS)


def is_remote(provider: str) -> bool:
    """A provider Apus does not run (hosted, self-hosted, or a [models.providers] entry):
    when it fails, search says so instead of degrading."""
    return provider not in OWN_PROVIDERS
