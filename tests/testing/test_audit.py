"""Tests for dpmoments.testing: the empirical epsilon lower bound and the auditor."""

import dataclasses
import doctest
import math

import numpy as np
import pytest

from dpmoments.testing import AuditResult, _audit as audit_module, audit, epsilon_lower_bound

DELTA = 1e-5
# Classic Gaussian sigma at epsilon = 0.5, sensitivity 1 (Dwork & Roth, Thm A.1).
CLASSIC_SIGMA = math.sqrt(2 * math.log(1.25 / DELTA)) / 0.5


def laplace_count(scale):
    """A counting query (sensitivity 1) with Laplace noise, vectorised."""

    def mechanism(data, rng, size=None):
        return np.sum(data) + rng.laplace(scale=scale, size=size)

    return mechanism


def gaussian_vector(sigma):
    """Add N(0, sigma^2 I) to a vector (the 'dataset' is the exact statistic)."""

    def mechanism(value, rng, size=None):
        value = np.asarray(value, dtype=float)
        shape = value.shape if size is None else (size,) + value.shape
        return value + rng.normal(scale=sigma, size=shape)

    return mechanism


def symmetric_matrix_release(sigma):
    """A second-moment release x x^T plus symmetric Gaussian noise (upper triangle mirrored)."""

    def mechanism(x, rng, size):
        x = np.asarray(x, dtype=float)
        noise = rng.normal(scale=sigma, size=(size, x.size, x.size))
        noise = np.triu(noise) + np.swapaxes(np.triu(noise, 1), 1, 2)
        return np.outer(x, x) + noise

    return mechanism


# ----------------------------------------------------------------------------- statistical


@pytest.mark.statistical
def test_laplace_correct_noise_is_consistent_and_tight():
    result = audit(laplace_count(1.0), [1, 1, 0], [1, 1, 1], n_samples=1_000_000, batch=1_000_000, rng=1)
    assert result.consistent_with(1.0)
    assert 0.9 <= result.epsilon_lower_bound <= 1.0  # measured 0.986
    result.check(1.0)


@pytest.mark.statistical
def test_laplace_half_noise_is_detected():
    result = audit(laplace_count(0.5), [1, 1, 0], [1, 1, 1], n_samples=1_000_000, batch=1_000_000, rng=1)
    assert result.epsilon_lower_bound > 1.0  # measured 1.983 (true epsilon 2)
    assert result.epsilon_lower_bound <= 2.0
    assert not result.consistent_with(1.0)
    with pytest.raises(AssertionError, match="refutes epsilon=1.0"):
        result.check(1.0)


@pytest.mark.statistical
def test_gaussian_classic_sigma_is_consistent():
    result = audit(
        gaussian_vector(CLASSIC_SIGMA), 1.0, 0.0, delta=DELTA, n_samples=1_000_000, batch=1_000_000, rng=2
    )
    assert result.consistent_with(0.5)  # measured 0.21 (true epsilon 0.35 at this delta)
    assert result.delta == DELTA


@pytest.mark.statistical
def test_gaussian_half_sigma_is_detected():
    # True epsilon at delta=1e-5 is 0.75; over seeds 0-9 the bound ranged 0.572-0.612.
    result = audit(
        gaussian_vector(CLASSIC_SIGMA / 2), 1.0, 0.0, delta=DELTA, n_samples=4_000_000, batch=1_000_000, rng=0
    )
    assert result.epsilon_lower_bound > 0.5
    assert result.epsilon_lower_bound <= 0.751


@pytest.mark.statistical
def test_identical_distributions_give_no_evidence():
    rng = np.random.default_rng(3)
    a, b = rng.laplace(size=(2, 500_000))
    assert epsilon_lower_bound(a, b).epsilon_lower_bound <= 0.05
    result = audit(laplace_count(1.0), [1, 0], [0, 1], n_samples=500_000, batch=250_000, rng=3)
    assert result.epsilon_lower_bound <= 0.05


@pytest.mark.statistical
def test_bound_is_monotone_in_confidence_and_delta():
    rng = np.random.default_rng(4)
    a = 1.0 + rng.normal(scale=2.0, size=300_000)
    b = rng.normal(scale=2.0, size=300_000)
    by_confidence = [epsilon_lower_bound(a, b, confidence=c).epsilon_lower_bound for c in (0.5, 0.9, 0.99, 0.9999)]
    assert all(x >= y for x, y in zip(by_confidence, by_confidence[1:]))
    assert by_confidence[0] > by_confidence[-1]
    by_delta = [epsilon_lower_bound(a, b, delta=d).epsilon_lower_bound for d in (0.0, 1e-6, 1e-4, 1e-2, 0.1)]
    assert all(x >= y for x, y in zip(by_delta, by_delta[1:]))
    assert by_delta[0] > by_delta[-1]


@pytest.mark.statistical
def test_false_refutation_rate_respects_confidence():
    # Exact epsilon = 1 (Laplace); at confidence 0.5 at most half the runs may exceed it.
    rng = np.random.default_rng(5)
    exceed = 0
    for _ in range(40):
        a = 1.0 + rng.laplace(size=20_000)
        b = rng.laplace(size=20_000)
        exceed += epsilon_lower_bound(a, b, confidence=0.5, n_thresholds=16).epsilon_lower_bound > 1.0
    assert exceed <= 20


@pytest.mark.statistical
def test_projection_none_finds_the_direction_of_change():
    u = np.array([1.0, 1.0]) / math.sqrt(2)
    kwargs = dict(delta=DELTA, n_samples=400_000, batch=200_000)
    mechanism = gaussian_vector(1.0)
    found = audit(mechanism, u, np.zeros(2), rng=6, **kwargs).epsilon_lower_bound
    aligned = audit(mechanism, u, np.zeros(2), projection=u, rng=6, **kwargs).epsilon_lower_bound
    orthogonal = audit(mechanism, u, np.zeros(2), projection=[1.0, -1.0], rng=6, **kwargs)
    assert found > 2.5 and aligned > 2.5  # measured 3.02 and 3.02; 2.81-3.11 over seeds 0-7
    assert abs(found - aligned) < 0.15
    assert orthogonal.epsilon_lower_bound <= 0.05


@pytest.mark.statistical
def test_matrix_outputs_are_flattened():
    x = np.array([0.6, 0.8])
    V = np.outer(x, x)
    mechanism = symmetric_matrix_release(0.5)
    kwargs = dict(delta=DELTA, n_samples=200_000, batch=100_000)
    by_matrix = audit(mechanism, x, np.zeros(2), projection=V, rng=7, **kwargs)
    by_none = audit(mechanism, x, np.zeros(2), rng=7, **kwargs)
    by_callable = audit(
        mechanism, x, np.zeros(2), projection=lambda M: np.einsum("kij,ij->k", M, V), rng=7, **kwargs
    )
    assert by_matrix.epsilon_lower_bound > 1.0
    assert by_callable.epsilon_lower_bound == by_matrix.epsilon_lower_bound
    assert abs(by_none.epsilon_lower_bound - by_matrix.epsilon_lower_bound) < 0.3


# ----------------------------------------------------------------------------- unit


def test_per_sample_mode_matches_its_contract():
    mechanism = laplace_count(1.0)
    result = audit(mechanism, [1], [0], n_samples=2_000, rng=8)
    assert result.n_samples == (1_800, 1_800)
    assert result.epsilon_lower_bound <= 1.0
    with_callable = audit(mechanism, [1], [0], n_samples=2_000, projection=lambda out: -out, rng=8)
    assert with_callable.n_samples == (1_800, 1_800)


def test_deterministic_given_seed():
    first = audit(laplace_count(1.0), [1], [0], n_samples=10_000, batch=4_000, rng=9)
    second = audit(laplace_count(1.0), [1], [0], n_samples=10_000, batch=4_000, rng=9)
    assert first == second


def test_no_noise_is_detected():
    result = audit(lambda d, rng, size: np.full(size, float(d)), 1, 0, n_samples=10_000, batch=10_000, rng=0)
    assert result.epsilon_lower_bound > 5.0
    assert result.event in ("A > t", "B < t")


def test_fixed_thresholds_are_used():
    rng = np.random.default_rng(10)
    a, b = 1.0 + rng.laplace(size=50_000), rng.laplace(size=50_000)
    result = epsilon_lower_bound(a, b, thresholds=[2.0, 2.0, -1.0])
    assert result.n_events == 8
    assert result.threshold in (2.0, -1.0)


def test_result_fields_and_empty_evidence():
    result = epsilon_lower_bound([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    assert result == AuditResult(0.0, 0.95, 0.0, result.threshold, None, (3, 3), result.n_events)
    assert math.isnan(result.threshold) and math.isnan(result.p_lower)
    assert result.consistent_with(0.0)
    result.check(0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.epsilon_lower_bound = 1.0


def test_docstring_examples_run():
    failures, attempted = doctest.testmod(audit_module, verbose=False)
    assert attempted > 0 and failures == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(samples_a=[]), ValueError, "'samples_a' must hold at least 1 sample"),
        (dict(samples_b=np.zeros((5, 2))), ValueError, r"'samples_b' must be 1-D; got 2-D shape \(5, 2\)"),
        (dict(samples_a=[0.0, np.nan]), ValueError, "'samples_a' contains NaN"),
        (dict(samples_a="abc"), TypeError, "'samples_a'"),
        (dict(confidence=1.0), ValueError, r"'confidence' must be in \(0, 1\); got 1.0"),
        (dict(confidence=0), ValueError, r"'confidence' must be in \(0, 1\); got 0.0"),
        (dict(confidence="high"), TypeError, "'confidence' must be a real number; got str 'high'"),
        (dict(delta=1.0), ValueError, r"'delta' must be in \[0, 1\); got 1.0"),
        (dict(delta=-0.1), ValueError, r"'delta' must be in \[0, 1\); got -0.1"),
        (dict(n_thresholds=0), ValueError, "'n_thresholds' must be an integer >= 1; got 0"),
        (dict(thresholds=[]), ValueError, "'thresholds' must hold at least 1 sample"),
    ],
)
def test_epsilon_lower_bound_rejects_bad_input(kwargs, error, message):
    args = dict(samples_a=[0.0, 1.0], samples_b=[0.5, 1.5])
    args.update(kwargs)
    with pytest.raises(error, match=message):
        epsilon_lower_bound(args.pop("samples_a"), args.pop("samples_b"), **args)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(mechanism="laplace"), TypeError, "'mechanism' must be callable.*got str"),
        (dict(n_samples=99), ValueError, "'n_samples' must be an integer >= 100; got 99"),
        (dict(n_samples=1e5), TypeError, "'n_samples' must be an integer; got float"),
        (dict(batch=0), ValueError, "'batch' must be an integer >= 1; got 0"),
        (dict(pilot_fraction=0.9), ValueError, r"'pilot_fraction' must be in \(0, 0.5\]; got 0.9"),
        (dict(confidence=1.5), ValueError, r"'confidence' must be in \(0, 1\); got 1.5"),
        (dict(delta=2.0), ValueError, r"'delta' must be in \[0, 1\); got 2.0"),
        (dict(rng="seed"), TypeError, "'rng'"),
        (dict(projection=[1.0, 2.0]), ValueError, "'projection' has 2 entries but each mechanism output has 1"),
        (dict(projection="mean"), TypeError, "'projection' must be None, a callable or an array; got str"),
        (dict(projection=lambda out: out[:, None]), ValueError, r"must return shape \(50,\); got shape \(50, 1\)"),
        (
            dict(mechanism=lambda d, rng, size: np.zeros(3)),
            ValueError,
            r"size=\d+ must return \d+ outputs.*shape \(3,\)",
        ),
        (dict(mechanism=lambda d, rng, size: np.full(size, np.inf)), ValueError, "NaN or infinite"),
    ],
)
def test_audit_rejects_bad_input(kwargs, error, message):
    args = dict(mechanism=laplace_count(1.0), n_samples=500, batch=50, rng=0)
    args.update(kwargs)
    with pytest.raises(error, match=message):
        audit(args.pop("mechanism"), [1], [0], **args)


def test_consistent_with_rejects_bad_claims():
    result = epsilon_lower_bound([0.0, 1.0], [0.0, 1.0])
    with pytest.raises(ValueError, match=r"'epsilon' must be in \[0, inf\]; got -1.0"):
        result.consistent_with(-1)
    with pytest.raises(TypeError, match="'epsilon' must be a real number; got str"):
        result.consistent_with("1")
    assert result.consistent_with(math.inf)
