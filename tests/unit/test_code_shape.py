"""Functions stay short enough to read at once: a long one is split into named steps."""

from __future__ import annotations

import ast
from pathlib import Path

import apus

PACKAGE_DIR = Path(apus.__file__).parent
MAX_FUNCTION_LINES = 80


def test_no_function_is_longer_than_the_limit() -> None:
    long_ones = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    where = path.relative_to(PACKAGE_DIR)
                    long_ones.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    assert long_ones == []
