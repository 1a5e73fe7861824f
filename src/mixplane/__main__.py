"""`python -m mixplane` runs the command line."""

from mixplane.cli import main

main()
