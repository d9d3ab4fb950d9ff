"""A row whose squares overflow (|x| ~ 1e300) adds to the clipping-excess sums what any row far beyond R' adds,
(R'^2 - R^2) times its direction squared: before, inf * 0 made its columns NaN in the release, a mark that one
row is there (and a numpy warning that said so)."""

import warnings

import numpy as np

from dpmoments.moments.clipping_bias import clipping_excess_sums


def test_an_overflowing_row_adds_what_a_far_row_adds():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(50, 3))
    far, huge = base.copy(), base.copy()
    far[7] = [3e100, -4e100, 0.0]
    huge[7] = [3e300, -4e300, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning may say a value overflowed
        n_far, s_far, b_far = clipping_excess_sums(far, None, None, 2.0)
        n_huge, s_huge, b_huge = clipping_excess_sums(huge, None, None, 2.0)
    assert np.all(np.isfinite(s_huge)) and (n_far, b_far) == (n_huge, b_huge)
    np.testing.assert_allclose(s_huge, s_far, rtol=1e-12)
    # and that row's share is (R'^2 - R^2) u^2 with u = (0.6, -0.8, 0)
    _, s_without, _ = clipping_excess_sums(np.delete(base, 7, axis=0), None, None, 2.0)
    np.testing.assert_allclose(s_huge - s_without, (16.0 - 4.0) * np.array([0.36, 0.64, 0.0]), atol=1e-9)
