"""Build the `apus` binaries with PyInstaller: `python packaging/build.py --onedir --dist DIR`.

`--onedir` makes DIR/apus/ (run DIR/apus/apus), `--onefile` makes DIR/apus-<os>-<arch>; both
flags together share one analysis, which is most of the build time. Run it with the Python
of the environment Apus is installed in (`pip install -e '.[package]'`): PyInstaller bundles
that interpreter and those packages.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGING_DIR = Path(__file__).resolve().parent
SPEC = PACKAGING_DIR / "apus.spec"


def onedir_path(dist: Path) -> Path:
    """The one-folder bundle's executable."""
    return dist / "apus" / "apus"


def onefile_path(dist: Path) -> Path:
    """The one-file executable."""
    return dist / f"apus-{platform.system().lower()}-{platform.machine().lower()}"


def tree_bytes(path: Path) -> int:
    """Size of a file, or of every file under a folder (symlinks not followed nor counted)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            entry = Path(root) / name
            if not entry.is_symlink():
                total += entry.stat().st_size
    return total


def build(*, onedir: bool, onefile: bool, dist: Path, work: Path | None = None) -> list[Path]:
    """Run PyInstaller on the spec; returns the executables it made."""
    dist = dist.resolve()
    dist.mkdir(parents=True, exist_ok=True)
    spec_args = [flag for flag, wanted in (("--onedir", onedir), ("--onefile", onefile)) if wanted]
    with tempfile.TemporaryDirectory(prefix="apus-pyinstaller-") as scratch:
        command = [
            sys.executable,
            "-m",
            "PyInstaller",
            str(SPEC),
            "--noconfirm",
            "--log-level",
            "WARN",
            "--distpath",
            str(dist),
            "--workpath",
            str(work.resolve() if work else Path(scratch)),
            "--",
            *spec_args,
        ]
        subprocess.run(command, check=True, cwd=PACKAGING_DIR.parent)
    made = []
    if onedir:
        made.append(onedir_path(dist))
    if onefile:
        made.append(onefile_path(dist))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="build.py", description=__doc__.splitlines()[0])
    parser.add_argument("--onedir", action="store_true", help="one folder: DIST/apus/apus")
    parser.add_argument("--onefile", action="store_true", help="one file: DIST/apus-<os>-<arch>")
    parser.add_argument("--dist", type=Path, default=PACKAGING_DIR.parent / "dist")
    parser.add_argument("--work", type=Path, help="keep PyInstaller's work folder here")
    args = parser.parse_args(argv)
    if not (args.onedir or args.onefile):
        parser.error("pass --onedir, --onefile or both")
    started = time.monotonic()
    made = build(onedir=args.onedir, onefile=args.onefile, dist=args.dist, work=args.work)
    print(f"built in {time.monotonic() - started:.0f}s")
    for executable in made:
        bundle = executable.parent if executable.name == "apus" else executable
        print(f"{executable}  ({tree_bytes(bundle) / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
