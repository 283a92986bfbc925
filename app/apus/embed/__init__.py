"""Text -> vectors: providers, task prefixes, and the managed local llama.cpp server."""
