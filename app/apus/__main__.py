"""`python -m apus`: the same as the `apus` command."""

from apus.cli import main

main(prog_name="apus")
