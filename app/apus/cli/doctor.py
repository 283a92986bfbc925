"""`apus doctor`: check config, notes folder, index and embeddings; say what to fix."""

from __future__ import annotations

import json
import sys

import click

from apus.cli.context import current_source, guarded


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: {ok, checks: [...]}.")
@guarded
def doctor(as_json: bool) -> None:
    """Check the config (and where it came from), the notes folder, the index (SQLite
    quick_check, keyword and vector files) and embeddings (one real embedding and its speed,
    and how long the chunks still waiting for vectors will take).

    Reads only: nothing is repaired or rewritten. Exit status: 0 all checks pass, 1 any fails.
    """
    from apus.memory.doctor import run_doctor
    from apus.terminal_text import terminal_safe

    report = run_doctor(current_source())
    if as_json:
        click.echo(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    else:
        for check in report.checks:
            mark = click.style("ok  ", fg="green") if check.ok else click.style("FAIL", fg="red")
            click.echo(f"{mark} {check.name:<10} {terminal_safe(check.detail)}")
            if check.fix:
                click.echo(f"     {'':<10} Fix: {terminal_safe(check.fix)}")
    if not report.ok:
        sys.exit(1)
