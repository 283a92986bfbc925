"""The Textual app: search, browse and read notes, and the first-run setup wizard."""
