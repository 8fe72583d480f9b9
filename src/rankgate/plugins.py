"""Extension points named ``'package.module:Name'``: the one loader every ``module:Class`` option uses
(retrievers, rerankers, judges). It imports only :mod:`rankgate.errors`, so any layer may use it."""

from __future__ import annotations

import importlib
from typing import Any

from .errors import UsageError

__all__ = ["load_object"]


def load_object(spec: str, what: str) -> Any:
    """The callable named by ``'package.module:Name'`` (``Name`` may be dotted); ``what`` names it in errors.

    Shared by every ``module:Class`` extension point (retrievers, judges); UsageError when the
    module does not import, has no such attribute, or the attribute is not callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{what.capitalize()} {spec!r} must look like 'package.module:ClassName'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(
            f"Cannot import module {module_name!r} for {what} {spec!r}: {error}",
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UsageError(f"Module {module_name!r} has no attribute {attribute!r} ({what} {spec!r})")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"{spec!r} is a {type(target).__name__}, not a class or factory function")
    return target
