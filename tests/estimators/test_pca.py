"""PrivatePCA: epsilon=inf references (sklearn PCA, eigenvectors of X^T X / n), contracts, budget, bad inputs."""

import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA

from dpmoments import Accountant, ApproxDP, release_second_moment
from dpmoments.exceptions import BudgetExceededError
from dpmoments.estimators import PrivateCovariance, PrivatePCA

INF = float("inf")
pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NotPrivateWarning")


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3000, 6)) * [3.0, 2.0, 1.5, 1.0, 0.5, 0.2] + 0.3) / 10


def _exact(**kw):
    return PrivatePCA(epsilon=INF, row_norm=100.0, **{"center": None, **kw})


def test_inf_without_centre_is_eigenvectors_of_second_moment(X):
    pca = _exact(n_components=3).fit(X)
    w, V = np.linalg.eigh(X.T @ X / len(X))
    np.testing.assert_allclose(pca.explained_variance_, w[::-1][:3], rtol=1e-10)
    np.testing.assert_allclose(np.abs(pca.components_ @ V[:, ::-1][:, :3]), np.eye(3), atol=1e-8)
    np.testing.assert_array_equal(pca.mean_, np.zeros(6))


def test_inf_with_public_centre_equals_sklearn(X):
    n = len(X)
    ours = _exact(n_components=4, center=X.mean(axis=0)).fit(X)
    ref = PCA(n_components=4, svd_solver="full").fit(X)
    np.testing.assert_allclose(ours.components_, ref.components_, atol=1e-8)  # same sign rule
    np.testing.assert_allclose(ours.explained_variance_ * n / (n - 1), ref.explained_variance_, rtol=1e-8)
    np.testing.assert_allclose(ours.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), atol=1e-8)
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)), ref.inverse_transform(ref.transform(X)),
                               atol=1e-8)


def test_private_components_orthonormal_and_deterministic(X):
    kw = dict(n_components=3, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=7)
    a, b = PrivatePCA(**kw).fit(X), PrivatePCA(**kw).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_allclose(a.components_ @ a.components_.T, np.eye(3), atol=1e-12)
    C = a.components_
    assert np.all(C[np.arange(3), np.argmax(np.abs(C), axis=1)] > 0)
    assert abs(C[0, 0]) > 0.99  # n = 3000, eps = 1: the dominant direction survives the noise
    assert a.fit_transform(X).shape == (3000, 3)
    assert str(a.privacy_) == "(1, 1e-06)-DP"
    assert np.all(np.diff(a.explained_variance_) <= 0)


def test_fit_release_costs_nothing_and_matches_fit(X):
    acct = Accountant(ApproxDP(1.0, 1e-6))
    rel = release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=3, center=None)
    pca = PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, accountant=acct).fit_release(rel)
    assert acct.ledger == [] or len(acct.ledger) == 0
    assert pca.release_ is rel and pca.privacy_ == rel.guarantee
    w, V = np.linalg.eigh(rel.second_moment)
    np.testing.assert_allclose(pca.explained_variance_, w[::-1][:2], rtol=1e-10)


def test_accountant_spends_and_refuses_overspend_before_touching_data(X):
    acct = Accountant(ApproxDP(1.5, 1e-5))
    PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0, accountant=acct).fit(X)
    assert acct.spent.epsilon == pytest.approx(1.0)
    bad = np.full((5, 6), np.nan)  # never read: the refusal comes first
    with pytest.raises(BudgetExceededError):
        PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, accountant=acct)._check_affordable()
    with pytest.raises(BudgetExceededError):
        PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, accountant=acct).fit(X)
    with pytest.raises(ValueError):
        PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0).fit(bad)
    assert acct.spent.epsilon == pytest.approx(1.0)


def test_private_centre_and_eigsh_route():
    from dpmoments.estimators import CenterBudget
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20000, 4)) * [2, 1, 1, 1] / 10 + 0.5
    pca = PrivatePCA(n_components=1, epsilon=2.0, delta=1e-6, row_norm=2.0, center="private",
                     center_budget=CenterBudget(0.2), rng=0).fit(X)
    assert pca.mean_.shape == (4,) and abs(pca.components_[0, 0]) > 0.9
    pca = _exact(n_components=2, eigensolver="eigsh").fit(X)
    assert pca.eigensolver_ == "eigsh"


@pytest.mark.parametrize("kw, exc, match", [
    (dict(n_components=7), ValueError, "n_components"),
    (dict(n_components=0), ValueError, "n_components"),
    (dict(n_components=2.0), TypeError, "n_components"),
    (dict(n_components=2, eigensolver="svd"), ValueError, "eigensolver"),
    (dict(n_components=2, epsilon=0.0), ValueError, "epsilon"),
    (dict(n_components=2, delta=None), ValueError, "delta"),
    (dict(n_components=2, row_norm=None), ValueError, "row_norm"),
    (dict(n_components=2, mechanism="exponential"), ValueError, "mechanism"),
])
def test_bad_inputs(X, kw, exc, match):
    params = dict(epsilon=1.0, delta=1e-6, row_norm=1.0) | kw
    with pytest.raises(exc, match=match):
        PrivatePCA(**params).fit(X)


def test_transform_checks(X):
    with pytest.raises(ValueError, match="not fitted"):
        PrivatePCA(n_components=1, epsilon=1.0, delta=1e-6, row_norm=1.0).transform(X)
    pca = _exact(n_components=2).fit(X)
    with pytest.raises(ValueError, match="expecting 6 features"):
        pca.transform(X[:, :3])
    with pytest.raises(TypeError, match="Release"):
        pca.fit_release("release")


@pytest.mark.parametrize("mechanism", ["gaussian", "wishart"])
def test_the_summary_counts_eigenvalues_above_the_fit_s_own_noise_floor(mechanism):
    # The summary's floor once read a Wishart scale as an sd and left out its mean (0.022 against 0.70 for wishart-approx at d = 6).
    from dpmoments.estimators.summaries import noise_floor

    X = np.random.default_rng(0).normal(size=(2000, 6)) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivatePCA(n_components=2, epsilon=1, delta=1e-6, row_norm=3, center=None, mechanism=mechanism,
                         rng=0).fit(X)
    assert noise_floor(est.release_) == pytest.approx(est.eigenvalue_noise_floor_, rel=1e-12)
    assert f"{est.n_eigenvalues_above_noise_} eigenvalue(s) above the noise floor" in str(est.summary())


def test_the_summary_s_floor_is_in_the_table_s_units_where_columns_are_scaled():
    # With ranges (column scales) the title once counted the standardised matrix's eigenvalues against its floor
    # (1 "above the noise floor 0.135") over a table whose every component was below its noise (cancer's data).
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, 400), rng.lognormal(12, 1.5, 400)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivatePCA(n_components=2, epsilon=1, delta=1e-6, ranges={0: (0, 1), 1: (0, 1e8)}, n_draws=0,
                         rng=0).fit(X)
    title = str(est.summary()).splitlines()[0]
    assert est.release_.column_scale is not None
    assert f"{est.n_eigenvalues_above_noise_} eigenvalue(s) above the noise floor {est.eigenvalue_noise_floor_:.3g}" in title
    assert est.n_eigenvalues_above_noise_ == int(np.sum(est.spectrum_ > est.eigenvalue_noise_floor_))


def test_a_one_column_eigenvalue_is_withheld_where_its_variance_is_and_given_where_it_is():
    """A one-column table: pc1's eigenvalue is the column's variance, so its interval is withheld exactly where
    the covariance's is (the same test on the clipping loss, the same tail allowance); at this seed the loss
    beyond twice the bound is not ruled out, and the PCA printed 'withheld' beside the covariance's interval."""
    X = np.random.default_rng(0).standard_normal((2000, 1))
    pca = PrivatePCA(epsilon=2, delta=1e-6, n_components=1, rng=1).fit(X)
    cov = PrivateCovariance(epsilon=2, delta=1e-6, rng=1).fit(X)
    eig, var = pca.explained_variance_interval_[:, 0], cov.covariance_interval_[:, 0, 0]
    assert np.isfinite(eig).all() and np.isfinite(var).all()
    assert eig[0] <= np.var(X, ddof=1) <= eig[1]
