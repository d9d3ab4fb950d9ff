r"""CoinPress: covariance and mean estimation that adapts to the data's spread (Biswas, Dong, Kamath & Ullman 2020).

One private second moment needs a ball that holds the rows, and its noise
grows with the ball's squared radius in *every* direction: columns in small
units drown in the noise of the large ones. CoinPress (NeurIPS 2020) instead
keeps an ellipsoid that holds the rows and shrinks it step by step. Each
step whitens the rows by the current ellipsoid, clips them to the radius a
Gaussian row would reach, releases their second moment with Gaussian noise,
and takes the noisy estimate -- plus a public slack for the noise and the
sampling error -- as the next ellipsoid. Once the rows are nearly white, the
last release's noise, mapped back, is shaped like the covariance itself.

Our version (written from the paper's description)
---------------------------------------------------
* **The first ellipsoid** is not a public bound on the covariance's
  spectrum. With a public ``row_norm`` it is the paper's ball of that
  radius; with ``row_norm="auto"`` it is axis-aligned: private column scales
  ``s`` (medians of the non-zero ``|x_j - m_j|``) times a private
  0.95-quantile ``R`` of ``||(x - m)/s||``, ``A_1 = diag(1/s)/R``. Starting
  from the columns' own scales matters: each step can shrink the ellipsoid
  only down to its slack, so from a ball the paper needs about
  ``log(kappa)`` steps for a condition number ``kappa`` -- twenty-odd for
  columns whose units differ by 10^5. ``m`` is public or private column
  medians, as in :class:`~dpmoments.estimators.PrivateCovariance`.
* **Covariance steps** (``T = 2``, budget shares 1/5 and 4/5 of the
  covariance's rho: starting from the columns' scales, two steps suffice;
  on Gaussian data with d = 10 and columns 10^5 apart, three steps of
  1/4, 1/4, 1/2 gave 2.3 times (n = 10^4) and 1.5 times (n = 10^5) the
  error of these two): step ``t`` releases
  :math:`Z_t = \frac1n\sum_i \bar y_i \bar y_i^\top + N_t` with
  :math:`y_i = A_t(x_i - m)` clipped to ``r_t`` (``r_1 = 1``, then
  :math:`\gamma = \sqrt{d + 2\sqrt{d\ln(n/\beta)} + 2\ln(n/\beta)}`, the
  radius of ``n`` standard Gaussian rows with probability ``1 - beta``);
  then :math:`A_{t+1} = (Z_t + (\nu_t + \eta) I)^{-1/2} A_t` with
  :math:`\nu_t = \sigma_t (2\sqrt d + 2\sqrt{2\ln(1/\beta)})` (a bound on
  the noise's spectral norm) and :math:`\eta = 2\sqrt{d/n} + d/n` (the
  sampling error of a white second moment). The estimate is
  :math:`\hat M = A_T^{-1} Z_T A_T^{-\top}`, the second moment about ``m``.
* **Mean** (``center="private"``): the paper's shrinking-ball estimator in
  the last whitened coordinates, where the rows' offset from ``m`` has norm
  at most about 1: two steps, each clipping ``y - c`` to ``r + gamma`` and
  releasing the mean with Gaussian noise; then
  :math:`\hat\Sigma = \hat M - (\hat\mu - m)(\hat\mu - m)^\top`.

Privacy
-------
zCDP throughout, replace-one neighbours (``n`` public: the slacks use it).
Each covariance step is the Gaussian mechanism on the clipped whitened rows,
L2 sensitivity :math:`\sqrt2 r_t^2/n` on the upper triangle, hence
:math:`\Delta^2/(2\sigma_t^2) = \rho_t`-zCDP; the whitening :math:`A_t`
is a function of earlier releases only, so the steps compose adaptively
(rhos add). Each mean step: L2 sensitivity :math:`2(r + \gamma)/n`,
``rho``-zCDP. The private median and radius draws are
exponential-mechanism draws, ``e^2/8``-zCDP (Cesar & Rogers 2021). The
user's ``(epsilon, delta)`` is turned into the largest total rho whose
conversion fits it, and the total is reported converted back at ``delta``.
"""

import math

import numpy as np

from .._rng import describe_randomness, spawn
from .._validation import check_delta, check_positive
from ..mechanisms import gaussian_noise, laws, symmetric_matrix_noise
from ..data import as_source, iter_chunks
from .accumulate import accumulate_moments
from .auto_release import as_bound_budget, check_auto_source, is_auto
from .dask_moments import dask_moment_sums, rows_array
from .private_bounds import quantile_pass, select_quantiles
from .release import Release
from .statistics import SECOND
from ..privacy import ZCDP, zcdp_gaussian_sigma
from .choice_budget import BOUND_OPTION, LOCATION_OPTION, PrivateChoiceBudget, check_draws, public_rows
from .private_passes import column_medians, column_scales

__all__ = ["coinpress_second_moment", "coinpress_mean", "coinpress_release", "COVARIANCE_STEPS"]

COVARIANCE_STEPS = (0.2, 0.8)  # shares of the covariance's rho, per step (module docstring)
MEAN_STEPS = (0.5, 0.5)
BETA = 0.01  # failure probability of the public slacks (not a privacy parameter)


def _gaussian_radius(d, count):
    """The radius holding ``count`` standard Gaussian vectors in R^d with probability 1 - BETA."""
    log = math.log(count / BETA)
    return math.sqrt(d + 2.0 * math.sqrt(d * log) + 2.0 * log)


def _whitened(X, shift, A):
    """The rows ``A (x - shift)``, read afresh (a lazy dask array for dask input)."""
    if as_source(X).kind == "dask":  # a frame as an array: a DataFrame has no product with a matrix
        return (rows_array(X) - shift) @ A.T

    def chunks():
        for chunk in iter_chunks(X):
            yield (chunk - shift) @ A.T

    return chunks()


def _sums(source, y=None, **kwargs):
    if as_source(source).kind == "dask":
        return dask_moment_sums(source, y, **kwargs)
    return accumulate_moments(source if y is None else (source, y), **kwargs)


def _inverse_sqrt(U):
    lam, Q = np.linalg.eigh(0.5 * (U + U.T))
    return (Q / np.sqrt(lam)) @ Q.T


def coinpress_second_moment(X, *, center, whitening, rhos, rng=None):
    r"""CoinPress's second moment of ``x - center`` (module docstring): ``(M_hat, A_T, sigmas)``.

    Parameters
    ----------
    X : array, path, dask array or list of chunks (read ``len(rhos)`` times)
    center : ndarray of shape (d,)
        Public (or privately released) centre ``m``.
    whitening : ndarray of shape (d, d)
        ``A_1``, public or privately released: step 1 clips ``A_1 (x - m)`` to norm 1
        (``I / R`` is the ball of radius ``R``).
    rhos : sequence of float > 0
        The zCDP budget of each step.
    rng : None, int or numpy.random.Generator

    Privacy
    -------
    ``sum(rhos)``-zCDP under replace-one (module docstring).
    """
    d, A, sigmas = center.shape[0], np.asarray(whitening, dtype=float), []
    gens = spawn(rng, len(rhos))
    r = 1.0
    for t, (rho, gen) in enumerate(zip(rhos, gens)):
        sums = _sums(_whitened(X, center, A), row_norm=r)
        n = sums.n
        sens = SECOND.sensitivity(norm="l2", n_samples=n, n_features=d, neighbours="replace-one", row_norm=r)
        sigma = zcdp_gaussian_sigma(rho, sens)
        Z = 0.5 * (sums.xtx + sums.xtx.T) / n + symmetric_matrix_noise(d, sigma, gen)
        sigmas.append(sigma)
        if t == len(rhos) - 1:
            A_inv = np.linalg.inv(A)
            return A_inv @ Z @ A_inv.T, A, sigmas, n
        slack = sigma * (2.0 * math.sqrt(d) + 2.0 * math.sqrt(2.0 * math.log(1.0 / BETA))) \
            + 2.0 * math.sqrt(d / n) + d / n
        lam, Q = np.linalg.eigh(Z)
        U = (Q * np.maximum(lam, 0.0)) @ Q.T + slack * np.eye(d)  # the next ellipsoid holds the rows
        A = _inverse_sqrt(U) @ A
        r = _gaussian_radius(d, n)


def coinpress_mean(X, *, center, whitening, radius, rhos, n, rng=None):
    r"""CoinPress's shrinking-ball mean in whitened coordinates: ``center + A^{-1} c_T``.

    Rows ``y = A (x - center)`` (``A = whitening``, under which they are
    about white) start in the ball ``B(0, radius)``; step ``t`` clips
    ``y - c`` to ``r + gamma``, releases their mean with Gaussian noise and
    shrinks the ball to the radius of that noise and of the sampling error.

    Parameters
    ----------
    n : int
        The (public) number of rows, which sets ``gamma``.

    Privacy
    -------
    ``sum(rhos)``-zCDP under replace-one: step ``t`` has L2 sensitivity
    ``2 (r_t + gamma) / n``.
    """
    d = center.shape[0]
    c, r, gamma, spread = np.zeros(d), float(radius), _gaussian_radius(d, n), _gaussian_radius(d, 1)
    for rho, gen in zip(rhos, spawn(rng, len(rhos))):
        bound = r + gamma
        sums = _sums(*_with_ones(_whitened(X, center, whitening)), row_norm=bound, response_bound=1.0, center=c)
        sigma = zcdp_gaussian_sigma(rho, 2.0 * bound / n)
        c = c + sums.xty / n + gaussian_noise(d, sigma, gen)
        r = (sigma + 1.0 / math.sqrt(n)) * spread
    return center + np.linalg.solve(whitening, c)


def _with_ones(Y):
    """``(Y, ones)`` for a dask array, else one stream of ``(y, ones)`` chunks."""
    if as_source(Y).kind == "dask":
        from .dask_moments import row_ones

        return Y, row_ones(Y)
    return (((y, np.ones(y.shape[0])) for y in Y),)


def check_coinpress(X, *, mechanism, scale, neighbours, epsilon, delta):
    """Refuse, before any budget is checked, the options CoinPress cannot run with (one line naming each)."""
    if laws.named(mechanism) is not laws.GAUSSIAN:  # the method is Gaussian by construction
        raise ValueError(f"method='coinpress' adds Gaussian noise: 'mechanism' must be 'gaussian'; got {mechanism!r}.")
    if scale is not None:
        raise ValueError("method='coinpress' scales and whitens the rows itself; 'scale' must be None.")
    if neighbours != "replace-one":
        raise ValueError(f"method='coinpress' supports neighbours='replace-one' (its slacks use the public n); "
                         f"got {neighbours!r}.")
    if math.isinf(epsilon):
        raise ValueError("method='coinpress' needs a finite 'epsilon'; for the exact covariance use "
                         "method='standard' with epsilon=inf.")
    if delta is None:
        raise ValueError("method='coinpress' accounts in zCDP and needs 'delta' in (0, 1); got None.")
    check_auto_source(X, "method='coinpress'")


def _first_ellipsoid(X, m, budget, share, bounds, rng):
    """``A_1``: private column scales, then a private 0.95-quantile radius of the scaled rows."""
    gen_scale, gen_radius = spawn(rng, 2)
    s = column_scales(X, m, budget, share / 2, bounds.search, gen_scale, option_share=share)
    (bins,), _ = quantile_pass(X, [("row-norm", m, s)], search=bounds.search)
    each, guarantee = budget.draws(share / 2)
    with budget.refusal(share, BOUND_OPTION):
        radius = float(select_quantiles(bins, bounds.search.edges(), epsilon_each=each,
                                        quantile=bounds.fixed_quantile(), rng=gen_radius,
                                        what="method='coinpress' (its first ellipsoid)")[0][0])
    budget.record("row_norm", guarantee, share / 2, (1, each), row_norm=radius,
                  target=f"{bounds.fixed_quantile():g}-quantile")
    return np.diag(1.0 / (radius * s)), radius


def _check_all_draws(X, budget, shares, bounds, d, auto, located):
    """Every draw judged against the public n before the first (:func:`check_draws`): the column medians, then
    the first ellipsoid's scales (medians) and radius (its fixed quantile, nearer the top of the rows)."""
    plan, margins, G = [], [], bounds.search.steps
    if located:
        plan.append(("private column medians (center='private', no prior)", LOCATION_OPTION, shares["location"],
                     budget.draws(shares["location"], d)[0], 2 * G + 2))
        margins.append(0.5)
    if auto:
        q, share = bounds.fixed_quantile(), shares["bound"]
        plan += [("private column scales (scale='private')", BOUND_OPTION, share, budget.draws(share / 2, d)[0], G + 1),
                 ("method='coinpress' (its first ellipsoid)", BOUND_OPTION, share, budget.draws(share / 2)[0], G + 1)]
        margins += [0.5, min(q, 1.0 - q)]
    check_draws(public_rows(X), budget, plan, margins)


def coinpress_release(X, *, epsilon, delta, row_norm, center, center_budget, bound_budget, rng=None):
    """The release of ``PrivateCovariance(method="coinpress")`` (module docstring).

    ``X`` is checked data (or a path or dask collection) that :func:`check_coinpress` accepted;
    ``center_budget`` is a ``CenterBudget`` (its ``location``, ``mean`` and ``prior``) and
    ``bound_budget`` a share or a ``BoundBudget``. The caller checks its accountant before and
    charges the release after.
    """
    X = as_source(X).data
    delta = check_delta(delta, allow_zero=False)
    budget = PrivateChoiceBudget(epsilon, delta, laws.GAUSSIAN, "zcdp")
    split, bounds, d = center_budget, as_bound_budget(bound_budget), as_source(X).n_features
    private_center = isinstance(center, str)
    shares = {"location": split.location if private_center and split.prior is None else 0.0,
              "bound": bounds.share if is_auto(row_norm) else 0.0,
              "mean": split.mean if private_center else 0.0}
    cov_share = 1.0 - sum(shares.values())
    if cov_share <= 0:
        raise ValueError("the budget shares leave nothing for the second moment; lower them.")
    gen_loc, gen_bound, gen_cov, gen_mean = spawn(rng, 4)
    _check_all_draws(X, budget, shares, bounds, d, is_auto(row_norm), private_center and split.prior is None)
    if private_center and split.prior is None:
        m = column_medians(X, budget, shares["location"], bounds.search, gen_loc)
    elif private_center:
        m = np.asarray(split.prior, dtype=float)
    else:
        m = np.zeros(d) if center is None else np.asarray(center, dtype=float)
    if is_auto(row_norm):
        A, radius = _first_ellipsoid(X, m, budget, shares["bound"], bounds, gen_bound)
    else:
        radius = check_positive(row_norm, "row_norm")
        A = np.eye(d) / radius
    M, A, sigmas, n = coinpress_second_moment(X, center=m, whitening=A, rng=gen_cov,
                                              rhos=[f * cov_share * budget.rho for f in COVARIANCE_STEPS])
    location = None if center is None else m
    if private_center:
        location = coinpress_mean(X, center=m, whitening=A, radius=1.0, n=n, rng=gen_mean,
                                  rhos=[f * shares["mean"] * budget.rho for f in MEAN_STEPS])
        budget.record("mean", ZCDP(shares["mean"] * budget.rho), shares["mean"], steps=len(MEAN_STEPS))
        M = M - np.outer(location - m, location - m)
    budget.record("second moment", ZCDP(cov_share * budget.rho), cov_share, steps=len(COVARIANCE_STEPS))
    release = Release(
        n=n, n_features=d, row_norm=radius, mechanism=laws.GAUSSIAN.name, noise_scale=sigmas[-1], neighbours="replace-one",
        guarantee=budget.total(), randomness=describe_randomness(rng), second_moment=0.5 * (M + M.T),
        center=location, calibration="zcdp", parts=tuple(budget.parts),
        postprocessing=(f"coinpress: {len(COVARIANCE_STEPS)} whitened second-moment releases"
                        + (f", {len(MEAN_STEPS)} mean releases" if private_center else "")
                        + "; noise_scale is the last step's, in its whitened coordinates",))
    return release
