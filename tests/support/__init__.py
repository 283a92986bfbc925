"""Test helpers shared by the suites: vaults and the real CLI on them, a tiny GGUF writer, a
fake model hub, recording servers, a vector leg without a model."""
