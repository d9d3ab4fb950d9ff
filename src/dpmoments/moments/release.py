"""The Release: noisy moments together with the guarantee they carry.

A release is made once from the data and can then be post-processed for free
(eigendecomposition, graphical lasso, ROPE, whitening, solving normal
equations). Every estimator either makes a release or fits from one.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .._rng import describe_randomness, secure_randomness
from ..exceptions import CalibrationWarning
from ..mechanisms.laws import MECHANISMS, Mechanism, as_mechanism
from ..privacy.guarantees import AnyGuarantee
from ..privacy.relations import describe_relation, n_is_public
from .psd import project_psd as _project_psd

__all__ = ["Release", "Part", "release_part", "count_fields"]


def _summary(arr: Optional[np.ndarray]) -> Optional[str]:
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
    draws : dict or None
        For a part made of exponential-mechanism draws (a private quantile, median or bound):
        ``{"mechanism": "exponential", "count": k, "epsilon_each": e, "sensitivity": 1, "composed_as": ...}``,
        so that a reader recomputes ``guarantee`` from the report alone (:func:`em_draws`).
    """

    label: str
    guarantee: AnyGuarantee
    share: Optional[float] = None
    released: dict[str, Any] = field(default_factory=dict)
    draws: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        out = {"label": self.label, "share": self.share, "guarantee": self.guarantee.to_dict(),
               "released": {k: _summary(v) if isinstance(v, np.ndarray) else v for k, v in self.released.items()}}
        if self.draws is not None:
            out["draws"] = dict(self.draws)
        return out


def em_draws(count: int, epsilon_each: float, zcdp: bool) -> dict[str, Any]:
    """:attr:`Part.draws` of ``count`` exponential-mechanism draws of ``epsilon_each`` each (utility sensitivity 1).

    Each draw is ``epsilon_each``-DP, and ``epsilon_each^2/8``-zCDP (Cesar & Rogers 2021); the part's
    guarantee is their sum in the one the budget composes in.
    """
    rule = ("zcdp: rho = count * epsilon_each^2 / 8" if zcdp else "pure: epsilon = count * epsilon_each")
    return {"mechanism": "exponential", "count": int(count), "epsilon_each": float(epsilon_each), "sensitivity": 1,
            "composed_as": rule}


def release_part(label: str, release: Release, share: Optional[float], **released: Any) -> Part:
    """The :class:`Part` that ``release`` makes of a composite release (with :func:`count_fields`)."""
    return Part(label, release.guarantee, share, {**released, **count_fields(release)})


def count_fields(release: Release) -> dict[str, Any]:
    """Add-remove: the noisy row count a release composed into its guarantee, for its :class:`Part`.

    The part's guarantee already includes the count; these fields show the
    count and the fraction of the part's (epsilon, delta) it used, so that a
    report shows the count's share beside the bound, centre and scale
    shares. Empty where ``n`` is public or exact.
    """
    if release.count_guarantee is None:
        return {}
    return {"noisy_row_count": release.n, "row_count_share_of_part": release.count_share,
            "row_count_noise_scale": release.count_noise_scale}


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
        Number of rows the statistic is normalised by. Under replace-one and
        zero-out the exact count, public by the relation; under add-remove
        the *noisy* count (rounded, floored at 1; see ``count_noise_scale``).
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
        on the normalised statistic. Under add-remove it is
        ``sum_noise_scale / n`` with the noisy ``n``: an estimate, since the
        count itself is noisy.
    noise_df : int or None
        Wishart degrees of freedom (noise mean ``noise_df * noise_scale * I``).
    noise_grid : float or None
        ``2^-k`` for exact discrete noise (``secure=True``): the statistic was
        rounded to this grid and integer noise added; ``None`` for float noise.
    sensitivity : float or None
        The sensitivity the noise was calibrated to (``None`` for Wishart,
        whose analysis is not sensitivity-based): of the mean under
        replace-one and zero-out, of the sum under add-remove.
    sensitivity_norm : str or None
        ``"l2"`` or ``"l1"``, on the distinct coordinates the noise acts on.
    neighbours : str
        ``"replace-one"``, ``"zero-out"`` or ``"add-remove"``
        (:mod:`dpmoments.privacy.relations`).
    calibration : str or None
        ``"analytic"``, ``"classic"`` or ``"zcdp"`` for Gaussian noise.
    guarantee : PureDP, ApproxDP, ZCDP or Uncertified
        Everything the release disclosed; under add-remove the composition
        of the count's and the sums' guarantees.
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
    coordinate_bound : ndarray of shape (n_features,) or None
        Public per-column bounds on the released rows' coordinates, in the
        standardised units: ``|z_j| <= coordinate_bound[j]`` (``inf`` where
        only the row bound holds), from public ranges and the released centre
        and scales (post-processing); the error budget's sampling bound reads
        them. ``None``: none known.
    coordinate_range : ndarray of shape (2, n_features) or None
        The same public ranges as each coordinate's lower and upper end in the standardised units
        (``-inf``/``inf`` where only the row bound holds), from the public ranges and the released centre and
        scales (post-processing); the sampling bound for bounded columns reads them. ``None``: none known.
    parts : tuple of Part
        For a release made of several private steps (a bound, a centre or
        scales chosen privately, then the moment): each step's share and
        guarantee; ``guarantee`` is their composition. Empty for one step.
        Under add-remove a part made by a release also shows its noisy row
        count (:func:`count_fields`).
    sum_noise_scale, count_noise_scale : float or None
        Add-remove only: the noise scale of the unnormalised sums and of the
        row count (same family as ``mechanism``).
    count_share : float or None
        Add-remove only: the share of epsilon (and delta) spent on the count.
    count_guarantee : guarantee or None
        Add-remove only: what the count's release alone satisfies.
    calibration_asked : str or None
        The calibration the caller asked for where another was used (``calibration``):
        private choices compose every part in zCDP. ``None`` when the one asked for was used.
    """

    n: int
    n_features: int
    row_norm: float
    mechanism: str
    noise_scale: float
    neighbours: str
    guarantee: AnyGuarantee
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
    postprocessing: tuple[str, ...] = field(default_factory=tuple)
    column_scale: Optional[np.ndarray] = None
    parts: tuple[Part, ...] = field(default_factory=tuple)
    sum_noise_scale: Optional[float] = None
    count_noise_scale: Optional[float] = None
    count_share: Optional[float] = None
    count_guarantee: Optional[AnyGuarantee] = None
    calibration_asked: Optional[str] = None
    coordinate_bound: Optional[np.ndarray] = None
    coordinate_range: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        # Freeze the arrays too: a release is a record, not a scratch buffer.
        for name in ("second_moment", "cross_moment", "third_moment", "center", "column_scale", "coordinate_bound",
                     "coordinate_range"):
            arr = getattr(self, name)
            if arr is not None and not _frozen(arr):
                arr = np.array(arr, dtype=np.float64)
                arr.setflags(write=False)
                object.__setattr__(self, name, arr)

    @property
    def is_private(self) -> bool:
        """False for ``epsilon = inf`` releases (exact statistics)."""
        return self.guarantee.is_private

    @property
    def secure(self) -> bool:
        """True only for exact discrete noise (``secure=True``) drawn from the OS CSPRNG.

        Float noise from numpy is "idealised numerics": even unseeded, its
        low-order bits leak (Mironov 2012), so it is never reported secure.
        """
        return secure_randomness(self.randomness, exact_discrete=self.noise_grid is not None)

    @property
    def law(self) -> Mechanism:
        """The noise law :attr:`mechanism` names, as a value to ask (:mod:`dpmoments.mechanisms.laws`)."""
        return as_mechanism(self.mechanism, "mechanism", tuple(MECHANISMS.values()))

    @property
    def n_public(self) -> bool:
        """False under add-remove: ``n`` is then the noisy count, not the number of rows."""
        return n_is_public(self.neighbours)

    def _count_dict(self) -> Optional[dict[str, Any]]:
        if self.n_public:
            return None
        g = self.count_guarantee
        return {"noisy": self.count_noise_scale is not None, "noise_scale": self.count_noise_scale,
                "share": self.count_share, "guarantee": None if g is None else g.to_dict(),
                "note": "n is the noisy row count (rounded, floored at 1); the statistic is the noisy sum "
                        "divided by it"}

    @property
    def clipped_fraction(self) -> Optional[tuple[float, float]]:
        """The noisy fraction of rows clipped and its noise sd, ``(fraction, sd)``, when a part released it."""
        for part in self.parts:
            if "clipped_fraction" in part.released:
                return part.released["clipped_fraction"], part.released["clipped_fraction_noise_sd"]
        return None

    def project_psd(self, floor: float = 0.0, spectrum=None) -> Release:
        """A new release whose second moment has its eigenvalues floored at ``floor``.

        Post-processing: costs no privacy. Biased (it raises the spectrum);
        the number of clipped eigenvalues is recorded in ``postprocessing``.
        ``spectrum``: a :class:`~dpmoments.moments.psd.SymmetricSpectrum` of
        ``second_moment``, shared with other readers of its decomposition.
        """
        if self.second_moment is None:
            raise ValueError("this release has no second moment to project.")
        projected, clipped = _project_psd(self.second_moment, floor, spectrum)
        projected.setflags(write=False)  # a new array of its own: frozen as it is, not copied (d x d)
        step = f"psd-projection(floor={floor:g}, eigenvalues_clipped={clipped})"
        return dataclasses.replace(self, second_moment=projected, postprocessing=self.postprocessing + (step,))

    def to_dict(self) -> dict[str, Any]:
        """The release's metadata (no arrays) as a JSON-able dict, for privacy reports."""
        return {
            "statistics": [s for s in ("second_moment", "cross_moment", "third_moment") if getattr(self, s) is not None],
            "n": self.n,
            "n_public": self.n_public,
            "count": self._count_dict(),
            "n_features": self.n_features,
            "row_norm": self.row_norm,
            "response_bound": self.response_bound,
            "centered": self.center is not None,
            "mechanism": self.mechanism,
            "noise_scale": self.noise_scale,
            "noise_scale_of": "the normalised statistic" if self.n_public else
                              "the normalised statistic: sum_noise_scale divided by the noisy n (an estimate)",
            "sum_noise_scale": self.sum_noise_scale,
            "noise_df": self.noise_df,
            "noise_grid": self.noise_grid,
            "sensitivity": self.sensitivity,
            "sensitivity_norm": self.sensitivity_norm,
            "sensitivity_of": "the mean over n rows" if self.n_public else "the sum (n is private)",
            "neighbours": self.neighbours,
            "neighbours_meaning": describe_relation(self.neighbours),
            "calibration": self.calibration,
            "guarantee": self.guarantee.to_dict(),
            "certified": self.guarantee.certified,
            "randomness": self.randomness,
            "secure": self.secure,
            "postprocessing": list(self.postprocessing),
            "column_scaled": self.column_scale is not None,
            "parts": [p.to_dict() for p in self.parts],
            **({} if self.calibration_asked is None else {"calibration_note": self.calibration_note}),
        }

    @property
    def calibration_note(self) -> Optional[str]:
        """Why ``calibration`` is not the one asked for (``None`` when it is)."""
        if self.calibration_asked is None:
            return None
        return (f"calibration {self.calibration_asked!r} was asked for and not used: with a private centre, scale or "
                f"bound every part is calibrated in {self.calibration} (the parts' rho add up, which needs less noise "
                "than splitting (epsilon, delta) among them)")

    def __repr__(self) -> str:
        parts = [
            f"{s}={_summary(getattr(self, s))}"
            for s in ("second_moment", "cross_moment", "third_moment")
            if getattr(self, s) is not None
        ]
        return (
            f"Release({', '.join(parts)}, n={self.n}{'' if self.n_public else ' (noisy)'}, "
            f"mechanism={self.mechanism!r}, "
            f"noise_scale={self.noise_scale:.4g}, neighbours={self.neighbours!r}, guarantee={self.guarantee})"
        )


def calibrated_as(release: "Release", asked: str) -> "Release":
    """``release`` recording the calibration asked for where another was used; asked for by name, a warning.

    ``"classic"`` is asked for by name (the default, ``"analytic"``, is only recorded): a
    :class:`~dpmoments.exceptions.CalibrationWarning` says it was not used.
    """
    if asked == release.calibration:
        return release
    release = dataclasses.replace(release, calibration_asked=asked)
    if asked == "classic":
        warnings.warn(str(release.calibration_note), CalibrationWarning, stacklevel=6)
    return release


def randomness_of(rng: Any, epsilon: float) -> str:
    return "none" if math.isinf(epsilon) else describe_randomness(rng)


def _frozen(arr):
    """Already a release's array: float64, read-only and owning its data, so nothing else can write it.

    Such an array is kept as it is rather than copied: a projected or re-labelled release shares it (at
    d = 10 000 each copy of the second moment is 800 MB).
    """
    return (isinstance(arr, np.ndarray) and arr.dtype == np.float64 and not arr.flags.writeable
            and arr.base is None)
