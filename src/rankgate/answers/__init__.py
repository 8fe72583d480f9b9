"""Layer two: scoring generated answers from judge labels, and joining them with retrieval per query."""


def __getattr__(name: str) -> object:
    # rankgate 0.1's ``rankgate.answers`` module became this package; its names stay reachable here until 0.3
    if name.startswith("__"):
        raise AttributeError(name)
    import importlib
    import warnings

    value = getattr(importlib.import_module("rankgate.answers.score"), name)
    warnings.warn(f"rankgate.answers.{name} moved to rankgate.answers.score.{name}; the old path works until rankgate 0.3",
                  DeprecationWarning, stacklevel=2)
    return value
