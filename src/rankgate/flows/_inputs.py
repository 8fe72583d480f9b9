"""What a request reads: each request's ``inputs()`` is the files it names, so that a caller writing the
results (the command line's :mod:`rankgate.cli.outputs`) can refuse an output that would replace one."""

from __future__ import annotations

import os

__all__ = ["FilePath", "config_file", "paths"]

FilePath = str | os.PathLike[str]


def paths(*given: object) -> tuple[FilePath, ...]:
    """The paths among ``given``, in order: None, an empty string and data given in memory (a loaded gold
    set, a dict) are left out."""
    return tuple(g for g in given if isinstance(g, (str, os.PathLike)) and os.fspath(g))


def config_file(config: object) -> FilePath | None:
    """The file ship criteria are, or were read from: the path as given, or the ``path`` of a loaded
    :class:`~rankgate.gating.config.GateConfig` (None for criteria given as data, whose path is a label
    such as ``<config>``)."""
    if isinstance(config, (str, os.PathLike)):
        return config
    path = getattr(config, "path", None)
    return path if isinstance(path, str) and path and not (path.startswith("<") and path.endswith(">")) else None
