"""Empirical privacy audits of the moment releases (``dpmoments.testing.audit``).

An audit samples a mechanism on one neighbouring pair and returns a lower
bound ``eps_lb`` on its epsilon that holds with 95% confidence: a correct
release must give ``eps_lb <= epsilon``; a release with too little noise shows
up as ``eps_lb > epsilon``. Calling a release function a million times is too
slow, so the releases are audited at three levels:

1. **End to end** (small): the real ``release_second_moment`` called ~2e4
   times per dataset (d = 2, n = 3), all noise from one seeded Generator.
2. **Vectorised** (large, 1e6 draws per dataset): the release's output law
   rebuilt as *exact statistic + noise*, with the exact statistic taken from
   the library (``epsilon=inf``) and the noise drawn the way the release's own
   sampler draws it, at the ``noise_scale`` the real release reports. A
   non-statistical test checks that this replica reproduces the real release
   draw for draw for a seed, so the audit is of the mechanism the release
   actually uses. Each passing audit has a negative control beside it (half
   the noise; the papers' understated sensitivity) that the audit must catch.
3. **Wishart**: the papers' ``W_d(d+1, .)`` mechanism ("wishart", claimed
   pure epsilon-DP) is shown to have a data-dependent support, so no finite
   epsilon holds at delta = 0; "wishart-approx" passes its audit.

Neighbouring pairs are worst cases for the sensitivity the library claims
(``moments/sensitivity.py``): a row on the sphere ``||x|| = R`` against an
orthogonal / opposite row (replace-one), or against the zero row
(zero-out, see ``_pair``). True add/remove, on datasets of different sizes,
is audited in ``tests/audit/test_add_remove_audit.py``. Outputs are reduced
to one number by the privacy-loss statistic of the pair (Neyman--Pearson
optimal): a fixed linear projection for Gaussian noise,
``sum |o - b| - |o - a|`` for Laplace noise, a log-determinant ratio for
Wishart noise.

Observed values (at the fixed seeds; ranges over other seeds in brackets)
are recorded next to each assertion.
"""

import math
import warnings

import numpy as np
import pytest

from dpmoments.exceptions import NotPrivateWarning, UncertifiedPrivacyWarning
from dpmoments.mechanisms import orbit_vector, upper_triangle, wishart_noise
from dpmoments.moments.releases import release_cross_moment, release_third_moment
from dpmoments.moments.releases import release_public_second_moment as release_second_moment  # public values
from dpmoments.privacy import analytic_gaussian_sigma
from dpmoments.privacy.guarantees import ApproxDP, Uncertified
from dpmoments.testing import audit, epsilon_lower_bound

R = 1.0  # public row bound
RESPONSE = 2.0  # public response bound r (cross moment)
N = 3  # rows per dataset (public)
EPS = 1.0

# The n - 1 rows both datasets share (inside the ball; their values do not
# matter, the difference of the statistics does).
SHARED_ROWS = np.array([[0.3, -0.2, 0.1], [-0.5, 0.4, 0.2]])
SHARED_RESPONSES = np.array([0.7, -1.1])


def _pair(d, row, other_row, response=None, other_response=None):
    """Two datasets of N rows that differ in their first row only.

    Under zero-out the releases divide by the public ``n`` and the library's
    sensitivity is that of one row's term, ``R^2/n`` for the second moment
    (``moment_sensitivity``): the zero-out neighbour of ``D`` is ``D`` with
    one row zeroed, i.e. ``other_row = 0``. True add/remove (a neighbour with
    n - 1 rows) is audited in ``tests/audit/test_add_remove_audit.py``.
    """
    X = np.vstack([row, SHARED_ROWS[:, :d]])
    X_other = np.vstack([other_row, SHARED_ROWS[:, :d]])
    if response is None:
        return (X,), (X_other,)
    return (X, np.r_[response, SHARED_RESPONSES]), (X_other, np.r_[other_response, SHARED_RESPONSES])


def _unit(d, i):
    e = np.zeros(d)
    e[i] = R
    return e


# Replace-one worst case of the second moment in L1 (d = 2): x = (cos t, sin t)
# and the orthogonal y, t = atan(1/2)/2, give ||u(xx^T - yy^T)||_1 = sqrt(5) R^2,
# the largest value (checked by numerical search); the library's bound
# (d + 1) R^2 = 3 R^2 is safe but not tight, so the true epsilon of the Laplace
# replace-one release on this pair is sqrt(5)/3 * EPS = 0.745 EPS.
_T = math.atan(0.5) / 2
_X_L1 = R * np.array([math.cos(_T), math.sin(_T)])
_Y_L1 = R * np.array([-math.sin(_T), math.cos(_T)])
_FLAT3 = R * np.ones(3) / math.sqrt(3)  # extremal for ||x||_1 (cross moment, L1)
_FLAT2 = R * np.ones(2) / math.sqrt(2)  # extremal for sum_{i<=j} |x_i x_j| (second moment, L1)

_COORDS = {"second": upper_triangle, "cross": lambda v: np.asarray(v), "third": orbit_vector}
_RELEASES = {"second": release_second_moment, "cross": release_cross_moment, "third": release_third_moment}
_FIELDS = {"second": "second_moment", "cross": "cross_moment", "third": "third_moment"}

# (statistic, mechanism, neighbours) -> (pair, tight): the pair is a worst
# case of the library's sensitivity when ``tight``.
CASES = {
    ("second", "gaussian", "replace-one"): (_pair(2, _unit(2, 0), _unit(2, 1)), True),
    ("second", "gaussian", "zero-out"): (_pair(2, _unit(2, 0), np.zeros(2)), True),
    ("second", "laplace", "replace-one"): (_pair(2, _X_L1, _Y_L1), False),
    ("second", "laplace", "zero-out"): (_pair(2, _FLAT2, np.zeros(2)), True),
    ("cross", "gaussian", "replace-one"): (_pair(3, _FLAT3, _FLAT3, RESPONSE, -RESPONSE), True),
    ("cross", "gaussian", "zero-out"): (_pair(3, _FLAT3, np.zeros(3), RESPONSE, 0.0), True),
    ("cross", "laplace", "replace-one"): (_pair(3, _FLAT3, _FLAT3, RESPONSE, -RESPONSE), True),
    ("cross", "laplace", "zero-out"): (_pair(3, _FLAT3, np.zeros(3), RESPONSE, 0.0), True),
    ("third", "gaussian", "replace-one"): (_pair(3, _unit(3, 0), -_unit(3, 0)), True),
    ("third", "gaussian", "zero-out"): (_pair(3, _unit(3, 0), np.zeros(3)), True),
}
CASE_IDS = ["-".join(key) for key in CASES]

# Delta of the vectorised Gaussian audits. At delta = 1e-3 the Gaussian
# mechanism spends most of its epsilon on events of probability ~1e-2, which
# 1e6 draws resolve, so the audit is near-tight (a correct release gives
# eps_lb ~ 0.9) and a sqrt(2) error in the sensitivity is caught; at delta =
# 1e-5 the last part of epsilon lives in tails 1e6 draws cannot see (a correct
# release gives ~0.69, sensitivity / sqrt(2) gives 1.00--1.07: not reliable).
DELTA = 1e-3
N_DRAWS = 1_000_000
BATCH = 250_000


def _kwargs(statistic, mechanism, neighbours, epsilon=EPS):
    kwargs = dict(epsilon=epsilon, row_norm=R, mechanism=mechanism, neighbours=neighbours)
    if mechanism == "gaussian" and not math.isinf(epsilon):
        kwargs["delta"] = DELTA
    if statistic == "cross":
        kwargs["response_bound"] = RESPONSE
    return kwargs


def _release(statistic, data, rng, **kwargs):
    return _RELEASES[statistic](*data, rng=rng, **kwargs)


def _coords(statistic, release):
    """The distinct coordinates the noise acts on, in the sampler's draw order."""
    return _COORDS[statistic](getattr(release, _FIELDS[statistic]))


def _exact_coords(statistic, data, neighbours):
    with pytest.warns(NotPrivateWarning):
        rel = _release(statistic, data, None, **_kwargs(statistic, "gaussian", neighbours, epsilon=math.inf))
    return _coords(statistic, rel)


def _replica(key, scale_factor=1.0):
    """The release of ``key`` rebuilt as exact coordinates + noise, vectorised.

    Returns ``(mechanism, projection, releases)``: ``mechanism("A" | "B", rng,
    size)`` draws ``size`` outputs (distinct coordinates) on the two datasets
    with ``scale_factor`` times the noise scale the real release reports on
    each; ``projection`` is the pair's privacy-loss statistic; ``releases``
    the two real releases the scales were read from.

    The release samplers draw one i.i.d. value per distinct coordinate, in
    draw order, in one call (``symmetric_matrix_noise``: upper triangle;
    ``symmetric_tensor_noise``: orbits; ``gaussian_noise`` /
    ``laplace_noise``: the vector), so ``k`` releases from one Generator use
    the same stream as one ``(k, m)`` draw: checked exactly in
    ``test_replica_reproduces_the_release``.
    """
    statistic, mechanism, neighbours = key
    (data_a, data_b), _ = CASES[key]
    kwargs = _kwargs(statistic, mechanism, neighbours)
    releases = {name: _release(statistic, data, 0, **kwargs) for name, data in (("A", data_a), ("B", data_b))}
    centres = {"A": _exact_coords(statistic, data_a, neighbours), "B": _exact_coords(statistic, data_b, neighbours)}
    scales = {name: scale_factor * rel.noise_scale for name, rel in releases.items()}

    def draw(name, rng, size):
        sample = rng.normal if mechanism == "gaussian" else rng.laplace
        return centres[name] + sample(0.0, scales[name], size=(size, centres[name].size))

    a, b = centres["A"], centres["B"]
    if mechanism == "gaussian":
        projection = a - b  # the loss is affine in <o, a - b>
    else:
        gap = np.abs(a - b).sum()

        def projection(out):
            # The Laplace loss times scale / gap, in [-1, 1], rounded to 1e-9.
            # It has atoms at +-1 (every coordinate beyond both centres), and
            # unrounded, rounding in o = centre + noise and in this sum spreads
            # each atom over a few ulps differently under A and B: thresholds
            # inside an atom then see floating-point structure, not the
            # calibration (unrounded, eps_lb = 1.02--1.13 > 1 on correct
            # releases: Mironov's floating-point leak, which the library
            # documents as "idealised numerics"). Rounding is post-processing
            # at a scale far below any calibration error.
            loss = np.abs(out - b).sum(axis=1) - np.abs(out - a).sum(axis=1)
            return np.round(loss / gap, 9)

    return draw, projection, releases


def _audit_replica(key, scale_factor=1.0, seed=0, delta=None):
    draw, projection, releases = _replica(key, scale_factor)
    if delta is None:
        delta = DELTA if key[1] == "gaussian" else 0.0
    result = audit(draw, "A", "B", delta=delta, n_samples=N_DRAWS, batch=BATCH, projection=projection, rng=seed)
    return result, releases


# ----------------------------------------------------------------------------- replica = release


@pytest.mark.parametrize("key", list(CASES), ids=CASE_IDS)
def test_replica_reproduces_the_release(key):
    """Three real releases from a seeded Generator equal three replica draws."""
    statistic, mechanism, neighbours = key
    (data_a, data_b), tight = CASES[key]
    draw, _, releases = _replica(key)
    kwargs = _kwargs(statistic, mechanism, neighbours)
    for name, data in (("A", data_a), ("B", data_b)):
        gen = np.random.default_rng(123)
        real = np.array([_coords(statistic, _release(statistic, data, gen, **kwargs)) for _ in range(3)])
        np.testing.assert_array_equal(real, draw(name, np.random.default_rng(123), 3))
    # n is public, so both datasets get the same noise.
    assert releases["A"].noise_scale == releases["B"].noise_scale
    # The pair stays within the library's sensitivity, and meets it when tight.
    a = _exact_coords(statistic, data_a, neighbours)
    b = _exact_coords(statistic, data_b, neighbours)
    gap = np.linalg.norm(a - b, ord=2 if mechanism == "gaussian" else 1)
    sensitivity = releases["A"].sensitivity
    assert gap <= sensitivity * (1 + 1e-12)
    if tight:
        assert gap == pytest.approx(sensitivity, rel=1e-12)
    else:
        assert gap == pytest.approx(math.sqrt(5) / 3 * sensitivity, rel=1e-12)


# ----------------------------------------------------------------------------- level 1: end to end

E2E_DELTA = 1e-5
E2E_DRAWS = 4_000  # each draw is a whole release (0.7 ms of checks and clipping): 8 000 cost 6 s per case


def _second_moment_release(neighbours):
    def mechanism(X, rng):
        return release_second_moment(
            X, epsilon=EPS, delta=E2E_DELTA, row_norm=R, neighbours=neighbours, rng=rng
        ).second_moment

    return mechanism


@pytest.mark.statistical
@pytest.mark.parametrize(
    "neighbours, row, other_row",
    [("replace-one", _unit(2, 0), _unit(2, 1)), ("zero-out", _unit(2, 0), np.zeros(2))],
)
def test_end_to_end_gaussian_second_moment(neighbours, row, other_row):
    (X,), (X_other,) = _pair(2, row, other_row)
    # The output is a full (d, d) matrix; the best linear statistic of the
    # i.i.d. upper triangle is <u(M), u(V)> = <M, W> with V = x x^T - y y^T and
    # W = V with its off-diagonal entries halved (each appears twice in M).
    V = np.outer(row, row) - np.outer(other_row, other_row)
    W = V - np.triu(V, 1) / 2 - np.tril(V, -1) / 2
    result = audit(
        _second_moment_release(neighbours), X, X_other, delta=E2E_DELTA, n_samples=E2E_DRAWS,
        projection=W, batch=None, rng=np.random.default_rng(2024),
    )
    result.check(EPS)
    # Observed at 4000 draws: replace-one 0.224, zero-out 0.269 (0.105--0.260 and 0.121--0.269 over 10
    # seeds; at 8000: 0.335 and 0.236; at 20 000: 0.328 and 0.378). At delta = 1e-5 so few draws cannot
    # approach epsilon = 1; this audit checks the real function end to end (and that it is not vacuous),
    # and the vectorised audits below carry the power.
    assert result.epsilon_lower_bound > 0.05


# ----------------------------------------------------------------------------- level 2: vectorised

# Observed eps_lb, claimed EPS = 1, at the fixed seeds (seed 11 / 12; range over
# 7 other seeds in brackets):
#
#   case                            correct release          noise_scale / 2
#   second-gaussian-replace-one     0.915 (0.893--0.928)     2.119 (2.065--2.162)
#   second-gaussian-zero-out        0.928 (0.900--0.945)     2.072 (2.072--2.135)
#   second-laplace-replace-one      0.724 (0.716--0.730)*    1.445 (1.435--1.445)*
#   second-laplace-zero-out         0.972 (0.968--0.978)     1.963 (1.963--1.976)
#   cross-gaussian-replace-one      0.891 (0.864--0.935)     2.122 (2.060--2.153)
#   cross-gaussian-zero-out         0.891 (0.864--0.935)     2.122 (2.060--2.153)
#   cross-laplace-replace-one       0.972 (0.968--0.978)     1.963 (1.963--1.976)
#   cross-laplace-zero-out          0.972 (0.968--0.978)     1.963 (1.963--1.976)
#   third-gaussian-replace-one      0.913 (0.890--0.943)     2.160 (2.078--2.160)
#   third-gaussian-zero-out         0.913 (0.890--0.943)     2.160 (2.078--2.160)
#
# True epsilon on the pair: 1 (Gaussian at delta = 1e-3, Laplace), 2.30 and 2
# with half the noise; * the non-tight pair: sqrt(5)/3 = 0.745 and 1.49.
# Cases equal after standardisation give equal values for the same seed.


def _true_epsilon(key):
    """Epsilon of the release on its audited pair (idealised numerics)."""
    tight = CASES[key][1]
    return EPS if tight else math.sqrt(5) / 3 * EPS


@pytest.mark.statistical
@pytest.mark.parametrize("key", list(CASES), ids=CASE_IDS)
def test_vectorised_audit_is_consistent_with_the_claim(key):
    result, releases = _audit_replica(key, seed=11)
    assert releases["A"].guarantee.epsilon == EPS
    result.check(EPS)
    # ...and the audit is near-tight, so passing is not vacuous.
    assert result.epsilon_lower_bound > 0.8 * _true_epsilon(key)


@pytest.mark.statistical
@pytest.mark.parametrize("key", list(CASES), ids=CASE_IDS)
def test_vectorised_audit_detects_half_the_noise(key):
    """Negative control: the same release with noise_scale / 2 is refuted."""
    result, _ = _audit_replica(key, scale_factor=0.5, seed=12)
    # Observed: Gaussian 2.07--2.16, Laplace 1.96, non-tight Laplace pair 1.445.
    assert result.epsilon_lower_bound > EPS + 0.3
    assert not result.consistent_with(EPS)


@pytest.mark.statistical
def test_vectorised_audit_detects_the_understated_sensitivity():
    """Negative control: the papers' L2 sensitivity R^2/n under replace-one.

    The second moment moves by xx^T - yy^T, whose distinct coordinates have
    norm sqrt(2) R^2 at orthogonal x, y on the sphere (the pair here), not
    R^2: noise calibrated to R^2/n gives a true epsilon of 1.51 at delta = 1e-3.
    """
    key = ("second", "gaussian", "replace-one")
    understated = analytic_gaussian_sigma(EPS, DELTA, R**2 / N)
    released = _replica(key)[2]["A"].noise_scale
    assert released == pytest.approx(math.sqrt(2) * understated, rel=1e-9)
    result, _ = _audit_replica(key, scale_factor=understated / released, seed=13)
    # Observed 1.372 (1.372--1.409 over 8 seeds); the correct release gives 0.915.
    assert result.epsilon_lower_bound > EPS + 0.2
    assert not result.consistent_with(EPS)


# ----------------------------------------------------------------------------- level 3: Wishart

WISHART_PAIRS = {
    "zero-out": _pair(2, _unit(2, 0), np.zeros(2)),  # a rank-one change (the analysis' add/remove step)
    "replace-one": _pair(2, _unit(2, 0), _unit(2, 1)),
}


def _exact_second(X):
    with pytest.warns(NotPrivateWarning):
        return release_second_moment(X, epsilon=math.inf, row_norm=R).second_moment


@pytest.mark.statistical
# Draws per dataset: the bound below grows like log(draws). Zero-out's event is the likelier (0.28 vs 0.2): 1500
# draws give eps_lb 4.22--4.44 over 11 seeds (31, 100--109), replace-one needs 3000 (3.78--3.99 at 1500).
@pytest.mark.parametrize("neighbours, n_draws", [("zero-out", 1500), ("replace-one", 3000)])
def test_wishart_d_plus_one_has_a_data_dependent_support(neighbours, n_draws):
    """The papers' W_d(d+1, 3R^2/(2n eps) I) is not epsilon-DP for any epsilon.

    On D the output minus D's exact second moment is the Wishart noise itself,
    PSD with probability one. On the neighbour D', the same matrix is
    W - (S_D - S_D'), which has a negative eigenvalue with positive
    probability: an event of probability 0 under D and > 0 under D', so no
    finite epsilon holds at delta = 0 (the audit's bound grows like
    log(samples) without limit).
    """
    (X,), (X_other,) = WISHART_PAIRS[neighbours]
    kwargs = dict(epsilon=EPS, row_norm=R, mechanism="wishart", neighbours=neighbours)
    with pytest.warns(UncertifiedPrivacyWarning):
        first = release_second_moment(X, rng=0, **kwargs)
    assert isinstance(first.guarantee, Uncertified) and first.noise_df == 3
    S = _exact_second(X)
    gen = np.random.default_rng(31)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        outs = {
            name: np.array([release_second_moment(data, rng=gen, **kwargs).second_moment for _ in range(n_draws)])
            for name, data in (("D", X), ("D'", X_other))
        }
    smallest = {name: np.linalg.eigvalsh(out - S)[:, 0] for name, out in outs.items()}
    tol = 1e-9 * first.noise_scale  # rounding only: W is PSD exactly
    assert np.all(smallest["D"] > -tol)
    frequency = np.mean(smallest["D'"] < -tol)
    if neighbours == "zero-out":
        # Exactly P[chi2(2) <= t] = 1 - exp(-t/2), t = (R^2/n) / c = 2 eps / 3:
        # 0.2835 (observed 0.258 at 1500 draws; 0.271--0.317 over 10 other seeds).
        expected = -math.expm1(-EPS / 3)
        assert abs(frequency - expected) < 4 * math.sqrt(expected * (1 - expected) / n_draws)
    else:
        assert frequency > 0.15  # observed 0.219 (0.200--0.206 over 3 other seeds)
    # The audit on that event refutes the pure epsilon = 1 claim: observed
    # eps_lb = 4.22 zero-out (1500 draws), 4.78 replace-one (3000 draws) (0 events
    # in D, 390--900 in D'); it grows like log(draws) without limit.
    result = epsilon_lower_bound(smallest["D'"], smallest["D"], delta=0.0, thresholds=[-tol])
    assert result.event == "A < t"
    assert result.epsilon_lower_bound > 4.0
    assert not result.consistent_with(EPS)
    # What the library says does hold, (eps, delta) with delta = P[event]
    # (0.2835 zero-out; 0.75 replace-one by group privacy), survives.
    holds = first.guarantee.holds
    assert isinstance(holds, ApproxDP) and holds.epsilon == EPS
    epsilon_lower_bound(smallest["D'"], smallest["D"], delta=holds.delta, thresholds=[-tol]).check(EPS)


def _wishart_loss(S_a, S_b):
    """log det(O - S_a) - log det(O - S_b): the Wishart privacy loss up to an affine map.

    With density ~ det(W)^(m/2) exp(-tr W / 2c), the loss of D_a against D_b
    at output O is (m/2) times this plus a constant. Outputs outside one
    support (an infinite loss) are clipped to +-1e3, which keeps the order.
    """

    def logdet(M):
        eig = np.linalg.eigvalsh(M)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(eig[:, 0] > 0, np.log(np.abs(eig)).sum(axis=1), -np.inf)

    def project(out):
        return np.clip(logdet(out - S_a) - logdet(out - S_b), -1e3, 1e3)

    return project


@pytest.mark.statistical
@pytest.mark.parametrize("neighbours", list(WISHART_PAIRS))
def test_wishart_approx_audit(neighbours):
    """The large-df Wishart release is (eps, delta)-DP by the exact analysis: audit it."""
    delta = 1e-5
    (X,), (X_other,) = WISHART_PAIRS[neighbours]
    kwargs = dict(epsilon=EPS, delta=delta, row_norm=R, mechanism="wishart-approx", neighbours=neighbours)
    releases = {"A": release_second_moment(X, rng=0, **kwargs), "B": release_second_moment(X_other, rng=0, **kwargs)}
    rel = releases["A"]
    assert rel.guarantee == ApproxDP(EPS, delta)
    assert rel.noise_df == releases["B"].noise_df and rel.noise_scale == releases["B"].noise_scale
    exact = {"A": _exact_second(X), "B": _exact_second(X_other)}

    def draw(name, rng, size):
        # The release's own sampler, one call per output (df = 35 / 75 here).
        noise = [wishart_noise(2, rel.noise_df, rel.noise_scale, rng) for _ in range(size)]
        return exact[name] + np.array(noise)

    result = audit(
        draw, "A", "B", delta=delta, n_samples=5_000, batch=5_000,  # one sampler call per draw: 10 000 cost 4 s
        projection=_wishart_loss(exact["A"], exact["B"]), rng=41,
    )
    result.check(EPS)
    # Observed at 2.5e4 draws: zero-out 0.118 (0.116--0.186 over 3 other seeds), replace-one
    # 0.116 (0.093--0.125): so few draws resolve only a small part of epsilon at delta = 1e-5,
    # so this is a sanity check with little power (5e3 draws: the same check, at 20% of the
    # cost); the d+1 test above shows the auditor catching a Wishart support mismatch.
