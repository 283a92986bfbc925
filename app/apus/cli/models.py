"""`apus models list|pull`: the embedding model catalogue and downloads."""

from __future__ import annotations

import json
import threading
from typing import Any

import click

from apus.cli.context import guarded


@click.group()
def models() -> None:
    """List, download and verify embedding models."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@guarded
def list_models(as_json: bool) -> None:
    """Catalogue models and whether each is installed and verified."""
    from apus.embed.local.catalog import DEFAULT_MODEL, load_catalog
    from apus.embed.local.download import installed_models

    catalog = load_catalog()
    installed = {item.manifest.name: item for item in installed_models()}
    rows: list[dict[str, Any]] = []  # as --json prints them
    for name, manifest in catalog.items():
        item = installed.get(name)
        rows.append(
            {
                "name": name,
                "default": name == DEFAULT_MODEL,
                "repo": manifest.repo,
                "file": manifest.file,
                "size": manifest.size,
                "dims": manifest.dims,
                "installed": item is not None,
                "verified": bool(item and item.verified),
                "path": str(item.path) if item else None,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        mark = "✓ verified" if row["verified"] else ("! unverified" if row["installed"] else "-")
        default = " (default)" if row["default"] else ""
        size_mb = row["size"] / 1e6
        click.echo(f"{row['name']}{default}: {row['dims']} dims, {size_mb:.0f} MB  {mark}")
        if row["path"]:
            click.echo(f"    {row['path']}")


@models.command()
@click.argument("name", required=False)
@guarded
def pull(name: str | None) -> None:
    """Download NAME (default: the default model), resume if interrupted, and verify it."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from apus.embed.local.catalog import DEFAULT_MODEL, load_catalog
    from apus.embed.local.download import pull_model
    from apus.errors import ApusError

    catalog = load_catalog()
    wanted = name or DEFAULT_MODEL
    if wanted not in catalog:
        raise ApusError(
            f"No model named {wanted!r} in the catalogue.",
            fix=f"apus models list  (known: {', '.join(sorted(catalog))})",
        )
    manifest = catalog[wanted]
    cancel = threading.Event()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    ) as progress:
        task = progress.add_task(f"Downloading {manifest.file}", total=manifest.size)
        try:
            path = pull_model(
                manifest,
                progress=lambda done, total: progress.update(task, completed=done, total=total),
                cancel=cancel,
            )
        except KeyboardInterrupt:
            cancel.set()
            raise
    click.echo(f"Verified {manifest.name}: {path}")


@click.command("_serve-embeddings", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve_embeddings(args: tuple[str, ...]) -> None:
    """Internal: run the managed embedding server (used by packaged binaries)."""
    from apus.embed.local.server_process import main as serve_main

    raise SystemExit(serve_main(list(args)))
