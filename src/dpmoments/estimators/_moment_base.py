"""What every second-moment estimator shares: its privacy parameters and its release.

An estimator either makes a :class:`~dpmoments.Release` from data (``fit``)
or post-processes one that was already paid for (``fit_release``). Centring
is explicit: ``center=None`` (the raw second moment, as the papers), a public
centre vector, or ``"private"`` with a declared :class:`CenterBudget`.
"""

import dataclasses
import math
import os
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np
from sklearn.base import BaseEstimator

from .._rng import describe_randomness, spawn
from .._validation import check_data, check_nonnegative, check_option
from ..moments import Release, iter_chunks, release_cross_moment, release_second_moment
from ..moments.dask_moments import is_dask_collection, row_ones
from ..exceptions import PrivacyLeakWarning
from ..moments.counts import check_count_share, planned_guarantee, warn_if_delta_large
from ..privacy import ApproxDP, PureDP, Uncertified, check_accountant, compose

__all__ = ["CenterBudget", "MomentEstimator", "n_features_of", "out_of_core"]


@dataclass(frozen=True)
class CenterBudget:
    """How a private centre shares the budget with the second moment.

    ``mean`` is the fraction of epsilon (and of delta) spent on the private
    mean; the rest goes to the second moment of the rows centred at that
    private mean. The two releases compose sequentially to the estimator's
    (epsilon, delta).

    ``prior`` is a *public* guess of the centre (default: the origin). The
    mean is released as ``prior + mean(clip(x - prior))``, so rows are clipped
    around the guess rather than around the origin: for data far from zero
    (log intensities, say) clipping around the origin would bias the mean.
    """

    mean: float = 0.2
    prior: Optional[tuple] = None

    def __post_init__(self):
        if not 0 < self.mean < 1:
            raise ValueError(f"'mean' must be a fraction in (0, 1); got {self.mean}.")
        if self.prior is not None:
            prior = np.asarray(self.prior, dtype=float)
            if prior.ndim != 1 or not np.all(np.isfinite(prior)):
                raise ValueError(f"'prior' must be a finite 1-D vector (a public guess of the centre); got {self.prior!r}.")
            object.__setattr__(self, "prior", tuple(prior.tolist()))

    @property
    def second_moment(self):
        return 1.0 - self.mean


class MomentEstimator(BaseEstimator):
    """Base class: the parameters of the second-moment release and how to make and pay for it."""

    _mechanisms = ("gaussian", "laplace", "wishart", "wishart-approx")

    # -- the release ------------------------------------------------------------
    def _release_from(self, X):
        if not out_of_core(X):  # dask collections and paths go to the streaming release unmaterialised
            X = check_data(X)
        check_option(self.mechanism, "mechanism", self._mechanisms)
        private_center = self._private_center()
        self._check_affordable()
        kwargs = dict(row_norm=self.row_norm, mechanism=self.mechanism, neighbours=self.neighbours,
                      calibration=self.calibration, count_share=self.count_share)
        if private_center:
            release = self._private_center_release(X, kwargs)
        else:
            release = release_second_moment(X, epsilon=self.epsilon, delta=self.delta, center=self.center,
                                            rng=self.rng, **kwargs)
        self._spend(release)
        return release

    def _private_center(self):
        """True for ``center="private"`` (with its budget split and mechanism checked)."""
        if not isinstance(self.center, str):
            return False
        if self.center != "private":
            raise ValueError(f"'center' must be None, a public vector or 'private'; got {self.center!r}.")
        if not isinstance(self.center_budget, CenterBudget):
            raise TypeError(
                "center='private' needs 'center_budget', a CenterBudget saying which share of the budget the "
                f"private mean uses; got {self.center_budget!r}."
            )
        if self.mechanism not in ("gaussian", "laplace"):
            raise ValueError(f"center='private' supports mechanism 'gaussian' or 'laplace'; got {self.mechanism!r}.")
        return True

    def _private_center_release(self, X, kwargs):
        split = self.center_budget
        eps, delta = self.epsilon, self.delta
        scaled = lambda share: None if delta is None else share * delta  # noqa: E731
        rng_mean, rng_cov = spawn(self.rng, 2)  # never reuse one seed's noise twice
        d = n_features_of(X)
        prior = np.zeros(d) if split.prior is None else np.asarray(split.prior)
        if prior.shape != (d,):
            raise ValueError(f"'prior' must have one entry per feature ({d}); got {prior.shape[0]}.")
        # The mean of the clipped x - prior is the cross moment with the constant response 1 (bound 1).
        if is_dask_collection(X):
            X_mean, ones = X, row_ones(X)
        elif isinstance(X, (str, os.PathLike)):  # a file is read twice: once per release
            X_mean, ones = ((c, np.ones(c.shape[0])) for c in iter_chunks(X)), None
        else:
            X_mean, ones = X, np.ones(X.shape[0])
        with warnings.catch_warnings():  # delta >= 1/n is judged on the total delta, below
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            mean = release_cross_moment(X_mean, ones, epsilon=split.mean * eps, delta=scaled(split.mean),
                                        response_bound=1.0, center=prior, rng=rng_mean, **kwargs)
            cov = release_second_moment(X, epsilon=split.second_moment * eps, delta=scaled(split.second_moment),
                                        center=prior + mean.cross_moment, rng=rng_cov, **kwargs)
        if self.mechanism == "gaussian":
            warn_if_delta_large(delta, cov.n, noisy=not cov.n_public, stacklevel=4)
        # The two releases compose to what their own guarantees compose to: an uncertified part stays visible.
        total = self._compose([mean.guarantee, cov.guarantee])
        step = f"centred at a private mean ({split.mean:g} of the budget)"
        return dataclasses.replace(cov, guarantee=total, randomness=describe_randomness(self.rng),
                                   postprocessing=(step,))

    def _compose(self, guarantees):
        return compose(guarantees, composition="zcdp" if self.calibration == "zcdp" else "basic")

    # -- the budget -------------------------------------------------------------
    def _planned_guarantee(self):
        """The guarantee the release will carry, known before touching the data."""
        eps, delta = self.epsilon, self.delta
        if math.isinf(eps):
            return PureDP(math.inf)
        if self._private_center():
            shares = (self.center_budget.mean, self.center_budget.second_moment)
            return self._compose([self._planned_release(s * eps, None if delta is None else s * delta)
                                  for s in shares])
        return self._planned_release(eps, delta)

    def _planned_release(self, eps, delta):
        if self.mechanism in ("gaussian", "laplace"):
            return planned_guarantee(eps, delta, self.mechanism, self.calibration, self.neighbours,
                                     check_count_share(self.count_share))
        if self.mechanism in ("wishart", "output"):
            return Uncertified(PureDP(eps), "Wishart noise with d+1 degrees of freedom is not epsilon-DP")
        return ApproxDP(eps, delta)

    def _accountant(self):
        return check_accountant(self.accountant)

    def _check_affordable(self):
        acct = self._accountant()
        if acct is None:
            return
        planned = self._planned_guarantee()
        if not acct.can_spend(planned, neighbours=self.neighbours):
            acct.spend(planned, neighbours=self.neighbours)  # raises with the reason; nothing changes

    def _spend(self, x):
        """Charge a release (under its own relation) or a guarantee (under the estimator's)."""
        acct = self._accountant()
        if acct is not None:
            acct.spend(x, label=type(self).__name__, neighbours=self.neighbours)

    @staticmethod
    def _check_release(release):
        if not isinstance(release, Release) or release.second_moment is None:
            raise TypeError(f"'release' must be a Release with a second moment; got {release!r}.")
        return release


def out_of_core(X):
    """A dask collection or a file path: released by streaming, never loaded whole here."""
    return is_dask_collection(X) or isinstance(X, (str, os.PathLike))


def n_features_of(X):
    """Columns of ``X`` without materialising it (dask collections and paths included).

    In-memory input is validated as before (``check_data``).
    """
    if is_dask_collection(X):
        if getattr(X, "ndim", 2) != 2:
            raise ValueError(f"'X' must be 2-D with shape (n_samples, n_features); got {X.ndim}-D.")
        return len(X.columns) if hasattr(X, "columns") else int(X.shape[1])
    if isinstance(X, (str, os.PathLike)):
        first = next(iter(iter_chunks(X, chunk_size=1)))
        return (first[0] if isinstance(first, tuple) else first).shape[1]
    return (X if isinstance(X, np.ndarray) and X.ndim == 2 else check_data(X)).shape[1]


def psd_floor_value(psd_floor):
    """Validate the eigenvalue floor option (``None`` disables the projection)."""
    return None if psd_floor is None else check_nonnegative(psd_floor, "psd_floor")
