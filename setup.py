"""Build step for the optional compiled extensions (metadata lives in pyproject.toml).

``rankgate._native._kernels`` (the engine's and the bootstrap's inner loops), ``rankgate._native._reader`` (the TREC
and JSONL readers) and ``rankgate._native._remap`` (gold remapping's loops) are plain C against the Python API (no
numpy headers), their files in ``src/rankgate/_native/c/``. All three are optional: where no C compiler is
available the build skips them with a warning and rankgate runs its fallbacks (numpy, pyarrow), which give the
same results (see docs/architecture.md, "Compiled kernels").
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

C = "src/rankgate/_native/c/"


def _extension(name: str, files: list[str], headers: list[str]) -> Extension:
    """``rankgate._native.<name>`` from its C files (its ``*_module.c`` holds the method table) and the headers
    they include (``depends``: a changed header rebuilds the extension)."""
    return Extension(f"rankgate._native.{name}", [C + f for f in files], depends=[C + h for h in headers],
                     optional=True)


class BuildExt(build_ext):
    def build_extensions(self):
        # No fused multiply-add and no reassociation: every sum is the same IEEE operations in the
        # same order on every machine.
        if self.compiler.compiler_type == "msvc":
            flags = ["/O2", "/fp:precise"]
        else:
            flags = ["-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-strict-aliasing"]
        for ext in self.extensions:
            ext.extra_compile_args = flags
        super().build_extensions()


setup(
    ext_modules=[
        _extension("_kernels", ["rank.c", "bootstrap.c", "csv.c", "kernels_module.c"],
                   ["native.h", "idtable.h", "kernels.h"]),
        _extension("_reader", ["lines.c", "jsonl.c", "guard.c", "reader_module.c"],
                   ["native.h", "idtable.h", "reader.h", "decimal.h"]),
        _extension("_remap", ["remap.c", "remap_module.c"], ["native.h", "idtable.h", "remap.h"]),
    ],
    cmdclass={"build_ext": BuildExt},
)
