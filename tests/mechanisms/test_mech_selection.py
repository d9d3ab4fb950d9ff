"""Report-noisy-min/max and the exponential mechanism."""

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

from dpmoments.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    report_noisy_max,
    report_noisy_min,
)

ALPHA = 1e-6


def _counts(select, n_candidates, reps, seed):
    rng = np.random.default_rng(seed)
    picks = [select(rng) for _ in range(reps)]
    return np.bincount(picks, minlength=n_candidates)


# --- exponential mechanism ----------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("minimise", [True, False])
def test_exponential_mechanism_frequencies(minimise):
    scores = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    eps, sens, reps = 2.0, 0.5, 20_000
    sign = -1.0 if minimise else 1.0
    expected = special.softmax(sign * eps * scores / (2 * sens))
    np.testing.assert_allclose(
        exponential_mechanism_probabilities(scores, eps, sens, minimise=minimise), expected, rtol=1e-12
    )
    counts = _counts(lambda g: exponential_mechanism(scores, eps, sens, g, minimise), 5, reps, seed=41)
    assert stats.chisquare(counts, reps * expected).pvalue > ALPHA


def test_exponential_mechanism_huge_score_range():
    scores = np.array([1e308, -1e308, 0.0, 3e300, -1e308 + 1e292])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning either
        for seed in range(20):
            assert exponential_mechanism(scores, 1.0, 1.0, rng=seed) == 1
            assert exponential_mechanism(scores, 1.0, 1.0, rng=seed, minimise=False) == 0
        p = exponential_mechanism_probabilities(scores, 1.0, 1.0)
    np.testing.assert_array_equal(p, [0, 1, 0, 0, 0])
    # Close contenders inside a huge range still get their exact odds.
    low = 1e300
    gap = (low + 4e284) - low  # exact (Sterbenz); 4e284 itself is not a multiple of the ulp
    p = exponential_mechanism_probabilities([low, low + gap, 5e307], 1.0, 1e284)
    assert np.isclose(p[0] / p[1], math.exp(gap / 2e284)) and p[2] == 0


def test_exponential_mechanism_tiny_epsilon_is_uniform():
    p = exponential_mechanism_probabilities([0.0, 1e10], 1e-300, 1e10)
    np.testing.assert_allclose(p, [0.5, 0.5])
    with pytest.raises(ValueError, match="'epsilon' must be at least"):  # subnormal: refused, as everywhere
        exponential_mechanism_probabilities([0.0, 1e10], 1e-320, 1e10)


def test_exponential_mechanism_infinite_epsilon_is_argmin():
    scores = [3.0, -1.0, 7.0, -1.0]
    assert exponential_mechanism(scores, np.inf, 1.0, rng=0) == 1
    assert exponential_mechanism(scores, np.inf, 1.0, rng=0, minimise=False) == 2
    np.testing.assert_array_equal(exponential_mechanism_probabilities(scores, np.inf, 1.0), [0, 1, 0, 0])


def test_exponential_mechanism_seeding_and_single_candidate():
    scores = np.linspace(0, 1, 50)
    picks = [exponential_mechanism(scores, 0.1, 1.0, rng=3) for _ in range(3)]
    assert len(set(picks)) == 1 and isinstance(picks[0], int)
    assert exponential_mechanism([5.0], 1.0, 1.0) == 0  # rng=None


# --- report noisy min / max ---------------------------------------------------


def _p_worse(gap, b):
    # L1 - L2 for i.i.d. Laplace(b): P(L1 - L2 > t) = exp(-t/b) (1 + t/(2b)) / 2.
    return 0.5 * math.exp(-gap / b) * (1 + gap / (2 * b))


@pytest.mark.statistical
@pytest.mark.parametrize("gap, b", [(0.0, 1.0), (1.0, 0.7), (3.0, 1.0)])
def test_report_noisy_min_two_candidates(gap, b):
    reps = 20_000
    k = _counts(lambda g: report_noisy_min([0.0, gap], b, g), 2, reps, seed=42)[1]
    assert stats.binomtest(int(k), reps, _p_worse(gap, b)).pvalue > ALPHA


@pytest.mark.statistical
def test_report_noisy_max_two_candidates():
    reps, gap, b = 20_000, 1.5, 1.0
    k = _counts(lambda g: report_noisy_max([gap, 0.0], b, g), 2, reps, seed=43)[1]
    assert stats.binomtest(int(k), reps, _p_worse(gap, b)).pvalue > ALPHA


def test_report_noisy_min_huge_scores_and_zero_scale():
    scores = [1e308, -1e308, 0.0, -1e308 + 1e293]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report_noisy_min(scores, 1.0, rng=0) == 1
        assert report_noisy_max(scores, 1.0, rng=0) == 0
    assert report_noisy_min([2.0, 1.0, 1.0], 0.0) == 1
    assert report_noisy_max([2.0, 1.0, 2.0], 0.0) == 0


def test_report_noisy_min_seeding():
    scores = np.zeros(30)
    assert report_noisy_min(scores, 1.0, rng=4) == report_noisy_min(scores, 1.0, rng=4)
    picks = {report_noisy_min(scores, 1.0) for _ in range(20)}  # rng=None
    assert len(picks) > 1


# --- bad input ------------------------------------------------------------------


@pytest.mark.parametrize(
    "select",
    [
        lambda s: report_noisy_min(s, 1.0, rng=0),
        lambda s: report_noisy_max(s, 1.0, rng=0),
        lambda s: exponential_mechanism(s, 1.0, 1.0, rng=0),
        lambda s: exponential_mechanism_probabilities(s, 1.0, 1.0),
    ],
)
def test_bad_scores(select):
    with pytest.raises(ValueError, match="'scores'.*empty"):
        select([])
    with pytest.raises(ValueError, match="'scores'"):
        select([0.0, np.nan])
    with pytest.raises(ValueError, match="'scores'"):
        select([0.0, np.inf])
    with pytest.raises(ValueError, match="'scores'"):
        select([[0.0, 1.0]])
    with pytest.raises(TypeError, match="'scores'"):
        select(["a", "b"])


def test_bad_parameters():
    with pytest.raises(ValueError, match="'scale'"):
        report_noisy_min([0.0, 1.0], -1.0)
    with pytest.raises(ValueError, match="'scale'"):
        report_noisy_min([0.0, 1.0], np.nan)
    with pytest.raises(ValueError, match="'epsilon'"):
        exponential_mechanism([0.0, 1.0], 0.0, 1.0)
    with pytest.raises(ValueError, match="'sensitivity'"):
        exponential_mechanism([0.0, 1.0], 1.0, 0.0)
    with pytest.raises(ValueError, match="'sensitivity'"):
        exponential_mechanism([0.0, 1.0], 1.0, np.inf)
    with pytest.raises(TypeError, match="'minimise'"):
        exponential_mechanism([0.0, 1.0], 1.0, 1.0, minimise="yes")
