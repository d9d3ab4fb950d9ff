r"""PrivatePCA: principal components from a privately released second moment (Analyze Gauss).

Dwork, Talwar, Thakurta & Zhang (STOC 2014), as used centrally by Imtiaz &
Sarwate (capePCA, ``docs/algorithms.md`` §2.5 and §6.1): release
:math:`\hat A = \frac1n\sum_i x_i x_i^\top + E` once, then take its top-``k``
eigenvectors (free post-processing). The top-``k`` eigenpairs come from a
partial eigensolver (:func:`dpmoments.solvers.eigen.top_eigenpairs`).

The logic and the parameters are :class:`PCAFit`, which imports no scikit-learn (the command line
fits it); ``PrivatePCA`` is the same class with scikit-learn's transformer mixins and
``BaseEstimator`` (``scikit_learn.py``).
"""

import numpy as np

from .._validation import check_data
from ..solvers.eigen import EIGEN_METHODS, top_eigenpairs
from ._conventions import all_or_nothing, check_input, name_of
from ..data import as_source
from ._moment_base import MomentEstimator, in_original_units, location_of
from ._params import REQUIRED, integer, one_of, param, parameters, value_only
from ._uncertainty_matrix import _scales, pca_spread
from .diagnostics import Diagnostics
from .eigenvalue_budget import eigenvalue_error_budget
from .perturbation import bias_perturbation
from .error_draws import error_parts, every_part_draws
from .uncertainty import UNSTABLE_DEGREES, bootstrap_generator, check_draws, fewest_draws
from .component_summaries import pca_summary

__all__ = ["PCAFit"]  # PrivatePCA: this class on scikit-learn's BaseEstimator and mixins (scikit_learn.py)


@parameters
class PCAFit(MomentEstimator):
    r"""Differentially private principal component analysis by moment perturbation.

    .. math::

        \hat A = \frac1n \sum_i \bar x_i \bar x_i^\top + E, \qquad
        \hat A v_j = \hat\lambda_j v_j, \quad j = 1, \dots, k

    where :math:`\bar x_i` is row :math:`x_i - c` clipped to
    :math:`\|\bar x_i\|_2 \le R` and ``E`` is symmetric noise.

    A scikit-learn transformer: ``transform``, ``fit_transform`` and
    ``inverse_transform``; ``get_feature_names_out`` names the components
    ``privatepca0, privatepca1, ...``, and ``set_output(transform="pandas")``
    makes ``transform`` return a DataFrame with those columns.

    Parameters
    ----------
    n_components : int >= 1
        ``k``; at most ``n_features`` (checked in ``fit``).
    epsilon : float in (0, inf] or None, default=None
        Required by ``fit``; ``fit_release`` uses the release's privacy
        parameters and ignores these.
    delta : float in (0, 1) or None
        Required for the Gaussian mechanism.
    row_norm : float or "auto", default="auto"
        The public L2 bound R on each (centred) row, or ``"auto"``: chosen
        privately from ``bound_budget`` (as in :class:`PrivateCovariance`; the
        report lists its share). The Wishart mechanisms need a public number.
    mechanism : {"gaussian", "laplace", "wishart", "wishart-approx"}, default="gaussian"
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
        ``"replace-one"``: one row replaced by another, n public; ``"zero-out"``:
        one row replaced by the zero row, n public (the papers' 1/n
        sensitivity); ``"add-remove"``: one row added or removed, n private
        (a noisy count from ``count_share`` of the budget; not with the
        Wishart mechanisms).
    calibration : {"analytic", "classic", "zcdp"}, default="analytic"
    center : "private", array-like of shape (n_features,) or None, default="private"
        ``"private"`` (the default, as the command line's): a private mean
        paid from ``center_budget``; a vector: a public centre (sklearn's PCA
        is this with the data mean); ``None``: the raw second moment (PCA of
        zero-mean data, as the papers).
    center_budget : CenterBudget or None
        The private centre's shares (``None``: ``CenterBudget()``).
    scale : None or "private", default=None
        ``"private"``: standardise the columns by private scales before
        clipping (paid from ``bound_budget``); the components are those of
        the covariance mapped back to the original units.
    ranges : dict or None, default=None
        PUBLIC per-column ranges ``{column: (lower, upper)}`` (a DataFrame's
        or file's column names, or positions): each value is clipped to its
        range, 0/1 columns are scaled by their range and the others by
        private scales within it, or by the half-widths where the rows are
        too few (docs/bounds.md, "Ranges you know";
        :mod:`dpmoments.moments.ranged_release`). The ranges are free and
        enter no guarantee as data; private scales are paid from ``bound_budget``.
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        The share spent on ``row_norm="auto"`` / ``scale="private"``.
    eigensolver : {"auto", "eigh", "eigsh"}, default="auto"
        ``"auto"`` uses ARPACK only for ``d >= 1000`` and ``k <= d/100``
        (where it was measured faster), else LAPACK ``eigh`` on a subset.
    n_draws : int >= 0, default=0
        Parametric-bootstrap draws of the release's noise (0: closed forms
        only). Each draw costs one top-``k`` eigendecomposition.
    level : float in (0, 1), default=0.9
        Coverage of ``explained_variance_interval_``.
    target : {"population", "sample"}, default="population"
        What the intervals are for: the population quantity (as
        statsmodels; sampling variability counted, normal theory) or the
        value the same analysis gives on these rows without privacy. Both
        count the added noise, the private centre's noise and the clipping
        bias (docs/uncertainty.md, "The error budget").
    rng : None, int or numpy.random.Generator
        The release's noise; the bootstrap draws from a separate stream of it.
    accountant : Accountant or None
        Checked before the data are touched; charged after the release.
    count_share : float in (0, 1), default=0.05
        Add-remove only: the share of the budget spent on the noisy row count.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal rows, largest eigenvalue first; each row's entry of
        largest magnitude is positive (scikit-learn's ``svd_flip`` rule).
    explained_variance_ : ndarray of shape (n_components,)
        The top eigenvalues of the released matrix (divisor ``n``, not
        ``n - 1``; noisy, so possibly negative at small epsilon).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``max(eigenvalue, 0) / sum of all max(eigenvalue, 0)``: the share of
        the released spectrum floored at zero (the trace of the matrix's PSD
        projection), so the ratios lie in [0, 1] and sum to at most 1. (The
        trace of the noisy matrix itself is smaller than the sum of its
        positive eigenvalues, and ratios against it can sum past 1.)
    mean_ : ndarray of shape (n_features,)
        The centre used (zeros for ``center=None``).
    n_components_ : int
    release_ : Release
    privacy_ : guarantee
        What the fit consumed (``fit_release`` consumes nothing new).
    privacy_parts_ : tuple of Part
        Each share spent (a private centre, bound or scales, and the second
        moment); empty for a single release.
    explained_variance_se_, explained_variance_interval_ : ndarray
        Standard error and ``level`` interval, shape ``(k,)`` and ``(2, k)``,
        of each eigenvalue of the exact matrix: first-order closed form, or
        the bootstrap's with ``n_draws`` at least ``fewest_draws(level)`` (fewer: the closed form).
    components_above_noise_ : ndarray of bool, shape (n_components,)
        Eigenvalue above the noise's spectral norm (``eigenvalue_noise_floor_``).
        A component below it is noise.
    components_identified_ : ndarray of bool, shape (n_components,)
        Eigenvalue further from both neighbours (in the whole released
        spectrum) than pure noise would put two equal eigenvalues 95% of the
        time (4.9 noise sd): otherwise its direction is noise (check
        ``components-unidentified``); only the subspace it shares may mean something.
    component_snr_ : ndarray of shape (n_components,)
        Eigenvalue (less the noise's mean) over the noise's spectral norm.
    n_eigenvalues_above_noise_ : int
        Over the whole released spectrum.
    spectrum_ : ndarray of shape (n_features,)
        Every eigenvalue of the released matrix (in the data's units), largest first: the spectrum
        that ``explained_variance_ratio_`` and the noise checks read, computed once.
    subspace_angle_bound_ : float
        Degrees: a Davis-Kahan bound ``asin(2 ||E|| / gap)`` on the largest
        angle between the released and the exact top-``k`` subspaces, with the
        released eigengap ``lambda_k - lambda_{k+1}`` (90 when it is vacuous).
    component_angles_, subspace_angle_ : ndarray, float or None
        With ``n_draws >= fewest_draws(level)``: the median angle (degrees) between each fitted
        component and its counterpart in draws carrying the noise, the private
        centre's noise, the clipping loss and (``target="population"``)
        sampling (``estimators/error_draws.py``; a component is identified only
        where its ``level`` quantile stays within 45 degrees), and the median
        largest principal angle between the fitted and the noise-redrawn
        subspaces. ``component_noise_angles_``: the noise-only angles.
    snr_ : float
        ``component_snr_[0]``.
    uncertainty_ : dict
        JSON-able summary of all of the above.
    diagnostics_ : list of dict
        Failed noise checks (each also a ``NoiseDominatesWarning``): no
        eigenvalue, or only some, above the noise.
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
    The guarantee of :func:`dpmoments.release_second_moment`: Gaussian,
    replace-one, L2 sensitivity :math:`\sqrt2 R^2/n` on the upper triangle,
    analytic calibration, (epsilon, delta)-DP (Imtiaz & Sarwate's
    :math:`1/n` is the zero-out value: pass ``neighbours="zero-out"`` to
    reproduce it). The eigendecomposition is post-processing. ``n`` is public
    under replace-one and zero-out; under add-remove it is a noisy count.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators import PrivatePCA
    >>> X = np.random.default_rng(0).normal(size=(20000, 5)) * [3, 1, 1, 1, 1] / 8
    >>> pca = PrivatePCA(n_components=2, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0).fit(X)
    >>> pca.components_.shape, bool(abs(pca.components_[0, 0]) > 0.99)
    ((2, 5), True)
    >>> list(pca.get_feature_names_out())  # the columns of transform's DataFrame with set_output("pandas")
    ['privatepca0', 'privatepca1']
    """

    _estimator = "PrivatePCA"
    _counts_clipping = True
    _labelled_default = "components_"  # labelled(): no covariance_ here

    n_components: int = param(REQUIRED, check=integer(minimum=1))  # at most n_features: _components
    eigensolver: str = param("auto", check=one_of(*EIGEN_METHODS))
    n_draws: int = param(0, check=value_only(check_draws))

    def _components(self, n_features):
        """``n_components``, which the parameters' checks made an integer >= 1, against the input's width."""
        k = int(self.n_components)
        if k > n_features:
            raise ValueError(f"'n_components' must be an integer in [1, n_features={n_features}]; got {k}.")
        return k

    @all_or_nothing
    def fit(self, X, y=None):
        """Release the second moment of ``X`` (one pass, noise once) and set the components.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features), dask collection or path
            A DataFrame's string column names become ``feature_names_in_``.
        y : ignored

        Returns
        -------
        self
        """
        def release(data):
            data = as_source(data).checked()  # dask collections and paths are streamed by the release, not loaded here
            self._components(as_source(data).n_features)  # before the budget is touched
            return self._release_from(data)

        return self._fit_from_data(X, release)

    @all_or_nothing
    def fit_release(self, release):
        """Components of a release already paid for: no new privacy cost, and no privacy parameter needed.

        Uses ``n_components``, ``eigensolver``, ``n_draws``, ``level`` and
        ``rng`` (the bootstrap's stream); the rest is the release's.
        """
        release = self._check_release(release)
        k = self._components(release.n_features)
        S = in_original_units(release, release.second_moment)
        eig = top_eigenpairs(S, k, method=self.eigensolver)
        self._record_release(release)
        self.components_ = np.ascontiguousarray(eig.eigenvectors.T)
        self.explained_variance_ = eig.eigenvalues
        self.spectrum_ = spectrum = np.linalg.eigvalsh(S)[::-1]
        total = float(np.sum(np.maximum(spectrum, 0.0)))
        self.explained_variance_ratio_ = np.maximum(eig.eigenvalues, 0.0) / total if total > 0 else np.full(k, np.nan)
        self.mean_ = location_of(release)
        self.n_components_ = k
        self.eigensolver_ = eig.method
        vars(self).update(pca_spread(release, self, spectrum, self.n_draws, self.level, self.rng, "PrivatePCA"))
        self._count_every_part(release, spectrum)
        return self

    def _count_every_part(self, release, spectrum):
        """Widen the noise-only eigenvalue intervals to the error budget (error_budget.py)."""
        target = self.target
        self.explained_variance_noise_se_ = self.explained_variance_se_
        self.explained_variance_noise_interval_ = self.explained_variance_interval_
        interval, se, parts = eigenvalue_error_budget(release, self.components_, self.explained_variance_interval_,
                                                      self.explained_variance_se_, self.level, target, spectrum)
        self.explained_variance_interval_, self.explained_variance_se_ = interval, se
        self._identified_beyond_noise(release, spectrum, parts, target)
        if self._drawn():
            self._stable_across_every_part(release, target)
        self.uncertainty_.update(explained_variance_interval=interval.tolist(), explained_variance_se=se.tolist(),
                                 error_budget=parts, **_eigenvalue_words(parts, target))

    def _drawn(self):
        """Whether the draws reach the level's tails (fewer: the closed forms stand, uncertainty.fewest_draws)."""
        return self.n_draws >= fewest_draws(self.level)

    def _identified_beyond_noise(self, release, spectrum, parts, target):
        """Components identified only where their eigengap also stands out of the centre, clipping and sampling.

        Redrawing the noise cannot show a bias: on breast cancer at epsilon 1 pc2 turned 18 degrees across
        redraws yet was orthogonal to the full-data pc2, the clipping of a fifth of the rows having reordered
        the spectrum. Davis-Kahan: a gap below twice the perturbation's norm leaves the direction unknown.
        """
        # the centre's own clipping bias at its bound's worst-case norm only without draws: with them, the draws carry
        # it at its bound's corners and judge each component (the worst case cost RAND HIE 2 of 9 stable components
        # and 0/1 columns 4 of 10, none of them wrong, in python -m benchmarks coverage)
        bound = bias_perturbation(release, parts, spectrum[:1], target, None if self._drawn() else self.level)
        k = self.n_components_
        gaps = np.full(len(spectrum) + 1, np.inf)
        gaps[1:-1] = spectrum[:-1] - spectrum[1:]
        clear = np.minimum(gaps[:k], gaps[1:k + 1]) > 2.0 * bound
        lost = self.components_identified_ & ~clear
        parts["perturbation_bound"] = bound
        self.components_identified_ = self.components_identified_ & clear
        self.uncertainty_["components_identified"] = self.components_identified_.tolist()
        if lost.any():
            which = ", ".join(str(j + 1) for j in np.flatnonzero(lost))
            message = (f"component(s) {which} stand out of the noise but not of the centre's, clipping's and "
                       f"sampling's pull (its bound {bound:.3g} against their eigengaps): their directions may "
                       "differ from the full-data ones; the subspace they share with their neighbours may still "
                       "mean something.")
            Diagnostics(name_of(self)).flag("components-unidentified", message)
            self.diagnostics_ = self.diagnostics_ + [{"code": "components-unidentified", "message": message}]

    def _stable_across_every_part(self, release, target):
        """Component angles across draws that carry every part of the error (error_draws.py), not the noise alone.

        A component is identified only where its angle to the draws' counterparts stays within
        UNSTABLE_DEGREES in a ``level`` share of them; where clipping's loss beyond its outer bound is
        unseen, no direction can be shown to stand out of it, and none is identified.
        """
        parts = error_parts(release, self.level, target)
        gen, k = bootstrap_generator(self.rng), self.n_components_
        units = np.outer(_scales(release), _scales(release))

        def angles(drawn):
            V = top_eigenpairs(drawn.second_moment * units, k, method=self.eigensolver_).eigenvectors
            return np.degrees(np.arccos(np.minimum(np.abs(np.sum(V * self.components_.T, axis=0)), 1.0)))

        sets = every_part_draws(release, parts, angles, self.n_draws, gen)
        counted, left = parts.in_words()
        self.uncertainty_["components_identified_closed_form"] = self.components_identified_.tolist()
        self.component_noise_angles_ = self.component_angles_
        self.component_angles_ = np.median(sets[0], axis=0)
        # the larger over the sets: an undetected clipping loss and the centre's bias at 0 or at their bounds
        upper = np.max([np.quantile(a, self.level, axis=0, method="weibull") for a in sets], axis=0)
        stable = (upper <= UNSTABLE_DEGREES) & (not parts.unseen)
        lost = self.components_identified_ & ~stable
        self.components_identified_ = self.components_identified_ & stable
        self.uncertainty_.update(component_angles_degrees=self.component_angles_.tolist(),
                                 component_angle_upper_degrees=upper.tolist(),
                                 components_identified=self.components_identified_.tolist(),
                                 angles_count=f"every part: {counted}", angles_not_counted=left,
                                 angle_draws=parts.summary())
        if lost.any():
            which = ", ".join(str(j + 1) for j in np.flatnonzero(lost))
            why = ("rows beyond the clipping-excess release's outer bound lost more than it sees"
                   if parts.unseen else f"their {self.level:.0%} angle across draws carrying {counted} exceeds "
                                        f"{UNSTABLE_DEGREES:g} degrees")
            message = (f"component(s) {which} are not stable: {why}; their directions may differ from the "
                       "full-data ones.")
            Diagnostics(name_of(self)).flag("components-unidentified", message)
            self.diagnostics_ = self.diagnostics_ + [{"code": "components-unidentified", "message": message}]

    def summary(self, feature_names=None, data_name=None):
        """The fit's :class:`~.summary.Summary`: ``str(est.summary())`` is what ``dpmoments pca`` prints.

        The command line's table for this fit: each eigenvalue with its noise and the loadings of the
        components that mean something; how much of it is noise, the guarantee and the private choices.
        Post-processing: no privacy cost. ``feature_names`` default to ``feature_names_in_`` (else x0, x1,
        ...); ``data_name`` names the data in the title.
        """
        return pca_summary(self, feature_names, data_name)

    @property
    def _n_features_out(self):
        """The width of ``transform``'s output, for ``get_feature_names_out`` (scikit-learn's mixin)."""
        return self.components_.shape[0]

    def transform(self, X):
        """Project ``X`` on the components: ``(X - mean_) @ components_.T``, shape (n, n_components).

        Post-processing of the release applied to your own rows: it costs no
        budget, but the scores are those rows' (exact) projections, as private
        as the rows themselves. With ``set_output(transform="pandas")`` the
        result is a DataFrame with columns ``get_feature_names_out()``.
        """
        _check_is_fitted(self)
        return (check_input(self, X) - self.mean_) @ self.components_.T

    def inverse_transform(self, X):
        """Map scores back to feature space: ``X @ components_ + mean_``."""
        _check_is_fitted(self)
        X = check_data(X)
        if X.shape[1] != self.n_components_:
            raise ValueError(f"'X' must have {self.n_components_} columns (one per component); got {X.shape[1]}.")
        return X @ self.components_ + self.mean_


def _eigenvalue_words(parts, target):
    """``covers``, ``not_covered`` and ``scope`` of the eigenvalue intervals (eigenvalue_error_budget's ``parts``):
    the centre's parts named only where the centre is private, clipping only where it is released."""
    what = "population" if target == "population" else "full-data"
    private, bounded = parts["centre_noise_scale"] > 0, parts["centre_bias"] != "not bounded"
    clipping = isinstance(parts["clipping"], dict)
    turn = clipping and "may_turn" in parts["clipping"]  # the loss matrix is released (eigenvalue_turn.py)
    counted = ["the added noise"] + (["the private centre's noise"] if private else []) + (
        ["the private centre's own clipping bias (a bound from the release)"] if private and bounded else []) + (
        ["sampling (normal theory; where m released eigenvalues may tie, the group's spread (1 +- sqrt((m - 1)/n))^2 "
         "about them)"] if target == "population" else []) + (
        ["clipping bias (upwards, by the released loss along each component or its trace; rows beyond twice the "
         "bound taken to lose beyond it at most twice what the band lost along the first component, once along the "
         "later ones)"] if clipping else []) + (
        ["where the released loss says clipping may turn the first component, a turn-proof (Courant-Fischer) "
         "upper end for it"] if turn else [])
    left = ["the directions' own error (see components_identified_, subspace_angle_bound_)"] + (
        ["a loss beyond twice the bound over twice the band's along the first component, over the band's along "
         "the later ones (tails heavier than |x|^-3)"] if clipping
        else ["clipping bias (public row_norm)"]) + (
        ["clipping turning a component after the first (first order along them)"] if turn else []) + (
        ["the private centre's own clipping bias (not bounded)"] if private and not bounded else []) + (
        ["sampling beyond normal theory (heavy tails)"] if target == "population" else [])
    short = ["noise"] + (["private centre"] if private else []) + (["sampling"] if target == "population" else [])
    return {"covers": f"the {what} eigenvalues: " + ", ".join(counted), "not_covered": "; ".join(left),
            "scope": f"eigenvalues of the {what} covariance: " + ", ".join(short)
                     + (", clipping bias (beyond twice the bound: at most twice the band's on the first component, once on "
                           "the later ones)" if clipping
                        else "; not clipping bias")}


def _check_is_fitted(estimator):
    from sklearn.utils.validation import check_is_fitted  # here: transform is scikit-learn's API, fit_release not

    check_is_fitted(estimator)
