"""What every second-moment estimator shares: its privacy parameters and its release.

An estimator either makes a :class:`~dpmoments.Release` from data (``fit``)
or post-processes one that was already paid for (``fit_release``). Centring
is explicit: ``center=None`` (the uncentred second moment, as the papers), a
public centre vector, or ``"private"`` paid from a :class:`CenterBudget`. A
private centre, ``row_norm="auto"`` and ``scale="private"`` go through
:func:`~dpmoments.moments.private_release.private_second_moment`.
"""

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from .._rng import noise_source
from .._validation import check_option
from ..mechanisms import laws
from ..moments import Release, release_second_moment
from ..moments.auto_release import BoundBudget, as_bound_budget, check_bound_budget_used, is_auto
from ..privacy import Accountant, PureDP, Uncertified, check_accountant
from ._params import check_parameters, or_else, param, parameters, positive_or_inf, value_only
from .error_budget import check_target
from .uncertainty import check_level
from ._conventions import (fit_input, labelled_attribute, name_of, privacy_report, release_input, release_noise,
                           require_for_fit)
from ..moments.private_release import needs_private_choices, planned_second_moment_guarantee, private_second_moment
from ..data import as_source
from ..moments.ranged_release import ranged_second_moment
from ..moments.ranges import with_indicator_ranges
from ..moments.choice_budget import CenterBudget

__all__ = ["CenterBudget", "MomentEstimator"]


@parameters
class MomentEstimator:
    """Base class: the parameters of the second-moment release and how to make and pay for it.

    Without scikit-learn: the estimators add its ``BaseEstimator`` (``scikit_learn.py``), and the
    command line fits the same classes without importing it. The parameters every second-moment
    estimator shares are declared here, once (``_params.py``); each estimator documents them and adds
    its own. Those without a check are checked by the release function they are passed to.
    """

    # required by fit (require_for_fit); fit_release takes the release's
    epsilon: float | None = param(None, check=or_else((None,), positive_or_inf))
    delta: float | None = param(None)
    row_norm: float | str = param("auto")
    mechanism: str = param("gaussian")  # each estimator's own names: _release_from
    neighbours: str = param("replace-one")
    calibration: str = param("analytic")
    center: str | Sequence[float] | None = param("private")  # "private", a public vector or None: _private_choices
    center_budget: CenterBudget | None = param(None)  # _center_budget
    scale: str | None = param(None)
    ranges: dict | None = param(None)
    bound_budget: float | BoundBudget = param(0.1)
    level: float = param(0.9, check=value_only(check_level))
    rng: int | np.random.Generator | None = param(None)
    accountant: Accountant | None = param(None)  # privacy.check_accountant, where it is used
    count_share: float = param(0.05)
    target: str = param("population", check=value_only(check_target))

    _mechanisms = laws.names(laws.SECOND_MOMENT)

    # -- fit from data, or from a release -----------------------------------------
    def _fit_from_data(self, X, make_release):
        """``fit``: the input's names and width first, then the release (paid here) and ``fit_release`` of it."""
        check_parameters(self)
        require_for_fit(self, "epsilon")
        X = as_source(X).data  # a Source is fitted as the input it holds
        names = fit_input(self, X)
        self.fit_release(make_release(X))
        release_input(self, self.n_features_in_, names)
        self.privacy_report_.update(fitted_by="fit", spent=self.privacy_.to_dict())
        return self

    def _record_release(self, release):
        """What every fit from ``release`` records: its guarantee, relation, parts and width, and the report.

        As set by ``fit_release``: nothing new spent, no input names (a
        release does not carry them); ``fit`` then adds both.
        """
        self.release_ = release
        self.privacy_ = release.guarantee
        self.privacy_parts_ = release.parts
        self.neighbours_ = release.neighbours
        release_input(self, release.n_features)
        self.privacy_report_ = privacy_report(
            self, guarantee=release.guarantee, neighbours=release.neighbours, randomness=release.randomness,
            fitted_by="fit_release", parts=release.parts, noise=release_noise("second moment", release),
            release=release.to_dict())

    # -- the release ------------------------------------------------------------
    def _release_from(self, X):
        ranges = self._ranges(X)  # the user's, with the 0/1 columns' an opened table makes
        X = as_source(X).checked()  # dask collections and paths go to the streaming release unmaterialised
        name = self.mechanism.name if isinstance(self.mechanism, laws.Mechanism) else self.mechanism  # a value too
        check_option(name, "mechanism", self._mechanisms)  # the names this estimator offers
        self._check_affordable(ranges)
        kwargs = dict(row_norm=self.row_norm, mechanism=laws.MECHANISMS[name], neighbours=self.neighbours,
                      calibration=self.calibration, count_share=self.count_share)
        if self._private_choices(ranges) and ranges is not None:
            release = ranged_second_moment(X, ranges, self._column_names(X), epsilon=self.epsilon,
                                           delta=self.delta, center=self.center, center_budget=self._center_budget(),
                                           scale=self._scale(), bound_budget=self._bound_budget(), rng=self.rng,
                                           **kwargs)
        elif self._private_choices(ranges):
            release = private_second_moment(X, epsilon=self.epsilon, delta=self.delta, center=self.center,
                                            center_budget=self._center_budget(), scale=self._scale(),
                                            bound_budget=self._bound_budget(), rng=self.rng,
                                            column_names=self._column_names(X), **kwargs)
        else:
            if ranges is None:
                check_bound_budget_used(getattr(self, "bound_budget", BoundBudget.share), self.row_norm, None)
            release = release_second_moment(X, epsilon=self.epsilon, delta=self.delta, center=self.center,
                                            rng=self.rng, **kwargs)
        self._spend(release)
        return release

    #: What ``labelled()`` gives without an attribute: the estimator's main result.
    _labelled_default = "covariance_"

    def labelled(self, attribute=None):
        """A fitted attribute (``covariance_``, ``precision_``, ``location_``, ``components_``, ...) as a
        pandas ``DataFrame`` or ``Series`` labelled by the input's column names (``x0, x1, ...`` without
        names; one-hot and imputed columns by their ``col=level`` / ``col:missing`` names). Needs pandas.
        Without ``attribute``: the main result (``components_`` for PCA, ``covariance_`` for the others).
        Per-component attributes (``components_``, ``explained_variance_``, ...) are indexed ``pc1, pc2,
        ...``, also when there are as many components as columns.

        Examples
        --------
        >>> import numpy as np, pandas as pd, warnings
        >>> from dpmoments.estimators import PrivateCovariance
        >>> df = pd.DataFrame(np.random.default_rng(0).normal(size=(5000, 2)), columns=["age", "income"])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     est = PrivateCovariance(epsilon=1, delta=1e-6, rng=0).fit(df)
        >>> list(est.labelled("covariance_").columns)
        ['age', 'income']
        """
        attribute = self._labelled_default if attribute is None else attribute
        per_component = attribute.startswith(("components", "explained_variance", "singular_values"))
        return labelled_attribute(self, attribute, rows="pc" if per_component else None)

    def _column_names(self, X):
        """The feature columns' names, which ``ranges`` may use: the frame's, the file's, else x0, x1, ..."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            source = as_source(X)
            names = source.feature_names or [f"x{j}" for j in range(source.n_features)]
        return [str(n) for n in names]

    def _ranges(self, X):
        """``ranges`` with the 0 to 1 range of each one-hot or ``:missing`` column of an opened table ``X``."""
        return with_indicator_ranges(getattr(self, "ranges", None), X)

    def _private_choices(self, ranges=None):
        """Is anything chosen privately (a centre, scales, a row bound, ``ranges``)? Checks the options first.

        ``ranges``: the fit's (:meth:`_ranges`); the estimator's own where not given."""
        ranges = getattr(self, "ranges", None) if ranges is None else ranges
        if isinstance(self.center, str) and self.center != "private":
            raise ValueError(f"'center' must be None, a public vector or 'private'; got {self.center!r}.")
        private = needs_private_choices(self.row_norm, self.center, self._scale()) or ranges is not None
        if private and laws.named(self.mechanism) not in laws.ADDITIVE:
            what = [name for name, chosen in (("center='private' (the default)", isinstance(self.center, str)),
                                              ("row_norm='auto' (the default)", is_auto(self.row_norm)),
                                              ("scale='private'", self._scale() is not None),
                                              ("ranges", ranges is not None)) if chosen]
            raise ValueError(f"{' and '.join(what)}{' each' if len(what) > 1 else ''} supports mechanism "
                             f"{laws.offered(laws.ADDITIVE)}; got {self.mechanism!r}: give public values instead "
                             "(center=None or a vector, and a row_norm).")
        return private

    def _center_budget(self):
        split = CenterBudget() if self.center_budget is None else self.center_budget
        if not isinstance(split, CenterBudget):
            raise TypeError(f"'center_budget' must be a CenterBudget saying which share of the budget the private "
                            f"centre uses (or None for the defaults); got {split!r}.")
        return split

    def _scale(self):
        return getattr(self, "scale", None)

    _counts_clipping = False  # do this estimator's intervals count the clipping-excess release (error_budget.py)?

    def _bound_budget(self):
        """The bound's budget; without the clipping-excess release where the intervals would not use it."""
        budget = getattr(self, "bound_budget", 0.1)
        if self._counts_clipping or not is_auto(self.row_norm):
            return budget
        return dataclasses.replace(as_bound_budget(budget), bias=0.0)

    # -- the budget -------------------------------------------------------------
    def _planned_guarantee(self, ranges=None):
        """The guarantee the release will carry, known before touching the data (``ranges``: the fit's)."""
        ranges = getattr(self, "ranges", None) if ranges is None else ranges
        if self.mechanism == "output" and not math.isinf(self.epsilon):  # the graphical lasso's Wishart output noise
            return Uncertified(PureDP(self.epsilon), "Wishart noise with d+1 degrees of freedom is not epsilon-DP")
        return planned_second_moment_guarantee(
            self.epsilon, self.delta, mechanism=self.mechanism, calibration=self.calibration,
            neighbours=self.neighbours, count_share=self.count_share, row_norm=self.row_norm, center=self.center,
            scale=self._scale() or ("private" if ranges is not None else None))

    def _accountant(self):
        return check_accountant(self.accountant)

    def _check_affordable(self, ranges=None):
        acct = self._accountant()
        if acct is None:
            return
        planned = self._planned_guarantee(ranges)
        # Where the noise starts, read before the first draw: a second fit from the same seed is refused.
        self._noise_source = noise_source(self.rng)
        if not acct.can_spend(planned, neighbours=self.neighbours, noise_source=self._noise_source):
            acct.spend(planned, neighbours=self.neighbours, noise_source=self._noise_source)  # raises with the reason

    def _spend(self, spent):
        """Charge a Release (under its own relation; its parts named in the label) or a bare guarantee."""
        acct = self._accountant()
        if acct is not None:
            label, parts = name_of(self), getattr(spent, "parts", ())
            if parts:
                label += " (" + ", ".join(f"{p.label} {p.share:.3g}" for p in parts) + ")"
            acct.spend(spent, label=label, neighbours=self.neighbours,
                       noise_source=vars(self).pop("_noise_source", None))

    def _check_release(self, release):
        """``fit_release``'s first step: the parameters, then the release."""
        check_parameters(self)
        if not isinstance(release, Release) or release.second_moment is None:
            raise TypeError(f"'release' must be a Release with a second moment; got {release!r}.")
        return release


def in_original_units(release, matrix):
    """A matrix of the standardised rows' second moments mapped back: ``diag(s) M diag(s)``.

    Post-processing; ``matrix`` unchanged when the release has no column scales.
    """
    s = release.column_scale
    return matrix if s is None else matrix * np.outer(s, s)


def location_of(release):
    """The centre the release's rows were taken about (zeros when uncentred)."""
    return np.zeros(release.n_features) if release.center is None else np.array(release.center)
