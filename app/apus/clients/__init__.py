"""The agent clients Apus connects to: their config files, the entry each reads, the hook."""
