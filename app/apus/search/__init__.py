"""Query -> ranked results: both retrieval legs, merge, ranking and diversity."""
