"""`apus eval`: retrieval quality on a BEIR-layout benchmark."""

from __future__ import annotations

import click


@click.command("eval")
def evaluate() -> None:
    """Measure nDCG@10, Recall@100 and MRR@10 on a BEIR collection."""
