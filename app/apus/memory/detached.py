"""A detached `apus memory index`: for one-shot commands that find work a sync should do
(vectors to re-embed after a prefix change) but must not wait for it."""

from __future__ import annotations

import subprocess

from apus import paths
from apus.config import Settings, SettingsSource
from apus.indexing.lock import WriterLock
from apus.relaunch import own_command


def start_detached_index(source: SettingsSource, settings: Settings) -> bool:
    """Start the sync in its own session unless a writer is already at work.

    The child gets the same config file and vault through its arguments; the environment
    (APUS_* variables included) is inherited as it is.
    """
    vault = settings.vault_path()
    if WriterLock(settings.index_dir(), vault).is_held_elsewhere():
        return False
    command = [
        *own_command("apus.cli"),
        "--config",
        str(source.file),
        "--vault",
        str(vault),
        "memory",
        "index",
        "--json",
        "--detached",
    ]
    log_dir = paths.log_dir()
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "background-index.log", "ab") as log:
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    return True
