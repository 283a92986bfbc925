"""Benchmarks behind `apus bench`: measure, return figures; the CLI prints them."""
