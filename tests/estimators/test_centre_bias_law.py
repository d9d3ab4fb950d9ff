"""The centre's noise and its own clipping bias as one law (centre_bias_law.py): each quantile holds at its level for
every bias in the box, checked against a seeded simulation of the law; the table agrees with solving each entry."""

import numpy as np

from dpmoments.estimators.centre_bias import centre_bias_blocks
from dpmoments.estimators.centre_bias_law import (_off_diagonal_solved, _solved_each, diagonal_increment,
                                                  off_diagonal_increments)
from dpmoments.estimators.centre_law import diagonal_quantiles, off_diagonal_half_width


def _pair_width(v, s, bounds, alpha):
    V = np.full((2, 2), v)
    shift = lambda rows: np.add.outer(bounds[rows], bounds)  # noqa: E731
    smaller = lambda rows: np.minimum.outer(bounds[rows], bounds)  # noqa: E731
    return off_diagonal_half_width(np.array([v]), s, alpha)[0] + off_diagonal_increments(V, s, shift, alpha, smaller)(
        slice(0, 2))[0, 1]


def test_each_quantile_holds_for_every_bias_in_the_box():
    rng, n = np.random.default_rng(7), 60_000
    for v, s, bounds, alpha in [(0.3, 1.0, np.array([1.5, 0.5]), 0.1), (0.01, 0.5, np.array([0.2, 1.0]), 0.02)]:
        half = _pair_width(v, s, bounds, alpha)
        upper = diagonal_quantiles(np.array([v]), s, alpha)[1][0] + diagonal_increment(
            np.array([v]), s, bounds[:1], alpha)[0]
        side = np.sqrt(alpha / 2 * (1 - alpha / 2) / n)  # the simulated share's sd, one side
        for bi, bj in [(1, 1), (1, -1), (0.5, 1), (1, 0), (0, 0), (-0.3, 0.8)]:
            beta = bounds * (bi, bj)
            ei, ej, N = s * rng.standard_normal(n), s * rng.standard_normal(n), np.sqrt(v) * rng.standard_normal(n)
            W = N + (ei - beta[0]) * (ej - beta[1])
            assert np.mean(W > half) < alpha / 2 + 4 * side and np.mean(W < -half) < alpha / 2 + 4 * side
            assert np.mean(N + (ei - beta[0]) ** 2 > upper) < alpha / 2 + 4 * side
        # the worst case of the sum it replaces, z s (B_i + B_j) + B_i B_j beside the unbiased law: wider
        z = 1.6448536269514722 if alpha == 0.1 else 2.3263478740408408
        summed = off_diagonal_half_width(np.array([v]), s, alpha)[0] + z * s * bounds.sum() + bounds.prod()
        assert half < summed


def test_the_table_agrees_with_solving_each_entry_and_its_chord_lies_above_the_law():
    d, s, alpha = 12, 0.7, 0.05  # 66 entries: past the 64 solved each, so a table
    rng = np.random.default_rng(3)
    A = rng.standard_normal((d, d))
    V = np.abs(A @ A.T) / d * 0.5
    B = rng.uniform(0, 1.5, d)
    shift = lambda rows: np.add.outer(B[rows], B)  # noqa: E731
    table = off_diagonal_increments(V, s, shift, alpha)(slice(0, d))
    each = _solved_each(V, s**2, s, shift, alpha)(slice(0, d))
    upper = np.triu(np.ones((d, d), dtype=bool), 1)
    ratio = table[upper] / each[upper]  # the chord in the shift widens (small shifts most); the log ratio: 0.1%
    assert np.all(ratio < 1.25) and np.all(ratio > 0.999) and np.median(ratio) < 1.02
    # between two shifts the increment is below their chord (convex in the shift): the linear interpolation widens
    r2, shifts = np.full(3, 0.3), np.array([1.0, 1.5, 2.0])
    h = _off_diagonal_solved(r2, shifts, alpha)
    assert h[1] < (h[0] + h[2]) / 2


def test_the_law_never_widens_beyond_the_sum_and_leaves_a_variance_upper_end():
    d, s = 4, 0.8
    B, upper = np.array([0.5, 1.0, 0.0, 2.0]), np.full(4, 50.0)
    joint = (np.inf, np.ones(d, dtype=bool))
    V = np.full((d, d), 0.4) + np.eye(d)
    summed, summed_above = centre_bias_blocks(B, s, upper, 0.9, joint=joint)
    law, law_above = centre_bias_blocks(B, s, upper, 0.9, joint=joint, normal=V)
    rows = slice(0, d)
    assert np.all(law(rows) <= summed(rows)) and np.any(law(rows) < summed(rows) * 0.9)
    assert np.all(law_above == 0) and np.all(summed_above[B > 0] > 0)
