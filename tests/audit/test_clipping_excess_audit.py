"""Audit of the clipping-excess release (issue 25, ``moments/clipping_bias.py``).

The release is a Gaussian vector (what clipping at ``R`` removed from each variance, up to ``2R``)
and a Gaussian count of rows beyond ``2R``, composed in zCDP. Worst-case pair (replace-one): 299
rows inside ``R`` (they lose nothing) and a row of norm ``2R`` on column 0 (it loses ``3R^2`` there,
the most a row can lose up to ``2R``) against a row of norm ``3R`` on column 1 (it loses ``3R^2``
there, clipped at ``2R``, and is counted beyond ``2R``): the vector moves by its full L2 sensitivity
``sqrt(2) 3R^2 / n`` and the count by 1. A replica (same means, same noise scales, checked draw for
draw against the release) is audited with the exact privacy loss as the projection. Negative
control: half the noise on both, which must fire.
"""

import numpy as np
import pytest

from dpmoments._rng import spawn
from dpmoments.mechanisms import gaussian_noise
from dpmoments.mechanisms.laws import GAUSSIAN
from dpmoments.moments.clipping_bias import COUNT_FRACTION, release_clipping_excess
from dpmoments.privacy import calibrate_gaussian, zcdp_to_approx_dp
from dpmoments.testing import audit

EPS, DELTA, N, R = 1.0, 1e-3, 300, 1.0
RHO = calibrate_gaussian(EPS, DELTA, 1.0, calibration="zcdp")[1].rho
_INSIDE = np.random.default_rng(3).normal(size=(N - 1, 2))
_INSIDE *= (np.linspace(0.1, 0.9, N - 1) / np.linalg.norm(_INSIDE, axis=1))[:, None]
PAIR = {"A": np.array([2.0, 0.0]), "B": np.array([0.0, 3.0])}


def _data(name):
    return np.vstack([_INSIDE, PAIR[name]])


def _privacy():
    vector = dict(epsilon=zcdp_to_approx_dp((1 - COUNT_FRACTION) * RHO, DELTA), delta=DELTA, calibration="zcdp")
    return vector, dict(rho=COUNT_FRACTION * RHO)


def _release(name, rng):
    vector, count = _privacy()
    return release_clipping_excess(_data(name), center=np.zeros(2), scale=None, row_norm=R, privacy=vector,
                                   count_privacy=count, mechanism=GAUSSIAN, neighbours="replace-one", rng=rng)


def _replica(factor=1.0):
    """Means, noise scales and the exact privacy loss of A against B, from the documented sensitivities."""
    sigma = calibrate_gaussian(_privacy()[0]["epsilon"], DELTA, np.sqrt(2.0) * 3 * R**2 / N, calibration="zcdp")[0]
    sigma_c = 1.0 / np.sqrt(2.0 * COUNT_FRACTION * RHO)
    sigma, sigma_c = factor * sigma, factor * sigma_c
    means = {"A": np.array([3.0 / N, 0.0, 0.0]), "B": np.array([0.0, 3.0 / N, 1.0])}
    scales = np.array([sigma, sigma, sigma_c])

    def draw(name, rng, size):
        return means[name] + rng.standard_normal((size, 3)) * scales

    def loss(out):
        return np.round(np.sum(((out - means["B"]) ** 2 - (out - means["A"]) ** 2) / (2 * scales**2), axis=1), 9)

    return draw, loss, means, scales


def test_replica_reproduces_the_release_draw_for_draw():
    _, _, means, scales = _replica()
    for name in PAIR:
        for seed in (1, 2):
            guarantee, released = _release(name, np.random.default_rng(seed))
            g_vector, g_count = spawn(np.random.default_rng(seed), 2)
            vector = means[name][:2] + gaussian_noise(2, scales[0], g_vector)
            count = means[name][2] + gaussian_noise(1, scales[2], g_count)[0]
            np.testing.assert_allclose(released["variance_lost"], vector, rtol=1e-12, atol=1e-15)
            assert released["rows_beyond_outer"] == pytest.approx(count, abs=1e-12)
            assert released["noise_sd"] == pytest.approx(scales[0]) and released["rows_beyond_noise_sd"] == \
                pytest.approx(scales[2])
            assert guarantee.to_approx_dp(DELTA).epsilon <= EPS + 1e-9


@pytest.mark.statistical
def test_clipping_excess_release_audit():
    draw, loss, _, _ = _replica()
    result = audit(draw, "A", "B", delta=DELTA, n_samples=400_000, batch=200_000, projection=loss, rng=11)
    result.check(EPS)
    assert result.epsilon_lower_bound > 0.5  # observed 0.752 (seed 11): the pair is tight


@pytest.mark.statistical
def test_clipping_excess_negative_control_fires():
    draw, loss, _, _ = _replica(factor=0.5)
    result = audit(draw, "A", "B", delta=DELTA, n_samples=400_000, batch=200_000, projection=loss, rng=12)
    assert result.epsilon_lower_bound > EPS + 0.3  # observed 1.75 (seed 12)
    assert not result.consistent_with(EPS)
