"""Typed settings: defaults < config.toml < APUS_* environment < command-line flags.

Keys in config.toml use the product's camelCase names (`memory.search.extraPaths`); every key
can also come from the environment as `APUS_<SECTION>__<KEY>` (matched case-insensitively,
e.g. `APUS_MEMORY__SEARCH__PROVIDER=none`). The file is read with tomllib and written with
tomlkit so a user's comments survive the setup wizard.
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from apus import paths
from apus.config_model import Section, SettingError, fields_of, rules
from apus.embedding_services import BUILTIN_PROVIDERS, ENTRY_APIS
from apus.errors import ConfigError
from apus.notes_folder import VaultMissingError, check_vault

# A built-in provider name (see apus.embedding_services) or the id of a [models.providers] entry.
ProviderName = str
ENV_PREFIX = "APUS_"


@dataclass(frozen=True)
class LocalSettings(Section):
    model_path: str = ""  # a .gguf file to use instead of the catalogue model
    prefix_scheme: str = ""  # override the family read from the GGUF (e.g. "embeddinggemma")
    gpu_layers: int = -1  # -1: all layers when llama.cpp reports GPU offload, else CPU
    context_size: int = 0  # 0: the model's own (capped by the catalogue entry)
    threads: int = 0  # 0: llama.cpp decides
    # Tokens packed per request: attention cost grows with the square of the tokens in one
    # llama.cpp batch, and 512 measured fastest for EmbeddingGemma on CPU (see README).
    batch_tokens: int = 512
    idle_stop_seconds: int = 900  # stop the managed server after this long unused
    startup_timeout_seconds: int = 120


@dataclass(frozen=True)
class RemoteSettings(Section):
    base_url: str = ""  # replaces the provider's own (…/v1 for OpenAI-shaped APIs)
    api_key: str = ""  # empty: the provider's environment variable (OPENAI_API_KEY, …)
    # Budgets, retries included: a search waits for one query embedding this long...
    timeout_seconds: float = field(default=60.0, metadata=rules(gt=0))
    # ...and an index run this long for each batch of chunks it hands the provider.
    batch_timeout_seconds: float = field(default=600.0, metadata=rules(gt=0))
    # After a 429 or 5xx, within those budgets.
    max_retries: int = field(default=3, metadata=rules(ge=0, le=10))
    batch_size: int = field(default=32, metadata=rules(ge=1))


@dataclass(frozen=True)
class ProviderEntry(Section):
    """A named provider of its own: `[models.providers.<id>]`, used as memory.search.provider."""

    api: str = ""  # the protocol it speaks; may be left out when the id is a built-in name
    base_url: str = ""
    api_key: str = ""
    model: str = ""

    def protocol(self, name: str) -> str:
        """The api this entry, called `name`, speaks (its own name when that is built in)."""
        return self.api or name

    def _check(self) -> None:
        if self.api and self.api not in ENTRY_APIS:
            raise SettingError(
                ("api",),
                "unknown_api",
                f"unknown api '{self.api}'; one of: {', '.join(ENTRY_APIS)}",
            )


@dataclass(frozen=True)
class ModelsSettings(Section):
    providers: dict[str, ProviderEntry] = field(default_factory=dict)

    def _check(self) -> None:
        for name, entry in self.providers.items():
            if not entry.api and name not in ENTRY_APIS:
                raise SettingError(
                    ("providers",),
                    "missing_api",
                    f"[models.providers.{name}] needs `api` (one of: {', '.join(ENTRY_APIS)})",
                )


@dataclass(frozen=True)
class ChunkingSettings(Section):
    tokens: int = field(default=400, metadata=rules(ge=32, le=8192))
    overlap: int = field(default=80, metadata=rules(ge=0, le=4096))
    # Each entry (a heading's section) of MEMORY.md, USER.md and the notes under memory/ is
    # a passage of its own (apus.vault.memory_notes).
    entries: bool = True


@dataclass(frozen=True)
class MmrSettings(Section):
    enabled: bool = True
    lambda_: float = field(default=0.7, metadata=rules(ge=0.0, le=1.0, alias="lambda"))


@dataclass(frozen=True)
class TemporalDecaySettings(Section):
    enabled: bool = True
    half_life_days: float = field(default=30.0, metadata=rules(gt=0))
    # The share of a result's score that recency never takes away (apus.search.ranking.
    # recency_weight): 0 multiplies by the decay itself, 1 turns recency off.
    floor: float = field(default=0.9, metadata=rules(ge=0.0, le=1.0))


@dataclass(frozen=True)
class HybridSettings(Section):
    enabled: bool = True
    # Unset: equal, or leaning on exact words for an identifier lookup
    # (apus.search.hybrid.leg_weights); one set alone: the other is what is left of 1.
    vector_weight: float | None = None
    text_weight: float | None = None
    # How the legs' scores meet (apus.search.hybrid): "weighted" scores, "zscore" spreads, or
    # "rrf" ranks. At equal weights, LoCoMo dev conversations (evidence Recall@5, MiniLM):
    # weighted 0.824, zscore 0.825, rrf 0.736; SciFact train (nDCG@10 odd/even, MiniLM):
    # weighted 0.767/0.712, zscore 0.764/0.725, rrf 0.735/0.694. Weighted ties or wins the
    # tuning halves, so it stays the default.
    merge: Literal["weighted", "zscore", "rrf"] = "weighted"
    rrf_k: int = field(default=60, metadata=rules(ge=1, le=10_000))
    mmr: MmrSettings = field(default_factory=MmrSettings)
    temporal_decay: TemporalDecaySettings = field(default_factory=TemporalDecaySettings)


@dataclass(frozen=True)
class QuerySettings(Section):
    max_results: int = field(default=10, metadata=rules(ge=1, le=200))
    min_score: float = field(default=0.35, metadata=rules(ge=0.0, le=1.0))
    candidates: int = field(default=200, metadata=rules(ge=1, le=1000))
    # What a passage of the agent's own memory (MEMORY.md, USER.md, an entry written with an
    # importance or triggers) is multiplied by (apus.search.chunk_table.weigh). `apus eval
    # --decisions` over tldr's 4,613 common pages, tuning half (30 questions), entry chunks on,
    # hit@1 hybrid (MiniLM) / keyword: 1 0.400 / 0.033, 1.25 0.500 / 0.067, 1.5 0.567 / 0.067,
    # 2 0.600 / 0.167, 3 0.633 / 0.367; 308 questions about those pages in the same vault
    # (their own first example) kept hit@1 0.724 / 0.604 at 1, 0.724 / 0.601 at 1.5, 0.718 /
    # 0.591 at 2, 0.682 / 0.571 at 3. 1.5 is the most that costs the documents nothing by
    # meaning and words (SciFact and LoCoMo hold no curated memory: unchanged).
    curated_weight: float = field(default=1.5, metadata=rules(ge=1.0, le=4.0))
    # What a passage of a note in another language than most of the query's candidates is
    # multiplied by (apus.search.chunk_table.language_weights); 1 turns it off. On the tldr
    # pages (odd half, English questions from a page's own words / from the words its
    # translations share, 689 each; tests/support/language_first.py) the page came before
    # every translation of it for 0.994 / 0.923 of them at 1, 0.997 / 0.965 at 0.9, 0.999 /
    # 0.938 at 0.8 (a query of shared words is read in the wrong language more often than a
    # stronger weight repays); relevance squared or to the fourth to read the query's
    # language did no better.
    language_weight: float = field(default=0.9, metadata=rules(ge=0.1, le=1.0))
    hybrid: HybridSettings = field(default_factory=HybridSettings)


RerankProvider = Literal["local", "llama-cpp", "jina", "voyage", "cohere", "bedrock"]


@dataclass(frozen=True)
class RerankLocalSettings(Section):
    # A cross-encoder .onnx file to use instead of the catalogue model; its tokenizer.json
    # lies beside it.
    model_path: str = ""
    # onnxruntime's threads for one search: 1 keeps a reranked search on one core (two
    # threads cost more CPU than one for the same pairs on two shared cores).
    threads: int = field(default=1, metadata=rules(ge=0, le=64))


@dataclass(frozen=True)
class RerankRemoteSettings(Section):
    base_url: str = ""  # the service's endpoint base; required for llama-cpp (its server)
    api_key: str = ""  # empty: the service's environment variable (JINA_API_KEY, ...)


@dataclass(frozen=True)
class RerankSettings(Section):
    """The second stage (apus.search.rerank): a model reads the query with each of the top
    merged candidates and their scores meet the fused ones before diversity."""

    # Off: measured, it pays on neither held-out conversations nor documents enough for its
    # CPU (README, Reranking).
    enabled: bool = False
    provider: RerankProvider = "local"
    model: str = ""  # catalogue name (local) or the service's model id; "" = the default
    # How many of the merged candidates the model reads: 40 was no better than 20 on
    # held-out LoCoMo (0.815 / 0.824 Recall@5) for twice the CPU.
    candidates: int = field(default=20, metadata=rules(ge=1, le=200))
    # Past it (or on any failure) the fused order stands and the answer says so.
    deadline_ms: int = field(default=2000, metadata=rules(ge=1, le=120_000))
    # How much the model's score moves the fused one (apus.search.rerank.blend).
    weight: float = field(default=1.0, metadata=rules(ge=0.0, le=100.0))
    # The passage the model reads: the chunk's heading line and text, cut to this many of
    # the model's tokens.
    passage_tokens: int = field(default=128, metadata=rules(ge=16, le=512))
    local: RerankLocalSettings = field(default_factory=RerankLocalSettings)
    remote: RerankRemoteSettings = field(default_factory=RerankRemoteSettings)


@dataclass(frozen=True)
class StoreSettings(Section):
    path: str = ""  # index folder override; default: per-vault folder under the data dir


@dataclass(frozen=True)
class SyncSettings(Section):
    watch: bool = True
    watch_debounce_ms: int = field(default=1500, metadata=rules(ge=100))
    max_file_bytes: int = field(default=5 * 1024 * 1024, metadata=rules(ge=1024))
    # Walk into folders mounted on another device (a bind mount, a network or FUSE file
    # system) inside a root; off, each such mount is skipped and listed once.
    cross_devices: bool = False


@dataclass(frozen=True)
class ExperimentalSettings(Section):
    # Index agent session transcripts; they are searched only when `sources` also names
    # "sessions", and removed from the index by the next sync when either is off.
    session_memory: bool = False


TranscriptClient = Literal["claude-code", "codex"]


@dataclass(frozen=True)
class SessionsSettings(Section):
    # Transcript roots, laid out as <root>/<agentId>/sessions/<sessionId>.jsonl; relative
    # paths are taken from the vault.
    paths: tuple[str, ...] = ()
    # Agent clients whose own transcript folders are read as well, each only when its folder
    # exists (apus.vault.transcript_sources says where).
    clients: tuple[TranscriptClient, ...] = ("claude-code", "codex")
    # Tool calls and their results are mostly file contents and command output, which would
    # crowd the conversation out of memory search: indexed only when asked. Thinking never is.
    tool_calls: bool = False
    # A longer line (a huge tool output) is skipped and counted; conversation text is
    # rarely more than a few kilobytes a message.
    max_line_bytes: int = field(default=1024 * 1024, metadata=rules(ge=1024))


SearchSource = Literal["memory", "sessions"]


@dataclass(frozen=True)
class SearchSettings(Section):
    # Filled from [models.providers] by Settings (whatever a file writes here is replaced), so
    # that resolving `provider` needs only this section. Declared first: `provider` checks it.
    custom_providers: dict[str, ProviderEntry] = field(
        default_factory=dict, repr=False, metadata=rules(exclude=True)
    )
    provider: ProviderName = "auto"
    model: str = ""  # catalogue name (local) or model id (remote); "" = the provider's default
    # Ask the provider for vectors this wide (OpenAI `dimensions`, Gemini
    # `outputDimensionality`, Voyage `output_dimension`, Titan v2); 0: the model's own width.
    output_dimensionality: int = field(default=0, metadata=rules(ge=0, le=65536))
    # Search the first N dimensions of each vector (Matryoshka truncation; the store keeps
    # the full width, so a change rebuilds vectors.faiss, never re-embeds); 0: the model's
    # default (apus.index.vector_layout).
    vector_dims: int = field(default=0, metadata=rules(ge=0, le=65536))
    # How vectors.faiss stores them, both searched exhaustively: float32 ("flat") or float16
    # ("fp16": half the bytes a query reads; measured to rank as float32 does).
    vector_index: Literal["flat", "fp16"] = "flat"
    # When auto/local embeddings cannot run: "keyword" searches by keyword (and says why);
    # "none" makes search fail with the reason instead, like an explicit remote provider.
    fallback: Literal["none", "keyword"] = "keyword"
    extra_paths: tuple[str, ...] = ()
    query_input_type: str = ""
    document_input_type: str = ""
    local: LocalSettings = field(default_factory=LocalSettings)
    remote: RemoteSettings = field(default_factory=RemoteSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    query: QuerySettings = field(default_factory=QuerySettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    experimental: ExperimentalSettings = field(default_factory=ExperimentalSettings)
    sources: tuple[SearchSource, ...] = ("memory",)
    sessions: SessionsSettings = field(default_factory=SessionsSettings)

    def _check(self) -> None:
        entries = self.custom_providers
        if self.provider in BUILTIN_PROVIDERS or self.provider in entries:
            return
        name = self.provider
        custom = f"; entries of [models.providers]: {', '.join(sorted(entries))}" if entries else ""
        raise SettingError(
            ("provider",),
            "unknown_provider",
            f"unknown embedding provider '{name}'; built in: {', '.join(BUILTIN_PROVIDERS)}"
            f"{custom} (or add a [models.providers.{name}] entry with its api and baseUrl)",
        )


@dataclass(frozen=True)
class WriteSettings(Section):
    # Agents may append entries to the memory notes (`memory_write`, `apus memory add`):
    # off unless turned on here, by APUS_MEMORY__WRITE__ENABLED=true or `apus mcp --writable`.
    enabled: bool = False
    # One entry's text, in characters: a memory entry, not a document.
    max_entry_chars: int = field(default=4000, metadata=rules(ge=100, le=100_000))


@dataclass(frozen=True)
class MemorySettings(Section):
    search: SearchSettings = field(default_factory=SearchSettings)
    write: WriteSettings = field(default_factory=WriteSettings)


@dataclass(frozen=True)
class SessionToolSettings(Section):
    # Which transcripts the one asking may see: its own session ("self"), it and the
    # sessions spawned from it ("tree"), its agent's sessions ("agent"), or every one ("all").
    visibility: Literal["self", "tree", "agent", "all"] = "all"


@dataclass(frozen=True)
class ToolsSettings(Section):
    sessions: SessionToolSettings = field(default_factory=SessionToolSettings)


@dataclass(frozen=True)
class TuiSettings(Section):
    # binding id -> key(s), e.g. {"rebuild_index": "ctrl+r"}
    keys: dict[str, str] = field(default_factory=dict)
    theme: str = "textual-dark"


@dataclass(frozen=True)
class Settings(Section):
    vault: str = ""
    models: ModelsSettings = field(default_factory=ModelsSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    tools: ToolsSettings = field(default_factory=ToolsSettings)
    tui: TuiSettings = field(default_factory=TuiSettings)
    # The index folder, found once: it needs the vault's real path (a stat, an access check
    # and a realpath), and the session's every step asks for it.
    _index_dir: Path | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Settings:
        """The settings of TOML-shaped `data`, [models.providers] handed to memory.search,
        where the provider is resolved (its entries are checked under `models`)."""
        models = data.get("models")
        raw = models.get("providers") if isinstance(models, Mapping) else None
        memory = data.get("memory")
        if isinstance(memory, Mapping):
            search = memory.get("search")
            if isinstance(search, Mapping) or search is None:
                search = {
                    key: value
                    for key, value in (search or {}).items()
                    if key not in ("customProviders", "custom_providers")
                }
                search["custom_providers"] = raw if isinstance(raw, Mapping) else {}
                data = {**data, "memory": {**memory, "search": search}}
        return super().from_mapping(data)

    def _check(self) -> None:
        # Made from instances (not read from a file): the entries reach memory.search too.
        search = self.memory.search
        if search.custom_providers != self.models.providers:
            search = replace(search, custom_providers=self.models.providers)
            object.__setattr__(self, "memory", replace(self.memory, search=search))

    @property
    def search(self) -> SearchSettings:
        return self.memory.search

    def vault_path(self) -> Path:
        """The configured vault, checked (a VaultError says what is wrong with it), or a
        ConfigError that says how to pick one."""
        if not self.vault:
            raise ConfigError(
                "No notes folder is configured.",
                fix="apus --vault PATH ...  (or run `apus setup`)",
            )
        try:
            return check_vault(self.vault)
        except VaultMissingError:
            # A vault indexed before it went away (an unplugged drive, a network share) is
            # still searched from its index; indexing it says the folder is missing.
            path = Path(os.path.abspath(os.path.expanduser(self.vault)))
            if paths.index_dir(path, self.search.store.path or None).is_dir():
                return path
            raise

    def index_dir(self) -> Path:
        """This vault's index folder; raises as `vault_path` does until it is found."""
        if self._index_dir is None:
            found = paths.index_dir(self.vault_path(), self.search.store.path or None)
            object.__setattr__(self, "_index_dir", found)
        assert self._index_dir is not None
        return self._index_dir

    def extra_roots(self) -> list[Path]:
        base = self.vault_path()
        return [(base / Path(p).expanduser()).resolve() for p in self.search.extra_paths]


def load_settings(
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build the settings from every layer. `overrides` are dotted keys from CLI flags."""
    file = config_file or paths.config_file()
    env = os.environ if environ is None else environ
    layers: dict[str, Any] = {}
    file_text = ""
    if file.is_file():
        file_text = _read_config_text(file)
        _merge_config(layers, file, file_text)
        _validate(layers, source=str(file), file_text=file_text)
    env_layer = _environment_layer(env)
    _deep_merge(layers, env_layer)
    _validate(layers, source="the APUS_* environment", file_text="")
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _deep_merge(layers, _nest(dotted.split("."), value))
    return _validate(layers, source="the command line", file_text="")


def _read_config_text(file: Path) -> str:
    """config.toml as text. TOML is UTF-8; a UTF-8 BOM (some Windows editors write one)
    is dropped, anything else that is not UTF-8 is a ConfigError naming the encoding."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{file} cannot be read ({exc.strerror or exc}).",
            fix=f"make it readable (chmod u+r {file}), or point APUS_CONFIG elsewhere",
        ) from exc
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError(
            f"{file} is saved as UTF-16; TOML files must be UTF-8.",
            fix=f"save {file} again with the UTF-8 encoding",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{file} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}).",
            fix=f"save {file} again with the UTF-8 encoding",
        ) from exc


def _merge_config(layers: dict[str, Any], file: Path, text: str) -> None:
    try:
        _deep_merge(layers, tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{file} is not valid TOML: {exc}", fix=f"edit {file} (or delete it)"
        ) from exc
    except RecursionError as exc:
        # tomllib and the merge recurse once per level: thousands of levels end the stack.
        raise ConfigError(
            f"{file} nests arrays or tables too deeply to read.",
            fix=f"edit {file}: no Apus setting nests more than a few levels",
        ) from exc


def _validate(data: dict[str, Any], *, source: str, file_text: str) -> Settings:
    try:
        return Settings.from_mapping(data)
    except SettingError as exc:
        key = ".".join(str(part) for part in exc.loc if not isinstance(part, int))
        where = source
        line = _line_of_key(file_text, key) if file_text else None
        if line:
            where = f"{source}, line {line}"
        message = "unknown key" if exc.kind == "extra_forbidden" else exc.message
        raise ConfigError(
            f"Invalid setting `{key}` in {where}: {message}.",
            fix=f"correct or remove `{key}` (see the configuration reference in the README)",
        ) from exc


def _line_of_key(text: str, dotted_key: str) -> int | None:
    """1-based line where a dotted key is set in a TOML text (tables and dotted keys)."""
    table: list[str] = []
    target = dotted_key.lower()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        header = re.fullmatch(r"\[\[?\s*([^\]]+?)\s*\]?\]", line)
        if header:
            table = [part.strip().strip("\"'") for part in header.group(1).split(".")]
            joined = ".".join(table).lower()
            # An unknown table `[memry.search]` is reported as `memry`: the header names it.
            if joined == target or joined.startswith(target + "."):
                return number
            continue
        match = re.match(r"([A-Za-z0-9_.\"' -]+?)\s*=", line)
        if match:
            key = [part.strip().strip("\"'") for part in match.group(1).split(".")]
            full = ".".join(table + key).lower()
            # The key itself, a table value holding it, or (for an error about a whole table
            # such as models.providers) the first key set inside it.
            if full == target or target.startswith(full + ".") or full.startswith(target + "."):
                return number
    return None


def _environment_layer(env: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX) or name == "APUS_CONFIG":
            continue
        parts = name[len(ENV_PREFIX) :].split("__")
        keys = _resolve_env_path(parts)
        if keys is None:
            if "__" in name:
                raise ConfigError(
                    f"Unknown setting in environment variable {name}.",
                    fix=f"unset {name} (keys are APUS_<SECTION>__<KEY>, e.g. "
                    "APUS_MEMORY__SEARCH__PROVIDER)",
                )
            continue
        _deep_merge(layer, _nest(keys, _parse_env_value(raw)))
    return layer


def _resolve_env_path(parts: list[str]) -> list[str] | None:
    """Map upper-case env segments onto the settings' camelCase keys."""
    section: type[Section] | None = Settings
    keys: list[str] = []
    for index, part in enumerate(parts):
        if section is None:
            return None
        wanted = part.lower().replace("_", "")
        found = next(
            (
                spec
                for spec in fields_of(section)
                if spec.key.lower().replace("_", "") == wanted
                or spec.name.replace("_", "") == wanted
            ),
            None,
        )
        if found is None:
            return None
        keys.append(found.key)
        hint = found.hint
        section = hint if isinstance(hint, type) and issubclass(hint, Section) else None
        if section is None and index != len(parts) - 1:
            return None
    return keys if section is None else None


def _parse_env_value(raw: str) -> Any:
    """TOML syntax when it parses (numbers, booleans, lists), else the plain string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return raw


def _nest(keys: list[str], value: Any) -> dict[str, Any]:
    result: dict[str, Any] = {keys[-1]: value}
    for key in reversed(keys[:-1]):
        result = {key: result}
    return result


def _deep_merge(into: dict[str, Any], new: Mapping[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            _deep_merge(into[key], value)
        else:
            into[key] = value


def update_config_file(
    updates: Mapping[str, Any], *, config_file: Path | None = None, private: bool = False
) -> Path:
    """Set dotted keys in config.toml, keeping the user's comments and layout.

    `private` (a key is being written) makes the file readable by its owner only; a file
    that already is keeps that mode whatever is written.
    """
    # Only writing needs tomlkit; every command reads the settings (tomllib).
    import tomlkit

    file = config_file or paths.config_file()
    document = tomlkit.parse(_read_config_text(file)) if file.is_file() else None
    if document is None:
        document = tomlkit.document()
        document.add(tomlkit.comment("Apus configuration. Reference: see the README."))
    for dotted, value in updates.items():
        keys = dotted.split(".")
        table: Any = document
        for key in keys[:-1]:
            if key not in table:
                table[key] = tomlkit.table()
            table = table[key]
        table[keys[-1]] = value
    merged = tomllib.loads(tomlkit.dumps(document))
    _validate(merged, source=str(file), file_text=tomlkit.dumps(document))
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".toml.tmp")
    mode = 0o600 if private else _file_mode(file)
    # Given its final mode before anything is written: a key is never readable by others,
    # even for a moment. A new file without a key gets the usual mode (0666 less the umask).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if mode is None else mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        if mode is not None:
            os.chmod(tmp, mode)  # a leftover temporary file keeps its old mode otherwise
        handle.write(tomlkit.dumps(document))
    os.replace(tmp, file)
    return file


def _file_mode(file: Path) -> int | None:
    """The permission bits of an existing file (None: a new file gets the usual mode)."""
    try:
        return file.stat().st_mode & 0o777
    except OSError:
        return None


@dataclasses.dataclass(frozen=True)
class SettingsSource:
    """Where one run's settings come from: a config file, a vault picked for this run, and
    dotted-key overrides from flags. Every face (CLI, app, agent server) loads through one,
    and a detached child process gets the same one back through its arguments."""

    config_file: Path | None = None
    vault: str | Path | None = None  # as typed; checked when the settings are used
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def file(self) -> Path:
        """The config.toml this source reads (and the setup wizard writes)."""
        return (self.config_file or paths.config_file()).expanduser()

    def load(self) -> Settings:
        overrides = dict(self.overrides)
        if self.vault is not None:
            raw = str(self.vault)
            if not raw.strip():
                check_vault(raw)  # says that an empty path names no folder
            # Absolute, symlinks kept: the check of the folder (loops, permissions) comes
            # when it is used, and says what is wrong with it.
            overrides["vault"] = os.path.abspath(os.path.expanduser(raw))
        return load_settings(config_file=self.file, overrides=overrides)

    def with_vault(self, vault: str | Path) -> SettingsSource:
        return dataclasses.replace(self, vault=vault)
