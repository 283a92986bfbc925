"""Embedding tests: prefixes, catalogue, downloads, providers and the managed server."""
