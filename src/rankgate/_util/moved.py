"""The module paths of rankgate 0.1 that moved in 0.2, kept importable for one release (CHANGELOG, 0.2.0).

``import rankgate.engine`` (or ``from rankgate.report.html import …``) gives a module whose names are those of
the module's new home (:data:`MOVED`), with a :class:`DeprecationWarning` naming it. The old module is a view:
setting a name on it does not change the new module, so patch the new path. The three old modules whose name is
now a package (``rankgate.stats``, ``rankgate.answers``, ``rankgate.cli``) are not here: each package gives the old
module's names itself. This finder goes in 0.3.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["MOVED", "install"]

MOVED: dict[str, str] = {
    "rankgate._accel": "rankgate._native",
    "rankgate._jsonable": "rankgate._util.jsonable",
    "rankgate._kernels": "rankgate._native._kernels",
    "rankgate._memory": "rankgate._util.memory",
    "rankgate._pandas_guard": "rankgate._util.pandas_guard",
    "rankgate._reader": "rankgate._native._reader",
    "rankgate.agreement": "rankgate.stats.agreement",
    "rankgate.atomic": "rankgate._util.atomic",
    "rankgate.baseline": "rankgate.gating.baseline",
    "rankgate.commands": "rankgate.cli",
    "rankgate.commands._outcome": "rankgate.cli._outcome",
    "rankgate.commands._requests": "rankgate.cli._requests",
    "rankgate.commands._traces_sample": "rankgate.cli._traces_sample",
    "rankgate.commands.answers": "rankgate.cli.answers",
    "rankgate.commands.calibrate_abstention": "rankgate.cli.calibrate_abstention",
    "rankgate.commands.compare": "rankgate.cli.compare",
    "rankgate.commands.demo": "rankgate.cli.demo",
    "rankgate.commands.evaluate": "rankgate.cli.evaluate",
    "rankgate.commands.gate": "rankgate.cli.gate",
    "rankgate.commands.gold": "rankgate.cli.gold",
    "rankgate.commands.incident": "rankgate.cli.incident",
    "rankgate.commands.judge": "rankgate.cli.judge",
    "rankgate.commands.metrics": "rankgate.cli.metrics",
    "rankgate.commands.options": "rankgate.cli.options",
    "rankgate.commands.pool": "rankgate.cli.pool",
    "rankgate.commands.report": "rankgate.cli.report",
    "rankgate.commands.retrieve": "rankgate.cli.retrieve",
    "rankgate.commands.stress": "rankgate.cli.stress",
    "rankgate.commands.traces": "rankgate.cli.traces",
    "rankgate.compare": "rankgate.stats.paired",
    "rankgate.configfile": "rankgate._util.configfile",
    "rankgate.constraints": "rankgate._util.constraints",
    "rankgate.data": "rankgate.io",
    "rankgate.data.answers": "rankgate.io.answers",
    "rankgate.data.arrow": "rankgate._util.arrow",
    "rankgate.data.contract": "rankgate.io.tools.contract",
    "rankgate.data.csvtable": "rankgate.io.csvtable",
    "rankgate.data.deepeval": "rankgate.io.tools.deepeval",
    "rankgate.data.detect": "rankgate.io.detect",
    "rankgate.data.formats": "rankgate.io.formats",
    "rankgate.data.ids": "rankgate.model.ids",
    "rankgate.data.inputs": "rankgate.io.inputs",
    "rankgate.data.jsonl": "rankgate.io.jsonl",
    "rankgate.data.jsonl_fast": "rankgate.io.jsonl_fast",
    "rankgate.data.llamaindex": "rankgate.io.tools.llamaindex",
    "rankgate.data.load": "rankgate.io.load",
    "rankgate.data.models": "rankgate.model.gold_run",
    "rankgate.data.nearmiss": "rankgate.io.nearmiss",
    "rankgate.data.parquet": "rankgate.io.parquet",
    "rankgate.data.ragas": "rankgate.io.tools.ragas",
    "rankgate.data.ranking": "rankgate.model.ranking",
    "rankgate.data.records": "rankgate.io.tools.records",
    "rankgate.data.rewrite": "rankgate.io.rewrite",
    "rankgate.data.samples": "rankgate.io.tools.samples",
    "rankgate.data.shapes": "rankgate.io.shapes",
    "rankgate.data.source": "rankgate.io.source",
    "rankgate.data.tools": "rankgate.io.tools.read",
    "rankgate.data.trec": "rankgate.io.trec",
    "rankgate.diagnosis": "rankgate.gating.diagnosis",
    "rankgate.engine": "rankgate.scoring.engine",
    "rankgate.fusion": "rankgate.retrieval.fusion",
    "rankgate.gate_config": "rankgate.gating.config",
    "rankgate.gates": "rankgate.gating.decide",
    "rankgate.goldset.power": "rankgate.stats.power",
    "rankgate.metrics.answer": "rankgate.metrics.answers",
    "rankgate.plugins": "rankgate._util.plugins",
    "rankgate.pooling": "rankgate.stats.pooling",
    "rankgate.redact": "rankgate._util.redact",
    "rankgate.report": "rankgate.render",
    "rankgate.report.abstention": "rankgate.render.abstention",
    "rankgate.report.answers": "rankgate.render.answers",
    "rankgate.report.assets": "rankgate.render.assets",
    "rankgate.report.bounds": "rankgate.render.bounds",
    "rankgate.report.build": "rankgate.render.build",
    "rankgate.report.charts": "rankgate.render.charts",
    "rankgate.report.comment": "rankgate.render.comment",
    "rankgate.report.compare": "rankgate.render.compare",
    "rankgate.report.details": "rankgate.render.details",
    "rankgate.report.experiments": "rankgate.render.experiments",
    "rankgate.report.exports": "rankgate.render.exports",
    "rankgate.report.github": "rankgate.render.github",
    "rankgate.report.gold": "rankgate.render.gold",
    "rankgate.report.html": "rankgate.render.html",
    "rankgate.report.incident": "rankgate.render.incident",
    "rankgate.report.incidents": "rankgate.render.incidents",
    "rankgate.report.judge": "rankgate.render.judge",
    "rankgate.report.layout_v0": "rankgate.render.layout_v0",
    "rankgate.report.lines": "rankgate.render.lines",
    "rankgate.report.markdown": "rankgate.render.markdown",
    "rankgate.report.model": "rankgate.render.model",
    "rankgate.report.numbers": "rankgate.render.numbers",
    "rankgate.report.panel": "rankgate.render.panel",
    "rankgate.report.sections": "rankgate.render.sections",
    "rankgate.report.tables": "rankgate.render.tables",
    "rankgate.report.terminal": "rankgate.render.terminal",
    "rankgate.report.traces": "rankgate.render.traces",
    "rankgate.report.traces_html": "rankgate.render.traces_html",
    "rankgate.results": "rankgate.model.results",
    "rankgate.segments": "rankgate.stats.segments",
    "rankgate.sweep": "rankgate.stats.sweep",
}
"""Old module path -> the module it moved to."""

CALLABLE: dict[str, str] = {"rankgate.compare": "rankgate.flows.api:compare", "rankgate.report": "rankgate.render.api:report"}
"""Old module paths that are now also functions of the public API (``rankgate.compare(...)``,
``rankgate.report(...)``) -> the function. Importing the old module puts it on the package under the
function's name; it is made callable as the function, so both keep working until 0.3."""


class _CallableModule(ModuleType):
    """An old module that is also the name of a function of the public API (:data:`CALLABLE`)."""

    def __call__(self, *args: object, **kwargs: object) -> object:
        module, _, name = CALLABLE[self.__name__].partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


class _Finder:
    """A finder and loader on ``sys.meta_path`` (the protocol, not importlib.abc's classes: those load
    importlib.resources, which would double the cost of ``import rankgate``)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return ModuleSpec(fullname, self, is_package=True)  # type: ignore[arg-type]

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(f"{module.__name__} moved to {new}; the old path works until rankgate 0.3",
                      DeprecationWarning, stacklevel=2)
        real = importlib.import_module(new)
        keep = ("__name__", "__spec__", "__loader__", "__path__", "__package__", "__file__", "__cached__")
        module.__dict__.update({k: v for k, v in vars(real).items() if k not in keep})
        module.__getattr__ = lambda name: getattr(real, name)  # type: ignore[method-assign]
        if module.__name__ in CALLABLE:
            module.__class__ = _CallableModule


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
