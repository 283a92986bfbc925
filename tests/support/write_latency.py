"""Write -> findable: how long from a `memory_write` call until `memory_search` returns the
entry, through `apus mcp` and the SDK client, on a generated vault.

    .venv/bin/python tests/support/write_latency.py [--notes 300] [--writes 20] [--tiny]

`--tiny` runs the local provider on the tests' tiny real GGUF (so the write also embeds);
without it, search is keyword-only. Prints p50 and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from support.tiny_gguf import write_tiny_gguf


def _env(home: Path, model: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("APUS_")}
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        folder = home / name.lower()
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    env.update(
        APUS_MEMORY__SEARCH__SYNC__WATCH="false",
        APUS_MEMORY__WRITE__ENABLED="true",
        APUS_MEMORY__SEARCH__PROVIDER="none" if model is None else "local",
    )
    if model is not None:
        env["APUS_MEMORY__SEARCH__LOCAL__MODELPATH"] = str(model)
        env["APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE"] = "512"
    return env


async def _measure(vault: Path, env: dict[str, str], writes: int) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "apus", "--vault", str(vault), "mcp"], env=env
    )
    took = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for n in range(writes):
            word = f"quokka{n}x"
            started = time.perf_counter()
            await session.call_tool("memory_write", {"text": f"Met a {word} today."})
            found = await session.call_tool("memory_search", {"query": word})
            took.append((time.perf_counter() - started) * 1000)
            hits = (found.structured_content or {}).get("results", [])
            assert hits and hits[0]["path"].startswith("memory/"), found
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        vault = root / "vault"
        for n in range(args.notes):
            note = vault / f"notes/n{n:05d}.md"
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(f"# Note {n}\n\nSome words about topic {n}.\n", encoding="utf-8")
        model = write_tiny_gguf(root / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")
        env = _env(root / "home", model if args.tiny else None)
        subprocess.run(
            [sys.executable, "-m", "apus", "--vault", str(vault), "memory", "index", "--json"],
            env=env,
            check=True,
            capture_output=True,
        )
        took = asyncio.run(_measure(vault, env, args.writes))
    cuts = statistics.quantiles(took, n=20)
    print(
        json.dumps(
            {
                "notes": args.notes,
                "writes": args.writes,
                "mode": "hybrid (tiny model)" if args.tiny else "keyword",
                "p50_ms": round(statistics.median(took), 1),
                "p95_ms": round(cuts[18], 1),
                # The first write meets the server's start-up sync; the rest are steady.
                "first_ms": round(took[0], 1),
                "p95_after_first_ms": round(statistics.quantiles(took[1:], n=20)[18], 1),
            }
        )
    )


if __name__ == "__main__":
    main()
