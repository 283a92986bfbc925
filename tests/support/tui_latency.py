"""Keystroke-to-results in the real app: type queries into the search box through Textual's
pilot and read the app's own figure (milliseconds from the last keystroke to the keyword
results shown), median and p90.

    .venv/bin/python tests/support/tui_latency.py --vault FOLDER [--queries 100]

The vault must be indexed already with the same data folder (`apus --vault FOLDER memory
index`); queries are note titles sampled from it with a fixed seed, so two trees asked in
turn type the same words.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
from pathlib import Path

from textual.widgets import Input

from apus.config import SettingsSource
from apus.index.store import Store
from apus.tui.app import ApusApp
from apus.tui.screens.search import SearchScreen

SEED = 7


def sample_queries(app_source: SettingsSource, count: int) -> list[str]:
    settings = app_source.load()
    store = Store(settings.index_dir(), readonly=True)
    try:
        titles = sorted({record.title for record in store.files().values() if record.title})
    finally:
        store.close()
    return random.Random(SEED).sample(titles, min(count, len(titles)))


async def measure(source: SettingsSource, queries: list[str]) -> list[float]:
    app = ApusApp(source, watch=False)
    latencies: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        for query in queries:
            screen = app.screen
            assert isinstance(screen, SearchScreen)
            box = screen.query_one(Input)
            box.value = ""
            await pilot.pause()
            await pilot.press(*query)
            while screen.response is None or screen.response.query != query.strip():
                await pilot.pause(0.005)
            latencies.append(screen.latency_ms["keyword"])
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    source = SettingsSource(vault=args.vault)
    latencies = asyncio.run(measure(source, sample_queries(source, args.queries)))
    deciles = statistics.quantiles(latencies, n=10)
    print(
        json.dumps(
            {
                "queries": len(latencies),
                "keystroke_to_keyword_results_ms": {
                    "p50": round(statistics.median(latencies), 1),
                    "p90": round(deciles[8], 1),
                },
            }
        )
    )


if __name__ == "__main__":
    main()
