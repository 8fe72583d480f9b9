"""Retrievers by name: built-ins, named presets, entry points and users' own ``module:Class``.

:func:`get_retriever` resolves, in this order:

1. a built-in name: ``bm25``, ``dense``;
2. a preset from :func:`rankgate.retrieval.configs.demo_configs` (``bm25-multilingual``, ``bm25-english``);
3. a name registered with :func:`register` or published by an installed package under the
   ``rankgate.retrievers`` entry-point group;
4. ``package.module:Name``: imported and called with the options. ``Name`` may be a class or any
   factory function; what it returns must have ``index(chunks)`` and ``search(queries, k)``.

Options are passed to the factory as keyword arguments; a factory that rejects them raises
:class:`~rankgate.errors.UsageError` naming the retriever and the options given.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rankgate.errors import UsageError
from rankgate._util.plugins import entry_point_names, entry_point_objects, load_object  # load_object re-exported: the shared loader
from rankgate.retrieval.base import Retriever

__all__ = ["available", "check_retriever", "get_retriever", "register"]

RetrieverFactory = Callable[..., Any]
ENTRY_POINT_GROUP = "rankgate.retrievers"


def _bm25(**options: Any) -> Retriever:
    from rankgate.retrieval.bm25 import BM25Retriever

    return BM25Retriever(**options)


def _dense(**options: Any) -> Retriever:
    from rankgate.retrieval.dense import DenseRetriever

    return DenseRetriever(**options)


_REGISTRY: dict[str, RetrieverFactory] = {"bm25": _bm25, "dense": _dense}


def register(name: str, factory: RetrieverFactory) -> None:
    """Make ``factory(**options)`` available as ``name`` (e.g. for ``--retriever name``)."""
    if not name or ":" in name:
        raise UsageError(f"Retriever name must be non-empty and contain no ':'; got {name!r}")
    _REGISTRY[name] = factory


def _presets() -> dict[str, Any]:
    from rankgate.retrieval.presets import DEMO

    return {fields["name"]: fields for fields in DEMO.values()}


def available() -> list[str]:
    """Every name :func:`get_retriever` accepts without a ``module:`` path."""
    return sorted(set(_REGISTRY) | set(_presets()) | set(_entry_points()))


def _entry_points() -> tuple[str, ...]:
    return entry_point_names(ENTRY_POINT_GROUP)


def check_retriever(obj: Any, origin: str) -> Retriever:
    """Return ``obj`` if it has callable ``index`` and ``search`` methods, else raise UsageError."""
    missing = [name for name in ("index", "search") if not callable(getattr(obj, name, None))]
    if missing:
        raise UsageError(
            f"{origin} gave a {type(obj).__name__}, which is not a retriever: it has no "
            f"{' or '.join(f'{name}()' for name in missing)} method (a retriever needs "
            f"index(chunks) -> None and search(queries, k) -> list[dict]; see rankgate.retrieval.base)"
        )
    return obj


def _import(spec: str) -> RetrieverFactory:
    return load_object(spec, "retriever")


def _call(factory: RetrieverFactory, origin: str, options: dict[str, Any]) -> Any:
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as error:
        given = ", ".join(sorted(options)) or "none"
        raise UsageError(
            f"Retriever {origin!r} does not accept the options given ({given}): {error}"
        ) from None
    except ValueError:
        pass  # builtins without a signature: let the call itself complain
    return factory(**options)


def get_retriever(spec: str, **options: Any) -> Retriever:
    """Build the retriever named ``spec`` with ``options`` (see the module docstring)."""
    if not isinstance(spec, str) or not spec:
        raise UsageError(f"Retriever must be a name or 'module:Class'; got {spec!r}")
    if ":" in spec:
        obj = _call(_import(spec), spec, options)
        return check_retriever(obj, f"Retriever {spec!r}")
    if spec in _REGISTRY:
        return check_retriever(_call(_REGISTRY[spec], spec, options), f"Retriever {spec!r}")
    presets = _presets()
    if spec in presets:  # as RetrieverConfig.build: the preset's options, then the caller's
        preset = presets[spec]
        return get_retriever(preset["retriever"], **{"name": preset["name"], **preset["options"], **options})
    points = _entry_points()
    if spec in points:
        factory = entry_point_objects(ENTRY_POINT_GROUP, "retriever", spec)[spec]
        return check_retriever(_call(factory, spec, options), f"Retriever plugin {spec!r}")
    names = sorted(set(_REGISTRY) | set(presets) | set(points))
    import difflib

    close = difflib.get_close_matches(spec, names, n=1)
    suggestion = f" Did you mean {close[0]!r}?" if close else ""
    raise UsageError(
        f"Unknown retriever {spec!r}.{suggestion} Known: {', '.join(names)}; "
        f"or give your own as 'package.module:ClassName'"
    )
