"""User-facing problems and errors: what happened, and the one command that fixes it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """Why something cannot be done, and the one thing to do about it (empty when nothing
    the user does helps). Every layer reports trouble in these two words."""

    reason: str
    fix: str = ""

    def message(self) -> str:
        """One line for a person: the reason, then the fix."""
        return f"{self.reason} (fix: {self.fix})" if self.fix else self.reason


NO_PROBLEM = Problem("")  # what a value that is fine carries, so readers never test for None


class ApusError(Exception):
    """An error the user can act on: a `Problem` that stops the operation."""

    def __init__(self, reason: str, fix: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix or ""

    @property
    def problem(self) -> Problem:
        return Problem(self.reason, self.fix)

    def __str__(self) -> str:
        return f"{self.reason}\nFix: {self.fix}" if self.fix else self.reason


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


class SearchInputError(ApusError):
    """A search asked for something no note can match as written (dates that exclude each
    other)."""
