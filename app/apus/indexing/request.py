"""What one sync is asked to do: the one spelling every face, the queue and the steps share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SyncRequest:
    # Re-read every file and build a whole new index beside the live one (the embedding step
    # may then replace vectors of another model).
    force: bool = False
    reembed: bool = False  # drop this identity's cached vectors first: embed everything again
    # How long to wait in line for the writer lock when another process holds it (a write's
    # own sync waits its turn; others give way at once and are retried).
    wait_s: float = 0.0
    # Only these notes of the vault changed (entries the session itself just wrote): they
    # are read alone, the rest of the vault is not walked. None: the whole vault.
    notes: tuple[str, ...] | None = None

    def merged(self, other: SyncRequest | None) -> SyncRequest:
        """One sync that does what both ask (the queue coalesces requests)."""
        if other is None:
            return self
        notes = None
        if self.notes is not None and other.notes is not None:
            notes = tuple(sorted({*self.notes, *other.notes}))
        return SyncRequest(
            self.force or other.force,
            self.reembed or other.reembed,
            max(self.wait_s, other.wait_s),
            notes,
        )
