"""One vault's memory, headless: the session that the CLI, the app and the agent server sit on.

`Memory` owns, for one vault and one settings object, the embedding provider (resolved once),
the Indexer, the Searcher, status, recall and the background sync queue. Faces parse input,
call it, and render what it returns.
"""

from apus.memory.session import Memory

__all__ = ["Memory"]
