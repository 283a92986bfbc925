"""The write path: a sync of a vault into the index, and the embedding of what it lacks."""
