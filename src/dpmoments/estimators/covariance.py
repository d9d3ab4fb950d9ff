"""PrivateCovariance: a differentially private second-moment / covariance matrix."""

import numpy as np
from scipy import linalg

from .._validation import check_data
from ._moment_base import MomentEstimator, psd_floor_value
from ._uncertainty_matrix import covariance_spread
from .uncertainty import check_uncertainty_params

__all__ = ["PrivateCovariance"]


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


class PrivateCovariance(MomentEstimator):
    r"""Differentially private second-moment (or covariance) matrix.

    Rows are (optionally centred and) clipped to :math:`\|x_i\|_2 \le R`, the
    mean of :math:`x_i x_i^\top` is released once with calibrated noise, and
    the result is (by default) projected to the positive semi-definite cone.

    Parameters
    ----------
    epsilon : float in (0, inf]
    delta : float in (0, 1) or None
        Required for ``"gaussian"`` and ``"wishart-approx"``.
    row_norm : float
        The public L2 bound R on each (centred) row.
    mechanism : {"gaussian", "laplace", "wishart", "wishart-approx"}, default="gaussian"
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
        ``"replace-one"``: one row replaced by another, n public; ``"zero-out"``:
        one row replaced by the zero row, n public (the papers' 1/n
        sensitivity); ``"add-remove"``: one row added or removed, n private
        (a noisy count from ``count_share`` of the budget; not with the
        Wishart mechanisms).
    calibration : {"analytic", "classic", "zcdp"}, default="analytic"
    center : None, array-like of shape (n_features,) or "private", default=None
        ``None``: the raw second moment (zero-mean data, as the papers
        assume); a vector: a public centre; ``"private"``: a private mean
        paid from ``center_budget``.
    center_budget : CenterBudget or None
        Required with ``center="private"``.
    psd_floor : float or None, default=0.0
        Eigenvalue floor applied to the released matrix (free
        post-processing, biased upwards); ``None`` keeps it as released.
    level : float in (0, 1), default=0.9
        Coverage of ``covariance_interval_``.
    rng : None, int or numpy.random.Generator
    accountant : Accountant or None
        When given, the fit is refused before touching the data if it does
        not fit the remaining budget, and spent after the release.
    count_share : float in (0, 1), default=0.05
        Add-remove only: the share of the budget spent on the noisy row count.

    Attributes
    ----------
    covariance_ : ndarray of shape (n_features, n_features)
    location_ : ndarray of shape (n_features,)
        The centre used (zeros for ``center=None``).
    release_ : Release
    privacy_ : PureDP, ApproxDP, ZCDP or Uncertified
        The guarantee the fit consumed.
    covariance_se_ : ndarray of shape (n_features, n_features)
        The noise's standard deviation on each released entry (closed form).
    covariance_interval_ : ndarray of shape (2, n_features, n_features)
        Lower and upper ends of a ``level`` interval for each entry of the
        exact (clipped) second moment, centred on the released entries before
        the PSD projection; exact for Gaussian and Laplace noise.
    snr_ : float
        Signal-to-noise of the released matrix: the estimated Frobenius norm
        of the exact matrix over the noise's (below 1: mostly noise).
    uncertainty_ : dict
        JSON-able: the noise law, the level, what the intervals cover.
    diagnostics_ : list of dict
        ``{"code", "message"}`` for each failed noise check (each also raised
        as a :class:`~dpmoments.exceptions.NoiseDominatesWarning`): the noise
        outweighs the signal, released variances below their noise level.
    neighbours_ : str
        The relation ``privacy_`` holds under (the release's).

    Privacy
    -------
    The guarantee of :func:`dpmoments.release_second_moment` for the chosen
    mechanism: e.g. Gaussian, replace-one, L2 sensitivity
    :math:`\sqrt2 R^2/n` on the upper triangle, analytic calibration,
    (epsilon, delta)-DP. With ``center="private"`` the mean (sensitivity
    :math:`2R/n`) and the centred second moment compose sequentially.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.estimators import PrivateCovariance
    >>> X = np.random.default_rng(0).normal(size=(5000, 3)) / 3
    >>> est = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0).fit(X)
    >>> est.covariance_.shape, str(est.privacy_)
    ((3, 3), '(1, 1e-06)-DP')
    """

    def __init__(self, *, epsilon, delta=None, row_norm, mechanism="gaussian", neighbours="replace-one",
                 calibration="analytic", center=None, center_budget=None, psd_floor=0.0, level=0.9, rng=None,
                 accountant=None, count_share=0.05):
        self.epsilon = epsilon
        self.delta = delta
        self.row_norm = row_norm
        self.mechanism = mechanism
        self.neighbours = neighbours
        self.calibration = calibration
        self.center = center
        self.center_budget = center_budget
        self.psd_floor = psd_floor
        self.level = level
        self.rng = rng
        self.accountant = accountant
        self.count_share = count_share

    def fit(self, X, y=None):
        """Release the second moment of ``X`` and set ``covariance_``."""
        check_uncertainty_params(self)
        return self.fit_release(self._release_from(X))

    def fit_release(self, release):
        """Use a release already paid for: no new privacy cost."""
        raw = release = self._check_release(release)
        floor = psd_floor_value(self.psd_floor)
        if floor is not None:
            release = release.project_psd(floor)
        vars(self).update(covariance_spread(raw, self.level, type(self).__name__))
        self.release_ = release
        self.covariance_ = np.array(release.second_moment)
        self.location_ = np.zeros(release.n_features) if release.center is None else np.array(release.center)
        self.privacy_ = release.guarantee
        self.neighbours_ = release.neighbours
        self.n_features_in_ = release.n_features
        return self

    def get_precision(self):
        """The pseudo-inverse of ``covariance_``."""
        return linalg.pinvh(self.covariance_)

    def score(self, X, y=None):
        """Average Gaussian log-likelihood of ``X`` (your own evaluation data)."""
        return gaussian_log_likelihood(X, self.get_precision(), self.location_, type(self).__name__)
