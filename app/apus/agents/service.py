"""A user service that keeps `apus mcp --http` running: a systemd user unit (Linux) or a
launchd agent (macOS), written out for the person to install; nothing is installed here."""

from __future__ import annotations

import plistlib
import shlex
from collections.abc import Sequence
from typing import Literal

ServiceKind = Literal["systemd", "launchd"]
LAUNCHD_LABEL = "dev.apus.mcp-http"
SYSTEMD_UNIT = "apus-mcp-http.service"
# How long the service manager waits for a clean stop: calls in flight are answered first (a
# write waits up to two minutes for its indexing), so the default 90 s of systemd can cut one.
STOP_TIMEOUT_S = 150


def service_kind(platform: str) -> ServiceKind:
    """The service manager of `platform` (`sys.platform`)."""
    return "launchd" if platform == "darwin" else "systemd"


def service_file(kind: ServiceKind, command: Sequence[str], log_file: str) -> str:
    """The unit or plist that runs `command`, with where it goes and how to start it."""
    if kind == "launchd":
        return _launchd(command, log_file)
    return _systemd(command)


def _systemd(command: Sequence[str]) -> str:
    return (
        f"# Save as ~/.config/systemd/user/{SYSTEMD_UNIT}, then:\n"
        f"#   systemctl --user daemon-reload && systemctl --user enable --now {SYSTEMD_UNIT}\n"
        "[Unit]\n"
        "Description=Apus memory over MCP (Streamable HTTP)\n"
        "After=network.target\n"
        "\n"
        "[Service]\n"
        f"ExecStart={shlex.join(command)}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "KillSignal=SIGTERM\n"
        f"TimeoutStopSec={STOP_TIMEOUT_S}\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def _launchd(command: Sequence[str], log_file: str) -> str:
    plist = plistlib.dumps(
        {
            "Label": LAUNCHD_LABEL,
            "ProgramArguments": list(command),
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "ExitTimeOut": STOP_TIMEOUT_S,
            "StandardErrorPath": log_file,
        }
    ).decode("utf-8")
    where = f"~/Library/LaunchAgents/{LAUNCHD_LABEL}.plist"
    head, _, body = plist.partition("\n")
    # An XML comment may not hold "--": the command's options are not repeated in it.
    note = f"<!-- Save as {where}, then: launchctl bootstrap gui/$(id -u) {where} -->"
    return f"{head}\n{note}\n{body}"
