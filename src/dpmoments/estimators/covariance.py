"""PrivateCovariance: a differentially private covariance (or uncentred second-moment) matrix.

The logic and the parameters are :class:`CovarianceFit`, which imports no scikit-learn (the command
line fits it); ``PrivateCovariance`` is the same class on scikit-learn's ``BaseEstimator``
(``scikit_learn.py``).
"""

import warnings

import numpy as np

from .._validation import check_data, check_delta
from ..data import as_source
from ..exceptions import BoundWarning
from ..moments.psd import SymmetricSpectrum
from ._conventions import all_or_nothing, check_input, name_of
from ._moment_base import MomentEstimator, in_original_units, location_of
from ._params import nonnegative, one_of, optional, param, parameters
from ._uncertainty_matrix import covariance_spread
from .noise_entries import LazyEntries
from ._budget_text import covers_text, not_covered_text
from .error_budget import covariance_error_budget, holding_estimate
from .summaries import covariance_summary

__all__ = ["CovarianceFit"]


def gaussian_log_likelihood(X, precision, location=None, owner="Estimator"):
    """Average Gaussian log-likelihood of the rows of X under N(location, precision^-1)."""
    X = check_data(X)
    if X.shape[1] != precision.shape[0]:
        raise ValueError(
            f"X has {X.shape[1]} features, but {owner} is expecting {precision.shape[0]} features as input."
        )
    Xc = X if location is None else X - location
    sign, logdet = np.linalg.slogdet(precision)
    if sign <= 0:
        return -np.inf
    quad = np.einsum("ij,jk,ik->i", Xc, precision, Xc).mean()
    d = X.shape[1]
    return 0.5 * (logdet - quad - d * np.log(2 * np.pi))


@parameters
class CovarianceFit(MomentEstimator):
    r"""Differentially private covariance matrix; with ``center=None``, the uncentred second moment.

    Like scikit-learn's covariance estimators, it centres by default -- at a
    private mean, from a reported share of the budget -- and chooses its row
    bound privately (``row_norm="auto"``), so no bound or centre has to be
    guessed. Rows are centred, (optionally) standardised by private column
    scales, clipped to :math:`\|x_i\|_2 \le R`, the mean of
    :math:`x_i x_i^\top` is released once with calibrated noise, and the
    result is (by default) projected to the positive semi-definite cone.

    Parameters
    ----------
    epsilon : float in (0, inf] or None, default=None
        ``inf`` releases the exact statistic with a ``NotPrivateWarning``;
        its private choices then return their best grid point exactly
        (docs/bounds.md). Required by ``fit``; ``fit_release`` takes the
        release's, as it does ``delta``, ``row_norm``, ``mechanism``,
        ``neighbours`` and the centre (those parameters are then ignored).
    delta : float in (0, 1) or None
        Required for ``"gaussian"`` and ``"wishart-approx"``.
    row_norm : float or "auto", default="auto"
        The L2 bound R on each (centred, scaled) row: public, or ``"auto"``,
        a private quantile of the row norms paid from ``bound_budget``
        (:mod:`dpmoments.moments.auto_release`).
    mechanism : {"gaussian", "laplace", "wishart", "wishart-approx"}, default="gaussian"
        A private centre, scale or bound needs ``"gaussian"`` or ``"laplace"``.
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
        ``"replace-one"``: one row replaced by another, n public; ``"zero-out"``:
        one row replaced by the zero row, n public (the papers' 1/n
        sensitivity); ``"add-remove"``: one row added or removed, n private
        (a noisy count from ``count_share`` of the budget; not with the
        Wishart mechanisms). The private centre, scales and bound are
        exponential-mechanism draws of sensitivity 1 under all three.
    calibration : {"analytic", "classic", "zcdp"}, default="analytic"
    center : "private", array-like of shape (n_features,) or None, default="private"
        ``"private"``: the covariance about a private mean paid from
        ``center_budget``; a vector: about a public centre; ``None``: the
        **uncentred second moment** :math:`\frac1n\sum_i x_i x_i^\top`
        (zero-mean data, as the papers assume).
    center_budget : CenterBudget or None
        The private centre's shares; ``None``: ``CenterBudget()`` (5% for
        where to clip the rows for the mean -- a private bound on ``||x||``,
        or private column medians with ``scale="private"`` -- and 20% for the
        mean).
    scale : None or "private", default=None
        ``"private"``: divide each column by a private 0.95-quantile of
        ``|x_j - m_j|`` before clipping (paid from ``bound_budget``), so that
        columns in different units share one row bound; the covariance is
        mapped back to the original units (post-processing).
    ranges : dict or None, default=None
        PUBLIC per-column ranges ``{column: (lower, upper)}`` (a DataFrame's
        or file's column names, or positions): each value is clipped to its
        range, 0/1 columns are scaled by their range and the others by
        private scales within it, or by the half-widths where the rows are
        too few (docs/bounds.md, "Ranges you know";
        :mod:`dpmoments.moments.ranged_release`). The ranges are free and
        enter no guarantee as data; private scales are paid from ``bound_budget``.
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        The share of epsilon spent choosing ``row_norm="auto"`` (and scales),
        including a noisy count of the rows clipped. Unused otherwise.
    method : {"standard", "coinpress"}, default="standard"
        ``"coinpress"``: Biswas, Dong, Kamath & Ullman's iterative
        estimator, which whitens the rows with its own noisy estimates
        before each release (:mod:`dpmoments.moments.coinpress`);
        Gaussian noise, zCDP accounting, ``row_norm`` only sets its first
        ball.
    psd_floor : float or None, default=0.0
        Eigenvalue floor applied to the released matrix (free
        post-processing, biased upwards); ``None`` keeps it as released.
    level : float in (0, 1), default=0.9
        Coverage of ``covariance_interval_``.
    target : {"population", "sample"}, default="population"
        What the intervals are for: the population quantity (as
        statsmodels; sampling variability counted by a bound that holds
        for any law of the clipped rows) or the
        value the same analysis gives on these rows without privacy. Both
        count the added noise, the private centre's noise and the clipping
        bias (docs/uncertainty.md, "The error budget").
    rng : None, int or numpy.random.Generator
    accountant : Accountant or None
        When given, the fit is refused before touching the data if it does
        not fit the remaining budget, and spent after the release.
    count_share : float in (0, 1), default=0.05
        Add-remove only: the share of the budget spent on the noisy row count.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
        In the original units (mapped back from the standardised release
        when ``scale="private"``).
    location_ : ndarray of shape (n_features,)
        The centre used (zeros for ``center=None``).
    release_ : Release
        Its ``parts`` list every share spent (centre, bound, scales,
        clipped-row count, second moment).
    privacy_ : PureDP, ApproxDP, ZCDP or Uncertified
        The guarantee the fit consumed: the composition of ``privacy_parts_``.
    privacy_parts_ : tuple of Part
        Each share of the budget, its guarantee and what it released.
    covariance_se_ : ndarray of shape (n_features, n_features)
        Each entry's standard error from the error budget: the added noise,
        the private centre's noise, the clipping allowance and (with
        ``target="population"``) the rows' sampling, in the units of
        ``covariance_`` (``uncertainty_`` names the parts counted).
    covariance_interval_ : ndarray of shape (2, n_features, n_features)
        Lower and upper ends of a ``level`` interval for each entry of the
        quantity ``target`` names (the population's covariance or these rows'),
        counting the same parts, widened to hold the printed estimate; NaN where
        a part cannot be bounded (the entry is withheld and says why); in the
        units of ``covariance_``. The noise alone: ``covariance_noise_interval_``.
    covariance_noise_se_, covariance_noise_interval_, covariance_sample_se_ : LazyEntries
        The noise-only standard errors and intervals (before the error
        budget), and the budget's spread without sampling: two numbers off the
        diagonal and two on it, kept as those and expanded when read
        (``np.asarray``, indexing, arithmetic: :mod:`.noise_entries`).
    snr_ : float
        Signal-to-noise of the released matrix: the estimated Frobenius norm
        of the exact matrix over the noise's (below 1: mostly noise).
    uncertainty_ : dict
        JSON-able: the noise law (of the released, standardised, matrix),
        the level, what the intervals cover.
    diagnostics_ : list of dict
        ``{"code", "message"}`` for each failed noise check (each also raised
        as a :class:`~dpmoments.exceptions.NoiseDominatesWarning`): the noise
        outweighs the signal, released variances below their noise level.
    neighbours_ : str
        The relation ``privacy_`` holds under (the release's).

    n_features_in_ : int
        Columns seen in ``fit`` (``fit_release``: the release's ``n_features``).
    feature_names_in_ : ndarray of str
        The column names, when ``fit`` was given a DataFrame whose column
        names are all strings (scikit-learn's rule); ``transform``,
        ``predict`` and ``score`` then check them.
    privacy_report_ : dict
        JSON-able, with the fields every estimator shares (``fitted_by``,
        ``spent``, ``guarantee``, ``neighbours``, ``parts``, ``noise``, ...;
        ``docs/privacy.md``), and ``release``: the release's metadata.

    Privacy
    -------
    The guarantee of :func:`dpmoments.release_second_moment` for the chosen
    mechanism: e.g. Gaussian, replace-one, L2 sensitivity
    :math:`\sqrt2 R^2/n` on the upper triangle, analytic calibration,
    (epsilon, delta)-DP. A private centre (column medians: exponential
    mechanism, sensitivity 1; mean: sensitivity :math:`2R/n`), private
    scales and a private bound (exponential mechanism, sensitivity 1) and
    the noisy clipped-row count (Laplace, sensitivity 1) compose with it
    sequentially (:mod:`dpmoments.moments.private_release`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators import PrivateCovariance
    >>> X = np.random.default_rng(0).normal(size=(20000, 3)) * [1, 10, 100] + 50
    >>> est = PrivateCovariance(epsilon=1.0, delta=1e-6, scale="private", rng=0).fit(X)
    >>> est.covariance_.shape, str(est.privacy_), [p.label for p in est.privacy_parts_][:3]
    ((3, 3), '(1, 1e-06)-DP', ['location', 'coarse column scales', 'coarse column scales, upper quartile'])
    >>> [p.label for p in est.privacy_parts_][-5:]  # after four refinement steps of the location
    ['row_norm', 'mean', 'clipping excess', 'clipped rows', 'second moment']
    >>> raw = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=None, rng=0).fit(X / 300)
    >>> str(raw.privacy_)  # the uncentred second moment, one public bound: one release
    '(1, 1e-06)-DP'
    """

    _estimator = "PrivateCovariance"
    _counts_clipping = True

    method: str = param("standard", check=one_of("standard", "coinpress"))
    psd_floor: float | None = param(0.0, check=optional(nonnegative))

    @all_or_nothing
    def fit(self, X, y=None):
        """Release the covariance (or second moment) of ``X`` and set ``covariance_``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features), dask collection or path
            A DataFrame's string column names become ``feature_names_in_``.
        y : ignored

        Returns
        -------
        self
        """
        if self.method == "coinpress":  # any other value: refused by the parameters' checks
            if self._ranges(X) is not None:  # the user's, or an opened table's 0/1 columns'
                raise ValueError("'ranges' (given, or the 0:1 of a table's one-hot and :missing columns) is not "
                                 "available with method='coinpress' (its first ellipsoid comes from private scales); "
                                 "use method='standard'.")
            return self._fit_from_data(X, self._coinpress_release)
        return self._fit_from_data(X, self._release_from)

    def _coinpress_release(self, X):
        """CoinPress's release (:mod:`dpmoments.moments.coinpress`), its options checked first and charged after."""
        from ..moments.coinpress import check_coinpress, coinpress_release

        X = as_source(X).checked()
        self._private_choices()  # validates 'center' and the mechanism
        check_coinpress(X, mechanism=self.mechanism, scale=self._scale(), neighbours=self.neighbours,
                        epsilon=self.epsilon, delta=self.delta)
        self._check_affordable()
        check_delta(self.delta, allow_zero=False)  # refused before a wrong 'center_budget', as always
        release = coinpress_release(X, epsilon=self.epsilon, delta=self.delta, row_norm=self.row_norm,
                                    center=self.center, center_budget=self._center_budget(),
                                    bound_budget=self._bound_budget(), rng=self.rng)
        self._spend(release)
        return release

    @all_or_nothing
    def fit_release(self, release):
        """Use a release already paid for: no new privacy cost, and no privacy parameter needed.

        ``epsilon``, ``delta``, ``row_norm``, ``mechanism``, ``neighbours``,
        ``center`` and their budgets are the release's; only ``psd_floor``
        and ``level`` are used here.
        """
        raw = release = self._check_release(release)
        floor = None if self.psd_floor is None else float(self.psd_floor)
        spectrum = SymmetricSpectrum(raw.second_moment)  # one eigh, where any: the projection and the error budget
        if floor is not None:
            release = release.project_psd(floor, spectrum)
        vars(self).update(covariance_spread(raw, self.level, name_of(self)))
        self._count_every_part(raw, spectrum)
        self._record_release(release)
        self.covariance_ = np.array(in_original_units(release, release.second_moment), copy=release.column_scale is None)
        self.covariance_interval_ = holding_estimate(self.covariance_interval_, self.covariance_, in_place=True)
        self.location_ = location_of(release)
        return self

    def _count_every_part(self, raw, spectrum=None):
        """Widen the noise-only intervals to the error budget (error_budget.py): centre, sampling, clipping."""
        target = self.target
        units = None if raw.column_scale is None else np.outer(raw.column_scale, raw.column_scale)
        noise_se = self.covariance_noise_se_ = self.covariance_se_  # LazyEntries: two numbers, made when read
        self.covariance_noise_interval_ = self.covariance_interval_
        spread = noise_se.spread
        budget = covariance_error_budget(raw, LazyEntries(spread, "se", standardised=True),
                                         LazyEntries(spread, "interval", standardised=True), self.level, target,
                                         spectrum)
        # the budget's own new arrays, mapped to the original units in place (each d x d)
        self.covariance_se_, self.covariance_interval_ = _times(budget["se"], units), _times(budget["interval"], units)
        spread.centre_scale = budget["parts"]["centre_noise_scale"]
        # without sampling (PrivateCorrelation adds its own)
        self.covariance_sample_se_ = LazyEntries(spread, "sample_se")
        self.covariance_biased_ = budget["biased"]
        clip = not isinstance(budget["parts"]["clipping"], str)
        centre = not budget["parts"]["centre_bias"].startswith("not")
        self.uncertainty_.update(covers=covers_text(target, clip, centre),
                                 not_covered=not_covered_text(target, clip, centre),
                                 error_budget=budget["parts"],
                                 scope=_scope(target, clip, self.level, budget["parts"]["level_each"], centre))
        if clip and budget["parts"]["clipping"]["material_columns"]:  # a bias, not noise: a BoundWarning
            message = _clipping_message(budget["parts"]["clipping"])
            warnings.warn(f"{name_of(self)}: {message}", BoundWarning, stacklevel=3)
            self.diagnostics_ = self.diagnostics_ + [{"code": "clipping-bias", "message": message}]

    def summary(self, feature_names=None, data_name=None):
        """The fit's :class:`~.summary.Summary`: ``str(est.summary())`` is what ``dpmoments covariance`` prints.

        The command line's table for this fit: every variance and the largest off-diagonal entries against
        their noise; how much of it is noise, the guarantee and the private choices. Post-processing: no
        privacy cost. ``feature_names`` default to ``feature_names_in_`` (else x0, x1, ...); ``data_name``
        names the data in the title.
        """
        return covariance_summary(self, feature_names, data_name)

    def get_precision(self):
        """The pseudo-inverse of ``covariance_``."""
        from scipy import linalg  # here: a covariance command never loads scipy.linalg (0.4 CPU-s)

        return linalg.pinvh(self.covariance_)

    def score(self, X, y=None):
        """Average Gaussian log-likelihood of ``X`` (your own evaluation data)."""
        return gaussian_log_likelihood(check_input(self, X), self.get_precision(), self.location_, name_of(self))


def _times(a, units):
    """``a * units`` written into ``a`` (a new array of the error budget's); ``a`` itself without column scales."""
    if units is not None:
        a *= units
    return a


def _scope(target, clip, level, each, centre=False):
    """The console's one line on what the intervals hold."""
    parts = "noise, private centre" + (" and its clipping bias (bound)" if centre else "") + \
        (", sampling (bound)" if target == "population" else "") + \
        (", clipping bias where measured" if clip else "; not clipping bias (nothing released measures it)")
    return (f"for the {'population' if target == 'population' else 'full-data'} covariance: {parts}; the entries "
            f"whose interval excludes 0 at level {each:.4g}, so that at most {1 - level:.0%} of them miss; the others "
            f"at {level:g}, stretched to hold 0")


def _clipping_message(clip):
    """The ``clipping-bias`` check: columns whose variance lost to clipping stands out of its release's noise."""
    return (f"clipping at the private row bound removed from {len(clip['material_columns'])} column(s)' variance "
            "more than its interval's half-width would hold without it: their intervals are moved and widened by the "
            "released loss" +
            (", but rows beyond twice the bound were also seen, whose loss beyond it is not counted (marked "
             "'biased')" if clip["loss_beyond_outer_unseen"] else
             ", but rows beyond twice the bound are not ruled out, whose loss beyond it is not counted: the "
             "variances of those columns are withheld (marked 'biased')" if clip.get("variances_withheld") else "") +
            "; give a public bound that holds the data (or a larger bound_budget) for less bias.")
