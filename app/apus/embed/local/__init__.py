"""Local embeddings: the model catalogue, downloads, GGUF headers and the managed server."""
