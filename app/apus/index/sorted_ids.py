"""Sets of ids as ascending numpy arrays: made, and looked up by binary search (a table as
long as the largest id would grow with years of edits; a Python set per query costs more)."""

from __future__ import annotations

import numpy as np


def sorted_unique(ids: np.ndarray) -> np.ndarray:
    """`np.unique(ids)` without its masked-array check, whose first use imports `numpy.ma`:
    about 30 ms of every one-shot search."""
    ordered = np.sort(ids, kind="stable")
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def positions_in(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per entry of `values`: its position in `sorted_ids` (ascending, each once), or -1."""
    if not len(sorted_ids):
        return np.full(len(values), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    found: np.ndarray = np.where(sorted_ids[at] == values, at, -1)
    return found


def holds(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per entry of `values`: is it in `sorted_ids` (ascending)?"""
    found: np.ndarray = positions_in(sorted_ids, values) >= 0
    return found
