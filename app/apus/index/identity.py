"""Index identity: what the stored vectors were made with, and what to do when it changes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

from apus.embed.base import EmbeddingIdentity
from apus.index.store import Store

_META_KEY = "vectors.identity"

Action = Literal["fresh", "serve", "reembed", "pause"]


@dataclass(frozen=True)
class IdentityDecision:
    action: Action
    reason: str = ""
    fix: str = ""


def stored_identity(store: Store) -> EmbeddingIdentity | None:
    raw = store.get_meta(_META_KEY)
    if not raw:
        return None
    try:
        return EmbeddingIdentity(**json.loads(raw))
    except (TypeError, ValueError):
        return None


def record_identity(store: Store, identity: EmbeddingIdentity) -> None:
    store.set_meta(_META_KEY, json.dumps(asdict(identity), sort_keys=True))


def decide(stored: EmbeddingIdentity | None, current: EmbeddingIdentity) -> IdentityDecision:
    """Compare the stored identity with the configured one.

    Only a prefix-scheme change is repaired on its own: the vectors are from the same model,
    just embedded without (or with other) task prefixes, so one fresh re-embed fixes them and
    the user did nothing wrong. Any other difference means the user switched model or
    provider; re-embedding a whole vault is their call, so vector search pauses instead.
    """
    if stored is None:
        return IdentityDecision("fresh")
    if stored == current:
        return IdentityDecision("serve")
    changed = [
        name
        for name in ("provider", "model", "model_sha256", "dims")
        if getattr(stored, name) != getattr(current, name)
    ]
    if not changed:
        return IdentityDecision(
            "reembed",
            f"task prefixes changed ({stored.prefix_scheme} -> {current.prefix_scheme}); "
            "re-embedding once in the background",
        )
    what = ", ".join(
        f"{name} {getattr(stored, name) or '-'} -> {getattr(current, name) or '-'}"
        for name in changed
    )
    return IdentityDecision(
        "pause",
        f"the index was built with another embedding setup ({what}); vector search is paused",
        "apus memory index --force",
    )
