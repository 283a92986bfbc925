"""The bytes an agent receives: one `memory_search` answer of `apus mcp`, as the SDK client
reads it, on a generated vault (keyword search: no model is loaded).

    .venv/bin/python tests/support/mcp_wire.py [--notes 300] [--max-results 10]

Prints the JSON-RPC result's size (what travels on stdio), its text content and its
structured content, each in bytes of UTF-8.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

QUERY = "router firmware backup"
WORDS = [
    "router",
    "firmware",
    "backup",
    "vpn",
    "deploy",
    "blog",
    "garden",
    "kayak",
    "invoice",
    "meeting",
    "budget",
    "laptop",
    "printer",
    "password",
    "gateway",
    "ticket",
    "release",
    "review",
    "design",
    "draft",
    "notes",
    "weekly",
    "plan",
]


def write_vault(root: Path, notes: int, seed: int = 21) -> None:
    """`notes` notes of a few sections each, words drawn from a small fixed vocabulary so
    that the query matches many passages (the answer is full)."""
    rng = random.Random(seed)
    for n in range(notes):
        sections = [
            f"## Part {s}\n\n" + " ".join(rng.choice(WORDS) for _ in range(60)) + ".\n"
            for s in range(4)
        ]
        path = root / f"notes/n{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {n}\n\n" + "\n".join(sections), encoding="utf-8")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("APUS_")}
    env["APUS_MEMORY__SEARCH__PROVIDER"] = "none"
    env["APUS_MEMORY__SEARCH__SYNC__WATCH"] = "false"
    return env


async def measure(vault: Path, arguments: dict[str, Any]) -> dict[str, int]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "apus", "--vault", str(vault), "mcp"], env=_env()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("memory_search", arguments)
    wire = result.model_dump_json(by_alias=True, exclude_none=True)
    text = "".join(getattr(block, "text", "") for block in result.content)
    structured = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    hits = (result.structured_content or {}).get("results", [])
    return {
        "hits": len(hits),
        "distinct_notes": len({hit["path"] for hit in hits}),
        "wire_bytes": len(wire.encode()),
        "text_bytes": len(text.encode()),
        "structured_bytes": len(structured.encode()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--max-results", type=int, default=10)
    parser.add_argument("--query", default=QUERY)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        vault = Path(folder) / "vault"
        write_vault(vault, args.notes)
        subprocess.run(
            [sys.executable, "-m", "apus", "--vault", str(vault), "memory", "index", "--json"],
            env=_env(),
            check=True,
            capture_output=True,
        )
        figures = asyncio.run(measure(vault, {"query": args.query, "maxResults": args.max_results}))
    print(json.dumps({"notes": args.notes, "query": args.query, **figures}))


if __name__ == "__main__":
    main()
