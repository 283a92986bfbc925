"""A vault and a tiny model under which a search has weak hits: the model's file name is the
MiniLM model's (whose threshold is measured), its layers barely mix tokens so that texts with
no word in common are far apart, as under a real model."""

from __future__ import annotations

from pathlib import Path

from support.tiny_gguf import write_tiny_gguf

# A file name holding the MiniLM model's name, and no family prefix in its metadata: the rule
# reads it as all-MiniLM-L6-v2 (family "none"), whose threshold is measured.
MINILM_FILE = "all-minilm-l6-v2-tiny.gguf"
NOTES = {
    "garden.md": "the garden and the tree by the water in the light\n",
    "house.md": "the cat and the dog in the dark house by the fire\n",
    "work.md": "meeting plan for the project this week\n",
}
# No note holds these words: every hit is the vector leg's alone.
NOTHING_SAID = "daily note"


def spread_model(folder: Path, file_name: str) -> Path:
    """The tiny model with layers that barely mix tokens: texts without a word in common are
    far apart (cosines 0.1-0.5 here), like unrelated texts under a real model."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_tiny_gguf(folder / file_name, name="tiny-bert", block_scale=0.01)
