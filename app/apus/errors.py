"""User-facing errors: what happened, and the one command that fixes it."""

from __future__ import annotations


class ApusError(Exception):
    """An error the user can act on. `fix` is the one thing to do about it."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}\nFix: {self.fix}" if self.fix else self.message


class ConfigError(ApusError):
    """config.toml or an APUS_* variable holds something Apus cannot use."""


class VaultError(ApusError):
    """The notes folder is missing or unusable."""


class IndexBusyError(ApusError):
    """Another Apus process is writing this vault's index."""


class IndexCorruptError(ApusError):
    """The SQLite store cannot be read."""


class ProviderUnavailableError(ApusError):
    """Embeddings cannot answer and the settings say not to fall back to keyword search
    (an explicitly configured remote provider, or `fallback = "none"`)."""
