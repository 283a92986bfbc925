"""Entry point of the packaged `apus` binary (PyInstaller runs this file as __main__)."""

from __future__ import annotations

import os

from apus.cli import main

if __name__ == "__main__":
    # The binary starts copies of itself (the embedding server, a background index run) that
    # may outlive it. By default a one-file child reuses its parent's unpack folder, which the
    # parent deletes when it exits; this makes each child unpack and run on its own.
    os.environ["PYINSTALLER_RESET_ENVIRONMENT"] = "1"
    main(prog_name="apus")
