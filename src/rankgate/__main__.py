"""``python -m rankgate`` runs the command line."""

from rankgate.cli.main import entry

entry()
