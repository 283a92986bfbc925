"""`apus models list|pull`: the embedding and reranking model catalogues and downloads."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import click

from apus.cli.context import guarded

if TYPE_CHECKING:
    from rich.progress import TaskID

    from apus.embed.local.catalog import HubFile


@click.group()
def models() -> None:
    """List, download and verify embedding and reranking models."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@guarded
def list_models(as_json: bool) -> None:
    """Catalogue models and whether each is installed and verified."""
    from apus.embed.local.catalog import DEFAULT_MODEL, load_catalog
    from apus.embed.local.download import installed_models
    from apus.search.rerank.catalog import DEFAULT_RERANKER, load_rerankers

    catalog = load_catalog()
    installed = {item.manifest.name: item for item in installed_models()}
    rows: list[dict[str, Any]] = []  # as --json prints them
    for name, manifest in catalog.items():
        item = installed.get(name)
        rows.append(
            {
                "name": name,
                "kind": "embedding",
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
    for name, reranker in load_rerankers().items():
        on_disk, verified, path = _reranker_state(reranker.files)
        rows.append(
            {
                "name": name,
                "kind": "reranker",
                "default": name == DEFAULT_RERANKER,
                "repo": reranker.repo,
                "file": reranker.model.file,
                "size": reranker.size,
                "installed": on_disk,
                "verified": verified,
                "path": path,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        mark = "✓ verified" if row["verified"] else ("! unverified" if row["installed"] else "-")
        default = " (default)" if row["default"] else ""
        size_mb = row["size"] / 1e6
        what = "reranker" if row.get("kind") == "reranker" else f"{row['dims']} dims"
        click.echo(f"{row['name']}{default}: {what}, {size_mb:.0f} MB  {mark}")
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
    from apus.search.rerank.catalog import load_rerankers

    catalog = load_catalog()
    rerankers = load_rerankers()
    wanted = name or DEFAULT_MODEL
    files: tuple[HubFile, ...]
    if wanted in catalog:
        files = (catalog[wanted],)
    elif wanted in rerankers:
        files = rerankers[wanted].files  # the ONNX model and its tokenizer
    else:
        known = ", ".join(sorted([*catalog, *rerankers]))
        raise ApusError(
            f"No model named {wanted!r} in the catalogue.",
            fix=f"apus models list  (known: {known})",
        )
    cancel = threading.Event()
    found = []
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    ) as progress:
        for file in files:
            task = progress.add_task(f"Downloading {file.file}", total=file.size)

            def advance(done: int, total: int, task: TaskID = task) -> None:
                progress.update(task, completed=done, total=total)

            try:
                found.append(pull_model(file, progress=advance, cancel=cancel))
            except KeyboardInterrupt:
                cancel.set()
                raise
    click.echo(f"Verified {wanted}: {', '.join(str(path) for path in found)}")


def _reranker_state(files: tuple[HubFile, ...]) -> tuple[bool, bool, str | None]:
    """Whether a reranker's files are all on disk and all verified (a cached verdict, else
    a hash that quarantines nothing), and where its model file is."""
    from apus.embed.local.download import DownloadError, model_path, verify_model_file

    paths = [model_path(file) for file in files]
    if not all(path.is_file() for path in paths):
        return False, False, None
    verified = True
    for path, file in zip(paths, files, strict=True):
        try:
            verify_model_file(path, file, quarantine=False)
        except DownloadError:
            verified = False
    return True, verified, str(paths[0])


@click.command("_serve-embeddings", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve_embeddings(args: tuple[str, ...]) -> None:
    """Internal: run the managed embedding server (used by packaged binaries)."""
    from apus.embed.local.server_process import main as serve_main

    raise SystemExit(serve_main(list(args)))
