"""Build the one optional C extension (everything else is in pyproject.toml).

``dpmoments.solvers._glasso_sweep`` is the graphical lasso's inner loop. It uses only
the Python C API (no NumPy headers, no Cython), so a C compiler is all it needs. It is
optional: where no compiler is found the build goes on without it and the solver uses
its pure-NumPy sweep (same results, slower at small p).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("dpmoments.solvers._glasso_sweep", ["src/dpmoments/solvers/_glasso_sweep.c"],
                             optional=True)])
