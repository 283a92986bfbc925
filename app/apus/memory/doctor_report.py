"""The values `apus doctor` reports: one `Check` per subject, and the report of them all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Check:
    """One line of the report: `facts` go into the JSON beside name, ok, detail and fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if self.fix:
            data["fix"] = self.fix
        data.update(self.facts)
        return data


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [check.as_dict() for check in self.checks]}
