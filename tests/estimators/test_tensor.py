"""PrivateTensorDecomposition: recovery at epsilon=inf, sensitivities, releases, audits, budget, bad inputs.

Audits follow ``tests/moments/test_release_audit.py``: each release's output law is rebuilt vectorised as
*exact statistic + i.i.d. Gaussian noise on the orbit (upper-triangle) coordinates* at the ``noise_scale`` the
real release reports (a non-statistical test checks the replica draw for draw), audited on a worst-case
neighbouring pair projected on the privacy-loss direction, with a half-noise negative control.
"""

import itertools
import math

import numpy as np
import pytest

from dpmoments import Accountant, ApproxDP
from dpmoments._rng import spawn
from dpmoments.datasets.mixtures import make_mog, make_single_topic
from dpmoments.exceptions import BudgetExceededError, PrivacyLeakWarning
from dpmoments.estimators import PrivateTensorDecomposition
from dpmoments.estimators.tensor import (
    TensorBudget, TensorMoments, mean_correction, mog_third_sensitivity,
    noisy_tensor_power_method, release_mog_moments, release_topic_moments, topic_sensitivity,
)
from dpmoments.mechanisms import orbit_vector, symmetric_matrix_noise, symmetric_tensor_noise, upper_triangle
from dpmoments.privacy import calibrate_gaussian, compose
from dpmoments.testing import audit

INF = float("inf")
pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NotPrivateWarning")


def q_comp(found, truth):
    """Imtiaz & Sarwate's component error: mean distance of each estimate to its nearest true component."""
    return float(np.mean([np.min(np.linalg.norm(truth - f, axis=1)) for f in found]))


# -- recovery at epsilon = inf ----------------------------------------------------------------------------------
def test_mog_recovers_components_and_weights():
    K = 4
    m = make_mog(100_000, 8, K, sigma2=0.05, weights=np.full(K, 1 / K), rng=0)
    est = PrivateTensorDecomposition(n_components=K, model="mog", epsilon=INF, row_norm=10.0, sigma2=0.05,
                                     rng=0).fit(m.X)
    assert q_comp(est.components_, m.components) < 0.03
    np.testing.assert_allclose(np.sort(est.weights_), np.full(K, 1 / K), atol=0.01)
    assert not est.privacy_.is_private


def test_mog_with_public_centre_adds_it_back():
    m = make_mog(50_000, 5, 2, sigma2=0.02, weights=[0.5, 0.5], rng=1)
    c = np.full(5, 0.3)
    est = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=INF, row_norm=10.0, sigma2=0.02,
                                     center=c, rng=0).fit(m.X + c)
    assert q_comp(est.components_, m.components + c) < 0.03


@pytest.mark.parametrize("one_hot", [False, True])
def test_stm_recovers_topics(one_hot):
    K, D = 3, 8
    s = make_single_topic(200_000, D, K, weights=np.full(K, 1 / K), rng=2)
    docs = np.eye(D, dtype=int)[s.X] if one_hot else s.X
    est = PrivateTensorDecomposition(n_components=K, model="stm", epsilon=INF, vocabulary_size=None if one_hot else D,
                                     rng=0).fit(docs)
    assert q_comp(est.components_, s.components) < 0.03
    np.testing.assert_allclose(est.components_.sum(axis=1), 1.0)
    assert np.all(est.components_ >= 0)


def test_private_fit_is_reasonable_and_reproducible():
    K = 3
    m = make_mog(200_000, 6, K, sigma2=0.05, weights=np.full(K, 1 / K), rng=3)
    kw = dict(n_components=K, model="mog", epsilon=2.0, delta=1e-6, row_norm=1.5, sigma2=0.05, rng=4)
    a, b = PrivateTensorDecomposition(**kw).fit(m.X), PrivateTensorDecomposition(**kw).fit(m.X)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert q_comp(a.components_ / np.linalg.norm(a.components_, axis=1, keepdims=True), m.components) < 0.2
    assert a.privacy_.epsilon == pytest.approx(2.0) and a.privacy_.delta == pytest.approx(1e-6)


# -- statistics and sensitivities -------------------------------------------------------------------------------
def test_mog_third_statistic_matches_definition():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3)) / 4
    mom = release_mog_moments(X, sigma2=0.3, epsilon=INF, row_norm=5.0)
    mu = X.mean(axis=0)
    expect = np.einsum("ni,nj,nk->ijk", X, X, X) / 50 - 0.3 * mean_correction(mu)
    np.testing.assert_allclose(mom.m3, expect, atol=1e-12)
    np.testing.assert_allclose(mom.m2, X.T @ X / 50 - 0.3 * np.eye(3), atol=1e-12)
    e = np.eye(3)
    explicit = sum(np.einsum("i,j,k->ijk", a, b, c) for i in range(3)
                   for a, b, c in [(mu, e[i], e[i]), (e[i], mu, e[i]), (e[i], e[i], mu)])
    np.testing.assert_allclose(mean_correction(mu), explicit, atol=1e-15)


@pytest.mark.parametrize("D", [1, 2, 5])
def test_orbit_norm_of_mean_correction(D):
    v = np.random.default_rng(D).standard_normal(D)
    assert np.linalg.norm(orbit_vector(mean_correction(v))) == pytest.approx(math.sqrt(D + 8) * np.linalg.norm(v))
    assert np.linalg.norm(mean_correction(v)) == pytest.approx(math.sqrt(3 * D + 6) * np.linalg.norm(v))


def test_mog_third_sensitivity_bounds_random_and_extreme_pairs():
    D, R, s2, n = 4, 1.0, 0.2, 1
    F = lambda x: np.einsum("i,j,k->ijk", x, x, x) - s2 * mean_correction(x)  # noqa: E731
    bound = mog_third_sensitivity(n_samples=n, n_features=D, row_norm=R, sigma2=s2)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2000, D))  # 2000 random pairs at once (a loop over them took 2 s)
    x = R * x / np.linalg.norm(x, axis=1, keepdims=True)
    y = R * y / np.linalg.norm(y, axis=1, keepdims=True) * rng.uniform(0, 1, (2000, 1))
    Fs = lambda v: np.einsum("ni,nj,nk->nijk", v, v, v) - s2 * np.stack([mean_correction(r) for r in v])  # noqa: E731
    orbit = tuple(np.array(t) for t in zip(*itertools.combinations_with_replacement(range(D), 3)))  # i <= j <= k
    diff = (Fs(x) - Fs(y))[(slice(None), *orbit)]
    worst = float(np.linalg.norm(diff, axis=1).max())
    assert np.linalg.norm(orbit_vector(F(x[0]) - F(y[0]))) == pytest.approx(np.linalg.norm(diff[0]))
    e = np.eye(D)[0]
    worst = max(worst, np.linalg.norm(orbit_vector(F(R * e) - F(-R * e))))
    assert worst <= bound  # the triangle inequality is conservative: the two terms partly cancel
    tight = mog_third_sensitivity(n_samples=n, n_features=D, row_norm=R, sigma2=0.0)
    assert np.linalg.norm(orbit_vector(np.einsum("i,j,k->ijk", e, e, e) * 2)) == pytest.approx(tight)  # sigma2 = 0
    assert mog_third_sensitivity(n_samples=1, n_features=D, row_norm=R, sigma2=s2, neighbours="zero-out") == bound / 2
    # Add-remove: the sum's sensitivity, whatever n is (n is private).
    assert mog_third_sensitivity(n_samples=None, n_features=D, row_norm=R, sigma2=s2, neighbours="add-remove") \
        == bound / 2


def test_topic_sensitivity_is_exact_on_symmetrised_moments():
    D = 3
    docs = list(itertools.product(range(D), repeat=3))

    def coords(doc):
        one = release_topic_moments(np.array([doc]), vocabulary_size=D, epsilon=INF)
        return upper_triangle(one.second.second_moment), orbit_vector(one.third.third_moment)

    C = [coords(d) for d in docs]
    worst2 = max(np.linalg.norm(a[0] - b[0]) for a in C for b in C)
    worst3 = max(np.linalg.norm(a[1] - b[1]) for a in C for b in C)
    assert worst2 == pytest.approx(math.sqrt(2)) and worst3 == pytest.approx(math.sqrt(2))
    assert topic_sensitivity(n_docs=1) == pytest.approx(math.sqrt(2))
    assert max(np.linalg.norm(c[1]) for c in C) == pytest.approx(1.0)  # zero-out: 1/N; add-remove: 1 (the sum)
    assert topic_sensitivity(n_docs=7, neighbours="zero-out") == pytest.approx(1 / 7)
    assert topic_sensitivity(n_docs=None, neighbours="add-remove") == 1.0


def test_stm_moments_are_symmetrised_before_noise():
    docs = np.array([[0, 1, 2], [0, 1, 1]])
    mom = release_topic_moments(docs, vocabulary_size=3, epsilon=1.0, delta=1e-6, rng=0)
    M2, M3 = mom.second.second_moment, mom.third.third_moment
    np.testing.assert_array_equal(M2, M2.T)  # no antisymmetric part survives, so none is leaked
    for p in itertools.permutations(range(3)):
        np.testing.assert_array_equal(M3, M3.transpose(p))


def test_release_scales_and_budget_split():
    X = np.random.default_rng(0).standard_normal((1000, 3)) / 3
    b = TensorBudget(second=0.3, third=0.6)
    mom = release_mog_moments(X, sigma2=0.1, epsilon=1.0, delta=1e-6, row_norm=1.0, budget=b, rng=0)
    s2 = calibrate_gaussian(0.3, 0.3e-6, math.sqrt(2) / 1000)[0]
    s3 = calibrate_gaussian(0.6, 0.6e-6, mog_third_sensitivity(n_samples=1000, n_features=3, row_norm=1.0,
                                                               sigma2=0.1))[0]
    assert mom.second.noise_scale == pytest.approx(s2) and mom.third.noise_scale == pytest.approx(s3)
    assert mom.guarantee.epsilon == pytest.approx(0.9) and mom.guarantee.delta == pytest.approx(0.9e-6)
    z = release_mog_moments(X, sigma2=0.1, epsilon=1.0, delta=1e-6, row_norm=1.0, calibration="zcdp", rng=0)
    assert z.guarantee.rho == pytest.approx(z.second.guarantee.rho + z.third.guarantee.rho)


def test_add_remove_releases_a_noisy_count_shared_by_both_moments():
    X = np.random.default_rng(0).standard_normal((1000, 3)) / 3
    mom = release_mog_moments(X, sigma2=0.1, epsilon=1.0, delta=1e-6, row_norm=1.0, neighbours="add-remove",
                              count_share=0.1, rng=0)
    r2, r3 = mom.second, mom.third
    assert r2.n == r3.n != 1000 and not r2.n_public and r2.count_share == 0.1
    g_count = calibrate_gaussian(0.1, 0.1e-6, 1.0)[1]
    g2, g3 = (calibrate_gaussian(0.9 * 0.5, 0.9 * 0.5e-6, 1.0)[1] for _ in range(2))
    assert r2.count_guarantee == g_count and r2.guarantee == compose([g_count, g2])
    assert mom.guarantee == compose([g_count, g2, g3]) and mom.guarantee.epsilon == pytest.approx(1.0)
    assert r2.sensitivity == pytest.approx(1.0)  # R^2: the sum's
    assert r3.sensitivity == pytest.approx(mog_third_sensitivity(n_samples=None, n_features=3, row_norm=1.0,
                                                                 sigma2=0.1, neighbours="add-remove"))
    assert r2.noise_scale == pytest.approx(r2.sum_noise_scale / r2.n)
    est = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=1.0, delta=1e-6, row_norm=1.0, sigma2=0.1,
                                     neighbours="add-remove", rng=0).fit(X)
    assert est.neighbours_ == "add-remove" and est.privacy_.epsilon == pytest.approx(1.0)
    docs = np.random.default_rng(1).integers(0, 4, size=(500, 3))
    stm = release_topic_moments(docs, vocabulary_size=4, epsilon=1.0, delta=1e-6, neighbours="add-remove", rng=0,
                                calibration="zcdp")
    assert stm.second.n == stm.third.n and stm.second.sensitivity == 1.0
    assert stm.guarantee.rho == pytest.approx(calibrate_gaussian(1.0, 1e-6, 1.0, "zcdp")[1].rho)
    with pytest.raises(ValueError, match="'count_share'"):
        release_topic_moments(docs, vocabulary_size=4, epsilon=1.0, delta=1e-6, neighbours="add-remove",
                              count_share=1.0)


def test_tensor_delta_at_least_one_over_n_warns():
    docs = np.random.default_rng(1).integers(0, 4, size=(10, 3))
    with pytest.warns(PrivacyLeakWarning, match="n=10"):
        release_topic_moments(docs, vocabulary_size=4, epsilon=1.0, delta=0.2, rng=0)


# -- audits -----------------------------------------------------------------------------------------------------
N_ROWS = 3
SHARED = np.array([[0.3, -0.2], [-0.5, 0.4]])


def _mog_pair(x, y):
    return np.vstack([x, SHARED]), np.vstack([y, SHARED])


def _replica(exact, scale, which):
    """Vectorised law of a release: exact coordinates + i.i.d. N(0, scale^2) per coordinate."""
    coords = {d: (upper_triangle(s) if which == "second" else orbit_vector(s)) for d, s in exact.items()}

    def mechanism(data, rng, size):
        v = coords[data]
        return v + rng.normal(0.0, scale, size=(size, v.size))
    return mechanism, coords


def _audit(mechanism, coords, delta):
    diff = coords["D"] - coords["D'"]
    return audit(mechanism, "D", "D'", delta=delta, projection=lambda o: o @ (diff / np.linalg.norm(diff)),
                 n_samples=200_000, batch=100_000, rng=0)


def _mog_exact(pairs, sigma2, R=1.0):
    out = {}
    for name, X in zip(("D", "D'"), pairs):
        mom = release_mog_moments(X, sigma2=sigma2, epsilon=INF, row_norm=R)
        out[name] = (mom.second.second_moment, mom.third.third_moment)
    return out


@pytest.mark.statistical
@pytest.mark.parametrize("sigma2", [0.0, 0.05])
def test_audit_mog_third_release(sigma2):
    e = np.array([1.0, 0.0])
    pair = _mog_pair(e, -e)  # tight for sigma2 = 0 (2 R^3 / n); the bound is conservative for sigma2 > 0
    est = PrivateTensorDecomposition(n_components=1, model="mog", epsilon=2.0, delta=1e-5, row_norm=1.0,
                                     sigma2=sigma2, rng=0).fit(pair[0])
    eps3, delta3 = 1.0, 0.5e-5
    scale = est.moments_.third.noise_scale
    exact = {k: v[1] for k, v in _mog_exact(pair, sigma2).items()}
    mech, coords = _replica(exact, scale, "third")
    res = _audit(mech, coords, delta3)
    assert res.consistent_with(eps3)
    if sigma2 == 0.0:  # negative control: half the noise must be caught
        half, _ = _replica(exact, scale / 2, "third")
        assert not _audit(half, coords, delta3).consistent_with(eps3)


@pytest.mark.statistical
def test_audit_mog_second_release():
    pair = _mog_pair(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    mom = release_mog_moments(pair[0], sigma2=0.05, epsilon=2.0, delta=1e-5, row_norm=1.0, rng=0)
    exact = {k: v[0] for k, v in _mog_exact(pair, 0.05).items()}
    mech, coords = _replica(exact, mom.second.noise_scale, "second")
    assert _audit(mech, coords, 0.5e-5).consistent_with(1.0)
    half, _ = _replica(exact, mom.second.noise_scale / 2, "second")
    assert not _audit(half, coords, 0.5e-5).consistent_with(1.0)


@pytest.mark.statistical
@pytest.mark.parametrize("which", ["second", "third"])
def test_audit_stm_releases(which):
    shared = np.array([[0, 1, 2], [2, 2, 1]])
    pair = {"D": np.vstack([[0, 0, 0], shared]), "D'": np.vstack([[1, 1, 1], shared])}  # tight: sqrt(2)/N
    exact, scale = {}, None
    for k, docs in pair.items():
        mom = release_topic_moments(docs, vocabulary_size=3, epsilon=INF)
        exact[k] = mom.second.second_moment if which == "second" else mom.third.third_moment
    mom = release_topic_moments(pair["D"], vocabulary_size=3, epsilon=2.0, delta=1e-5, rng=0)
    scale = getattr(mom, which).noise_scale
    mech, coords = _replica(exact, scale, which)
    assert _audit(mech, coords, 0.5e-5).consistent_with(1.0)
    half, _ = _replica(exact, scale / 2, which)
    assert not _audit(half, coords, 0.5e-5).consistent_with(1.0)


def test_replica_reproduces_the_real_release_draw_for_draw():
    X = _mog_pair(np.array([1.0, 0.0]), np.array([0.0, 1.0]))[0]
    exact = release_mog_moments(X, sigma2=0.05, epsilon=INF, row_norm=1.0)
    real = release_mog_moments(X, sigma2=0.05, epsilon=2.0, delta=1e-5, row_norm=1.0, rng=11)
    g2, g3 = spawn(11, 2)
    np.testing.assert_allclose(real.second.second_moment - exact.second.second_moment,
                               symmetric_matrix_noise(2, real.second.noise_scale, g2), atol=1e-15)
    np.testing.assert_allclose(real.third.third_moment - exact.third.third_moment,
                               symmetric_tensor_noise(2, real.third.noise_scale, g3), atol=1e-15)


# -- budget, fit_release ----------------------------------------------------------------------------------------
def test_accountant_and_fit_release():
    m = make_mog(2000, 4, 2, sigma2=0.05, rng=0)
    acct = Accountant(ApproxDP(1.5, 1e-5))
    kw = dict(n_components=2, model="mog", epsilon=1.0, delta=1e-6, row_norm=1.5, sigma2=0.05, rng=0)
    est = PrivateTensorDecomposition(accountant=acct, **kw).fit(m.X)
    assert acct.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        PrivateTensorDecomposition(accountant=acct, **{**kw, "rng": 1}).fit(m.X)  # rng=0 again: 'same seed'
    assert acct.spent.epsilon == pytest.approx(1.0)
    again = PrivateTensorDecomposition(accountant=acct, **kw).fit_release(est.moments_)
    np.testing.assert_array_equal(again.components_, est.components_)
    assert acct.spent.epsilon == pytest.approx(1.0) and again.privacy_ == est.privacy_
    assert isinstance(est.moments_, TensorMoments)


# -- the Wang & Anandkumar baseline -----------------------------------------------------------------------------
def test_noisy_tensor_power_method_baseline():
    K = 3
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((K, K)))[0].T
    T = np.einsum("r,ri,rj,rk->ijk", [3.0, 2.0, 1.0], Q, Q, Q)
    res = noisy_tensor_power_method(T, K, epsilon=1e6, delta=1e-5, sensitivity_l1=1e-6, rng=0)
    assert np.min(np.max(np.abs(res.eigenvectors @ Q.T), axis=1)) > 0.999
    assert res.n_steps == K * 10 * 31
    noisy = noisy_tensor_power_method(T, K, epsilon=1.0, delta=1e-5, sensitivity_l1=2.0, rng=0)
    assert noisy.claimed == ApproxDP(1.0, 1e-5)
    assert noisy.guarantee.delta == 1e-5 and noisy.guarantee.epsilon > 0
    with pytest.raises(ValueError, match="sensitivity_l1"):
        noisy_tensor_power_method(T, K, epsilon=1.0, delta=1e-5, sensitivity_l1=0.0)


# -- bad inputs -------------------------------------------------------------------------------------------------
X4 = np.random.default_rng(0).standard_normal((20, 4)) / 4


@pytest.mark.parametrize("kw, data, exc, match", [
    (dict(model="gmm"), X4, ValueError, "model"),
    (dict(sigma2=None), X4, ValueError, "sigma2"),
    (dict(sigma2=-1.0), X4, ValueError, "sigma2"),
    (dict(row_norm=None), X4, ValueError, "row_norm"),
    (dict(delta=None), X4, ValueError, "delta"),
    (dict(n_components=5), X4, ValueError, "n_components"),
    (dict(n_components=0), X4, ValueError, "n_components"),
    (dict(calibration="classic"), X4, ValueError, "calibration"),
    (dict(budget=(0.5, 0.5)), X4, TypeError, "TensorBudget"),
    (dict(eigenvalue_floor=0.0), X4, ValueError, "eigenvalue_floor"),
    (dict(n_restarts=0), X4, ValueError, "n_restarts"),
    (dict(accountant="acct"), X4, TypeError, "Accountant"),
    (dict(model="stm"), np.array([[0, 1, 2]]), ValueError, "vocabulary_size"),
    (dict(model="stm", vocabulary_size=3), np.array([[0, 1, 3]]), ValueError, "word ids"),
    (dict(model="stm", vocabulary_size=3), np.array([[0.0, 1.0, 2.0]]), TypeError, "integers"),
    (dict(model="stm", vocabulary_size=3), np.array([[0, 1]]), ValueError, "shape"),
    (dict(model="stm"), np.full((2, 3, 4), 1), ValueError, "one-hot"),
])
def test_bad_inputs(kw, data, exc, match):
    params = dict(n_components=2, model="mog", epsilon=1.0, delta=1e-6, row_norm=1.0, sigma2=0.05) | kw
    with pytest.raises(exc, match=match):
        PrivateTensorDecomposition(**params).fit(data)


@pytest.mark.parametrize("kw", [dict(second=0.0), dict(second=0.7, third=0.7), dict(third="half")])
def test_bad_budget(kw):
    with pytest.raises(ValueError, match="second|third"):
        TensorBudget(**kw)


def test_fit_release_checks_model():
    mom = release_topic_moments(np.array([[0, 1, 2], [1, 1, 0]]), vocabulary_size=3, epsilon=INF)
    with pytest.raises(ValueError, match="model"):
        PrivateTensorDecomposition(n_components=1, model="mog", epsilon=1.0, sigma2=0.1, row_norm=1.0).fit_release(mom)
    with pytest.raises(TypeError, match="TensorMoments"):
        PrivateTensorDecomposition(n_components=1, model="stm", epsilon=1.0).fit_release("moments")


@pytest.mark.parametrize("row_norm", [2.0, "auto"])
@pytest.mark.parametrize("center", [{}, object(), [1.0, float("nan"), 0.0]])
def test_a_bad_public_centre_is_named(row_norm, center):
    """(hunt6) center={} failed as "float() argument must be a string or a real number, not 'dict'"."""
    X = np.random.default_rng(0).normal(size=(3000, 3)) / 2
    est = PrivateTensorDecomposition(n_components=2, model="mog", sigma2=0.25, epsilon=1.0, delta=1e-6,
                                     row_norm=row_norm, center=center)
    with pytest.raises((TypeError, ValueError), match="'center'"):
        est.fit(X)
