"""Apus: local-first search for a folder of Markdown notes."""

__version__ = "0.1.0"
