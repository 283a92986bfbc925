"""First-run setup without a UI: check a notes folder, detect the GPU, fetch a model, save."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from apus.config import ProviderName, SearchSettings, update_config_file
from apus.embed.base import PROBE_BUDGET_REMOTE_S, ProbeResult, probe
from apus.embed.local.gguf_info import GGUFFormatError, read_gguf_info
from apus.embed.providers import is_remote, resolve_provider
from apus.embedding_services import SERVICES
from apus.vault.scan import NOTE_SUFFIXES

if TYPE_CHECKING:
    from apus.embed.local.catalog import ModelManifest

Level = Literal["ok", "warning", "error"]

# Counting notes in a huge folder (a home directory) must not stall the wizard: stop here.
_COUNT_LIMIT = 20_000


@dataclass(frozen=True)
class FolderCheck:
    """Whether a folder can be the vault, and a one-line verdict for the user."""

    path: Path | None
    level: Level
    message: str
    notes: int = 0
    more: bool = False  # counting stopped at the limit

    @property
    def usable(self) -> bool:
        return self.level != "error"


def check_folder(raw: str, *, count_limit: int = _COUNT_LIMIT) -> FolderCheck:
    """Validate a folder typed or picked by the user and count the notes in it."""
    text = raw.strip()
    if not text:
        return FolderCheck(None, "error", "Type the path of your notes folder, or pick one.")
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    path = path.resolve()
    if not path.exists():
        return FolderCheck(path, "error", f"{path} does not exist.")
    if not path.is_dir():
        return FolderCheck(path, "error", f"{path} is a file; choose the folder that holds it.")
    if not os.access(path, os.R_OK | os.X_OK):
        return FolderCheck(path, "error", f"{path} cannot be read (permission denied).")
    notes, more = count_notes(path, limit=count_limit)
    if path == Path.home() or path == Path(path.anchor):
        return FolderCheck(
            path,
            "warning",
            f"{path} is a whole home or system folder ({_count_text(notes, more)}); "
            "a notes folder inside it is usually better.",
            notes,
            more,
        )
    if notes == 0:
        return FolderCheck(
            path,
            "warning",
            "No Markdown notes here yet; notes you add later are picked up automatically.",
        )
    return FolderCheck(path, "ok", f"{_count_text(notes, more)} found.", notes, more)


def count_notes(folder: Path, *, limit: int = _COUNT_LIMIT) -> tuple[int, bool]:
    """Markdown files under `folder`, skipping hidden folders; (count, stopped at limit)."""
    found = 0
    for _dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [name for name in dirnames if not name.startswith(".")]
        found += sum(1 for name in filenames if name.lower().endswith(NOTE_SUFFIXES))
        if found >= limit:
            return limit, True
    return found, False


def _count_text(notes: int, more: bool) -> str:
    plural = "" if notes == 1 else "s"
    return f"more than {notes:,} notes" if more else f"{notes:,} note{plural}"


@dataclass(frozen=True)
class ProviderChoice:
    """One way to get embeddings, as the wizard offers it."""

    name: ProviderName
    label: str
    description: str
    default_url: str = ""
    default_model: str = ""
    key_env: tuple[str, ...] = ()  # environment variables that may hold its key, first wins
    warning: str = ""  # what choosing it sends where, and that it costs money

    @property
    def remote(self) -> bool:
        return is_remote(self.name)

    @property
    def hosted(self) -> bool:
        """A service on the internet: it needs a key (or AWS credentials), not a URL."""
        return self.name in SERVICES


HOSTED_WARNING = (
    "{label} receives the text of every note Apus indexes and of every search, and bills "
    "your account for it. Choose it only for notes you are allowed to send there; local "
    "keeps everything on this computer."
)


def _hosted(name: str, description: str) -> ProviderChoice:
    service = SERVICES[name]
    return ProviderChoice(
        name,
        service.label,
        description,
        default_url=service.base_url,
        default_model=service.default_model,
        key_env=service.key_env,
        warning=HOSTED_WARNING.format(label=service.label),
    )


PROVIDER_CHOICES: tuple[ProviderChoice, ...] = (
    ProviderChoice(
        "local",
        "Local model (recommended)",
        "Runs EmbeddingGemma on this computer with llama.cpp. Works offline; "
        "nothing leaves your machine. One download of about 330 MB.",
    ),
    ProviderChoice(
        "ollama",
        "Ollama",
        "Uses an embedding model served by Ollama on this machine or your network.",
        default_url="http://127.0.0.1:11434",
        default_model="embeddinggemma",
    ),
    ProviderChoice(
        "lmstudio",
        "LM Studio",
        "Uses an embedding model loaded in LM Studio's local server.",
        default_url="http://127.0.0.1:1234/v1",
    ),
    ProviderChoice(
        "openai-compatible",
        "OpenAI-compatible URL",
        "Any /v1/embeddings endpoint: llama-server, vLLM, or a cloud service.",
        default_url="http://127.0.0.1:8080/v1",
    ),
    _hosted(
        "openai",
        "OpenAI's embedding API (text-embedding-3-small). Needs an API key: OPENAI_API_KEY.",
    ),
    _hosted(
        "gemini",
        "Google's Gemini embedding API (gemini-embedding-001; gemini-embedding-2 also embeds "
        "images and audio). Needs GEMINI_API_KEY or GOOGLE_API_KEY.",
    ),
    _hosted(
        "voyage",
        "Voyage AI's retrieval embeddings (voyage-4-large). Needs VOYAGE_API_KEY.",
    ),
    _hosted("mistral", "Mistral's mistral-embed. Needs MISTRAL_API_KEY."),
    _hosted(
        "deepinfra",
        "The open BAAI/bge-m3 model, hosted by DeepInfra. Needs DEEPINFRA_API_KEY.",
    ),
    _hosted(
        "bedrock",
        "Amazon Bedrock in your AWS account (Titan or Cohere embedding models), signed with "
        "your AWS credentials: a profile, SSO, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
        "AWS_REGION picks the region.",
    ),
    _hosted(
        "github-copilot",
        "Embeddings included in a GitHub Copilot subscription, reached with your GitHub "
        "token: COPILOT_GITHUB_TOKEN or GITHUB_TOKEN (`gh auth token` prints one).",
    ),
    ProviderChoice(
        "none",
        "Keyword only",
        "No embeddings: fast exact-word search. Meaning search can be turned on later.",
    ),
)


@dataclass(frozen=True)
class Hardware:
    """What llama.cpp can use here, in words the user understands."""

    gpu_offload: bool
    cpu_count: int
    summary: str


def detect_hardware() -> Hardware:
    """Ask the installed llama.cpp whether it can offload to a GPU (CPU when it cannot load)."""
    cpus = os.cpu_count() or 1
    try:
        import llama_cpp
    except (ImportError, OSError) as exc:
        return Hardware(
            False, cpus, f"llama.cpp is not available ({exc}); only remote providers will work."
        )
    try:
        gpu = bool(llama_cpp.llama_supports_gpu_offload())
    except (AttributeError, OSError):
        gpu = False
    if gpu:
        return Hardware(True, cpus, "GPU found: the model runs on the GPU (fast).")
    return Hardware(
        False,
        cpus,
        f"No GPU offload in this llama.cpp build: the model runs on {cpus} CPU cores "
        "(fine for notes; the first index takes longer).",
    )


@dataclass(frozen=True)
class GgufCheck:
    path: Path | None
    ok: bool
    message: str


def check_gguf(raw: str) -> GgufCheck:
    """Validate a local .gguf file offered instead of a download."""
    text = raw.strip()
    if not text:
        return GgufCheck(None, False, "Type the path of a .gguf embedding model.")
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        return GgufCheck(path, False, f"{path} is not a file.")
    try:
        info = read_gguf_info(path)
    except (GGUFFormatError, OSError) as exc:
        return GgufCheck(path, False, f"{path.name} is not a usable GGUF file ({exc}).")
    dims = info.embedding_length
    detail = f"{info.name or info.architecture or 'GGUF model'}"
    if dims:
        detail += f", {dims} dimensions"
    return GgufCheck(path, True, f"{path.name}: {detail}.")


def default_model(catalog: Mapping[str, ModelManifest] | None = None) -> ModelManifest:
    """The catalogue model the wizard offers (from `catalog`, else the bundled one)."""
    from apus.embed.local.catalog import DEFAULT_MODEL, load_catalog

    models = catalog if catalog is not None else load_catalog()
    if DEFAULT_MODEL in models:
        return models[DEFAULT_MODEL]
    return next(iter(models.values()))


def model_ready(manifest: ModelManifest) -> bool:
    """True when the catalogue model is on disk and verified (hashes it once, then cached)."""
    from apus.embed.local.download import DownloadError, model_path, verify_model_file

    try:
        verify_model_file(model_path(manifest), manifest, quarantine=False)
    except DownloadError:
        return False
    return True


def download_model(
    manifest: ModelManifest,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Download (or resume) and verify a model. Raises DownloadError, DownloadCancelled."""
    from apus.embed.local.download import pull_model

    return pull_model(manifest, progress=progress, cancel=cancel)


@dataclass(frozen=True)
class SetupChoices:
    """Everything the wizard asks, ready to be written to config.toml."""

    vault: Path
    provider: ProviderName
    model: str = ""  # catalogue name (local) or the remote model id
    model_path: str = ""  # a local .gguf used instead of a catalogue model
    base_url: str = ""
    # A pasted key, stored in config.toml (mode 0600); "" takes it from the environment.
    api_key: str = field(default="", repr=False)

    def config_updates(self) -> dict[str, object]:
        updates: dict[str, object] = {
            "vault": str(self.vault),
            "memory.search.provider": self.provider,
        }
        if self.provider == "local":
            updates["memory.search.model"] = "" if self.model_path else self.model
            updates["memory.search.local.modelPath"] = self.model_path
        elif self.provider != "none":
            updates["memory.search.model"] = self.model
            updates["memory.search.remote.baseUrl"] = self.base_url
        if self.provider in SERVICES:
            # Empty when the key comes from the environment, which wins over an empty value.
            updates["memory.search.remote.apiKey"] = self.api_key
        return updates

    def search_settings(self, base: SearchSettings | None = None) -> SearchSettings:
        """The search settings these choices make (over `base`), to test them before saving."""
        search = base or SearchSettings()
        remote = search.remote.model_copy(
            update={"base_url": self.base_url, "api_key": self.api_key}
        )
        local = search.local.model_copy(update={"model_path": self.model_path})
        return search.model_copy(
            update={
                "provider": self.provider,
                "model": self.model,
                "remote": remote,
                "local": local,
            }
        )


def save_choices(choices: SetupChoices, *, config_file: Path | None = None) -> Path:
    """Write the choices into config.toml (comments and other keys kept); return its path.

    A pasted key makes the file readable by its owner only (0600) before the key is written.
    """
    return update_config_file(
        choices.config_updates(), config_file=config_file, private=bool(choices.api_key)
    )


@dataclass(frozen=True)
class KeyInEnvironment:
    """Which environment variable a hosted provider would take its key from, and if it is set."""

    names: tuple[str, ...]  # the variables it reads, first wins
    found: str | None  # the first one that is set (its value is never shown)

    @property
    def summary(self) -> str:
        if not self.names:
            return ""
        listed = " or ".join(self.names)
        if self.found:
            return f"{self.found} is set in this environment."
        return f"{listed} is not set in this environment."


def key_in_environment(
    choice: ProviderChoice, environ: Mapping[str, str] | None = None
) -> KeyInEnvironment:
    env = os.environ if environ is None else environ
    found = next((name for name in choice.key_env if env.get(name, "").strip()), None)
    return KeyInEnvironment(choice.key_env, found)


def try_provider(choices: SetupChoices, base: SearchSettings | None = None) -> ProbeResult:
    """Embed one text with the chosen provider, as `status --deep` does, before saving.

    For `local` this starts the managed llama.cpp server with the chosen model (it stays up
    for the first index). The result's error is redacted: a pasted key never appears in it.
    """
    settings = choices.search_settings(base)
    # A managed local server first starts and loads its model, which its own startup budget
    # bounds; a hosted service answers one short request well within the remote budget.
    timeout = (
        float(settings.local.startup_timeout_seconds) + PROBE_BUDGET_REMOTE_S
        if choices.provider == "local"
        else min(PROBE_BUDGET_REMOTE_S, settings.remote.timeout_seconds)
    )
    resolution = resolve_provider(settings)
    embedder = resolution.embedder
    if embedder is None:
        return ProbeResult(False, 0.0, None, resolution.reason, resolution.fix)
    try:
        result = probe(embedder, timeout)
    finally:
        if choices.provider != "local":  # the local server serves the first index next
            embedder.close()
    return result
