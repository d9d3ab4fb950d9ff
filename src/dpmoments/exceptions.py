"""The library's error and warning classes.

Errors subclass a builtin so that ``except ValueError`` keeps working; warnings
are our own classes so that users (and tests) can filter on them precisely.
"""

__all__ = [
    "BudgetExceededError",
    "UncertifiedSpendError",
    "TooFewRowsError",
    "UncertifiedPrivacyWarning",
    "NotPrivateWarning",
    "PrivacyLeakWarning",
    "InsecureRandomnessWarning",
    "BoundWarning",
    "NoiseDominatesWarning",
    "CalibrationWarning",
]


class BudgetExceededError(ValueError):
    """A spend would take an accountant past its total budget.

    The accountant's state is unchanged when this is raised.
    """


class UncertifiedSpendError(ValueError):
    """An accountant was asked to spend a guarantee whose proof is known to fail.

    Create the accountant with ``allow_uncertified=True`` to reproduce a paper
    that used such a mechanism; its report then marks the total as uncertified.
    """


class TooFewRowsError(ValueError):
    """A private draw (a bound, a centre, a scale) was refused before anything was released: too few rows.

    The exponential mechanism over a wide public grid needs ``epsilon * n`` of
    a few tens; below that it would land anywhere in the search range.
    ``what`` names the draw, ``epsilon_each`` is its epsilon and ``needed_each`` the
    smallest that would run, computed from the public ``n`` and grid alone
    (it is only raised where ``n`` is public). Callers that split a budget add
    the smallest total epsilon, or share, at which it would run
    (:func:`dpmoments.moments.auto_release.too_few_rows`).
    """

    def __init__(self, message, *, what, epsilon_each, needed_each):
        super().__init__(message)
        self.what, self.epsilon_each, self.needed_each = what, epsilon_each, needed_each


class UncertifiedPrivacyWarning(UserWarning):
    """A mechanism was used whose claimed privacy guarantee has no valid proof.

    Raised by the papers' pure-epsilon Wishart mechanisms (the support of the
    output depends on the data) and by the classic Gaussian calibration used
    outside its theorem (epsilon >= 1).
    """


class NotPrivateWarning(UserWarning):
    """A result was computed with ``epsilon=inf``: it is the exact statistic."""


class PrivacyLeakWarning(UserWarning):
    """A release may disclose more than its guarantee suggests.

    Raised when a data-dependent quantity is used as if it were public (only
    the paper reproductions do this, to mirror the papers; the library itself
    never derives a bound from the data), when ``delta >= 1/n``: such a
    guarantee allows publishing a whole row at random, and when an estimator
    (with its clones) fits a second time with no accountant: each fit spends
    again, and its own report tells of one spend.
    """


class InsecureRandomnessWarning(UserWarning):
    """Noise was drawn from a seeded generator: reproducible, not secure."""


class BoundWarning(UserWarning):
    """A privately chosen bound looks poor: many rows clipped, or its search range too narrow.

    Raised from released (noisy) quantities only, never from the raw data.
    """


class NoiseDominatesWarning(UserWarning):
    """An estimate is mostly (or entirely) the release's noise, not the data's signal.

    Raised after a fit when a check computed from the release alone fails: no
    eigenvalue above the noise's spectral norm, a released variance below its
    noise level, a selection margin within the selection noise, mixture
    weights outside [0, 1], a whitening that divides by noise. The estimator's
    ``diagnostics_`` attribute records the same sentences, so that a report can
    refuse to present the estimate as a result (docs/uncertainty.md).
    """


class CalibrationWarning(UserWarning):
    """The Gaussian calibration asked for is not the one used (the release records the one used and why)."""
