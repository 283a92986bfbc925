"""The docs say what is there: every module of the package is in docs/architecture.md's module
map, and every module the map names still exists. A glob row covers the files directly in its
folder only, so a new subfolder needs a row of its own."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path, PurePosixPath

import apus

PACKAGE_DIR = Path(apus.__file__).parent
ARCHITECTURE = PACKAGE_DIR.parents[1] / "docs" / "architecture.md"
_CODE = re.compile(r"`([^`]+)`")


def package_modules() -> set[str]:
    """Every module file as `apus/...py`, but a package's `__init__.py` only when it holds more
    than its docstring (a bare one is the package's marker, not a module with a job)."""
    found = set()
    for path in PACKAGE_DIR.rglob("*.py"):
        if path.name == "__init__.py" and _only_a_docstring(path):
            continue
        found.add(path.relative_to(PACKAGE_DIR.parent).as_posix())
    return found


def _only_a_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return len(body) <= 1 and all(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body
    )


def module_map_rows(text: str) -> list[str]:
    """The first cell of each row of the table under `## Module map`."""
    section = text.split("\n## Module map\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    cells = [row.strip("|").split("|", 1)[0].strip() for row in rows]
    return cells[2:]  # after the header and its separator


def mapped_patterns(cell: str) -> list[str]:
    """The paths (or globs) a cell names: each `apus/...` in full (`apus/cli/models.py`), a
    bare name beside the full one before it (`bench.py` is `apus/cli/bench.py`)."""
    names = _CODE.findall(cell)
    assert names and names[0].startswith("apus/"), f"a module map row without a path: {cell}"
    patterns = []
    for name in names:
        if name.startswith("apus/"):
            folder = PurePosixPath(name).parent
            patterns.append(name)
        else:
            patterns.append(str(folder / name))
    return patterns


def module_map() -> list[str]:
    rows = module_map_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    return [pattern for cell in rows for pattern in mapped_patterns(cell)]


def covers(pattern: str, module: str) -> bool:
    """Whether a map pattern names `module`: matched a path part at a time, so a `*` never
    reaches across a `/` (fnmatch's alone would let `apus/embed/*` cover every subfolder)."""
    pattern_parts, module_parts = pattern.split("/"), module.split("/")
    return len(pattern_parts) == len(module_parts) and all(
        fnmatch.fnmatchcase(part, wanted)
        for part, wanted in zip(module_parts, pattern_parts, strict=True)
    )


def test_the_module_map_is_parsed() -> None:
    patterns = module_map()
    assert "apus/cli/bench.py" in patterns  # named beside `apus/cli/models.py`
    assert "apus/indexing/sync.py" in patterns and "apus/index/store.py" in patterns


def test_a_glob_covers_its_own_folder_only() -> None:
    assert covers("apus/embed/*", "apus/embed/http.py")
    assert covers("apus/benchmarks/*_bench.py", "apus/benchmarks/search_bench.py")
    assert not covers("apus/embed/*", "apus/embed/local/embedder.py")
    assert not covers("apus/tui/widgets/*", "apus/tui/widgets/setup/folder.py")
    assert not covers("apus/*.py", "apus/cli/main.py")


def test_every_module_is_in_the_module_map() -> None:
    patterns = module_map()
    missing = sorted(
        module
        for module in package_modules()
        if not any(covers(pattern, module) for pattern in patterns)
    )
    assert missing == [], f"add these to docs/architecture.md's module map: {missing}"


def test_every_mapped_module_exists() -> None:
    modules = package_modules()
    gone = [
        pattern
        for pattern in module_map()
        if not any(covers(pattern, module) for module in modules)
    ]
    assert gone == [], f"docs/architecture.md's module map names what is not there: {gone}"
