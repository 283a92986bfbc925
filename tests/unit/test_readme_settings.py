"""The README's settings table is kept true: every setting in `config.py` is in it with its
default, and it names no setting that does not exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from apus.config import Settings
from apus.config_model import Section, fields_of

README = Path(__file__).resolve().parents[2] / "README.md"
_HEADER = "| key | default | meaning |"
_UNSET = object()  # a setting whose default is "not set" (None)
_NO_DEFAULT = object()  # a row that states no default (a table of named entries)


def documented() -> dict[str, object]:
    """Key -> default as the table states it. `a.b` / `c` in one cell names `a.b` and `a.c`;
    `x` / `y` in the default cell gives each its own default (one value: shared)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(_HEADER) + 2
    rows: dict[str, object] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        key_cell, default_cell = (cell.strip() for cell in line.strip("|").split("|")[:2])
        keys = re.findall(r"`([^`]+)`", key_cell)
        parent = keys[0].rpartition(".")[0]
        names = [keys[0]] + [f"{parent}.{key}" if parent else key for key in keys[1:]]
        defaults = _defaults(default_cell)
        if len(defaults) == 1:
            defaults *= len(names)
        assert len(defaults) == len(names), f"README row {key_cell}: one default per key"
        for name, default in zip(names, defaults, strict=True):
            assert name not in rows, f"{name} is in the README's settings table twice"
            rows[name] = default
    return rows


def _defaults(cell: str) -> list[object]:
    if not cell:
        return [_NO_DEFAULT]
    if cell == "unset":
        return [_UNSET]
    return [tomllib.loads(f"v = {text}")["v"] for text in re.findall(r"`([^`]+)`", cell)]


def settings(section: type[Section] = Settings, prefix: str = "") -> dict[str, object]:
    """Every setting as it is written in config.toml (dotted, camelCase) -> its default."""
    found: dict[str, object] = {}
    for spec in fields_of(section):
        if spec.exclude:  # filled from another table, not a key of its own
            continue
        key = prefix + spec.key
        hint = spec.hint
        if isinstance(hint, type) and issubclass(hint, Section):
            found.update(settings(hint, key + "."))
        elif _holds_sections(hint):
            found[key + ".<id>"] = _NO_DEFAULT  # named entries: each documented by its fields
        else:
            default = spec.default_value()
            found[key] = _UNSET if default is None else _plain(default)
    return found


def _holds_sections(hint: Any) -> bool:
    args = getattr(hint, "__args__", ())
    return any(isinstance(arg, type) and issubclass(arg, Section) for arg in args)


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def test_every_setting_is_in_the_readme_and_nothing_else() -> None:
    in_code, in_readme = settings(), documented()
    assert sorted(set(in_code) - set(in_readme)) == [], "settings missing from the README"
    assert sorted(set(in_readme) - set(in_code)) == [], "README rows for no setting"


def test_the_readme_states_each_default() -> None:
    in_code, in_readme = settings(), documented()
    wrong = {
        key: (in_readme[key], default)
        for key, default in in_code.items()
        if key in in_readme and in_readme[key] != default
    }
    assert wrong == {}, "README default, config.py default"
