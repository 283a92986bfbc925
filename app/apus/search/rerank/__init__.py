"""The second stage of a search: a model reads the query with each of the top merged
candidates, and its scores meet the fused ones before diversity (`stage.py`)."""
