"""The core stays headless: no domain module pulls in Textual, and nothing in it prints."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import apus

PACKAGE_DIR = Path(apus.__file__).parent
UI_PACKAGES = ("apus.tui",)
# Modules allowed to write to the terminal: the command line and the app.
PRINTING_ALLOWED = ("apus.cli", "apus.tui")


def domain_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="apus."):
        if info.name.startswith(UI_PACKAGES) or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def test_domain_modules_exist() -> None:
    names = domain_modules()
    assert "apus.memory.session" in names and "apus.search.engine" in names
    assert "apus.indexing.sync" in names


def test_no_domain_module_imports_textual() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {domain_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "", f"textual imported by the core: {done.stdout}"


def test_only_the_cli_and_the_app_print() -> None:
    offenders = []
    for path in PACKAGE_DIR.rglob("*.py"):
        module = "apus." + ".".join(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
        if module.startswith(PRINTING_ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.append(f"{module}:{node.lineno}")
    assert offenders == []
