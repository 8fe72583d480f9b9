"""Statistics over evaluation results: bootstrap intervals (:mod:`.bootstrap`), paired comparisons of two or more
runs (:mod:`.paired`), segments, k-sweeps, agreement, pooling and power."""


def __getattr__(name: str) -> object:
    # rankgate 0.1's ``rankgate.stats`` module became this package; its names stay reachable here until 0.3
    if name.startswith("__"):
        raise AttributeError(name)
    import importlib
    import warnings

    value = getattr(importlib.import_module("rankgate.stats.bootstrap"), name)
    warnings.warn(f"rankgate.stats.{name} moved to rankgate.stats.bootstrap.{name}; the old path works until rankgate 0.3",
                  DeprecationWarning, stacklevel=2)
    return value
