"""The bytes an agent receives: `memory_search` answers of `apus mcp`, as the SDK client
reads them (keyword search: no model is loaded), on a generated vault or on a vault and
queries of your own.

    .venv/bin/python tests/support/mcp_wire.py [--notes 300] [--max-results 10]
    .venv/bin/python tests/support/mcp_wire.py --vault DIR --queries FILE [--max-results 10]

The first asks one query of a generated vault and prints the JSON-RPC result's size (what
travels on stdio: the text content and the structured content together), its text content
and its structured content, each in bytes of UTF-8. The second indexes DIR when it has no
index yet (`apus memory index`), asks each line of FILE in one server session, and prints
the median, p95 and largest of those sizes over the answers that hold --max-results
passages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

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
    (figures,) = await measure_all(vault, [arguments])
    return figures


async def measure_all(vault: Path, asked: list[dict[str, Any]]) -> list[dict[str, int]]:
    """The sizes of each answer, all asked of one server."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "apus", "--vault", str(vault), "mcp"], env=_env()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [_sizes(await session.call_tool("memory_search", a)) for a in asked]


def _sizes(result: CallToolResult) -> dict[str, int]:
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


def _index(vault: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "apus", "--vault", str(vault), "memory", "index", "--json"],
        env=_env(),
        check=True,
        capture_output=True,
    )


def _spread(values: list[int]) -> dict[str, int]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"median": int(statistics.median(ordered)), "p95": p95, "max": ordered[-1]}


def measure_vault(vault: Path, queries: list[str], max_results: int) -> dict[str, Any]:
    """Median, p95 and largest answer over `queries`, asked of `vault` (indexed if need be)."""
    _index(vault)  # a no-change sync when it is indexed already
    asked = [{"query": query, "maxResults": max_results} for query in queries]
    answers = asyncio.run(measure_all(vault, asked))
    # The answers that hold `max_results` passages (fewer say less), else every answer.
    full = [a for a in answers if a["hits"] == max_results] or answers
    return {
        "vault": str(vault),
        "queries": len(queries),
        "measured_answers": len(full),
        "hits": max(a["hits"] for a in full),
        "wire_bytes": _spread([a["wire_bytes"] for a in full]),
        "text_bytes": _spread([a["text_bytes"] for a in full]),
        "structured_bytes": _spread([a["structured_bytes"] for a in full]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--max-results", type=int, default=10)
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--vault", type=Path, help="a vault of your own (else one is generated)")
    parser.add_argument("--queries", type=Path, help="with --vault: one query a line")
    args = parser.parse_args(argv)
    if args.vault is not None:
        lines = args.queries.read_text(encoding="utf-8").splitlines() if args.queries else []
        queries = [line.strip() for line in lines if line.strip()] or [args.query]
        print(json.dumps(measure_vault(args.vault, queries, args.max_results)))
        return
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
