"""Build step for the optional compiled extensions (metadata lives in pyproject.toml).

``rankgate._native._kernels`` (inner loops) and ``rankgate._native._reader`` (the TREC line reader) are plain C against
the Python API (no numpy headers). Both are optional: where no C compiler is available the build skips
them with a warning and rankgate runs its fallbacks (numpy, pyarrow), which give the same numbers
(see docs/architecture.md).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


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
        Extension("rankgate._native._kernels", ["src/rankgate/_native/_kernels.c"], optional=True),
        Extension("rankgate._native._reader", ["src/rankgate/_native/_reader.c"], optional=True),
    ],
    cmdclass={"build_ext": BuildExt},
)
