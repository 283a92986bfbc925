"""Persistence: SQLite is the source of truth; Whoosh and FAISS are derived from it."""
