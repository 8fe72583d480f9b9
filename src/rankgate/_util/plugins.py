"""Extension points: :func:`load_object`, the one loader every ``'package.module:Name'`` option uses
(retrievers, rerankers, judges), and :func:`entry_point_objects`, the one discovery of plug-ins that
installed packages declare in an entry-point group (``rankgate.metrics``, ``rankgate.retrievers``,
``rankgate.formats``). It imports only :mod:`rankgate.errors`, so any layer may use it."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from rankgate.errors import UsageError

__all__ = ["clear_entry_points", "entry_point_names", "entry_point_objects", "load_object"]


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


@functools.cache
def _entry_points(group: str) -> tuple[Any, ...]:
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)  # (the same distribution seen twice on sys.path: the first wins)
    return tuple(found[name] for name in sorted(found))


_LOADED: dict[tuple[str, str], Any] = {}


def entry_point_names(group: str) -> tuple[str, ...]:
    """The names declared in the entry-point ``group`` by installed packages, sorted; nothing is imported."""
    return tuple(ep.name for ep in _entry_points(group))


def entry_point_objects(group: str, what: str, name: str | None = None) -> dict[str, Any]:
    """The objects declared in the entry-point ``group`` (only ``name``'s when given), by name in sorted
    order; each is imported once per process. A plug-in that fails to import is a UsageError naming the
    plug-in and the group (``what`` says what it was meant to be: "metric", "retriever", "format")."""
    out: dict[str, Any] = {}
    for ep in _entry_points(group):
        if name is not None and ep.name != name:
            continue
        key = (group, ep.name)
        if key not in _LOADED:
            try:
                _LOADED[key] = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plug-in must not look like a rankgate bug
                raise UsageError(f"{what} plug-in {ep.name!r} ({ep.value}, entry-point group {group}) "
                                 f"failed to load: {type(exc).__name__}: {exc}") from None
        out[ep.name] = _LOADED[key]
    return out


def clear_entry_points() -> None:
    """Forget what :func:`entry_point_objects` found and loaded (after installing a package in-process)."""
    _entry_points.cache_clear()
    _LOADED.clear()
