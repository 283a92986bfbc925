"""The agent face: `apus mcp`, a Model Context Protocol server over one vault's session."""
