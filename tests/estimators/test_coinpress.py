"""PrivateCovariance(method="coinpress"): CoinPress (Biswas, Dong, Kamath & Ullman 2020) under zCDP."""

import math

import numpy as np
import pytest

import dpmoments as dpm
from dpmoments.estimators import PrivateCovariance
from dpmoments.moments.coinpress import COVARIANCE_STEPS, coinpress_mean, coinpress_second_moment
from dpmoments.privacy import ApproxDP, ZCDP, compose

RNG = np.random.default_rng(2)
SCALES = np.array([0.1, 1.0, 10.0, 1000.0])
CORR = 0.6 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
SIGMA = CORR * np.outer(SCALES, SCALES)
MU = 5 * SCALES
X = MU + RNG.standard_normal((50_000, 4)) @ np.linalg.cholesky(CORR).T * SCALES


def _corr_error(S):
    d = np.sqrt(np.diag(SIGMA))
    return np.abs((S - SIGMA) / np.outer(d, d)).max()


def test_coinpress_adapts_to_each_column_and_reports_zcdp_parts():
    est = PrivateCovariance(epsilon=1.0, delta=1e-6, method="coinpress", rng=0).fit(X)
    assert _corr_error(est.covariance_) < 0.1
    np.testing.assert_allclose(est.location_, MU, atol=0.05 * SCALES.max(), rtol=0.05)
    labels = [p.label for p in est.privacy_parts_]
    assert labels == ["location", "column scales", "row_norm", "mean", "second moment"]
    assert all(isinstance(p.guarantee, ZCDP) for p in est.privacy_parts_)
    rho = compose([p.guarantee for p in est.privacy_parts_]).rho
    assert est.privacy_ == ZCDP(rho).to_approx_dp(1e-6) and est.privacy_.epsilon <= 1.0
    assert "coinpress" in est.release_.postprocessing[0]


def test_the_steps_spend_their_rhos_and_whiten():
    A1 = np.diag(1.0 / (4 * SCALES))
    M, A, sigmas, n = coinpress_second_moment(X, center=MU, whitening=A1, rhos=[0.01, 0.04], rng=1)
    assert n == len(X) and len(sigmas) == 2 == len(COVARIANCE_STEPS)
    white = A @ SIGMA @ A.T
    assert np.linalg.eigvalsh(white).max() < 1.0 and np.linalg.eigvalsh(white).min() > 0.1  # nearly white
    assert _corr_error(M) < 0.05
    mean = coinpress_mean(X, center=MU + SCALES, whitening=A, radius=3.0, rhos=[0.01, 0.01], n=n, rng=2)
    np.testing.assert_allclose(mean, X.mean(0), atol=0.05 * SCALES.max(), rtol=0.02)


def test_a_public_ball_is_the_papers_start():
    Y = RNG.standard_normal((20_000, 3)) * 0.2
    est = PrivateCovariance(epsilon=1.0, delta=1e-6, method="coinpress", row_norm=2.0, center=None, rng=3).fit(Y)
    assert [p.label for p in est.privacy_parts_] == ["second moment"]
    np.testing.assert_allclose(est.covariance_, 0.04 * np.eye(3), atol=0.01)


def test_accountant_sees_the_plan_first():
    acct = dpm.Accountant(ApproxDP(1.5, 1e-5))
    PrivateCovariance(epsilon=1.0, delta=1e-6, method="coinpress", accountant=acct, rng=0).fit(X)
    with pytest.raises(dpm.BudgetExceededError):
        PrivateCovariance(epsilon=1.0, delta=1e-6, method="coinpress", accountant=acct, rng=1).fit(X)
    assert len(acct.ledger) == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(mechanism="laplace"), "'mechanism'"),
    (dict(scale="private"), "'scale'"),
    (dict(neighbours="add-remove"), "replace-one"),
    (dict(epsilon=math.inf), "finite 'epsilon'"),
    (dict(delta=None), "'delta'"),
    (dict(method="coin"), "'method'"),
])
def test_coinpress_refusals(kwargs, match):
    options = {**dict(epsilon=1.0, delta=1e-6, method="coinpress"), **kwargs}
    with pytest.raises(ValueError, match=match):
        PrivateCovariance(**options).fit(X)


def test_a_refusal_names_an_epsilon_at_which_every_draw_runs():
    """The column medians were refused first, naming epsilon 0.75, at which the first ellipsoid's radius (a
    0.95-quantile, nearer the top of the rows) was refused in turn: every draw is now judged before the first."""
    import re

    from dpmoments.exceptions import TooFewRowsError

    Z = np.random.default_rng(0).normal(size=(1500, 5)) + 4
    args = dict(epsilon=0.3, delta=1e-6, method="coinpress", rng=0)
    with pytest.raises(TooFewRowsError) as err:
        PrivateCovariance(**args).fit(Z)
    eps = float(re.search(r"runs from epsilon ([0-9.e+-]+)", str(err.value)).group(1))
    PrivateCovariance(**dict(args, epsilon=eps)).fit(Z)
    with pytest.raises(TooFewRowsError):
        PrivateCovariance(**dict(args, epsilon=0.89 * eps)).fit(Z)
