"""One module per sub-command: ``add_parser(subparsers)`` and ``run(args) -> int``.

Modules here import only the standard library at import time; ``run`` imports what it needs.
"""


def __getattr__(name: str) -> object:
    # rankgate 0.1's ``rankgate.cli`` module became this package; its names stay reachable here until 0.3
    if name.startswith("__"):
        raise AttributeError(name)
    import importlib
    import warnings

    value = getattr(importlib.import_module("rankgate.cli.main"), name)
    warnings.warn(f"rankgate.cli.{name} moved to rankgate.cli.main.{name}; the old path works until rankgate 0.3",
                  DeprecationWarning, stacklevel=2)
    return value
