"""The Release: noisy moments together with the guarantee they carry.

A release is made once from the data and can then be post-processed for free
(eigendecomposition, graphical lasso, ROPE, whitening, solving normal
equations). Every estimator either makes a release or fits from one.
"""

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._rng import describe_randomness
from ..privacy.guarantees import PureDP
from .psd import project_psd as _project_psd

__all__ = ["Release", "Part"]


def _summary(arr):
    return None if arr is None else f"<array {arr.shape}>"


@dataclass(frozen=True)
class Part:
    """One labelled share of a composite release's budget, and what it released.

    Attributes
    ----------
    label : str
        What the share paid for, e.g. ``"row_norm"`` or ``"second moment"``.
    guarantee : PureDP, ApproxDP, ZCDP or Uncertified
        What this part alone satisfies; :attr:`Release.guarantee` composes them.
    share : float or None
        The fraction of the caller's epsilon it was given.
    released : dict
        Its (noisy, hence publishable) outputs, e.g. ``{"row_norm": 3.2}``.
    """

    label: str
    guarantee: object
    share: Optional[float] = None
    released: dict = field(default_factory=dict)

    def to_dict(self):
        return {"label": self.label, "share": self.share, "guarantee": self.guarantee.to_dict(),
                "released": dict(self.released)}


@dataclass(frozen=True, eq=False)
class Release:
    """Noisy normalised moments and the privacy guarantee they carry.

    Attributes
    ----------
    second_moment : ndarray of shape (n_features, n_features) or None
        ``(1/n) sum_i x_i x_i^T + E`` over clipped rows; exactly symmetric.
    cross_moment : ndarray of shape (n_features,) or None
        ``(1/n) sum_i x_i y_i + e`` over clipped rows and responses.
    third_moment : ndarray of shape (n_features,)*3 or None
        ``(1/n) sum_i x_i (x) x_i (x) x_i + T``; fully symmetric.
    n : int
        Number of rows. Treated as public: under replace-one it is fixed by
        the relation; under add-remove releasing it discloses the row count.
    n_features : int
    row_norm : float
        The public L2 bound every row was clipped to (after centring).
    response_bound : float or None
        The public bound ``|y| <= r`` (cross moments).
    center : ndarray or None
        The public centre subtracted from every row before clipping.
    mechanism : str
        ``"gaussian"``, ``"laplace"``, ``"wishart"``, ``"wishart-approx"``,
        or ``"none"`` (``epsilon = inf``).
    noise_scale : float
        Gaussian sigma, Laplace scale b, or the Wishart scale c (a variance),
        on the normalised statistic.
    noise_df : int or None
        Wishart degrees of freedom (noise mean ``noise_df * noise_scale * I``).
    noise_grid : float or None
        ``2^-k`` for exact discrete noise (``secure=True``): the statistic was
        rounded to this grid and integer noise added; ``None`` for float noise.
    sensitivity : float or None
        The sensitivity the noise was calibrated to (``None`` for Wishart,
        whose analysis is not sensitivity-based).
    sensitivity_norm : str or None
        ``"l2"`` or ``"l1"``, on the distinct coordinates the noise acts on.
    neighbours : str
        ``"replace-one"`` or ``"add-remove"``.
    calibration : str or None
        ``"analytic"``, ``"classic"`` or ``"zcdp"`` for Gaussian noise.
    guarantee : PureDP, ApproxDP, ZCDP or Uncertified
    randomness : str
        ``"os-entropy"``, ``"seeded"`` (reproducible, not secure),
        ``"caller-generator"`` or ``"none"``.
    postprocessing : tuple of str
        Free post-processing applied since the release (e.g. PSD projection).
    column_scale : ndarray of shape (n_features,) or None
        Private column scales ``s``: the rows released were ``(x - center) / s``
        (then clipped), so the moments, ``row_norm``, ``noise_scale`` and
        ``sensitivity`` are in those standardised units. Estimators map their
        estimate back (post-processing).
    parts : tuple of Part
        For a release made of several private steps (a bound, a centre or
        scales chosen privately, then the moment): each step's share and
        guarantee; ``guarantee`` is their composition. Empty for one step.
    """

    n: int
    n_features: int
    row_norm: float
    mechanism: str
    noise_scale: float
    neighbours: str
    guarantee: object
    randomness: str
    second_moment: Optional[np.ndarray] = None
    cross_moment: Optional[np.ndarray] = None
    third_moment: Optional[np.ndarray] = None
    response_bound: Optional[float] = None
    center: Optional[np.ndarray] = None
    calibration: Optional[str] = None
    sensitivity: Optional[float] = None
    sensitivity_norm: Optional[str] = None
    noise_df: Optional[int] = None
    noise_grid: Optional[float] = None
    postprocessing: tuple = field(default_factory=tuple)
    column_scale: Optional[np.ndarray] = None
    parts: tuple = field(default_factory=tuple)

    def __post_init__(self):
        # Freeze the arrays too: a release is a record, not a scratch buffer.
        for name in ("second_moment", "cross_moment", "third_moment", "center", "column_scale"):
            arr = getattr(self, name)
            if arr is not None:
                arr = np.array(arr, dtype=np.float64)
                arr.setflags(write=False)
                object.__setattr__(self, name, arr)

    @property
    def is_private(self):
        """False for ``epsilon = inf`` releases (exact statistics)."""
        return self.guarantee.is_private

    @property
    def secure(self):
        """True only for exact discrete noise (``secure=True``) drawn from the OS CSPRNG.

        Float noise from numpy is "idealised numerics": even unseeded, its
        low-order bits leak (Mironov 2012), so it is never reported secure.
        """
        return self.randomness == "os-entropy" and self.noise_grid is not None

    @property
    def clipped_fraction(self):
        """The noisy fraction of rows clipped and its noise sd, ``(fraction, sd)``, when a part released it."""
        for part in self.parts:
            if "clipped_fraction" in part.released:
                return part.released["clipped_fraction"], part.released["clipped_fraction_noise_sd"]
        return None

    def project_psd(self, floor=0.0):
        """A new release whose second moment has its eigenvalues floored at ``floor``.

        Post-processing: costs no privacy. Biased (it raises the spectrum);
        the number of clipped eigenvalues is recorded in ``postprocessing``.
        """
        if self.second_moment is None:
            raise ValueError("this release has no second moment to project.")
        projected, clipped = _project_psd(self.second_moment, floor)
        step = f"psd-projection(floor={floor:g}, eigenvalues_clipped={clipped})"
        return dataclasses.replace(self, second_moment=projected, postprocessing=self.postprocessing + (step,))

    def to_dict(self):
        """The release's metadata (no arrays) as a JSON-able dict, for privacy reports."""
        return {
            "statistics": [s for s in ("second_moment", "cross_moment", "third_moment") if getattr(self, s) is not None],
            "n": self.n,
            "n_features": self.n_features,
            "row_norm": self.row_norm,
            "response_bound": self.response_bound,
            "centered": self.center is not None,
            "mechanism": self.mechanism,
            "noise_scale": self.noise_scale,
            "noise_df": self.noise_df,
            "noise_grid": self.noise_grid,
            "sensitivity": self.sensitivity,
            "sensitivity_norm": self.sensitivity_norm,
            "neighbours": self.neighbours,
            "calibration": self.calibration,
            "guarantee": self.guarantee.to_dict(),
            "certified": self.guarantee.certified,
            "randomness": self.randomness,
            "secure": self.secure,
            "postprocessing": list(self.postprocessing),
            "column_scaled": self.column_scale is not None,
            "parts": [p.to_dict() for p in self.parts],
        }

    def __repr__(self):
        parts = [
            f"{s}={_summary(getattr(self, s))}"
            for s in ("second_moment", "cross_moment", "third_moment")
            if getattr(self, s) is not None
        ]
        return (
            f"Release({', '.join(parts)}, n={self.n}, mechanism={self.mechanism!r}, "
            f"noise_scale={self.noise_scale:.4g}, neighbours={self.neighbours!r}, guarantee={self.guarantee})"
        )


def exact_guarantee():
    """The guarantee of an ``epsilon = inf`` release: none."""
    return PureDP(math.inf)


def randomness_of(rng, epsilon):
    return "none" if math.isinf(epsilon) else describe_randomness(rng)
