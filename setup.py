"""Build the three optional C extensions (everything else is in pyproject.toml).

``dpmoments.solvers._glasso_sweep`` is the graphical lasso's inner loop,
``dpmoments.moments._clip`` the row clipping of the moment pass (for rows of at most 96 columns fused
with their Gram product) and ``dpmoments.moments._binned``
the binned pass of a private row bound. They use only the
Python C API (no NumPy headers, no Cython), so a C compiler is all they need. All are
optional: where no compiler is found the build goes on without them and the library
uses its pure-NumPy code (same results to rounding, slower). Each exports an ``ABI`` number that its
Python caller checks before using it, and includes the argument checks of ``_buffer_checks.h``
(docs/development.md).
"""

from setuptools import Extension, setup

_CHECKS = ["src/dpmoments/_buffer_checks.h"]  # a change to the shared checks rebuilds every extension


def _extension(name, source):
    return Extension(name, [source], depends=_CHECKS, optional=True)


setup(ext_modules=[_extension("dpmoments.solvers._glasso_sweep", "src/dpmoments/solvers/_glasso_sweep.c"),
                   _extension("dpmoments.moments._clip", "src/dpmoments/moments/_clip.c"),
                   _extension("dpmoments.moments._binned", "src/dpmoments/moments/_binned.c")])
