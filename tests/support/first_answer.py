"""Seconds from `apus mcp` starting on an unindexed vault to its first non-empty
`memory_search` answer, through the SDK client (keyword search).

    .venv/bin/python tests/support/first_answer.py [--notes 3000]
    .venv/bin/python tests/support/first_answer.py --vault FOLDER --query WORD

Without --vault, a vault of generated notes; with it, that folder of notes, indexed from
nothing in a temporary data folder (its own index, if any, is neither read nor touched).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def first_answer(vault: Path, env: dict[str, str], query: str) -> dict[str, float | int]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "apus", "--vault", str(vault), "mcp"], env=env
    )
    started = time.perf_counter()
    asked = 0
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready = time.perf_counter() - started
        while True:  # the answer itself is the signal
            asked += 1
            found = await session.call_tool("memory_search", {"query": query})
            if (found.structured_content or {}).get("results"):
                break
        answered = time.perf_counter() - started
    return {"initialized_s": round(ready, 2), "first_hit_s": round(answered, 2), "asked": asked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=3000)
    parser.add_argument("--vault", type=Path, help="a folder of notes instead of generated ones")
    parser.add_argument("--query", default="heron")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        vault = args.vault or root / "vault"
        for n in range(0 if args.vault else args.notes):
            note = vault / f"notes/n{n:05d}.md"
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(f"# Note {n}\n\nThe heron count was {n}.\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("APUS_")}
        for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            (root / name.lower()).mkdir()
            env[name] = str(root / name.lower())
        env.update(APUS_MEMORY__SEARCH__PROVIDER="none", APUS_MEMORY__SEARCH__SYNC__WATCH="false")
        figures = asyncio.run(first_answer(vault, env, args.query))
    print(json.dumps({"vault": str(args.vault or f"{args.notes} generated notes"), **figures}))


if __name__ == "__main__":
    main()
