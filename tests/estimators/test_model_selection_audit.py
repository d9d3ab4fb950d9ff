"""Privacy audits of every release PrivateModelSelection makes (Lei et al. 2018).

The estimator releases, each with its own budget (basic composition):

* the private ``sigma2_`` (``Q_R(full)/n`` + Laplace, clamped),
* the private ``R_`` (a post-processing of Laplace-noised ``upper(X^T X)/n, X^T y/n``),
* the selected model (report-noisy-min, or the exponential mechanism),
* the refit ``coef_`` (Laplace-noised moments on the selected columns).

For each one we build a worst-case replace-one pair inside the public bounds
(``|X_ij| <= b``, ``|y| <= r``), compute the exact statistic with the
library's own functions (``accumulate_moments``, ``l1_ball_least_squares``,
``exponential_mechanism_probabilities``), and draw the noise at the scale the
estimator uses: read from ``privacy_report_`` where it is reported, and
otherwise from the estimator's code path, which a seeded test pins down by
checking that the replica reproduces a real ``fit`` exactly. Every audit has a
negative control with half the noise (or the classic missing factor 2 of the
exponential mechanism) that the audit must catch.
"""

import math

import numpy as np
import pytest

from dpmoments.estimators.model_selection import PrivateModelSelection
from dpmoments.mechanisms import exponential_mechanism_probabilities, upper_triangle
from dpmoments.moments import accumulate_moments
from dpmoments.solvers.irls import solve_weighted
from dpmoments.solvers import l1_ball_certified
from dpmoments.solvers.l1_ball import l1_ball_least_squares
from dpmoments.testing import audit

EPS = 1.0
N_AUDIT = 1_000_000
BATCH = 250_000


def _sums(X, y, b, r):
    s = accumulate_moments((X, y), entry_bound=b, response_bound=r)
    return np.array(s.xtx), np.array(s.xty), float(s.yty)


def _q(X, y, b, r, R, support=None):
    G, bb, c = _sums(X, y, b, r)
    return l1_ball_least_squares(G, bb, c, R, support=support).objective


def _laplace_llr(centres, scale):
    """The privacy-loss statistic of a Laplace vector release: the Neyman--Pearson test.

    Rounded to 8 decimals: at its extreme values (an atom of the exact statistic) the
    last bits of the floating-point LLR depend on how ``centre + noise`` was rounded,
    which differs between the two centres -- the floating-point side channel of
    textbook Laplace sampling (Mironov, CCS 2012), outside the model audited here.
    """
    ca, cb = centres

    def project(out):
        llr = (np.abs(out - cb).sum(axis=1) - np.abs(out - ca).sum(axis=1)) / scale
        return np.round(llr, 8)

    return project


# --------------------------------------------------------------------------- sigma2
# d = 1, b = R = 1, r = 2: five rows (1, 2) pin beta = R (their pull 5 (r - bR) beats the
# differing row's r + bR), so the row (-1, 2) has residual (r + bR)^2 = Delta while its
# neighbour (0, 0) has residual 0: Q_R(full) moves by exactly Delta.
S_B, S_R, S_r = 1.0, 1.0, 2.0


def _sigma2_pair():
    shared_X, shared_y = np.ones((5, 1)), np.full(5, S_r)
    return [(np.vstack([shared_X, [[x]]]), np.r_[shared_y, yy]) for x, yy in ((-1.0, S_r), (0.0, 0.0))]


def _sigma2_estimator(rng=None):
    return PrivateModelSelection(epsilon=1.0, bounds=S_B, response_bound=S_r, R=S_R, phi="bic", sigma2="private",
                                 sigma2_epsilon=EPS, rng=rng)


def _sigma2_replica(factor=1.0):
    pairs = _sigma2_pair()
    n = pairs[0][0].shape[0]
    est = _sigma2_estimator(rng=0).fit(*pairs[0])
    report = est.privacy_report_
    assert report["sensitivity_Q_exact_minimum"] == (S_r + S_B * S_R) ** 2
    delta_q = report["sensitivity_Q"]  # Delta plus the certified gap of the solver's Q_R
    assert delta_q == report["sensitivity_Q_exact_minimum"] + report["certified_gap"]
    scale = factor * delta_q / (n * est.sigma2_epsilon)  # the estimator's _sigma2: Delta' / (n eps_sigma)
    q = [_q(X, y, S_B, S_r, S_R) / n for X, y in pairs]

    def mech(which, rng, size):
        noisy = q[which] + rng.laplace(0.0, scale, size=size)
        return np.clip(noisy, 1e-12, S_r**2)

    return mech, q, delta_q, n


def test_sigma2_pair_is_worst_case_and_replica_matches_fit():
    mech, q, delta_q, n = _sigma2_replica()
    assert (q[0] - q[1]) * n == pytest.approx(delta_q, rel=2e-6)  # the full sensitivity (of the exact minimum)
    X, y = _sigma2_pair()[0]
    for seed in range(5):
        est = _sigma2_estimator(rng=seed).fit(X, y)
        assert est.sigma2_ == pytest.approx(float(mech(0, np.random.default_rng(seed), 1)[0]), rel=1e-12)


@pytest.mark.statistical
def test_audit_private_sigma2():
    mech, *_ = _sigma2_replica()
    res = audit(mech, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=lambda o: o, rng=21)
    res.check(EPS)
    assert res.epsilon_lower_bound > 0.8 * EPS  # the pair is tight: the audit nearly attains the claim
    leaky, *_ = _sigma2_replica(0.5)
    res = audit(leaky, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=lambda o: o, rng=22)
    assert not res.consistent_with(EPS)


# --------------------------------------------------------------------------- R and refit moments
# Both releases are _noisy_moments: Laplace on (upper(G[cols, cols]) / n, b[cols] / n) with the
# L1 bound (b^2 k (k+1) + 2 b k r) / n. The pair x = (1, ..., 1), y = r against x' = -x, y' = r
# leaves G unchanged and moves every b_j by 2 b r / n: 2 b k r / n in all, 20/(k + 21) of the
# bound at b = 1, r = 10 (the bound's G part, b^2 k (k+1), is not attainable together with it).
# R: all k = 2 columns of d = 2; refit: the selected model {1} of d = 3 (k = 1).
M_B, M_r = 1.0, 10.0
SHARED = np.array([[0.3, -0.8, 0.5], [-1.0, 0.2, 0.9], [0.6, 0.6, -0.4]])
SHARED_Y = np.array([2.0, -7.0, 4.5])


def _moment_pair(d, cols):
    out = []
    for sign in (1.0, -1.0):
        x = np.zeros(d)
        x[list(cols)] = sign * M_B
        out.append((np.vstack([SHARED[:, :d], x]), np.r_[SHARED_Y, M_r]))
    return out


def _moments_vector(X, y, cols):
    G, b, _ = _sums(X, y, M_B, M_r)
    n, c = X.shape[0], list(cols)
    return np.r_[upper_triangle(G[np.ix_(c, c)] / n), b[c] / n]


def _moment_scale(k, n, eps):
    return (M_B * M_B * k * (k + 1) + 2.0 * M_B * k * M_r) / n / eps  # the estimator's _noisy_moments


def _moments_replica(release, factor=1.0):
    d, cols = (2, (0, 1)) if release == "R" else (3, (1,))
    pairs = _moment_pair(d, cols)
    n, k = pairs[0][0].shape[0], len(cols)
    scale = factor * _moment_scale(k, n, EPS)
    centres = [_moments_vector(X, y, cols) for X, y in pairs]

    def mech(which, rng, size):
        return centres[which] + rng.laplace(0.0, scale, size=(size, centres[0].size))

    return mech, centres, scale, k, n


def _unpack(vec, k):
    m = k * (k + 1) // 2
    rows, cols = np.triu_indices(k)
    Gt = np.empty((k, k))
    Gt[rows, cols] = vec[:m]
    Gt[cols, rows] = vec[:m]
    return Gt, vec[m:]


@pytest.mark.parametrize("release", ["R", "refit"])
def test_moment_pairs_are_worst_case_and_replicas_match_fit(release):
    _, centres, scale, k, n = _moments_replica(release)
    gap = np.abs(centres[0] - centres[1]).sum()
    assert gap == pytest.approx(2 * M_B * k * M_r / n, rel=1e-12)
    assert gap / (scale * EPS) == pytest.approx(20 / (k + 21))
    # The replica's draws at this scale reproduce real fits exactly (draw order: the triangle, then b).
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(200, 3))
    y = X @ np.array([2.0, 0.0, -1.0]) + rng.normal(size=200)
    for seed in range(4):
        if release == "R":
            est = PrivateModelSelection(epsilon=1.0, bounds=M_B, response_bound=M_r, R="private", R_epsilon=EPS,
                                        R_range=(1e-3, 50.0), phi=5.0, rng=seed).fit(X[:, :2], y)
            cols, gen = [0, 1], np.random.default_rng(seed)
        else:
            est = PrivateModelSelection(epsilon=1.0, bounds=M_B, response_bound=M_r, R=2.5, phi=5.0,
                                        refit_epsilon=EPS, rng=seed).fit(X, y)
            cols, gen = list(est.selected_), np.random.default_rng(seed)
            gen.laplace(size=len(est.candidates_))  # the selection's draws come first
        kk = len(cols)
        Xc = X[:, :2] if release == "R" else X
        scale_k = _moment_scale(kk, 200, EPS)
        vec = _moments_vector(Xc, y, cols) + gen.laplace(0.0, scale_k, size=(1, kk * (kk + 1) // 2 + kk))[0]
        Gt, bt = _unpack(vec, kk)
        floor = 2.0 * math.sqrt(kk) * scale_k * math.sqrt(2.0)
        if release == "R":
            beta, _ = solve_weighted(Gt, bt, floor)
            assert est.R_ == pytest.approx(min(max(np.abs(beta).sum(), 1e-3), 50.0), rel=1e-10)
        else:
            lam, Q = np.linalg.eigh(0.5 * (Gt + Gt.T))
            coef = np.zeros(3)
            coef[cols] = l1_ball_least_squares((Q * np.maximum(lam, floor)) @ Q.T, bt, 0.0, 2.5).coef
            np.testing.assert_allclose(est.coef_, coef, rtol=1e-9, atol=1e-12)


@pytest.mark.statistical
@pytest.mark.parametrize("release", ["R", "refit"])
def test_audit_private_moments(release):
    mech, centres, scale, *_ = _moments_replica(release)
    res = audit(mech, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=_laplace_llr(centres, scale), rng=31)
    res.check(EPS)
    assert res.epsilon_lower_bound > 0.6 * EPS
    leaky, centres, scale, *_ = _moments_replica(release, 0.5)
    res = audit(leaky, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=_laplace_llr(centres, scale), rng=32)
    assert not res.consistent_with(EPS)


# --------------------------------------------------------------------------- the selection
# d = 2, b = R = 1, r = 1.2 (Delta = 4.84), candidates {0} and {1}. m1 rows (e1, r) and m2 rows
# (e2, r) pin each model's coefficient at R; the differing row x = (-1, 1) against (1, -1), y = r,
# has residuals (r + R)^2 and (r - R)^2 under the two models, swapped in the neighbour: the score
# difference moves by 8 r R = 0.992 * 2 Delta, the most any pair can move it. With m2 - m1 = 24 the
# model {0} is rare (P ~ 2-5%), where the privacy loss of a selection approaches epsilon.
SEL_B, SEL_R, SEL_r = 1.0, 1.0, 1.2
FAMILY = [(0,), (1,)]


def _selection_pair(m1=15, m2=39):
    rows = [[1.0, 0.0]] * m1 + [[0.0, 1.0]] * m2
    X, y = np.array(rows), np.full(m1 + m2, SEL_r)
    return [(np.vstack([X, x]), np.r_[y, SEL_r]) for x in ([-1.0, 1.0], [1.0, -1.0])]


def _selection_estimator(mechanism, rng=None, **kw):
    return PrivateModelSelection(epsilon=EPS, bounds=SEL_B, response_bound=SEL_r, R=SEL_R, phi=0.0,
                                 candidates=FAMILY, mechanism=mechanism, rng=rng, **kw)


def _scores(X, y):
    return np.array([_q(X, y, SEL_B, SEL_r, SEL_R, support=m) for m in FAMILY])


def _selection_replica(mechanism, factor=1.0, pairs=None, score=_scores):
    pairs = pairs or _selection_pair()
    est = _selection_estimator(mechanism, rng=0).fit(*pairs[0])
    report = est.privacy_report_
    delta_q = report["sensitivity_Q"]
    scores = [score(X, y) for X, y in pairs]
    if mechanism == "noisy-min":
        scale = factor * report["selection_noise_scale"]

        def mech(which, rng, size):
            return np.argmin(scores[which] + rng.laplace(0.0, scale, size=(size, 2)), axis=1).astype(float)
    else:
        # factor 2 is the classic bug exp(-eps q / Delta): the missing 2 in the exponent.
        logp = [np.log(exponential_mechanism_probabilities(s, factor * EPS, delta_q)) for s in scores]

        def mech(which, rng, size):
            return np.argmax(logp[which] + rng.gumbel(size=(size, 2)), axis=1).astype(float)

    return mech, scores, delta_q


def test_selection_pair_is_worst_case():
    _, scores, delta_q = _selection_replica("noisy-min")
    assert delta_q == pytest.approx((SEL_r + SEL_B * SEL_R) ** 2)
    moves = scores[1] - scores[0]
    assert moves[0] == pytest.approx(-moves[1]) and abs(moves[0]) == pytest.approx(4 * SEL_r * SEL_R)
    assert abs(moves[0]) <= delta_q and (moves[1] - moves[0]) / (2 * delta_q) == pytest.approx(0.992, abs=1e-3)


@pytest.mark.parametrize("mechanism", ["noisy-min", "exponential"])
def test_selection_replica_matches_fit(mechanism):
    # A balanced pair (P ~ 0.4), so that a wrong scale would change some of the seeded choices.
    pairs = _selection_pair(15, 15)
    mech, scores, _ = _selection_replica(mechanism, pairs=pairs)
    X, y = pairs[0]
    picks = []
    for seed in range(12):  # both models are picked (7 of 12 seeds pick the second; 24 seeds cost twice as much)
        if mechanism == "noisy-min":
            est = _selection_estimator(mechanism, rng=seed, release_scores=True).fit(X, y)
            scale = est.privacy_report_["selection_noise_scale"]
            noisy = scores[0] + np.random.default_rng(seed).laplace(0.0, scale, size=2)
            np.testing.assert_allclose(est.scores_, noisy, rtol=1e-9)
        else:
            est = _selection_estimator(mechanism, rng=seed).fit(X, y)
        index = int(mech(0, np.random.default_rng(seed), 1)[0])
        assert est.selected_ == FAMILY[index]
        picks.append(index)
    assert 0 < sum(picks) < 12


@pytest.mark.statistical
@pytest.mark.parametrize("mechanism", ["noisy-min", "exponential"])
def test_audit_selection_through_real_scores(mechanism):
    mech, *_ = _selection_replica(mechanism)
    res = audit(mech, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=lambda o: o, rng=41)
    res.check(EPS)
    assert res.epsilon_lower_bound > 0.6 * EPS
    leaky, *_ = _selection_replica(mechanism, 0.5 if mechanism == "noisy-min" else 2.0)
    res = audit(leaky, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=lambda o: o, rng=42)
    assert not res.consistent_with(EPS)


# --------------------------------------------------------------------------- scores no certificate covers
# Where the fast path certifies no candidate, the score is the least objective of the feasible candidates,
# at most the ellipsoid's best centre, whose bound (within tau = gap_tolerance * Delta of Q_R after a
# number of steps fixed by |M|, n and gap_tolerance) holds for every input: the noise, calibrated to
# Delta + tau, covers it. The audit releases the ellipsoid's own scores on the worst-case pair (the most
# any score in that branch can be off), at the estimator's scale and at half of it (must fire).
def _ellipsoid_scores(X, y):
    G, bb, c = _sums(X, y, SEL_B, SEL_r)
    delta = (SEL_r + SEL_B * SEL_R) ** 2
    return l1_ball_certified._ellipsoid_values(G, bb, c, SEL_R, FAMILY, X.shape[0] * delta, 1e-6 * delta)


def test_ellipsoid_scores_of_the_worst_pair_are_within_the_tolerance():
    tau = 1e-6 * (SEL_r + SEL_B * SEL_R) ** 2
    for X, y in _selection_pair():
        gap = _ellipsoid_scores(X, y) - _scores(X, y)
        assert np.all(gap <= tau) and np.all(gap >= -1e-12)


def test_uncertified_scores_reach_the_release_as_computed():
    # A table on which the fast path certifies no full-model candidate (the old code refused it): the
    # released noisy scores are the solver's values plus the seeded Laplace draws, at the reported scale.
    from tests.estimators.test_model_selection_certified import _hostile

    X, y, B, r, R = _hostile()
    family = [(0, 1, 2), (0,)]
    delta = (r + B * R) ** 2
    G, bb, c = X.T @ X, X.T @ y, float(y @ y)
    q, bounds = l1_ball_certified.certified_objectives(G, bb, c, R, family, tolerance=1e-6 * delta,
                                                       spread=X.shape[0] * delta, n_iter=300)
    assert bounds[0] == 1e-6 * delta  # no certificate: the ellipsoid's branch
    for seed in range(3):
        est = PrivateModelSelection(epsilon=EPS, bounds=B, response_bound=r, R=R, phi=0.0, candidates=family,
                                    release_scores=True, rng=seed).fit(X, y)
        scale = est.privacy_report_["selection_noise_scale"]
        assert scale == pytest.approx(2 * delta * (1 + 1e-6) / EPS)
        np.testing.assert_allclose(est.scores_, q + np.random.default_rng(seed).laplace(0.0, scale, size=2),
                                   rtol=1e-12)


@pytest.mark.statistical
def test_audit_selection_through_ellipsoid_scores():
    mech, *_ = _selection_replica("noisy-min", score=_ellipsoid_scores)
    res = audit(mech, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=lambda o: o, rng=43)
    res.check(EPS)
    assert res.epsilon_lower_bound > 0.6 * EPS
    leaky, *_ = _selection_replica("noisy-min", 0.5, score=_ellipsoid_scores)
    res = audit(leaky, 0, 1, n_samples=N_AUDIT, batch=BATCH, projection=lambda o: o, rng=44)
    assert not res.consistent_with(EPS)
