"""End-to-end privacy audits of PrivateIRLS: through ``fit``, projected on the final ``coef_``.

``test_irls.py`` audits one iteration's ``A`` and ``B`` releases. Here the
whole fit is replayed -- thresholded weights from the previous *private*
iterate, the noisy moments, the eigenvalue floor and the solve, ``n_iter``
times -- for many noise draws at once, and the audit looks at ``coef_`` only.

The problem is tiny (d = 1, row_norm = response_bound = w_max = 1, so that
``w_max * r = 1`` and the sensitivity bound of ``A``, ``2 w_max R r / N``, is
attained): ``N - 1`` rows ``(x, y) = (1, 0)`` and one row ``(1, +1)`` against
``(1, -1)``. The weights are ``min(w_max, 1/|residual|)``, so the two
datasets have the same ``B`` at ``theta = 0`` and ``A`` moves by exactly its
sensitivity. Rows are grouped by value, so a batch of fits costs O(distinct
rows). A seeded test checks that the replay reproduces real fits exactly
(same draws, same scales read from ``privacy_report_``).

What an end-to-end audit can and cannot see: ``coef_`` is a post-processing
of the last iteration's releases, and mostly of its ``A`` (one of ``2J``
releases), while the claim is the zCDP composition of all of them converted
to ``(epsilon, delta)``. So the audit sits well below the claim; halving
every sigma is caught at ``J = 1`` (delta = 1e-3) but at ``J = 2`` it takes
sigma / 3 (sigma / 2 gives ~0.74 < 1; the per-iteration audits catch sigma / 2
release by release). For the Laplace first moment at ``J = 1`` the pair
leaves ``B`` unchanged, so ``coef_`` is a post-processing of ``A~`` alone and
must be ``epsilon_A``-DP (pure), a sharper claim that the audit nearly
attains and that scale / 2 visibly breaks; at ``J = 2`` the control against
the total claim needs scale / 8.
"""

import functools

import numpy as np
import pytest

from dpmoments.estimators.irls import PrivateIRLS
from dpmoments.solvers.irls import irls_weights
from dpmoments.testing import audit

EPS, DELTA, N = 1.0, 1e-3, 50
W = R = r = 1.0
X_ROWS = np.array([1.0, 1.0])  # distinct rows (d = 1): shared, differing
COUNTS = np.array([N - 1, 1.0])
Y_ROWS = (np.array([0.0, r]), np.array([0.0, -r]))


def _dataset(which):
    X = np.ones((N, 1))
    y = np.zeros(N)
    y[-1] = Y_ROWS[which][1]
    return X, y


def _estimator(first_moment, n_iter, rng=None):
    # The paper's iteration releases alone (no intercept column, no sampling releases: those are audited in
    # test_irls_error.py), so that the replica below draws exactly what the fit draws.
    return PrivateIRLS(epsilon=EPS, delta=DELTA, row_norm=R, response_bound=r, n_iter=n_iter, w_max=W,
                       first_moment=first_moment, fit_intercept=False, sampling_budget=0.0, rng=rng)


@functools.lru_cache(maxsize=None)
def _fitted(first_moment, n_iter):
    # Read-only use: the scales in privacy_report_ (calibrating rho takes ~0.8 s per fit).
    return _estimator(first_moment, n_iter, rng=0).fit(*_dataset(0))


def _replica(first_moment, n_iter, factor=1.0):
    """A vectorised replay of ``PrivateIRLS.fit`` on the pair; returns (mechanism, fitted estimator)."""
    est = _fitted(first_moment, n_iter)
    noise = est.privacy_report_["noise"]
    s_a, s_b = (factor * noise[i]["scale"] for i in (0, 1))  # the first moment A, then B
    floor = 2.0 * s_b  # psd_floor="auto": 2 sqrt(d) sigma_B, d = 1

    def mech(which, rng, size):
        y_rows = Y_ROWS[which]
        theta = np.zeros(size)
        for _ in range(n_iter):
            resid = y_rows[None, :] - theta[:, None] * X_ROWS[None, :]
            s = irls_weights(resid.ravel(), W, 1.0).reshape(size, 2)
            A = (s * COUNTS * X_ROWS * y_rows).sum(axis=1) / N
            B = (s * COUNTS * X_ROWS * X_ROWS).sum(axis=1) / N
            if first_moment == "laplace":
                A = A + rng.laplace(0.0, s_a, size=size)
            else:
                A = A + rng.normal(0.0, s_a, size=size)
            B = B + rng.normal(0.0, s_b, size=size)
            theta = A / np.maximum(B, floor)
        return theta

    return mech, est


@pytest.mark.parametrize("first_moment, n_iter", [("gaussian", 1), ("gaussian", 2), ("laplace", 1), ("laplace", 2)])
def test_replica_reproduces_fit(first_moment, n_iter):
    mech, est = _replica(first_moment, n_iter)
    assert est.privacy_.epsilon == pytest.approx(EPS) and est.privacy_.delta == DELTA
    sens = est.privacy_report_["sensitivity"]
    assert sens["A_l2"] == pytest.approx(2 * W * R * r / N)  # the pair attains it:
    for which, seed in ((0, 1), (0, 2), (1, 3)):  # each fit spends ~0.8 s calibrating rho
        real = _estimator(first_moment, n_iter, rng=seed).fit(*_dataset(which)).coef_[0]
        assert real == pytest.approx(mech(which, np.random.default_rng(seed), 1)[0], rel=1e-10, abs=1e-14)
    # at theta = 0 the weights are w_max for both differing rows: A moves by its full sensitivity, B not at all
    s = [irls_weights(Y_ROWS[w], W, 1.0) for w in (0, 1)]
    np.testing.assert_array_equal(s[0], s[1])
    gap = abs((s[0] * COUNTS * X_ROWS * Y_ROWS[0]).sum() - (s[1] * COUNTS * X_ROWS * Y_ROWS[1]).sum()) / N
    assert gap == pytest.approx(sens["A_l2"])


def _audit(mech, rng, delta=DELTA):
    return audit(mech, 0, 1, delta=delta, n_samples=1_000_000, batch=250_000, projection=lambda o: o, rng=rng)


@pytest.mark.statistical
@pytest.mark.parametrize("n_iter, control", [(1, 2.0), (2, 3.0)])
def test_audit_fit_gaussian_zcdp(n_iter, control):
    mech, est = _replica("gaussian", n_iter)
    assert est.budget_.accounting == "zcdp"
    _audit(mech, rng=50 + n_iter).check(EPS)
    leaky, _ = _replica("gaussian", n_iter, factor=1.0 / control)  # every sigma divided by `control`
    assert not _audit(leaky, rng=60 + n_iter).consistent_with(EPS)


@pytest.mark.statistical
@pytest.mark.parametrize("n_iter", [1, 2])
def test_audit_fit_laplace_first_moment(n_iter):
    mech, est = _replica("laplace", n_iter)
    eps_a = est.budget_.first_moment.epsilon  # the pure epsilon of each A~ release
    res = _audit(mech, rng=70 + n_iter)
    res.check(EPS)
    if n_iter == 2:
        # Against the total claim a leak must be gross to show in coef_ alone (scale / 6 gives
        # ~1.0): scale / 8, e.g. forgetting the split over the 2J releases and the zCDP conversion.
        leaky, _ = _replica("laplace", 2, factor=1.0 / 8.0)
        assert not _audit(leaky, rng=82).consistent_with(EPS)
    else:
        # B~ does not depend on the pair, so coef_ is a post-processing of A~: eps_A-DP, delta = 0.
        res = _audit(mech, rng=80, delta=0.0)
        res.check(eps_a)
        assert res.epsilon_lower_bound > 0.8 * eps_a
        leaky, _ = _replica("laplace", 1, factor=0.5)
        assert not _audit(leaky, rng=81, delta=0.0).consistent_with(eps_a)
