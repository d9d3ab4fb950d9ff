"""True add/remove neighbours: the audited datasets differ in their number of rows (issue 12).

The pair is {e1, e1} (n = 2) against {e1, e1, e2} (n = 3) for the Gaussian
second moment (the added row moves the sum by ``e2 e2^T``, the sum's whole
sensitivity ``R^2``), and the same with a row tight for the other statistics.

* ``neighbours="add-remove"`` releases a noisy count (``count_share`` of the
  budget, sensitivity 1) and noisy sums (the rest, the sums' sensitivity), and
  publishes their quotient and the noisy count. That output is a function of
  the pair (noisy count, noisy sums), so auditing the pair audits at least as
  much as the release shows. A vectorised replica, checked draw for draw
  against the real release, is audited with the pair's privacy-loss statistic
  at 1e6 draws per dataset: it must pass, and with half the noise it must be
  refuted (the audit has power).
* ``neighbours="zero-out"`` on the same pair -- what the library called
  "add-remove" until now: n published exactly, the mean's sensitivity
  ``R^2/n`` -- is refuted from the released matrix alone (issue 12 measured
  an empirical epsilon of 5.5 against a claim of 1), and trivially from the
  published ``n``.
* End to end: the real ``release_second_moment(neighbours="add-remove")``
  called 1500 times per dataset passes (a sanity check: the replica carries
  the power).
"""

import math

import numpy as np
import pytest

from dpmoments.mechanisms import orbit_vector, upper_triangle
from dpmoments.moments import symmetrise_matrix, symmetrise_tensor
from dpmoments.moments.releases import _sums, release_cross_moment, release_third_moment
from dpmoments.moments.releases import release_public_second_moment as release_second_moment  # public values
from dpmoments.privacy import gaussian_epsilon
from dpmoments.testing import audit

R, RESPONSE, EPS, DELTA = 1.0, 2.0, 1.0, 1e-3
N_DRAWS, BATCH = 1_000_000, 250_000
E1, E2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
FLAT2 = np.ones(2) / math.sqrt(2)  # (d + 1) R^2 / 2 = L1 norm of the upper triangle of x x^T: tight
FLAT3 = np.ones(3) / math.sqrt(3)


def _grow(rows, extra, y=None, y_extra=None):
    """(smaller, larger): the larger has one extra row."""
    small, large = np.array(rows), np.vstack([rows, extra])
    if y is None:
        return (small,), (large,)
    return (small, np.array(y)), (large, np.r_[y, y_extra])


CASES = {  # (statistic, mechanism) -> the pair
    ("second", "gaussian"): _grow([E1, E1], E2),
    ("second", "laplace"): _grow([E1, E1], FLAT2),
    ("cross", "gaussian"): _grow([FLAT3, FLAT3], FLAT3, [RESPONSE, -RESPONSE], RESPONSE),
    ("third", "gaussian"): _grow([FLAT3, FLAT3], np.array([1.0, 0.0, 0.0])),
}
IDS = ["-".join(k) for k in CASES]
RELEASE = {"second": release_second_moment, "cross": release_cross_moment, "third": release_third_moment}
FIELD = {"second": "second_moment", "cross": "cross_moment", "third": "third_moment"}
COORDS = {"second": upper_triangle, "cross": np.asarray, "third": orbit_vector}


def _kwargs(statistic, mechanism, neighbours="add-remove"):
    kw = dict(epsilon=EPS, row_norm=R, mechanism=mechanism, neighbours=neighbours)
    if mechanism == "gaussian":
        kw["delta"] = DELTA
    if statistic == "cross":
        kw["response_bound"] = RESPONSE
    return kw


def _release(statistic, data, rng, **kw):
    return RELEASE[statistic](*data, rng=rng, **kw)


def _sum_coords(statistic, data):
    """The exact sums on the distinct coordinates, computed as the release computes them."""
    X, y = data if len(data) == 2 else (data[0], None)
    sums = _sums(X, y, row_norm=R, response_bound=RESPONSE if y is not None else None, center=None,
                 third=statistic == "third", chunk_size=65536)
    exact = {"second": lambda: symmetrise_matrix(sums.xtx / 1), "cross": lambda: sums.xty / 1,
             "third": lambda: symmetrise_tensor(sums.third / 1)}[statistic]()
    return sums.n, COORDS[statistic](exact)


def _replica(key, scale_factor=1.0):
    """(draw, centres, scales, releases): the release as (count + noise, sums + noise), vectorised.

    A release draws the count's noise, then the sums' (one call each, from
    one Generator), so ``k`` releases use the stream of one ``(k, 1 + m)``
    draw with per-column scales (checked in ``test_replica_reproduces_the_release``).
    """
    statistic, mechanism = key
    small, large = CASES[key]
    releases = {name: _release(statistic, data, 0, **_kwargs(statistic, mechanism))
                for name, data in (("A", small), ("B", large))}
    centres = {}
    for name, data in (("A", small), ("B", large)):
        n, coords = _sum_coords(statistic, data)
        centres[name] = np.r_[float(n), coords]
    rel = releases["A"]
    scales = scale_factor * np.r_[rel.count_noise_scale, np.full(centres["A"].size - 1, rel.sum_noise_scale)]

    def draw(name, rng, size):
        sample = rng.normal if mechanism == "gaussian" else rng.laplace
        return centres[name] + sample(0.0, scales, size=(size, scales.size))

    return draw, centres, scales, releases


def _loss(mechanism, a, b, scales):
    """The pair's privacy-loss statistic (up to an affine map) on an output ``o``."""
    if mechanism == "gaussian":
        return (a - b) / scales**2  # linear: a projection vector
    gap = (np.abs(a - b) / scales).sum()

    def laplace_loss(out):
        # Rounded to 1e-9: the loss has atoms, which float rounding would smear differently under A and B
        # (see tests/moments/test_release_audit.py, _replica).
        return np.round(((np.abs(out - b) - np.abs(out - a)) / scales).sum(axis=1) / gap, 9)

    return laplace_loss


def _true_epsilon(mechanism, a, b, scales):
    """Epsilon of the (count, sums) pair at DELTA on this pair (idealised numerics)."""
    if mechanism == "gaussian":
        return gaussian_epsilon(1.0, DELTA, sensitivity=float(np.linalg.norm((a - b) / scales)))
    return float((np.abs(a - b) / scales).sum())


def _audit(key, scale_factor=1.0, seed=0):
    draw, centres, scales, releases = _replica(key, scale_factor)
    mechanism = key[1]
    result = audit(draw, "A", "B", delta=DELTA if mechanism == "gaussian" else 0.0, n_samples=N_DRAWS, batch=BATCH,
                   projection=_loss(mechanism, centres["A"], centres["B"], scales), rng=seed)
    return result, _true_epsilon(mechanism, centres["A"], centres["B"], scales), releases


@pytest.mark.parametrize("key", list(CASES), ids=IDS)
def test_replica_reproduces_the_release(key):
    """Three real releases from a seeded Generator equal three replica draws, divided as the release divides."""
    statistic, mechanism = key
    draw, centres, scales, releases = _replica(key)
    for name, data in zip("AB", CASES[key]):
        gen = np.random.default_rng(123)
        real = [_release(statistic, data, gen, **_kwargs(statistic, mechanism)) for _ in range(3)]
        out = draw(name, np.random.default_rng(123), 3)
        n = np.maximum(1, np.rint(out[:, 0])).astype(int)
        assert [r.n for r in real] == list(n)
        np.testing.assert_array_equal(np.array([COORDS[statistic](getattr(r, FIELD[statistic])) for r in real]),
                                      out[:, 1:] / n[:, None])
    # n is private: the noise does not depend on it, and the sums' gap meets their sensitivity.
    a, b = releases["A"], releases["B"]
    assert (a.count_noise_scale, a.sum_noise_scale) == (b.count_noise_scale, b.sum_noise_scale)
    norm = 2 if mechanism == "gaussian" else 1
    gap = np.linalg.norm(centres["A"][1:] - centres["B"][1:], ord=norm)
    assert gap == pytest.approx(a.sensitivity, rel=1e-12)
    assert abs(centres["A"][0] - centres["B"][0]) == 1.0


@pytest.mark.statistical
@pytest.mark.parametrize("key", list(CASES), ids=IDS)
def test_add_remove_release_passes_its_audit(key):
    result, true_eps, releases = _audit(key, seed=21)
    assert releases["A"].guarantee.epsilon == pytest.approx(EPS)
    result.check(EPS)
    # Near-tight: the pair's own epsilon (1 for the tight Laplace pair; 0.945 for
    # Gaussian, where basic composition of the two parts is loose) is nearly reached.
    # Observed eps_lb: second-gaussian 0.840, second-laplace 0.968, cross-gaussian
    # 0.875, third-gaussian 0.849.
    assert true_eps <= EPS * (1 + 1e-9)
    assert result.epsilon_lower_bound > 0.85 * true_eps


@pytest.mark.statistical
@pytest.mark.parametrize("key", list(CASES), ids=IDS)
def test_add_remove_audit_detects_half_the_noise(key):
    """Negative control: the same release with half the noise (count and sums) is refuted."""
    result, _, _ = _audit(key, scale_factor=0.5, seed=22)
    # Observed: 1.969, 1.957, 2.024, 1.945 (same order as above).
    assert not result.consistent_with(EPS)
    assert result.epsilon_lower_bound > EPS + 0.3


@pytest.mark.statistical
def test_zero_out_release_on_a_true_add_remove_pair_is_refuted():
    """Negative control: the old "add-remove" (zero-out, exact n) on {e1, e1} vs {e1, e1, e2}.

    It divides by the exact n and calibrates to R^2/n with each dataset's own n:
    the means differ by sqrt(2)/3 R^2 (not R^2/3) and the noise scales differ,
    so the released matrix alone refutes epsilon = 1 by far.
    """
    (A,), (B,) = CASES[("second", "gaussian")]
    kw = _kwargs("second", "gaussian", neighbours="zero-out")
    rel = {"A": release_second_moment(A, rng=0, **kw), "B": release_second_moment(B, rng=0, **kw)}
    assert (rel["A"].n, rel["B"].n) == (2, 3)  # the exact count is published: epsilon = inf by itself
    exact = {"A": upper_triangle(A.T @ A / 2), "B": upper_triangle(B.T @ B / 3)}  # the means it divides
    scales = {name: r.noise_scale for name, r in rel.items()}  # calibrated to R^2/2 and R^2/3
    assert scales["A"] != scales["B"]

    def draw(name, rng, size):
        return exact[name] + rng.normal(0.0, scales[name], size=(size, 3))

    result = audit(draw, "A", "B", delta=DELTA, n_samples=N_DRAWS, batch=BATCH,
                   projection=exact["A"] - exact["B"], rng=23)
    # Observed 5.67 (issue 12: 5.5); the claim is 1.
    assert result.epsilon_lower_bound > 3.0
    assert not result.consistent_with(EPS)


@pytest.mark.statistical
def test_zero_out_publishes_the_exact_count():
    """The count alone: the zero-out release on the pair always says n = 2 or n = 3."""
    (A,), (B,) = CASES[("second", "gaussian")]
    kw = _kwargs("second", "gaussian", neighbours="zero-out")

    def count(X, rng):
        return float(release_second_moment(X, rng=rng, **kw).n)

    result = audit(count, A, B, delta=DELTA, n_samples=500, projection=lambda n: n, rng=24)
    assert not result.consistent_with(EPS)  # observed 4.28 from 500 draws; grows with the draws without limit


@pytest.mark.statistical
def test_end_to_end_add_remove_second_moment():
    """The real release, called 1500 times per dataset, audited on (noisy n, n * released matrix)."""
    (A,), (B,) = CASES[("second", "gaussian")]
    kw = _kwargs("second", "gaussian")
    probe = release_second_moment(A, rng=0, **kw)
    # (A - B) / sigma^2 on (count, sums): A has one row fewer and no e2 e2^T term.
    weights = np.r_[-1.0 / probe.count_noise_scale**2, np.array([0.0, 0.0, -1.0]) / probe.sum_noise_scale**2]

    def mechanism(X, rng):
        rel = release_second_moment(X, rng=rng, **kw)
        return np.r_[float(rel.n), upper_triangle(rel.second_moment) * rel.n]

    result = audit(mechanism, A, B, delta=DELTA, n_samples=1500, projection=weights, rng=np.random.default_rng(2025))
    result.check(EPS)
    # Observed 0.191 at 1500 draws (0.094--0.272 over 10 seeds; 0.387 at 3000): so few draws resolve
    # little of epsilon (this only shows the audit is not vacuous); the replica audits above carry the power.
    assert result.epsilon_lower_bound > 0.04
