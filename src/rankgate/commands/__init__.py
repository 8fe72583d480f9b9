"""One module per sub-command: ``add_parser(subparsers)`` and ``run(args) -> int``.

Modules here import only the standard library at import time; ``run`` imports what it needs.
"""
