"""Seconds from `apus mcp` starting on an unindexed vault to its first hybrid answer that
used vectors, and how much of the vault search by meaning covers as the first embedding runs.

    .venv/bin/python tests/support/first_vector_answer.py --vault DIR --model M.gguf \
        [--query WORDS] [--minutes 1,5,15]

The vault is indexed from nothing in a temporary data folder (its own index, if any, is
neither read nor touched). The server's sync reads the notes, then embeds them in priority
order (MEMORY.md, USER.md, dated notes newest first, then the rest); meanwhile the script asks
`memory_search` again and again and, at each minute mark, reads `memory_status` and runs a
one-shot `apus memory search --json` in a second process, printing one JSON line per
observation. It stops after the last mark (the embedding goes on no further).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def _emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def _embeddings(status: dict[str, Any]) -> dict[str, Any]:
    found = status.get("embeddings", status)
    keep = ("state", "progress", "coverage", "vectors")
    return {k: found[k] for k in keep if isinstance(found, dict) and k in found}


def _cli_answer(vault: Path, env: dict[str, str], query: str) -> dict[str, Any]:
    """A one-shot CLI search in another process, as a shell user would run it meanwhile."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "apus", "--vault", str(vault), "memory", "search", query, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = round(time.perf_counter() - started, 2)
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"seconds": seconds, "rc": done.returncode, "stderr": done.stderr[-400:]}
    keys = ("mode", "coverage", "indexing", "fallback")
    first = (answer.get("results") or [{}])[0]
    return {
        "seconds": seconds,
        **{k: answer[k] for k in keys if k in answer},
        "top": first.get("path"),
    }


async def watch(vault: Path, env: dict[str, str], query: str, marks: list[float]) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "apus", "--vault", str(vault), "mcp"], env=env
    )
    started = time.perf_counter()
    first_vector: float | None = None
    asked = 0
    pending = list(marks)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        _emit(event="initialized", seconds=round(time.perf_counter() - started, 2))
        while pending:
            asked += 1
            found = await session.call_tool("memory_search", {"query": query})
            answer = found.structured_content or {}
            now = time.perf_counter() - started
            if first_vector is None and answer.get("mode") == "hybrid":
                first_vector = now
                top = (answer.get("results") or [{}])[0].get("path")
                _emit(
                    event="first hybrid answer",
                    seconds=round(now, 2),
                    asked=asked,
                    coverage=answer.get("coverage"),
                    top=top,
                )
            if now >= pending[0] * 60:
                status = await session.call_tool("memory_status", {})
                _emit(
                    event="mark",
                    minutes=pending.pop(0),
                    seconds=round(now, 2),
                    mcp_mode=answer.get("mode"),
                    mcp_coverage=answer.get("coverage"),
                    status=_embeddings(status.structured_content or {}),
                    cli=_cli_answer(vault, env, query),
                )
            await asyncio.sleep(1.0)  # a benchmark's polling pace, not a test's wait


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--model", type=Path, required=True, help="the .gguf to embed with")
    parser.add_argument("--query", default="extract files from a compressed archive")
    parser.add_argument("--minutes", default="1,5,15", help="when to read coverage")
    args = parser.parse_args()
    marks = sorted(float(m) for m in args.minutes.split(","))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        env = {k: v for k, v in os.environ.items() if not k.startswith("APUS_")}
        for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            (root / name.lower()).mkdir()
            env[name] = str(root / name.lower())
        env.update(
            APUS_MEMORY__SEARCH__PROVIDER="local",
            APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(args.model.resolve()),
            APUS_MEMORY__SEARCH__SYNC__WATCH="false",
        )
        asyncio.run(watch(args.vault.resolve(), env, args.query, marks))


if __name__ == "__main__":
    main()
