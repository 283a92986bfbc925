"""A local address where a connection is refused at once, whatever else runs on the host."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refusing_port() -> Iterator[int]:
    """A 127.0.0.1 port held for the duration by a socket that is bound but never listens:
    connecting there is refused at once, and no other process can take the port meanwhile
    (unlike a port bound and closed again, or a well-known one such as 9 that a host may
    serve)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield holder.getsockname()[1]
