"""The agent face: `apus mcp`, a Model Context Protocol server over one vault's session."""

import os

# The agent server's answers and the MCP SDK are pydantic models (nothing else in Apus is),
# and pydantic looks for plugins in the metadata of every installed package when its first
# model is made unless told there are none. A value the user set is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
