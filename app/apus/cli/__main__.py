"""`python -m apus.cli`: the same as the `apus` command."""

from apus.cli import main

main(prog_name="apus")
