"""The stores: SQLite is the source of truth; Whoosh and FAISS are derived from it.

Searches read them; the write path (`apus.indexing`) writes through the store classes here.
"""
