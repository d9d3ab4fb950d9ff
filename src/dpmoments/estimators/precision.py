"""Private precision matrices: what they share, and the graphical lasso (ridge precision: ``ridge.py``).

The logic and the parameters are :class:`GraphicalLassoFit`, which imports no scikit-learn (the
command line fits it); ``PrivateGraphicalLasso`` is the same class on scikit-learn's
``BaseEstimator`` (``scikit_learn.py``).
"""

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix

from .._validation import check_int, check_option, check_positive, check_real
from ..mechanisms import laws
from ..solvers import graphical_lasso, graphical_lasso_admm, iter_graphical_lasso_path
from ._conventions import all_or_nothing, check_input, name_of
from ._glasso_output import fit_output
from ._glasso_path import SPARSE_PATH_FROM, GlassoPath, _dense, _n_edges, _with_dual
from ._moment_base import MomentEstimator, location_of
from ._params import check_parameters, nonnegative, one_of, optional, param, parameters, value_only
from ._uncertainty_matrix import precision_spread
from .uncertainty import check_draws
from .error_draws import error_parts
from .covariance import gaussian_log_likelihood
from .selection import alpha_grid, ebic, ebic_of_solution, noise_floor
from .summaries import precision_summary

# PrivateGraphicalLasso: this class on scikit-learn's BaseEstimator (scikit_learn.py)
__all__ = ["GlassoPath", "GraphicalLassoFit"]


def _in_original_units(release, precision):
    """A precision fitted on a standardised release, mapped back: ``diag(1/s) Theta_z diag(1/s)`` (post-processing)."""
    if release.column_scale is None:
        return precision
    return precision / np.outer(release.column_scale, release.column_scale)


def _glasso_alpha(alpha, name):
    """A penalty > 0, or the rule that chooses it: "ebic" or "edges"."""
    if isinstance(alpha, str):
        check_option(alpha, name, ("ebic", "edges"))
    else:
        check_positive(alpha, name)


def _ebic_gamma(gamma, name):
    if not 0 <= check_real(gamma, name) <= 1:
        raise ValueError(f"'{name}' must be in [0, 1] (Foygel & Drton's range); got {float(gamma)}.")


def _alpha_floor(floor, name):
    """``"noise"`` (the release's noise level) or a penalty >= 0."""
    if isinstance(floor, str):
        check_option(floor, name, ("noise",))
    else:
        nonnegative(floor, name)


@parameters
class _PrecisionBase(MomentEstimator):
    _counts_clipping = True  # the draws count the clipping-excess release (error_draws.py)

    n_draws: int = param(0, check=value_only(check_draws))

    def _finish(self, precision, release):
        """Set the estimate fitted from ``release`` (which ``_record_release`` has recorded)."""
        precision = _in_original_units(release, precision)
        self.precision_ = precision
        self.covariance_ = np.linalg.inv(precision)
        self.covariance_ = 0.5 * (self.covariance_ + self.covariance_.T)
        self.location_ = location_of(release)
        return self

    def _noisy_S(self, release):
        floor = None if self.psd_floor is None else float(self.psd_floor)
        return release if floor is None else release.project_psd(floor)

    def _spread(self, raw, solve):
        """Noise checks and (with ``n_draws``) the bootstrap: ``solve(S) -> precision`` on each redrawn matrix."""
        # in the estimate's units: a standardised release's refits are mapped back as the estimate was
        refit = lambda draw: _in_original_units(raw, solve(self._noisy_S(draw).second_moment))  # noqa: E731
        graph, parts = isinstance(self, GraphicalLassoFit), error_parts(raw, self.level, self.target)
        vars(self).update(precision_spread(raw, self, refit, self.n_draws, self.level, self.rng,
                                           name_of(self), graph, parts))

    @all_or_nothing
    def fit(self, X, y=None):
        """Release the second moment of ``X`` and fit from it.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features), dask collection or path
            A DataFrame's string column names become ``feature_names_in_``.
        y : ignored

        Returns
        -------
        self
        """
        return self._fit_from_data(X, self._release_from)

    def summary(self, feature_names=None, data_name=None):
        """The fit's :class:`~.summary.Summary`: ``str(est.summary())`` is what ``dpmoments precision`` prints.

        The command line's table for this fit: the penalty, the number of edges and the strongest edges with
        their noise; how much of it is noise, the guarantee and the private choices. Post-processing: no
        privacy cost. ``feature_names`` default to ``feature_names_in_`` (else x0, x1, ...); ``data_name``
        names the data in the title.
        """
        return precision_summary(self, "glasso" if isinstance(self, GraphicalLassoFit) else "ridge", feature_names,
                                 data_name)

    def score(self, X, y=None):
        """Average Gaussian log-likelihood of ``X`` (your own evaluation data)."""
        return gaussian_log_likelihood(check_input(self, X), self.precision_, self.location_, name_of(self))


@parameters
class GraphicalLassoFit(_PrecisionBase):
    r"""Differentially private sparse precision matrix by the graphical lasso.

    .. math::

        \hat\Theta = \arg\min_{\Theta \succ 0} -\log\det\Theta + \mathrm{tr}(\tilde S\Theta)
        + \alpha \sum_{ij} |\Theta_{ij}|

    on the privately released :math:`\tilde S` (covariance perturbation:
    Wang et al. 2018 Algorithm 2; Su et al. 2019 DP-AGL), which is projected
    to the PSD cone first by default (an indefinite :math:`\tilde S` can make
    the problem unbounded, docs/algorithms.md §0.5).

    Parameters
    ----------
    alpha : float > 0, "ebic" or "edges", default="ebic"
        The penalty (the command line's default too). ``"ebic"`` picks it from ``alphas`` by the extended BIC
        computed on the released matrix only (free post-processing; the raw
        data are never touched again); ``"edges"`` picks the smallest penalty of
        ``alphas`` whose graph has at most ``max_edges`` edges (the largest
        penalty if none has). Both solve the grid once, as one warm-started path
        (``path_``).
    epsilon, delta, row_norm, mechanism, neighbours, calibration, center, center_budget, scale, ranges, bound_budget, rng, accountant, count_share
        As in :class:`PrivateCovariance` (``epsilon`` required by ``fit``;
        ``row_norm`` defaults to ``"auto"``, a private draw whose share the
        report lists; both ignored by ``fit_release``; ``center`` defaults to
        ``"private"``, a private mean, and ``center=None`` gives the papers'
        zero-mean second moment); with ``scale="private"`` the penalty applies to the
        standardised precision, mapped back afterwards. ``mechanism`` may also be
        ``"output"``: Wang et al.'s output perturbation (exact graphical lasso,
        then Wishart noise), reported as :class:`~dpmoments.Uncertified`
        (replace-one or zero-out: it needs the exact n).
    alphas : int or array-like, default=20
        The grid for ``alpha="ebic"``: a number of log-spaced values below the
        largest off-diagonal entry of the released matrix, or explicit values.
    ebic_gamma : float in [0, 1], default=0.5
    max_edges : int >= 0, optional
        The edge budget of ``alpha="edges"``.
    alpha_floor : "noise" or float >= 0, default="noise"
        The smallest penalty of the ``alpha="ebic"`` grid. ``"noise"``: the release's
        noise level, :func:`~dpmoments.estimators.noise_floor` (below it the release's
        noise alone makes edges, and the eBIC, blind to that noise, picks dense graphs);
        ``0``: the grid as given.
    penalize_diagonal : bool, default=True
        The papers' penalty includes the diagonal; scikit-learn's does not.
    solver : {"fast", "admm"}, default="fast"
        ``"admm"`` is Boyd et al.'s covsel with the papers' settings.
    admm_rho : float, default=100.0
        The ADMM penalty (the papers use 100).
    psd_floor : float or None, default=0.0
    tol : float, optional
        Solver tolerance (``None``: the solver's default).
    max_iter : int, default=1000
    n_draws : int >= 0, default=0
        Draws of the release carrying every part of its error (the noise, the
        private centre's noise, the detected clipping loss and, for
        ``target="population"``, sampling; ``estimators/error_draws.py``) for
        ``edge_frequency_`` and ``partial_correlation_interval_`` (0: the noise
        checks only). Each draw costs one solve at ``alpha_``, warm-started.
    level : float in (0, 1), default=0.9
    target : {"population", "sample"}, default="population"
        What the draws' intervals are for: the same analysis (at ``alpha_``) on
        the population covariance, or on these rows without privacy.

    Attributes
    ----------
    precision_, covariance_ : ndarray of shape (n_features, n_features)
    alpha_ : float
        The penalty used.
    ebic_ : ndarray or None
        eBIC over ``alphas_`` when ``alpha="ebic"``.
    alpha_floor_ : float or None
        The grid's floor when ``alpha="ebic"``.
    path_ : GlassoPath or None
        Every solution of the grid with its edge count, objective and eBIC, when
        ``alpha`` is ``"ebic"`` or ``"edges"`` (``None`` for a fixed penalty, which is
        solved once and alone).
    n_iter_ : int or None
    converged_ : bool or None
        The solver's on the released matrix. ``None`` for ``mechanism="output"``,
        whose solve runs on the exact data: its iteration count would leak.
    release_ : Release or None
    privacy_ : guarantee consumed
    edge_frequency_ : ndarray of shape (n_features, n_features) or None
        With ``n_draws > 0``: the share of draws whose graph, at the chosen
        ``alpha_``, has the edge; an edge is stable at 0.9 or more (none is
        where clipping's loss beyond its outer bound is unseen): ``stable_edges_``.
    partial_correlation_, partial_correlation_interval_ : ndarray or None
        With ``n_draws > 0``: ``-Theta_ij / sqrt(Theta_ii Theta_jj)`` and its
        basic ``level`` interval over the draws, shapes ``(d, d)`` and
        ``(2, d, d)``; NaN (withheld) where clipping's loss is not all seen.
    snr_ : float
        The largest off-diagonal ``|S_ij|`` of the released matrix over the
        level the largest off-diagonal noise stays below 95% of the time
        (:func:`~dpmoments.estimators.diagnostics.largest_noise`); below 1 no
        entry stands out of the noise, and the graph cannot be told from it.
    uncertainty_ : dict
        JSON-able: the noise law, the signal-to-noise, the edge stability.
    diagnostics_ : list of dict
        Failed noise checks (each also a ``NoiseDominatesWarning``): no edge
        above the noise, the noise outweighing the matrix, released variances
        below their noise level.
    neighbours_ : str
        The relation ``privacy_`` holds under.

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
    That of the second-moment release (see :func:`dpmoments.release_second_moment`):
    the solver and the eBIC choice are post-processing. ``mechanism="output"``
    claims epsilon-DP without a valid proof and is reported as uncertified.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators import PrivateGraphicalLasso
    >>> X = np.random.default_rng(0).normal(size=(20000, 4)) / 3
    >>> est = PrivateGraphicalLasso(alpha=0.01, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0).fit(X)
    >>> est.precision_.shape
    (4, 4)
    """

    _mechanisms = (*laws.names(laws.SECOND_MOMENT), "output")  # output perturbation: Wishart noise on the solution

    _estimator = "PrivateGraphicalLasso"

    alpha: float | str = param("ebic", check=_glasso_alpha)
    alphas: int | Sequence[float] = param(20)  # alpha_grid's
    ebic_gamma: float = param(0.5, check=_ebic_gamma)
    max_edges: int | None = param(None)  # required by alpha="edges", where it is used
    alpha_floor: float | str = param("noise", check=_alpha_floor)
    penalize_diagonal: bool = param(True)
    solver: str = param("fast", check=one_of("fast", "admm"))
    admm_rho: float = param(100.0)  # the ADMM solver's
    psd_floor: float | None = param(0.0, check=optional(nonnegative))
    tol: float | None = param(None)  # the solver's
    max_iter: int = param(1000)  # the solver's

    @all_or_nothing
    def fit(self, X, y=None):
        """Release the second moment of ``X`` (or, for ``"output"``, perturb the exact solution)."""
        if self.mechanism == "output":
            check_parameters(self)
            return self._fit_output(X)
        return super().fit(X)

    @all_or_nothing
    def fit_release(self, release):
        """Fit from a release already paid for: no new privacy cost, and no privacy parameter needed.

        ``epsilon``, ``delta``, ``row_norm``, ``mechanism``, ``neighbours``,
        ``center`` and their budgets are the release's.
        """
        raw = self._check_release(release)
        release = self._noisy_S(raw)
        S = release.second_moment
        self.path_ = None
        if isinstance(self.alpha, str):
            rule = self.alpha
            if rule == "ebic":
                gamma = float(self.ebic_gamma)
                self.alpha_floor_ = self._floor(release)
            else:
                self.alpha_floor_ = None
                max_edges = check_int(self.max_edges, "max_edges", minimum=0)
            self.alphas_ = alpha_grid(S, self.alphas, floor=self.alpha_floor_ or 0.0)
            fits = self._solve_path(S, self.alphas_)
            n_edges = np.array([_n_edges(f.precision) for f in fits])
            if rule == "ebic":
                self.ebic_ = np.array([self._ebic(S, f, release.n, gamma) for f in fits])
                best = int(np.argmin(self.ebic_))
            else:
                self.ebic_ = None
                ok = np.flatnonzero(n_edges <= max_edges)
                best = int(ok[np.argmin(self.alphas_[ok])]) if ok.size else int(np.argmax(self.alphas_))
            self.alpha_, result = float(self.alphas_[best]), _dense(fits[best])
            self.path_ = GlassoPath(alphas=self.alphas_, sparse_precisions=tuple(csr_matrix(f.precision) for f in fits),
                                    n_edges=n_edges, objective=np.array([f.objective for f in fits]),
                                    ebic=self.ebic_, chosen=best)
        else:
            self.alpha_ = float(self.alpha)
            self.alphas_, self.ebic_, self.alpha_floor_ = None, None, None
            result = self._solve(S, self.alpha_)
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self._record_release(release)
        self._finish(result.precision, release)
        warm = result if result.covariance is not None or not self.n_draws else _with_dual(result)
        self._spread(raw, lambda S_draw: self._solve(S_draw, self.alpha_, warm_start=warm).precision)
        return self

    def _solve_path(self, S, alphas):
        """All penalties at once: the fast solver warm-starts each from the previous (larger) one.

        From ``SPARSE_PATH_FROM`` features on, the path returns sparse
        precisions and reuses its duals in place (``sparse=True``): the same
        solutions, without two fresh ``p x p`` matrices per penalty
        (benchmarks/results/glasso_large.md).
        """
        if self.solver == "admm":
            return [self._solve(S, a) for a in alphas]
        opts = {} if self.tol is None else {"tol": self.tol}
        fits = [None] * len(alphas)
        for i, res in iter_graphical_lasso_path(S, alphas, penalize_diagonal=self.penalize_diagonal,
                                                max_iter=self.max_iter, sparse=S.shape[0] >= SPARSE_PATH_FROM, **opts):
            fits[i] = res
        return fits

    def _ebic(self, S, fit, n, gamma):
        """The fast solver's certified objective gives eBIC without a determinant; ADMM's is recomputed."""
        if self.solver == "admm":
            return ebic(S, fit.precision, n, gamma)
        return ebic_of_solution(fit, n, gamma, self.penalize_diagonal)

    def _floor(self, release):
        return noise_floor(release) if self.alpha_floor == "noise" else float(self.alpha_floor)

    def _solve(self, S, alpha, warm_start=None):
        solver = self.solver
        opts = {} if self.tol is None else {"tol": self.tol}
        if warm_start is not None and solver == "fast":
            opts["warm_start"] = warm_start
        if solver == "admm":
            return graphical_lasso_admm(S, alpha, rho=self.admm_rho, penalize_diagonal=self.penalize_diagonal,
                                        max_iter=self.max_iter)
        return graphical_lasso(S, alpha, penalize_diagonal=self.penalize_diagonal, max_iter=self.max_iter, **opts)

    def _fit_output(self, X):
        """Wang et al. Algorithm 1: exact graphical lasso, then W_d(d+1, c I) noise (_glasso_output.py)."""
        return fit_output(self, X)
