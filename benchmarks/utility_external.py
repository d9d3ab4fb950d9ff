"""diffprivlib and OpenDP where they offer the analysis, on the same designs.

diffprivlib 0.6.6 offers PCA (Amin et al.'s eigenvector sampler) and least-squares
LinearRegression; OpenDP 0.16 offers PCA (``opendp.extras.sklearn``). Neither offers a
covariance or precision matrix, a graphical lasso, a tensor decomposition, robust (LAD)
regression or model selection. diffprivlib 0.6.6 fails to import with scikit-learn 1.9
(its random forest imports ``DOUBLE`` and ``DTYPE`` from ``sklearn.tree._tree``, which no
longer exist); here both names are defined before the import, which its PCA and
LinearRegression do not use. Their PCA needs real rows (200 columns) and takes seconds to
minutes a fit, so it is run once, at n = 1e4, in a child process with a
time limit, and its n* is not searched. Their LinearRegression is searched up to n = 1e6.
"""

import subprocess
import sys

import numpy as np

from .utility import EPSILON, N_REF, Method, geometric
from .utility_models import irls_data, test_rmse

TIME_LIMIT = 120
_SHIM = "import numpy as np, sklearn.tree._tree as t; t.DOUBLE, t.DTYPE = np.float64, np.float32"

_PCA = """
import math, time, warnings
import numpy as np
warnings.simplefilter("ignore")
D, K, n = 200, 50, {n}
a = np.r_[np.linspace(10, 1, K), 0.5 * np.random.default_rng(20240611).random(D - K)]
R = 1.5 * math.sqrt(a.sum())
X = np.random.default_rng(0).standard_normal((n, D)) * np.sqrt(a)
X /= np.maximum(1.0, np.linalg.norm(X, axis=1) / R)[:, None]
t0 = time.perf_counter()
{fit}
V = comps.T
print(f"{{np.sum(a[:, None] * V**2):.4g}} {{time.perf_counter() - t0:.1f}}")
"""
_FITS = {
    "diffprivlib": _SHIM + """
from diffprivlib.models import PCA
comps = PCA(n_components=K, epsilon=1.0, data_norm=R, centered=True, random_state=0).fit(X).components_""",
    "OpenDP": """
import opendp.prelude as dp
dp.enable_features("contrib", "idealized-numerics", "honest-but-curious")
from opendp.extras.sklearn.decomposition import PCA
comps = PCA(epsilon=1.0, row_norm=R, n_samples=n, n_features=D, n_components=K).fit(X).components_""",
}


def _pca_once(library, n):
    code = _PCA.format(n=n, fit=_FITS[library].strip())
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return f"n = {n:,}: did not finish within {TIME_LIMIT} s"
    if out.returncode != 0:
        return f"n = {n:,}: failed ({out.stderr.strip().splitlines()[-1][:120]})"
    value, seconds = out.stdout.split()
    return f"n = {n:,}: {value} ({seconds} s)"


def _pca(library):
    """One fit at n = 1e4 on real rows (a fit takes seconds to minutes: n* is out of reach)."""
    return f"captured variance, one fit: {_pca_once(library, N_REF)} (n* not searched: real rows)"


def _diffprivlib_regression(quick):
    exec(_SHIM)  # noqa: S102  (defines the two names diffprivlib's import needs)
    from diffprivlib.models import LinearRegression

    def fit(n, seed):
        (X, y), test = irls_data(n, seed)
        X = X / np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        y = np.clip(y, -1.0, 1.0)
        lr = LinearRegression(epsilon=EPSILON, bounds_X=(-1.0, 1.0), bounds_y=(-1.0, 1.0), fit_intercept=False,
                              random_state=seed).fit(X, y)
        return test_rmse(lr.coef_, test)

    grid, reps = geometric(1e3, 1e5 if quick else 1e6), 3
    return Method("diffprivlib 0.6.6 LinearRegression (least squares, functional mechanism)", "1-DP", fit, grid,
                  reps, "not LAD: the nearest analysis it offers; same clipping as ours")


def attach(analyses, quick=False):
    """Add the diffprivlib / OpenDP rows to the analyses they offer, and say which they do not."""
    by_name = {a.name: a for a in analyses}
    by_name["PCA"].external += [(f"{lib} PCA", _pca(lib)) for lib in ("diffprivlib", "OpenDP")]
    try:
        by_name["IRLS (LAD regression)"].methods.append(_diffprivlib_regression(quick))
    except ImportError as exc:  # pip install ".[compare]"
        by_name["IRLS (LAD regression)"].external.append(("diffprivlib LinearRegression", f"not installed ({exc})"))
    for name, analysis in by_name.items():
        if name not in ("PCA", "IRLS (LAD regression)"):
            analysis.external.append(("diffprivlib / OpenDP", "not offered"))


__all__ = ["attach"]
