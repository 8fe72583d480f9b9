"""``rankgate demo``: the whole loop on a built-in corpus with built-in retrievers.

>>> from rankgate.demo import run_demo
>>> result = run_demo("rankgate-demo")          # doctest: +SKIP
>>> result.gate.passed, result.output("gate")   # doctest: +SKIP
(False, PosixPath('rankgate-demo/gate.json'))

* :mod:`~rankgate.demo.pipeline`: :func:`run_demo` and the :class:`DemoResult` it returns (no printing).
* :mod:`~rankgate.demo.story`: the terminal text of ``rankgate demo``, rendered from a result.
* ``data/``: the built-in corpus and gold set (see ``data/README.md``) and the demo's ship criteria.

Importing this package is cheap; the heavy libraries load when the demo runs.
"""

from __future__ import annotations

from rankgate.demo.pipeline import DemoResult, Output, SystemRun, run_demo

__all__ = ["DemoResult", "Output", "SystemRun", "run_demo"]
