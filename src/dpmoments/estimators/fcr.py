"""Which intervals exclude 0, at a level that controls the false coverage rate among them.

Benjamini & Yekutieli (2005): select the entries that stand out of 0 by Benjamini-Hochberg, then
give every printed interval the level ``1 - R alpha / m`` (``R`` selected of ``m``), so that the
intervals and the selection agree and at most ``alpha`` of the selected ones are expected to miss.
Used by the covariance error budget (:mod:`~dpmoments.estimators.error_budget`). Reads intervals
and standard errors only: post-processing.
"""

import numpy as np

from .._lazy import lazy_module

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["distance_from_zero", "fcr_level", "first_count", "selected_by_fcr"]


def distance_from_zero(lower, upper, se):
    """The distance ``|0 - [lower, upper]|`` in units of ``se`` (d, d): 0 where 0 is inside. ``lower`` and ``upper`` (the caller's
    temporaries) are overwritten: ``max(lower, 0) + max(-upper, 0)`` is formed in them."""
    gap = np.maximum(lower, 0.0, out=lower)
    gap += np.maximum(np.negative(upper, out=upper), 0.0, out=upper)
    return np.divide(gap, se, out=np.where(gap > 0, np.inf, 0.0), where=se > 0)


def first_count(t, level, printed=None):
    """``(R, m)``: how many of the ``m`` distinct printed entries Benjamini-Hochberg selects at ``1 - level`` from
    their normal statistics ``t`` (:func:`selected_by_fcr`'s first count). ``t``: (d, d) with ``printed``, or the
    distinct printed entries' alone (1-D, in the order of ``np.triu(printed)``'s entries; overwritten)."""
    alpha = 1.0 - level
    if printed is None:
        m, p = t.size, t
        np.negative(p, out=p)
        special.ndtr(p, out=p)
        p *= 2.0  # 2 ndtr(-t), in place: the same bits
        p.sort()
    else:
        distinct = np.triu(printed)  # a mask, not index arrays (at d = 10 000 those were 800 MB)
        m = int(np.count_nonzero(distinct))
        p = np.sort(2.0 * special.ndtr(-t[distinct]))
        del distinct
    passed = np.nonzero(p <= alpha * np.arange(1, m + 1) / max(m, 1))[0]
    return (int(passed[-1]) + 1 if passed.size else 0), m


def selected_by_fcr(intervals, t, printed, level, counted=None):
    """Benjamini-Hochberg over the distinct printed entries, with each entry's exact interval.

    ``t``: normal statistics (d, d), whose p-values give a first count ``R``; then the entries whose interval
    at ``1 - R alpha / m`` (``intervals(level)``, the exact law) excludes 0 are counted again, and ``R`` lowered
    to that count until it holds (the step-up's largest fixed point with the exact law's heavier tails, which
    the normal count bounds from above). ``counted``: ``(R, m)`` of :func:`first_count`, made by the caller
    (``t`` is then not read). Returns ``(selected (d, d), their level, their intervals)``.
    """
    alpha = 1.0 - level
    count, m = first_count(t, level, printed) if counted is None else counted
    while True:
        at = 1.0 - max(count, 1) * alpha / max(m, 1) if m > 1 else level
        interval = intervals(at)
        excludes = printed & ((interval[0] > 0) | (interval[1] < 0))
        found = int(np.count_nonzero(np.triu(excludes)))
        if found >= count or count == 0:
            return excludes, at, interval
        count, interval, excludes = found, None, None  # freed before the next level's (2, d, d) is made


def fcr_level(t, level):
    """The level of every interval that controls the false coverage rate among those that exclude 0.

    Benjamini & Yekutieli (2005): with ``m`` entries and normal statistics
    ``t`` (distance of 0 from the interval, in standard errors), select by
    Benjamini-Hochberg at ``alpha = 1 - level``; if ``R`` are selected, every
    interval at level ``1 - R alpha / m`` keeps the expected share of the
    selected ones that miss their value at most ``alpha``. An entry not
    selected has ``p > R alpha / m``, so its interval at that level holds 0:
    the intervals and the selection agree. ``R = m`` (every entry clearly
    non-zero) leaves ``level`` as it is; ``R = 0`` gives Bonferroni's
    ``1 - alpha / m``.
    """
    m, alpha = t.size, 1.0 - level
    if m <= 1:
        return level
    p = np.sort(2.0 * special.ndtr(-np.asarray(t, dtype=float)))
    passed = np.nonzero(p <= alpha * np.arange(1, m + 1) / m)[0]
    selected = int(passed[-1]) + 1 if passed.size else 1
    return 1.0 - selected * alpha / m
