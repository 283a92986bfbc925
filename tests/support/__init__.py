"""Test helpers shared by the suites: a tiny GGUF writer, a fake model hub, a recording server."""
