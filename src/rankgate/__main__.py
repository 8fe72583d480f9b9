"""``python -m rankgate`` runs the command line."""

from rankgate.cli import entry

entry()
