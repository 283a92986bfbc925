"""The setup wizard's steps, one widget each."""
