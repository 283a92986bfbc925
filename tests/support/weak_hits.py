"""Measure the `weak` flag's threshold for a model (the figures of `apus.benchmarks.weak_hits`).

.venv/bin/python tests/support/weak_hits.py --locomo DIR --beir DIR --qrels FILE --model M.gguf
.venv/bin/python tests/support/weak_hits.py --load HITS.jsonl   (figures again, asking nothing)
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from apus.benchmarks.weak_hits import choose, collect, distributions, load, report


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--beir", type=Path)
    parser.add_argument("--qrels", type=Path)
    parser.add_argument("--model", default="")
    parser.add_argument("--limit-docs", type=int, default=1500)
    parser.add_argument(
        "--most-relevant-flagged",
        type=float,
        default=0.05,
        help="the share of relevant hits the chosen threshold may lie above (tuning half)",
    )
    parser.add_argument("--dump", type=Path, help="also write every hit seen (JSON lines)")
    parser.add_argument("--load", type=Path, help="figures from a --dump file, asking nothing")
    args = parser.parse_args(None if argv is None else list(argv))
    if args.load is not None:
        seen, shipped = load(args.load), None
    elif args.locomo and args.beir and args.qrels and args.model:
        seen, shipped = collect(
            args.locomo,
            args.beir,
            args.qrels,
            args.model,
            args.limit_docs,
            lambda name: print(f"asking in {name}", flush=True),
        )
    else:
        parser.error("give --locomo, --beir, --qrels and --model (or --load FILE)")
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as handle:
            for s in seen:
                handle.write(json.dumps(asdict(s)) + "\n")
    for row in distributions(seen):
        print(row)
    chosen = choose(seen, args.most_relevant_flagged)
    most = args.most_relevant_flagged
    print(f"chosen on the tuning half (relevant hits below the threshold <= {most:.0%}):")
    for row in report(seen, chosen.threshold):
        print(row)
    if shipped is None:
        print("shipped: no threshold for this model (nothing is flagged)")
    else:
        print("shipped:")
        for row in report(seen, shipped):
            print(row)


if __name__ == "__main__":
    main()
