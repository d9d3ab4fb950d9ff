"""Every estimator behaves like a scikit-learn estimator: its checks, input names, set_output, reports."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_checks as checks

import dpmoments as dpm
from dpmoments.estimators import (PrivateCovariance, PrivateGraphicalLasso, PrivateIRLS, PrivateModelSelection,
                                  PrivatePCA, PrivateRidgePrecision, PrivateTensorDecomposition, release_mog_moments)
from dpmoments.solvers.irls import solve_weighted

PRIVACY = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)

# scikit-learn's checks fit a few dozen rows: too few for private centres and bounds (refused), so public ones.
ESTIMATORS = [
    PrivateCovariance(**PRIVACY, center=None, rng=0),
    PrivatePCA(n_components=1, **PRIVACY, rng=0, center=None),
    PrivateGraphicalLasso(alpha=0.05, **PRIVACY, rng=0, center=None),
    PrivateRidgePrecision(alpha=0.1, **PRIVACY, rng=0, center=None),
    PrivateTensorDecomposition(n_components=1, model="mog", sigma2=0.1, **PRIVACY, rng=0),
    PrivateIRLS(**PRIVACY, response_bound=1.0, n_iter=3, w_max=10.0, rng=0),
    PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=4.0, R=2.0, max_size=2, rng=0),
]
SUPERVISED = (PrivateIRLS, PrivateModelSelection)
REPORT_FIELDS = {"estimator", "fitted_by", "spent", "guarantee", "certified", "neighbours", "neighbours_meaning",
                 "parts", "noise", "randomness"}
NOISE_FIELDS = {"statistic", "mechanism", "scale", "sensitivity", "sensitivity_norm", "releases"}


def _name(est):
    return type(est).__name__


def _frame(n=3000, d=4, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d)) / 4
    return pd.DataFrame(X, columns=[f"gene_{j}" for j in range(d)])


def _fit(est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noise checks: beside the point here
        if isinstance(est, SUPERVISED):
            return est.fit(X, np.asarray(X) @ np.arange(1.0, X.shape[1] + 1) / 10)
        return est.fit(X)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_scikit_learn_estimator_checks(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = checks.check_estimator(estimator, on_fail=None)
    failed = {r["check_name"]: str(r["exception"])[:200] for r in results if r["status"] == "failed"}
    # A private regressor on sklearn's tiny training sets (n ~ 200 rows) cannot reach the accuracy
    # check_regressors_train demands: the noise is the point, not a bug.
    assert set(failed) <= ({"check_regressors_train"} if isinstance(estimator, PrivateIRLS) else set()), failed


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_dataframe_names_are_kept_and_checked(estimator):
    """scikit-learn's own check: names recorded in fit; reordered, unseen or missing names refused later."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        checks.check_dataframe_column_names_consistency(_name(estimator), estimator)
    est = _fit(clone(estimator), _frame())
    assert list(est.feature_names_in_) == [f"gene_{j}" for j in range(4)] and est.n_features_in_ == 4
    _fit(est, _frame().to_numpy())  # refitted on an array: the names are forgotten, as in scikit-learn
    assert not hasattr(est, "feature_names_in_") and est.n_features_in_ == 4


def test_integer_column_names_are_not_feature_names():
    """scikit-learn's rule: only string column names are kept."""
    X = _frame()
    X.columns = range(4)
    est = PrivateCovariance(**PRIVACY, center=None, rng=0).fit(X)
    assert not hasattr(est, "feature_names_in_") and est.n_features_in_ == 4


def test_pca_get_feature_names_out_and_pandas_output():
    X = _frame()
    pca = PrivatePCA(n_components=2, **PRIVACY, rng=0, center=None).set_output(transform="pandas")
    scores = pca.fit_transform(X)
    assert isinstance(scores, pd.DataFrame)
    assert list(scores.columns) == list(pca.get_feature_names_out()) == ["privatepca0", "privatepca1"]
    assert scores.index.equals(X.index)
    np.testing.assert_allclose(scores.to_numpy(), (X.to_numpy() - pca.mean_) @ pca.components_.T)
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        pca.get_feature_names_out(["x0", "x1", "x2", "x3"])
    for check in (checks.check_set_output_transform_pandas, checks.check_transformer_get_feature_names_out,
                  checks.check_transformer_get_feature_names_out_pandas, checks.check_get_feature_names_out_error):
        check("PrivatePCA", PrivatePCA(n_components=1, **PRIVACY, rng=0, center=None))


def test_pca_in_a_pandas_pipeline():
    pipe = make_pipeline(StandardScaler(), PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=4.0,
                                                      rng=0, center=None)).set_output(transform="pandas")
    out = pipe.fit_transform(_frame())
    assert list(out.columns) == ["privatepca0", "privatepca1"]
    assert list(pipe[-1].feature_names_in_) == [f"gene_{j}" for j in range(4)]


# -- fit_release needs no privacy parameter ------------------------------------------------------------------------
def _release():
    return dpm.release_second_moment(_frame().to_numpy(), **PRIVACY, rng=0, center=None)


BARE = [  # what fit_release needs: no epsilon, delta, row_norm
    (PrivateCovariance(), PrivateCovariance(**PRIVACY, center=None), "covariance_"),
    (PrivatePCA(n_components=2, center=None), PrivatePCA(n_components=2, **PRIVACY, center=None), "components_"),
    (PrivateGraphicalLasso(alpha=0.1, center=None), PrivateGraphicalLasso(alpha=0.1, **PRIVACY, center=None), "precision_"),
    (PrivateRidgePrecision(alpha=0.1, center=None), PrivateRidgePrecision(alpha=0.1, **PRIVACY, center=None), "precision_"),
]


@pytest.mark.parametrize("bare, full, attr", BARE, ids=lambda e: _name(e) if hasattr(e, "fit") else "")
def test_fit_release_needs_no_privacy_parameters(bare, full, attr):
    release = _release()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, expected = bare.fit_release(release), full.fit_release(release)
    np.testing.assert_array_equal(getattr(got, attr), getattr(expected, attr))
    assert got.privacy_ == release.guarantee and got.n_features_in_ == 4
    assert got.get_params()["epsilon"] is None and clone(got).get_params() == got.get_params()
    with pytest.raises(ValueError, match=rf"^'epsilon' is required to fit {_name(bare)} from data; got None"):
        clone(bare).fit(_frame().to_numpy())


@pytest.mark.parametrize("bare", [PrivatePCA(n_components=1, epsilon=1.0, delta=1e-6, center=None),
                                  PrivateGraphicalLasso(alpha=0.1, epsilon=1.0, delta=1e-6, center=None),
                                  PrivateRidgePrecision(alpha=0.1, epsilon=1.0, delta=1e-6, center=None)], ids=_name)
def test_the_bound_is_chosen_privately_by_default_and_a_missing_one_is_named(bare):
    """Like PrivateCovariance, the default row_norm is 'auto': a private draw whose share the fit records;
    row_norm=None is still refused by name, and a mechanism that needs a public bound says so."""
    X = np.random.default_rng(0).normal(size=(5000, 4))
    assert bare.get_params()["row_norm"] == "auto"
    fitted = clone(bare).set_params(rng=0).fit(X)
    assert [p.label for p in fitted.privacy_parts_][0] == "row_norm"
    assert (fitted.privacy_.epsilon, fitted.privacy_.delta) == pytest.approx((1.0, 1e-6))
    with pytest.raises(ValueError, match="^'row_norm' is required"):
        clone(bare).set_params(row_norm=None).fit(X)
    mechanism = "output" if isinstance(bare, PrivateGraphicalLasso) else "wishart"
    with pytest.raises(ValueError, match=r"^row_norm='auto' \(the default\) supports mechanism"):
        clone(bare).set_params(mechanism=mechanism).fit(X)


def test_tensor_fit_release_needs_no_privacy_parameters():
    X = np.random.default_rng(0).normal(size=(4000, 3)) / 4
    moments = release_mog_moments(X, sigma2=0.01, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateTensorDecomposition(n_components=2, model="mog", rng=0).fit_release(moments)
    assert est.privacy_ == moments.guarantee and est.privacy_report_["fitted_by"] == "fit_release"
    with pytest.raises(ValueError, match="^'epsilon' is required"):
        clone(est).fit(X)


# -- IRLS without projection ----------------------------------------------------------------------------------------
def test_solve_without_floor_keeps_negative_eigenvalues():
    theta, clipped = solve_weighted(np.diag([2.0, -1.0]), np.array([2.0, 1.0]), None)
    np.testing.assert_allclose(theta, [1.0, -1.0])
    assert clipped == 0
    assert solve_weighted(np.diag([2.0, -1.0]), np.array([2.0, 1.0]), 0.0)[1] == 1  # the floor projects


def test_irls_psd_floor_none_solves_as_released():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 3)) / 4
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.05 * rng.standard_t(2, size=5000)
    params = dict(delta=1e-6, row_norm=1.0, response_bound=1.0, n_iter=3, w_max=10.0, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = PrivateIRLS(epsilon=0.05, psd_floor=None, **params).fit(X, y)
        exact = PrivateIRLS(epsilon=np.inf, psd_floor=None, **params).fit(X, y)
        floored = PrivateIRLS(epsilon=np.inf, psd_floor=0.0, **params).fit(X, y)
    assert raw.n_psd_clipped_ == (0, 0, 0) and np.all(np.isfinite(raw.coef_se_))
    np.testing.assert_allclose(exact.coef_, floored.coef_)  # B is PSD without noise: no projection to undo
    with pytest.raises(ValueError, match="'psd_floor'"):
        PrivateIRLS(epsilon=1.0, psd_floor=-1.0, **params).fit(X, y)


# -- one privacy report ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_privacy_report_has_the_same_fields_everywhere(estimator):
    est = _fit(clone(estimator), _frame())
    report = est.privacy_report_
    assert REPORT_FIELDS <= set(report), REPORT_FIELDS - set(report)
    assert report["estimator"] == _name(est) and report["fitted_by"] == "fit"
    assert report["guarantee"] == report["spent"] == est.privacy_.to_dict()
    assert report["neighbours"] == est.neighbours_ and report["certified"] == est.privacy_.certified
    assert [p["label"] for p in report["parts"]] == [p.label for p in est.privacy_parts_]
    assert report["noise"] and all(NOISE_FIELDS <= set(line) for line in report["noise"])
    json.dumps(report)  # JSON-able as it stands


def test_fit_release_reports_nothing_spent():
    release = _release()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateGraphicalLasso(alpha=0.1, center=None).fit_release(release)
    report = est.privacy_report_
    assert report["fitted_by"] == "fit_release" and report["spent"] is None
    assert report["guarantee"] == release.guarantee.to_dict()
    line = report["noise"][0]
    assert line["scale"] == release.noise_scale and line["sensitivity"] == release.sensitivity


def test_report_lists_each_noisy_statistic():
    X = _frame()
    y = X.to_numpy() @ np.ones(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        irls = PrivateIRLS(**PRIVACY, response_bound=1.0, n_iter=4, w_max=10.0, rng=0).fit(X, y)
        sel = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=4.0, R="private", R_epsilon=0.5,
                                    refit_epsilon=1.0, max_size=2, rng=0).fit(X, y)
    assert [(line["statistic"], line["releases"]) for line in irls.privacy_report_["noise"]] == [
        ("first moment A", 4), ("second moment B", 4), ("sampling release scale", 1), ("sampling release K", 1),
        ("sampling release V", 1), ("sampling release sign", 1)]
    # the last four: the LAD sandwich for the intervals' sampling part, and LAD's score for the w_max knot check
    assert [line["statistic"].split(" (")[0] for line in sel.privacy_report_["noise"]] == [
        "selection criteria Q_R(M) + phi |M|", "moments X'X/n, X'y/n", "moments of the selected columns"]
    assert sel.privacy_report_["noise"][0]["scale"] == sel.privacy_report_["selection_noise_scale"]
    assert [p.label for p in sel.privacy_parts_] == ["selection", "R", "refit"]


def test_a_dask_dataframe_names_the_features_as_pandas_does():
    # (hunt3) fitted on a dask frame, transform took a pandas frame with its columns reordered without a word.
    dd = pytest.importorskip("dask.dataframe")
    X = np.random.default_rng(0).normal(size=(400, 3)) / 3
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    pca = PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0, center=None).fit(dd.from_pandas(frame, 2))
    assert list(pca.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="feature names"):
        pca.transform(frame[["c", "b", "a"]])
    unnamed = PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0, center=None)
    assert not hasattr(unnamed.fit(dd.from_pandas(pd.DataFrame(X), 2)), "feature_names_in_")


def test_a_dask_dataframe_given_to_transform_predict_score_is_checked_by_name():
    # (hunt6) the reverse: a dask frame with its columns reordered was transformed, scored and predicted
    # silently (scikit-learn reads names from eager frames only, and warned the frame had no names).
    dd = pytest.importorskip("dask.dataframe")
    X = np.random.default_rng(0).normal(size=(400, 3)) / 3
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    shuffled = dd.from_pandas(frame[["c", "b", "a"]], 2)
    pca = PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3), rng=0).fit(frame)
    glasso = PrivateGraphicalLasso(alpha=0.1, epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3),
                                   rng=0).fit(frame)
    irls = PrivateIRLS(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=1.0, n_iter=2, w_max=5.0,
                       rng=0).fit(frame, X[:, 0])
    for call in (lambda: pca.transform(shuffled), lambda: glasso.score(shuffled), lambda: irls.predict(shuffled)):
        with pytest.raises(ValueError, match="feature names"):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # "X does not have valid feature names" no more
        assert np.allclose(pca.transform(dd.from_pandas(frame, 2)), pca.transform(frame))


@pytest.mark.parametrize("make", [
    lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, rng=0),
    lambda: PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm="auto", rng=0, center=None),
    lambda: PrivateGraphicalLasso(alpha="ebic", epsilon=1.0, delta=1e-6, row_norm="auto", rng=0, center=None),
])
def test_a_failed_refit_leaves_the_old_fit_whole(make):
    # (hunt3) the refit read the new width, then failed: n_features_in_ = 3 beside a 5 x 5 covariance_.
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(3000, 5)), columns=list("abcde"))
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    before = {k: v for k, v in vars(est).items()}
    with pytest.raises(ValueError, match="too few rows"):
        est.fit(np.ones((20, 3)))
    assert vars(est).keys() == before.keys() and all(vars(est)[k] is v for k, v in before.items())
    assert est.n_features_in_ == 5 and list(est.feature_names_in_) == list("abcde")


def test_a_pyarrow_table_is_still_accepted_beside_the_repeated_names_check():
    pa = pytest.importorskip("pyarrow")
    X = np.random.default_rng(0).normal(size=(300, 2)) / 3
    est = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=None, rng=0)
    assert est.fit(pa.table({"a": X[:, 0], "b": X[:, 1]})).n_features_in_ == 2
    with pytest.raises(ValueError, match="repeated column name"):
        est.fit(pd.DataFrame(X, columns=["a", "a"]))


def test_a_grid_search_warns_once_per_fit_with_the_warnings_listed():
    """GridSearchCV over 3 fits of a small table in mixed units: one summary line per fit (not one per check); the user's filters
    still come first ("error" raises the folded category), and privacy warnings keep their own line."""
    from sklearn.model_selection import GridSearchCV

    X = np.random.default_rng(0).normal(loc=5.0, size=(3000, 4)) * [1.0, 10.0, 100.0, 1000.0]  # mixed units
    search = GridSearchCV(PrivateCovariance(epsilon=1.0, delta=1e-6), {"epsilon": [1.0]}, cv=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X)
    quality = [w for w in caught if str(w.message).startswith("PrivateCovariance")
               and not issubclass(w.category, dpm.exceptions.PrivacyLeakWarning)]  # not scikit-learn's own
    assert 1 <= len(quality) <= 3  # 2 folds and the refit: at most one line each
    assert all(" warnings: (1) " in str(w.message) and "\n" not in str(w.message) for w in quality
               if str(w.message).count(": (") > 1)
    assert any(str(w.message).startswith("PrivateCovariance (fit ") for w in quality)
    assert [w for w in caught if "fitted more than once" in str(w.message)]  # a privacy warning, on its own line
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpm.exceptions.BoundWarning)
        with pytest.raises(dpm.exceptions.BoundWarning):
            GridSearchCV(PrivateCovariance(epsilon=1.0, delta=1e-6), {"epsilon": [1.0]}, cv=2,
                         error_score="raise").fit(X)
