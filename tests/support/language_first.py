"""The query's language first, measured on the tldr pages (the same page in many languages):
an English question should find the English page before its translations, a Chinese one the
Chinese page.

    .venv/bin/python tests/support/language_first.py --tldr DIR [--weights 1,0.9,0.8] [--half odd]

DIR is the unpacked tldr corpus (`pages/`, `pages.de/`, ...). It is indexed by words (no model)
in the cache folder. Each question is the first example's description of a page of
`common/` that has translations in at least three other languages (English questions from
`pages/`, Chinese ones from `pages.zh/`; and English ones made of the command's name and the
description's words a translation holds too, which its translations answer by words as
well), asked with the product's defaults under each
`memory.search.query.languageWeight`. Printed per weight: the share of questions whose own
page comes before every translation of it (or alone), the share with it first, and its mean
rank among the top 10 (11 when absent). Questions alternate between the odd and the even
half: tune on one, report on the other.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

from apus import paths
from apus.config import Settings, load_settings
from apus.memory import Memory
from apus.search.engine import Searcher
from apus.search.options import SearchOptions
from apus.vault.text import query_terms

MIN_TRANSLATIONS = 3
_EXAMPLE = re.compile(r"^- (.+?):?\s*$", re.MULTILINE)
_MARKUP = re.compile(r"[`\[\]{}]")


@dataclass(frozen=True)
class Question:
    number: int
    text: str
    page: str  # the page in the question's language, vault-relative
    translations: frozenset[str]  # the same page in the other languages


def questions(tldr: Path, folder: str, *, shared: bool) -> list[Question]:
    """One question per page of `<folder>/common` with at least MIN_TRANSLATIONS versions in
    other folders: its first example's description, or (`shared`) the command's name and
    those of the description's words that a translation holds too (quoted interface words,
    words alike in both languages): a question its translations answer by words as well."""
    found = []
    for page in sorted((tldr / folder / "common").glob("*.md")):
        versions = [
            other / "common" / page.name
            for other in sorted(tldr.glob("pages*"))
            if other.name != folder and (other / "common" / page.name).is_file()
        ]
        if len(versions) < MIN_TRANSLATIONS:
            continue
        example = _EXAMPLE.search(page.read_text(encoding="utf-8"))
        if example is None:
            continue
        text = " ".join(_MARKUP.sub("", example.group(1)).split())
        if shared:
            theirs = set(query_terms(" ".join(v.read_text(encoding="utf-8") for v in versions)))
            words = [w for w in text.split() if set(query_terms(w)) & theirs]
            text = " ".join(dict.fromkeys([page.stem, *words]))
        others = frozenset(f"{v.parent.parent.name}/common/{page.name}" for v in versions)
        found.append(Question(len(found) + 1, text, f"{folder}/common/{page.name}", others))
    return found


def settings_for(tldr: Path, weight: float) -> Settings:
    index = paths.cache_dir() / "eval" / "language-first" / "index"
    return load_settings(
        overrides={
            "vault": str(tldr),
            "memory.search.provider": "none",
            "memory.search.store.path": str(index),
            "memory.search.query.languageWeight": weight,
        }
    )


def score(searcher: Searcher, asked: list[Question]) -> dict[str, float]:
    first = own_top = 0
    ranks = []
    for question in asked:
        hits = searcher.search(question.text, SearchOptions(mode="keyword")).hits
        order = [hit.path for hit in hits]
        own = order.index(question.page) + 1 if question.page in order else 11
        rivals = [order.index(p) + 1 for p in question.translations if p in order]
        first += own < min(rivals, default=12)
        own_top += own == 1
        ranks.append(own)
    count = max(len(asked), 1)
    return {
        "questions": len(asked),
        "before_translations": round(first / count, 3),
        "first": round(own_top / count, 3),
        "mean_rank": round(sum(ranks) / count, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tldr", type=Path, required=True)
    parser.add_argument("--weights", default="1,0.9,0.8,0.7")
    parser.add_argument("--half", choices=["odd", "even", "all"], default="all")
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    with Memory(settings=settings_for(args.tldr, 1.0)) as memory:
        memory.sync()
    sets = {
        "English": questions(args.tldr, "pages", shared=False),
        "English, shared words": questions(args.tldr, "pages", shared=True),
        "Chinese": questions(args.tldr, "pages.zh", shared=False),
    }
    for name, asked in sets.items():
        if args.half != "all":
            wanted = 1 if args.half == "odd" else 0
            asked = [q for q in asked if q.number % 2 == wanted]
        for weight in weights:
            searcher = Searcher(settings_for(args.tldr, weight))
            try:
                figures = score(searcher, asked)
            finally:
                searcher.close()
            print(json.dumps({"set": name, "half": args.half, "weight": weight, **figures}))


if __name__ == "__main__":
    main()
