"""The catalogue of bad inputs and the message each gets (the source of docs/errors.md).

Run ``python -m tests.hostile.catalogue > docs/errors.md`` from the repository
root to regenerate the document; ``test_error_catalogue.py`` checks every case
and that the document is current.
"""

import contextlib
import io
import os
import pathlib
import re
import tempfile
import warnings

import numpy as np

import dpmoments as dpm
from dpmoments.multisite import Plan, Site, SiteLedger, deal, egress_guard, read_bundle, run_cape
from dpmoments.estimators import (CenterBudget, PrivateCovariance, PrivateGraphicalLasso, PrivateIRLS,
                                  PrivateModelSelection, PrivatePCA, PrivateTensorDecomposition)
from dpmoments.moments.auto_release import BoundBudget
from dpmoments.privacy import classic_gaussian_sigma
from dpmoments.solvers import graphical_lasso

from . import catalogue_io

X = np.random.default_rng(0).normal(size=(20, 3))
OK = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
MANY = np.random.default_rng(1).normal(size=(5000, 3)) * [1.0, 100.0, 1e4]  # enough rows for private draws
AUTO = dict(epsilon=1.0, delta=1e-6, row_norm="auto")


def release(data=X, **overrides):
    return lambda: dpm.release_second_moment(data, **{"center": None, **OK, **overrides})


def _without(key):
    return {k: v for k, v in OK.items() if k != key}


def _csv(text, suffix=".csv"):
    fd, path = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return path


def cli(*argv):
    """Run the command line in process; return (exit status, stderr)."""
    from dpmoments.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = main(list(argv))
        except SystemExit as exc:  # argparse's own usage errors exit from inside main
            status = exc.code
    return status, err.getvalue().strip()


GOOD_CSV = "a,b,c\n1,2,3\n4,5,6\n"

# (identifier, where, the bad input, thunk, expected exception, a fragment the message must contain)
CASES = [
    ("epsilon-zero", "API", "`epsilon=0`", release(epsilon=0.0), ValueError, "'epsilon'"),
    ("epsilon-negative", "API", "`epsilon=-1`", release(epsilon=-1), ValueError, "'epsilon'"),
    ("epsilon-nan", "API", "`epsilon=nan`", release(epsilon=float("nan")), ValueError, "'epsilon'"),
    ("epsilon-string", "API", "`epsilon='1'`", release(epsilon="1"), TypeError, "'epsilon'"),
    ("delta-one", "API", "`delta=1`", release(delta=1.0), ValueError, "'delta'"),
    ("delta-negative", "API", "`delta=-0.1`", release(delta=-0.1), ValueError, "'delta'"),
    ("delta-missing", "API", "Gaussian noise without `delta`",
     lambda: dpm.release_second_moment(X, **_without("delta"), center=None), ValueError, "'delta'"),
    ("bound-missing", "API", "`row_norm=None`", release(row_norm=None), ValueError, "'row_norm'"),
    ("bound-negative", "API", "`row_norm=-2`", release(row_norm=-2.0), ValueError, "'row_norm'"),
    ("bound-infinite", "API", "`row_norm=inf`", release(row_norm=float("inf")), ValueError, "'row_norm'"),
    ("mechanism-unknown", "API", "`mechanism='wishart2'`", release(mechanism="wishart2"), ValueError, "'mechanism'"),
    ("neighbours-unknown", "API", "`neighbours='swap'`", release(neighbours="swap"), ValueError, "'neighbours'"),
    ("calibration-unknown", "API", "`calibration='paper'`", release(calibration="paper"), ValueError,
     "'calibration'"),
    ("classic-large-epsilon", "API", "classic Gaussian formula at epsilon >= 1",
     lambda: classic_gaussian_sigma(1.5, 1e-5), ValueError, "epsilon < 1"),
    ("rng-type", "API", "`rng='abc'`", release(rng="abc"), TypeError, "'rng'"),
    ("data-nan", "API", "a NaN in X", release(np.array([[1.0, np.nan], [0.0, 1.0]])), ValueError, "NaN"),
    ("data-inf", "API", "an infinity in X", release(np.array([[1.0, np.inf], [0.0, 1.0]])), ValueError,
     "infinite"),
    ("data-1d", "API", "1-D X", release(np.ones(5)), ValueError, "2-D"),
    ("data-3d", "API", "3-D X", release(np.ones((2, 2, 2))), ValueError, "2-D"),
    ("data-empty", "API", "X with no rows", release(np.empty((0, 3))), ValueError, "no rows"),
    ("data-no-features", "API", "X with no columns",
     lambda: PrivatePCA(n_components=1, **OK).fit(np.empty((3, 0))), ValueError, "0 feature"),
    ("data-text", "API", "X of strings", release(X.astype(str)), TypeError, "real numbers"),
    ("data-complex", "API", "complex X",
     lambda: PrivatePCA(n_components=1, **OK).fit(X + 1j), ValueError, "Complex data not supported"),
    ("data-iterator", "API", "an estimator fitted on a one-shot iterator of rows",
     lambda: PrivatePCA(n_components=1, **OK).fit(iter(X)), TypeError, "'X' is an iterator"),
    ("data-sparse", "API", "a scipy sparse matrix",
     lambda: PrivatePCA(n_components=1, **OK).fit(__import__("scipy.sparse").sparse.csr_matrix(X)), TypeError,
     "sparse"),
    ("data-sparse-nan", "API", "a NaN in a sparse X",
     release(__import__("scipy.sparse").sparse.csr_array(np.array([[1.0, np.nan], [0.0, 1.0]]))), ValueError,
     "row 0, column 1"),
    ("data-sparse-center", "API", "a public `center` with sparse X",
     release(__import__("scipy.sparse").sparse.csr_array(X), center=[0.0, 0.0, 0.0]), ValueError, "'center'"),
    ("y-length", "API", "`y` shorter than X",
     lambda: dpm.release_cross_moment(X, X[:-1, 0], response_bound=1.0, **OK), ValueError, "'y'"),
    ("response-bound-missing", "API", "cross moment without `response_bound`",
     lambda: dpm.release_cross_moment(X, X[:, 0], response_bound=None, **OK), ValueError, "'response_bound'"),
    ("center-length", "API", "`center` of the wrong length", release(center=[1.0, 2.0]), ValueError, "'center'"),
    ("file-missing", "API", "a path that does not exist", release("no-such-file.csv"), FileNotFoundError,
     "no-such-file.csv"),
    ("file-extension", "API", "a file of unknown type", lambda: dpm.release_second_moment(_csv("1 2\n", ".txt"), **OK, center=None),
     ValueError, "unknown extension"),
    ("csv-text-cell", "API", "a CSV with a text cell", lambda: dpm.release_second_moment(
        _csv("a,b\n1,2\n3,oops\n"), **OK, center=None), ValueError, "column 'b'"),
    ("csv-empty", "API", "an empty CSV file", lambda: dpm.release_second_moment(_csv(""), **OK, center=None), ValueError,
     "empty"),
    ("budget-exceeded", "API", "spending past the budget", lambda: dpm.Accountant(dpm.PureDP(1.0)).spend(
        dpm.PureDP(2.0)), dpm.BudgetExceededError, "requested 2-DP"),
    ("budget-uncertified", "API", "spending an Uncertified guarantee",
     lambda: dpm.Accountant(dpm.PureDP(1.0)).spend(dpm.Uncertified(dpm.PureDP(0.5), "support mismatch")),
     dpm.UncertifiedSpendError, "allow_uncertified"),
    ("budget-type", "API", "`Accountant(1.0)`", lambda: dpm.Accountant(1.0), TypeError, "'budget'"),
    ("budget-mixed-relations", "API", "an add-remove spend in a replace-one accountant",
     lambda: dpm.Accountant(dpm.PureDP(1.0)).spend(dpm.PureDP(0.1), neighbours="add-remove"), ValueError,
     "cannot mix neighbouring relations"),
    ("budget-undeclared-block", "API", "a spend on a block no partitioning declared",
     lambda: dpm.Accountant(dpm.PureDP(1.0)).spend(dpm.PureDP(0.1), partition="site-1"), ValueError,
     "declare the partitioning"),
    ("budget-second-partitioning", "API", "a second partitioning of the same data",
     lambda: dpm.Accountant(dpm.PureDP(1.0)).partitioning("sites", ["a", "b"]).partitioning("age", ["x", "y"]),
     ValueError, "already has the partitioning"),
    ("budget-advanced-unplanned", "API", "advanced composition without a declared plan",
     lambda: dpm.Accountant(dpm.ApproxDP(1.0, 1e-6), composition="advanced", delta_slack=1e-7), ValueError,
     "'plan'"),
    ("budget-pickled", "API", "pickling an Accountant",
     lambda: __import__("pickle").dumps(dpm.Accountant(dpm.PureDP(1.0))), TypeError, "cannot be pickled"),
    ("budget-same-seed", "API", "a second fit charged to one accountant with the same int seed (same noise)",
     lambda: [PrivateCovariance(epsilon=0.1, row_norm=1.0, mechanism="laplace", center=None, rng=0,
                                accountant=acct).fit(X) for acct in [dpm.Accountant(dpm.PureDP(1.0))] * 2],
     ValueError, "same seed"),
    ("output-scale-underflow", "API", "`mechanism='output'` with `alpha=1e-300` (alpha^2 underflows)",
     lambda: PrivateGraphicalLasso(alpha=1e-300, mechanism="output", epsilon=1.0, row_norm=1.0,
                                   center=None).fit(X), ValueError,
     "Wishart noise scale"),
    ("ebic-gamma-range", "API", "`ebic_gamma=5`",
     lambda: PrivateGraphicalLasso(alpha="ebic", ebic_gamma=5, **OK, center=None).fit(X), ValueError, "'ebic_gamma'"),
    ("data-repeated-columns", "API", "a DataFrame whose column names repeat",
     lambda: PrivatePCA(n_components=1, **OK).fit(__import__("pandas").DataFrame(X, columns=["a", "a", "b"])),
     ValueError, "repeated column name"),
    ("epsilon-subnormal", "API", "`epsilon=1e-320` (subnormal)", release(epsilon=1e-320), ValueError,
     "'epsilon' must be at least"),
    ("bound-overflow", "API", "`row_norm=1e200` (R^2 overflows)", release(row_norm=1e200), ValueError,
     "'row_norm' = 1e+200"),
    ("bound-underflow", "API", "`row_norm=1e-200` (R^2 underflows)", release(row_norm=1e-200), ValueError,
     "'row_norm' = 1e-200"),
    ("sigma-overflow", "API", "a Gaussian sigma beyond the float range",
     lambda: dpm.privacy.analytic_gaussian_sigma(1e-10, 1e-300, 1e300), ValueError, "overflows"),
    ("wishart-delta-floor", "API", "Wishart degrees of freedom for `delta=1e-13`",
     lambda: __import__("dpmoments.privacy.wishart").privacy.wishart.wishart_degrees_of_freedom(3, 1.0, 1e-13),
     ValueError, "below what the exact Wishart analysis can certify"),
    ("selection-tolerance", "API", "model selection with `gap_tolerance=1e-30` (below rounding)",
     lambda: PrivateModelSelection(epsilon=1, bounds=1, response_bound=1, R=0.3, gap_tolerance=1e-30,
                                   qp_iterations=1).fit(np.c_[X, X[:, :1]], X[:, 1]), ValueError, "'gap_tolerance'"),
    ("selection-criterion-overflow", "API", "model selection whose criterion n (r + bR)^2 overflows",
     lambda: PrivateModelSelection(epsilon=1, bounds=1e154, response_bound=1, R=1).fit(X, X[:, 0]), ValueError,
     "beyond the float range"),
    ("glasso-infeasible", "API", "graphical lasso on S = -I (no solution)",
     lambda: graphical_lasso(-np.eye(3), 0.1), ValueError, "no graphical-lasso solution"),
    ("alpha-negative", "API", "`alpha=-1`",
     lambda: PrivateGraphicalLasso(alpha=-1.0, **OK, center=None).fit(X), ValueError, "'alpha'"),
    ("alpha-floor-unknown", "API", "`alpha_floor='nois'`",
     lambda: PrivateGraphicalLasso(alpha="ebic", alpha_floor="nois", **OK,
                                                 center=None).fit(X), ValueError, "'alpha_floor'"),
    ("estimator-epsilon-missing", "API", "an estimator's `fit` without `epsilon` (`fit_release` needs none)",
     lambda: PrivateGraphicalLasso(alpha=0.1, row_norm=1.0).fit(X), ValueError, "'epsilon' is required"),
    ("components-too-many", "API", "`n_components` above the number of features",
     lambda: PrivatePCA(n_components=5, **OK).fit(X), ValueError, "'n_components'"),
    ("irls-iterations", "API", "`n_iter=0`", lambda: PrivateIRLS(
        epsilon=1, delta=1e-6, row_norm=1, response_bound=1, n_iter=0, w_max=10).fit(X, X[:, 0]), ValueError,
     "'n_iter'"),
    ("selection-empty-family", "API", "an empty candidate family", lambda: PrivateModelSelection(
        epsilon=1, bounds=1, response_bound=1, R=1, candidates=[]).fit(X, X[:, 0]), ValueError, "'candidates'"),
    ("selection-radius", "API", "`R=0`", lambda: PrivateModelSelection(
        epsilon=1, bounds=1, response_bound=1, R=0).fit(X, X[:, 0]), ValueError, "'R'"),
    ("selection-radius-range", "API", "`R_range=None` (it said \"cannot unpack non-iterable NoneType object\")",
     lambda: PrivateModelSelection(epsilon=1, bounds=1, response_bound=1, R=1, R_range=None).fit(X, X[:, 0]),
     ValueError, "'R_range'"),
    ("selection-max-size", "API", "`max_size=float('nan')` (it said \"cannot convert float NaN to integer\"; 2.5 "
     "was read as 2)", lambda: PrivateModelSelection(epsilon=1, bounds=1, response_bound=1, R=1,
                                                     max_size=float("nan")).fit(X, X[:, 0]), ValueError, "'max_size'"),
    ("bound-range-empty", "API", "an empty search range for a private bound",
     lambda: BoundBudget(search=(10.0, 1.0)), ValueError, "search range is empty"),
    ("bound-budget-share", "API", "`bound_budget=1.5` (a share outside (0, 1))",
     release(MANY, **{**AUTO, "bound_budget": 1.5}), ValueError, "'bound_budget'"),
    ("bound-budget-zero", "API", "`bound_budget=0`", release(MANY, **{**AUTO, "bound_budget": 0.0}), ValueError,
     "'bound_budget'"),
    ("bound-budget-type", "API", "`bound_budget='0.1'`", release(MANY, **{**AUTO, "bound_budget": "0.1"}), TypeError,
     "'bound_budget'"),
    ("bound-quantile", "API", "`BoundBudget(quantile=1)`", lambda: BoundBudget(quantile=1.0), ValueError,
     "'quantile'"),
    ("auto-too-few-rows", "API", "`row_norm='auto'` on 20 rows", release(X, **AUTO), ValueError, "too few rows"),
    ("auto-one-shot", "API", "`row_norm='auto'` on a generator of chunks",
     lambda: dpm.release_second_moment((c for c in np.array_split(MANY, 2)), **AUTO, center=None), ValueError,
     "one-shot iterator"),
    ("auto-secure", "API", "`row_norm='auto'` with `secure=True`", release(MANY, **AUTO, secure=True), ValueError,
     "secure=True"),
    ("auto-wishart", "API", "`row_norm='auto'` with the Wishart mechanism",
     release(MANY, **AUTO, mechanism="wishart"), ValueError, "supports mechanism"),
    ("auto-sparse", "API", "`row_norm='auto'` on a sparse X",
     release(__import__("scipy.sparse").sparse.csr_array(MANY), **AUTO), ValueError, "dense X"),
    ("scale-unknown", "API", "`scale='std'`",
     lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, scale="std").fit(MANY), ValueError, "'scale'"),
    ("scale-too-few-rows", "API", "`scale='private'` on 300 rows (too few for a median per column at epsilon 1)",
     lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, scale="private").fit(MANY[:300]), ValueError,
     "too few rows"),
    ("center-shares", "API", "budget shares adding up to 1 or more",
     lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, center_budget=CenterBudget(mean=0.6, location=0.35)).fit(
         MANY), ValueError, "leave nothing"),
    ("center-shares-exactly-one", "API", "budget shares adding up to exactly 1 (0.6 + 0.3 + 0.1, in floating point "
     "0.999...)",
     lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, center_budget=CenterBudget(mean=0.6, location=0.3),
                               bound_budget=0.1).fit(MANY), ValueError, "leave nothing"),
    ("default-auto-wishart", "API", "`PrivatePCA(mechanism='wishart')` with its default centre and `row_norm`",
     lambda: PrivatePCA(n_components=1, epsilon=1.0, delta=1e-6, mechanism="wishart").fit(MANY), ValueError,
     "row_norm='auto' (the default)"),
    ("center-budget-type", "API", "`center_budget=0.2`",
     lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, center_budget=0.2).fit(MANY), TypeError,
     "'center_budget'"),
    ("method-unknown", "API", "`method='coin'`",
     lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, method="coin").fit(MANY), ValueError, "'method'"),
    ("coinpress-laplace", "API", "`method='coinpress'` with Laplace noise",
     lambda: PrivateCovariance(epsilon=1.0, method="coinpress", mechanism="laplace").fit(MANY), ValueError,
     "'mechanism'"),
    ("coinpress-no-delta", "API", "`method='coinpress'` without `delta`",
     lambda: PrivateCovariance(epsilon=1.0, method="coinpress").fit(MANY), ValueError, "'delta'"),
    ("tensor-center-private", "API", "`PrivateTensorDecomposition(model='mog', center='private')`",
     lambda: PrivateTensorDecomposition(n_components=1, model="mog", epsilon=1, delta=1e-6, row_norm=1, sigma2=1,
                                        center="private").fit(MANY), ValueError, "linearly dependent"),
    ("tensor-stm-center", "API", "`PrivateTensorDecomposition(model='stm', center=...)`",
     lambda: PrivateTensorDecomposition(n_components=1, model="stm", epsilon=1, delta=1e-6, vocabulary_size=3,
                                        center=[0, 0, 0]).fit(np.zeros((10, 3), dtype=int)), ValueError,
     "takes no 'center'"),
    ("irls-auto-share", "API", "`PrivateIRLS(response_bound='auto', bound_budget=1)`", lambda: PrivateIRLS(
        epsilon=1, delta=1e-6, row_norm=1, response_bound="auto", n_iter=2, w_max=10, bound_budget=1.0).fit(
        MANY, MANY[:, 0]), ValueError, "'bound_budget'"),
    ("selection-penalty", "API", "`phi='bics'`", lambda: PrivateModelSelection(
        epsilon=1, bounds=1, response_bound=1, R=1, phi="bics").fit(X, X[:, 0]), ValueError, "'phi'"),
    ("uncertainty-draws", "API", "`n_draws=-1`",
     lambda: PrivatePCA(n_components=1, n_draws=-1, **OK).fit(X), ValueError, "'n_draws'"),
    ("uncertainty-level", "API", "`level=1.5`",
     lambda: PrivatePCA(n_components=1, level=1.5, **OK).fit(X), ValueError, "'level'"),
    ("uncertainty-level-low", "API", "`level=0.3` (the command line's --level is in [0.5, 1) too)",
     lambda: PrivatePCA(n_components=1, level=0.3, **OK).fit(X), ValueError, "'level'"),
    ("egress-rows", "API", "a site sending a row-shaped array", lambda: egress_guard(X, 3, (3, 3)), ValueError,
     "shaped like data rows"),
    ("count-share", "API", "`count_share=1` under add-remove", release(neighbours="add-remove", count_share=1.0),
     ValueError, "'count_share'"),
    ("wishart-add-remove", "API", "a Wishart mechanism under add-remove",
     release(mechanism="wishart-approx", neighbours="add-remove"), ValueError, "noisy row count"),
    ("neighbours-irls", "API", "IRLS under a relation other than replace-one",
     lambda: PrivateIRLS(response_bound=1.0, n_iter=1, w_max=2.0, neighbours="add-remove", **OK).fit(X, X[:, 0]),
     ValueError, "neighbours='add-remove' is not supported here"),
    ("multisite-add-remove", "API", "`neighbours='add-remove'` across sites", lambda: run_cape(
        [Site("a", X, row_norm=1.0), Site("b", X[:10], row_norm=1.0)], epsilon=1, delta=1e-6,
        neighbours="add-remove"), ValueError, "not supported across sites"),
    ("multisite-colluders", "API", "more colluders than other sites", lambda: run_cape(
        [Site("a", X, row_norm=1.0), Site("b", X[:10], row_norm=1.0)], epsilon=1, delta=1e-6, colluders=2),
     ValueError, "'colluders'"),
    ("multisite-data-mismatch", "API", "a site whose data do not fit the plan", lambda: Site("a", X[:, :2]).accept(
        deal(Plan.build("cape", ["a", "b"], [20, 5], n_features=3, row_norm=1.0, epsilon=1, delta=1e-6))["a"]),
     ValueError, "do not match the plan"),
    ("multisite-ledger-shape", "API", "a site's ledger file holding JSON that is not a ledger (a list)",
     lambda: SiteLedger("a", None, _csv("[]", ".json")), ValueError, "is not a dpmoments site ledger"),
    ("multisite-share-truncated", "API", "a share file cut short (a damaged zip)",
     lambda: read_bundle(_csv("PK\x03\x04 cut short", ".npz"), "a"), ValueError, "is not a dpmoments share file"),
    ("multisite-plan-columns", "API", "a plan naming fewer columns than its sites give",
     lambda: Plan.build("cape", ["a", "b"], [20, 5], n_features=3, row_norm=1.0, epsilon=1, delta=1e-6,
                        columns=["u", "v"]), ValueError, "'columns' names 2"),
    ("cli-noise-generator-columns-count", "CLI", "`dpmoments noise-generator --columns a,b --n-features 3`",
     lambda: cli("noise-generator", "--sites", "a=20,b=5", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                 "--columns", "a,b", "--n-features", "3", "--out", _fresh()), 2, "differs from the 2 names"),
    ("cli-figure-format", "CLI", "`dpmoments covariance data.csv --figure-format jpg`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--center",
                 "0", "--figure-format", "jpg", "--out", _fresh()), 2, "--figure-format: must name formats"),
    ("cli-noise-generator-too-many-features", "CLI", "`dpmoments noise-generator --n-features 1000000` (shares of "
     "8 TB each)", lambda: cli("noise-generator", "--sites", "a=20,b=5", "--epsilon", "1", "--delta", "1e-6",
                               "--row-norm", "1", "--uncentred", "--n-features", "1000000", "--out", _fresh()), 2,
     "--n-features 1000000: dealing the shares"),
    ("cli-default-bound-too-few-rows", "CLI",
     "`dpmoments precision data.csv` without `--row-norm` (private centre and bound by default) on 2 rows",
     lambda: cli("precision", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--out", _fresh()), 2,
     "too few rows"),
    ("cli-regress-default-bounds-too-few-rows", "CLI", "`dpmoments regress` without bounds (auto by default) on 2 rows",
     lambda: cli("regress", _csv(GOOD_CSV), "--target", "c", "--n-iter", "1", "--w-max", "2", "--epsilon", "1",
                 "--delta", "1e-6", "--out", _fresh()), 2, "every column's --ranges"),
    ("cli-select-default-bounds-too-few-rows", "CLI", "`dpmoments select` without bounds (auto by default) on 2 rows",
     lambda: cli("select", _csv(GOOD_CSV), "--target", "c", "--R", "1", "--epsilon", "1", "--out", _fresh()), 2,
     "every column's --ranges"),
    ("cli-tensor-default-bound-too-few-rows", "CLI", "`dpmoments tensor` without `--row-norm` (auto by default) on 2 "
     "rows", lambda: cli("tensor", _csv(GOOD_CSV), "--sigma2", "1", "--n-components", "1", "--epsilon", "1", "--delta",
                         "1e-6", "--out", _fresh()), 2, "--bound-share"),
    ("cli-abbreviated-option", "CLI", "an abbreviated option: `dpmoments regress data.csv --response c` (meaning "
     "`--target`, close to `--response-bound`)",
     lambda: cli("regress", _csv(GOOD_CSV), "--response", "c", "--n-iter", "1", "--w-max", "2", "--epsilon", "1",
                 "--delta", "1e-6", "--out", _fresh()), 2,
     "dpmoments regress: error: unrecognized arguments: --response c (see 'dpmoments regress --help')"),
    ("cli-bounds-mixed", "CLI", "`dpmoments select data.csv --bounds 2,a=0:1` (`select`'s entrywise bound and "
     "per-column ranges, its other spelling, in one value)",
     lambda: cli("select", _csv(GOOD_CSV), "--target", "c", "--bounds", "2,a=0:1", "--epsilon", "1", "--out",
                 _fresh()), 2, "argument --bounds: '2,a=0:1' mixes a number with COL=LOW:HIGH items"),
    ("cli-bounds-and-ranges", "CLI", "`dpmoments covariance data.csv --bounds a=0:1 --ranges b=0:1` (one option "
     "spelt two ways)",
     lambda: cli("covariance", _csv(GOOD_CSV), "--bounds", "a=0:1", "--ranges", "b=0:1", "--epsilon", "1",
                 "--delta", "1e-6", "--out", _fresh()), 2, "--ranges and --bounds are one option spelt two ways"),
    ("cli-ranges-repeated", "CLI", "`dpmoments covariance data.csv --ranges a=0:1,a=0:2` (one column twice: "
     "the last range was kept silently)",
     lambda: cli("covariance", _csv(GOOD_CSV), "--ranges", "a=0:1,a=0:2", "--epsilon", "1", "--delta", "1e-6",
                 "--out", _fresh()), 2, "--ranges gives column 'a' twice"),
    ("cli-ranges-file-repeated", "CLI", "a ranges file giving one column on two lines",
     lambda: cli("covariance", _csv(GOOD_CSV), "--ranges-file", _csv("a,0,1\na,0,2\n"), "--epsilon", "1",
                 "--delta", "1e-6", "--out", _fresh()), 2, "column 'a' is given twice"),
    ("cli-ranges-name-and-position", "CLI", "`dpmoments select data.csv --target c --ranges a=0:1,0=0:2` (a column "
     "by name and by position)",
     lambda: cli("select", _csv(GOOD_CSV), "--target", "c", "--bounds", "1", "--response-bound", "1", "--R", "1",
                 "--ranges", "a=0:1,0=0:2", "--epsilon", "1", "--out", _fresh()), 2,
     "column 'a' twice (by name and by position)"),
    ("ranges-name-and-position", "API", "`ranges={'x0': (-4, 4), 0: (-3, 3)}` (one column by name and position)",
     lambda: PrivateCovariance(epsilon=1, delta=1e-6, row_norm=1.0, center=None,
                               ranges={"x0": (-4, 4), 0: (-3, 3)}).fit(X), ValueError,
     "'ranges' gives column 'x0' twice"),
    ("cli-impute-repeated", "CLI", "`dpmoments covariance data.csv --impute b=0,b=1` (the last value was kept "
     "silently)",
     lambda: cli("covariance", _csv(GOOD_CSV), "--impute", "b=0,b=1", "--epsilon", "1", "--delta", "1e-6",
                 "--out", _fresh()), 2, "--impute gives column 'b' twice"),
    ("cli-exclude-unknown", "CLI", "`--exclude zz` naming no column (the refusal said it came from 'columns')",
     lambda: cli("covariance", _csv(GOOD_CSV), "--exclude", "zz", "--epsilon", "1", "--delta", "1e-6",
                 "--out", _fresh()), 2, "(from 'exclude')"),
    ("cli-sites-repeated", "CLI", "`dpmoments noise-generator --sites a=100,a=100` (the refusal named no site)",
     lambda: cli("noise-generator", "--sites", "a=100,a=100", "--n-features", "2", "--epsilon", "1", "--delta", "1e-6",
                 "--row-norm", "1", "--uncentred", "--out", _fresh()), 2, "--sites gives site 'a' twice"),
    ("cli-sites-zero-rows", "CLI", "`dpmoments noise-generator --sites a=0,b=100` (the refusal named 'n')",
     lambda: cli("noise-generator", "--sites", "a=0,b=100", "--n-features", "2", "--epsilon", "1", "--delta", "1e-6",
                 "--row-norm", "1", "--uncentred", "--out", _fresh()), 2,
     "--sites: row count of 'a' must be at least 1"),
    ("cli-stm-row-norm", "CLI", "`dpmoments tensor --model stm --row-norm auto`",
     lambda: cli("tensor", _csv(GOOD_CSV), "--model", "stm", "--vocabulary-size", "9", "--n-components", "1",
                 "--epsilon", "1", "--delta", "1e-6", "--row-norm", "auto", "--out", _fresh()), 2,
     "--model stm takes no --row-norm"),
    ("cli-pca-uncentred-center", "CLI", "`dpmoments pca --uncentred --center 0`",
     lambda: cli("pca", _csv(GOOD_CSV), "--n-components", "1", "--uncentred", "--center", "0", "--epsilon", "1",
                 "--delta", "1e-6", "--out", _fresh()), 2, "not both"),
    ("cli-auto-too-few-rows", "CLI", "`dpmoments covariance` (private centre and bound) on 3 rows",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--out", _fresh()), 2,
     "too few rows"),
    ("cli-row-norm-word", "CLI", "`--row-norm big`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "big", "--out",
                 _fresh()), 2, "a number or 'auto'"),
    ("cli-bound-share-range", "CLI", "`--bound-share 1`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--bound-share", "1", "--out",
                 _fresh()), 2, "--bound-share"),
    ("cli-bound-share-unused", "CLI", "`--bound-share` with a public bound and centre",
     lambda: cli("covariance", _csv(GOOD_CSV), "--uncentred", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                 "--bound-share", "0.2", "--out", _fresh()), 2, "applies only"),
    ("cli-bound-share-public-bound", "CLI", "`--bound-share` with a public bound and the private centre (it paid "
     "for nothing)",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                 "--bound-share", "0.2", "--out", _fresh()), 2, "--bound-share applies only to a private bound"),
    ("cli-count-share-replace-one", "CLI", "`--count-share 0.1` under replace-one (n public: nothing is counted)",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--uncentred",
                 "--count-share", "0.1", "--out", _fresh()), 2, "--count-share applies only with --neighbours"),
    ("cli-search-range-empty", "CLI", "`--search-range 10,1`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--search-range", "10,1",
                 "--out", _fresh()), 2, "--search-range"),
    ("cli-shares-sum", "CLI", "`--bound-share 0.5 --center-share 0.5`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--bound-share", "0.5",
                 "--center-share", "0.5", "--out", _fresh()), 2, "add up to 1 or more"),
    ("cli-secure-private", "CLI", "`--secure` with the default private centre",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--secure",
                 "--out", _fresh()), 2, "--secure cannot"),
    ("cli-uncentred-center", "CLI", "`--uncentred --center 0`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--uncentred", "--center", "0", "--epsilon", "1", "--delta", "1e-6",
                 "--row-norm", "1", "--out", _fresh()), 2, "not both"),
    ("cli-tensor-center-private", "CLI", "`dpmoments tensor --center private`",
     lambda: cli("tensor", _csv(GOOD_CSV), "--sigma2", "1", "--n-components", "1", "--epsilon", "1", "--delta",
                 "1e-6", "--row-norm", "1", "--center", "private", "--out", _fresh()), 2, "linearly independent"),
    ("cli-regress-sampling-share-p2", "CLI", "`dpmoments regress --p 2 --sampling-share 0.1` (LAD's sandwich only)",
     lambda: cli("regress", _csv(GOOD_CSV), "--target", "c", "--p", "2", "--sampling-share", "0.1", "--epsilon", "1",
                 "--delta", "1e-6", "--out", _fresh()), 2, "--sampling-share is for --p 1"),
    ("cli-regress-refusal-names-epsilon", "CLI",
     "`dpmoments regress` with auto bounds on 600 rows at epsilon 1 (too few for the draws at the default share)",
     lambda: cli("regress", _csv("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in MANY[:600])), "--target", "c",
                 "--n-iter", "1", "--w-max", "2", "--epsilon", "1", "--delta", "1e-6", "--out", _fresh()), 2,
     "runs from --epsilon"),
    ("cli-epsilon-zero", "CLI", "`--epsilon 0`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "0", "--delta", "1e-6", "--row-norm", "1", "--out",
                 _fresh()), 2, "epsilon"),
    ("cli-epsilon-subnormal", "CLI", "`--epsilon 1e-320`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1e-320", "--delta", "1e-6", "--row-norm", "1", "--out",
                 _fresh()), 2, "argument --epsilon: must be at least"),
    ("cli-bound-overflow", "CLI", "`--row-norm 1e200`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1e200", "--out",
                 _fresh()), 2, "argument --row-norm: must be between"),
    ("cli-missing-file", "CLI", "a data file that does not exist",
     lambda: cli("covariance", "missing.csv", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--out",
                 _fresh()), 2, "missing.csv"),
    ("cli-malformed-csv", "CLI", "a CSV with a text cell",
     lambda: cli("covariance", _csv("a,b\n1,2\n3,oops\n"), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                 "--out", _fresh()), 2, "line 3"),
    ("cli-unknown-column", "CLI", "`--columns` naming no column",
     lambda: cli("covariance", _csv(GOOD_CSV), "--columns", "a,zz", "--epsilon", "1", "--delta", "1e-6",
                 "--row-norm", "1", "--out", _fresh()), 2, "zz"),
    ("cli-simulate-same-file", "CLI", "`dpmoments simulate` given one file twice",
     lambda: _twice(), 2, "same file"),
    ("cli-existing-output", "CLI", "an output directory that already holds results",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--out",
                 _nonempty()), 2, "--force"),
    ("cli-count-share", "CLI", "`--count-share 0`",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                 "--neighbours", "add-remove", "--count-share", "0", "--out", _fresh()), 2, "--count-share"),
]


def _twice():
    path = _csv(GOOD_CSV)
    return cli("simulate", path, path, "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--out", _fresh())


def _fresh():
    return str(pathlib.Path(tempfile.mkdtemp()) / "out")


CASES += catalogue_io.cases(cli)
CASES += [  # the reproductions' own command line
    ("cli-reproduce-out", "CLI", "`reproduce su --out data.csv` (not a markdown file: it would be overwritten)",
     lambda: cli("reproduce", "su", "--quick", "--out", _csv(GOOD_CSV)), 2, "--out must be a markdown file"),
    ("cli-reproduce-reps", "CLI", "`reproduce su --reps 0` (an empty table written as the result)",
     lambda: cli("reproduce", "su", "--quick", "--reps", "0", "--out", _fresh() + ".md"), 2,
     "must be an integer >= 1"),
]
CASES += [  # the uncertainty options of the command line
    ("cli-draws", "CLI", "`--draws -1` (bootstrap draws)",
     lambda: cli("pca", _csv(GOOD_CSV), "--n-components", "1", "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1",
                 "--draws", "-1", "--out", _fresh()), 2, "argument --draws: must be 'auto' or an integer"),
    ("cli-level", "CLI", "`--level 1` (interval coverage)",
     lambda: cli("covariance", _csv(GOOD_CSV), "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1", "--level",
                 "1", "--out", _fresh()), 2, "argument --level: must be in [0.5, 1)"),
]


def _auto_sites(n=20):
    rng = np.random.default_rng(2)
    return [Site(f"s{i}", rng.normal(size=(n, 3)), row_norm="auto") for i in range(2)]


def _simulate_auto(*extra):
    paths = [_csv("a,b,c\n" + "\n".join(f"{i % 7},{i % 3},{i % 5}" for i in range(k, k + 50)) + "\n")
             for k in (0, 50)]
    return cli("simulate", *paths, "--epsilon", "1", "--delta", "1e-6", "--row-norm", "auto", "--out", _fresh(),
               *extra)


CASES += [  # bounds chosen across sites (noisy histograms, dpmoments.multisite.bounds)
    ("ms-auto-share", "API", "`bound_budget=1.5` with sites of `row_norm='auto'`",
     lambda: run_cape(_auto_sites(), epsilon=1.0, delta=1e-6, bound_budget=1.5), ValueError, "'bound_budget'"),
    ("ms-auto-empty-range", "API", "an empty search range across sites (`AutoBounds(low=5, high=1)`)",
     lambda: __import__("dpmoments.multisite.bounds", fromlist=["AutoBounds"]).AutoBounds(("row_norm",), low=5.0,
                                                                                          high=1.0),
     ValueError, "empty"),
    ("ms-auto-epsilon-inf", "API", "`row_norm='auto'` across sites with `epsilon=inf`",
     lambda: run_cape(_auto_sites(), epsilon=float("inf"), delta=1e-6), ValueError, "finite epsilon"),
    ("ms-auto-too-few", "API", "`row_norm='auto'` across sites with too few rows for the share",
     lambda: run_cape(_auto_sites(), epsilon=1.0, delta=1e-6), ValueError, "too few rows"),
    ("ms-auto-public-site", "API", "a site with a public `row_norm` given an auto plan",
     lambda: Site("s0", np.ones((20_000, 3)), row_norm=1.0).accept(deal(Plan.build(
         "cape", ["s0", "s1"], [20_000, 20_000], n_features=3, row_norm="auto", epsilon=1.0, delta=1e-6), 0)["s0"]),
     ValueError, "row_norm differs"),
    ("cli-simulate-auto-share", "CLI", "`dpmoments simulate --row-norm auto --bound-share 0`",
     lambda: _simulate_auto("--bound-share", "0"), 2, "--bound-share"),
    ("cli-simulate-auto-range", "CLI", "`dpmoments simulate --row-norm auto --search-range 5,1`",
     lambda: _simulate_auto("--search-range", "5,1"), 2, "--search-range"),
    ("cli-simulate-auto-too-few", "CLI", "`dpmoments simulate --row-norm auto` on 100 rows in all",
     lambda: _simulate_auto(), 2, "too few rows"),
    ("cli-simulate-dpdispca-centre", "CLI", "`dpmoments simulate --protocol dpdispca` (the default private centre)",
     lambda: _simulate_auto("--protocol", "dpdispca", "--analysis", "pca", "--n-components", "1"), 2,
     "--uncentred"),
    ("cli-simulate-unused-option", "CLI", "`dpmoments simulate --analysis covariance --n-components 2`",
     lambda: _simulate_auto("--n-components", "2"), 2, "--n-components has no use with --analysis covariance"),
]


def _centre_sites(n=20, **kwargs):
    rng = np.random.default_rng(3)
    return [Site(f"s{i}", rng.normal(size=(n, 3)), row_norm=3.0, center="private", **kwargs) for i in range(2)]


CASES += [  # a private centre across sites (location steps and a mean round, dpmoments.multisite.location)
    ("ms-center-too-few", "API", "`center='private'` across sites with too few rows for the location share",
     lambda: run_cape(_centre_sites(), epsilon=1.0, delta=1e-6), ValueError, "too few rows"),
    ("ms-center-epsilon-inf", "API", "`center='private'` across sites with `epsilon=inf`",
     lambda: run_cape(_centre_sites(), epsilon=float("inf"), delta=1e-6), ValueError, "finite epsilon"),
    ("ms-center-share", "API", "`center_budget=1.5` with sites of `center='private'`",
     lambda: run_cape(_centre_sites(), epsilon=1.0, delta=1e-6, center_budget=1.5), ValueError, "'center_share'"),
    ("ms-center-tensor", "API", "`center='private'` for a tensor decomposition across sites",
     lambda: __import__("dpmoments.multisite.api", fromlist=["analyse"]).analyse(
         _centre_sites(20_000), "tensor-mog", epsilon=1.0, delta=1e-6, options={"sigma2": 0.1}),
     ValueError, "is for covariance, correlation, pca, precision, ridge"),
    ("ms-center-public-site", "API", "a site with a public `center` given a private-centre plan",
     lambda: Site("s0", np.ones((20_000, 3)), center=(0.0, 0.0, 0.0)).accept(deal(Plan.build(
         "cape", ["s0", "s1"], [20_000, 20_000], n_features=3, row_norm=1.0, center="private", epsilon=1.0,
         delta=1e-6), 0)["s0"]), ValueError, "centre differs"),
    ("cli-simulate-center-too-few", "CLI", "`dpmoments simulate --center private` on 100 rows in all",
     lambda: _simulate_auto("--center", "private"), 2, "too few rows"),
    ("cli-simulate-center-regress", "CLI", "`dpmoments simulate --center private --analysis regress`",
     lambda: _simulate_auto("--center", "private", "--analysis", "regress", "--target", "c", "--n-iter", "2",
                            "--w-max", "5", "--response-bound", "3"), 2, "--center private across sites is for"),
    ("cli-simulate-center-shares", "CLI", "`dpmoments simulate --center private` with shares adding up to 1",
     lambda: _simulate_auto("--center", "private", "--center-share", "0.6", "--location-share", "0.35"), 2,
     "add up to 1"),
]


def _forged_moment():
    """Three sites; ``s1``'s door multiplies its noisy second moment by 1e6 (a hostile site, not a user's input)."""
    from dataclasses import replace

    from dpmoments.multisite import InProcessTransport, Reply, from_wire, to_wire
    from dpmoments.multisite.api import analyse

    rng = np.random.default_rng(0)
    sites = [Site(f"s{i}", rng.normal(size=(3000, 3)) / 3, row_norm=1.0) for i in range(3)]
    honest = sites[1].handle

    def door(data):
        reply = from_wire(honest(data))
        return to_wire(replace(reply, values={r: (s, v * 1e6) for r, (s, v) in reply.values.items()})
                       if isinstance(reply, Reply) else reply)

    handlers = {s.name: s.handle for s in sites} | {"s1": door}
    return analyse(sites, "covariance", epsilon=1.0, delta=1e-6, rng=0,
                   transport=lambda alive: InProcessTransport(handlers))


CASES += [  # a hostile site's message (dpmoments.multisite.aggregator)
    ("ms-forged-moment", "API", "a site sending its noisy second moment times 10⁶",
     _forged_moment, RuntimeError, "(implausible)"),
]


def _used_share_without_record():
    """A share file that answered once and whose records (beside it, in the registry) were then deleted."""
    import shutil

    from dpmoments.multisite import deal_files, spent

    out = pathlib.Path(tempfile.mkdtemp()) / "shares"
    plan = Plan.build("cape", ["a", "b"], [20, 5], n_features=3, row_norm=1.0, epsilon=1, delta=1e-6)
    share = deal_files(plan, out, rng=0)["a"]
    old = os.environ.get("DPMOMENTS_STATE_HOME")
    os.environ["DPMOMENTS_STATE_HOME"] = str(out.parent / "registry")  # never the user's own registry
    try:
        spent.ShareRecord(plan.digest, "a", share).spend(0)
        spent._PROCESS.pop(spent.share_id(plan.digest, "a"))  # as in a new process
        shutil.rmtree(out.parent / "registry")
        shutil.rmtree(share.with_name("a.npz.spent"))
        return Site("a", np.ones((20, 3)) / 4, row_norm=1.0).accept(read_bundle(share, "a"))
    finally:
        os.environ.pop("DPMOMENTS_STATE_HOME") if old is None else os.environ.update(DPMOMENTS_STATE_HOME=old)


CASES += [  # a share is spent once wherever it runs (dpmoments.multisite.spent)
    ("ms-share-record-missing", "API", "a share file used before whose records were deleted",
     _used_share_without_record, ValueError, "was used before and its record is missing"),
]


def _nonempty():
    path = pathlib.Path(tempfile.mkdtemp())
    (path / "keep.txt").write_text("an earlier result")
    return str(path)


def outcome(thunk):
    """(what happened, the message) for one case."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = thunk()
        except Exception as exc:  # noqa: BLE001 - the catalogue records whatever is raised
            return type(exc), str(exc)
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], int):
        return result
    return None, "no error"


def markdown():
    lines = [
        "# Errors: what bad input gets",
        "",
        "Every case below is run by `tests/hostile/test_error_catalogue.py`, which also checks that this",
        "page is current (regenerate it with `python -m tests.hostile.catalogue > docs/errors.md`).",
        "The library raises `TypeError` for the wrong kind of value and `ValueError` for the wrong",
        "range (our own errors subclass one of them); messages name the parameter, what is allowed and",
        "what was received. The command line prints one line and exits with status 2; nothing is",
        "written.",
        "",
        "| # | where | bad input | error | message |",
        "|---|---|---|---|---|",
    ]
    for i, (ident, where, what, thunk, _, _) in enumerate(CASES, 1):
        kind, message = outcome(thunk)
        kind = f"exit {kind}" if isinstance(kind, int) else kind.__name__
        message = message.replace("|", "\\|").replace("\n", " ")
        message = re.sub(re.escape(tempfile.gettempdir()) + r"/[^ '\"]+", "<temporary file>", message)
        lines.append(f"| {i} | {where} | {what} | `{kind}` | {message} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
