r"""The noise model of one round across sites, and what it guarantees against the aggregator.

Every protocol here adds Gaussian noise that acts on each distinct coordinate of
the statistic (upper triangle of a matrix, orbit of a tensor) independently and
*identically across coordinates*; only the correlation *across sites* differs. A
:class:`NoisePlan` is that per-coordinate model:

* site ``s`` sends :math:`y_s = A_s + e_s + f_s + g_s` (missing terms are zero);
* :math:`e = L z` with :math:`z \sim N(0, I_m)` primitive components (``e_factor``:
  CAPE's zero-sum shares, or secure aggregation's pairwise masks);
* :math:`g_s \sim N(0, \tau_{g_s}^2)` local, :math:`f_s \sim N(0, \tau_{f_s}^2)` from
  the aggregator, all independent.

**Claimed (per-site, the paper's view).** Site ``s``'s message on its own carries
variance :math:`\tau_s^2` at least, calibrated to its sensitivity: (epsilon_s, delta_s).

**Joint view (the honest guarantee against the aggregator).** The aggregator knows
``f`` and sees :math:`y_s - f_s = A_s + e_s + g_s` for every site at once, noise
covariance :math:`\Sigma = LL^\top + \mathrm{diag}(\tau_g^2)` per coordinate. With a set
``C`` of colluding sites it also knows their data and everything they hold: their
``g``, their ``e_t = L_t z`` and (secure aggregation) the mask components they share.
Their messages are then deterministic and carry nothing; what remains is the honest
sites' view ``H`` *conditioned* on the known linear functionals :math:`Kz`:

.. math::

    \Sigma_{H|C} = L_H (I - K^{+}K) L_H^\top + \mathrm{diag}(\tau_{g,H}^2)

(the Gaussian conditional covariance; the conditional *mean* shift is
data-independent). A neighbouring change in site ``s`` moves :math:`y_s` by
:math:`\delta` with :math:`\|\delta\|_2 \le \Delta_s` on the noised coordinates; the
full covariance is :math:`\Sigma_{H|C} \otimes I`, so the privacy loss is that of a
scalar Gaussian mechanism with sensitivity/noise ratio

.. math::

    \Delta_M = \Delta_s \sqrt{[\Sigma_{H|C}^{-1}]_{ss}}

giving exactly (epsilon, delta) by the Balle--Wang curve with ``sigma = 1`` and
sensitivity :math:`\Delta_M`, and :math:`\rho = \Delta_M^2/2`-zCDP. The worst colluder
set of size ``c`` is found by enumeration (or, past ``max_subsets`` sets, by the safe
bound that conditions on *every* other site). For equal-site CAPE without colluders,
:math:`[\Sigma^{-1}]_{ss} = 2S/((S+1)\tau^2)`: the aggregator observes site ``s`` as if
with variance :math:`\tau^2 (S+1)/(2S)`, about half the claimed one.

**Output.** The published aggregate alone, :math:`\sum_s \mu_s(A_s + g_s) + \ldots`, gives
site ``s`` the ratio :math:`\mu_s\Delta_s/\sigma_{agg}`.
"""

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

import numpy as np

from ..mechanisms import gaussian_noise
from ..privacy import ApproxDP, PureDP, ZCDP, gaussian_epsilon
from ..privacy.guarantees import AnyGuarantee

__all__ = ["NoisePlan", "JointView", "joint_view", "guarantee_from_ratio"]


def _frozen(arr: Any, dtype: Any = np.float64) -> np.ndarray:
    out = np.array(arr, dtype=dtype)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class NoisePlan:
    """The per-coordinate Gaussian noise model of one run (see the module docstring).

    Attributes
    ----------
    sites : tuple of str
    n : tuple of int
    weights : ndarray (S,)
        The aggregator's weights mu (sum 1).
    tau : ndarray (S,)
        The per-site std each site's claim is calibrated to.
    sensitivity : ndarray (S,)
        L2 sensitivity of each site's statistic on the noised coordinates.
    deltas : ndarray (S,)
    e_factor : ndarray (S, m)
    known : ndarray (S, m) of bool
        Primitive components a site knows beyond its own ``e_s`` (pairwise masks).
    g_std, f_std : ndarray (S,)
    """

    sites: tuple[str, ...]
    n: tuple[int, ...]
    weights: np.ndarray
    tau: np.ndarray
    sensitivity: np.ndarray
    deltas: np.ndarray
    e_factor: np.ndarray
    known: np.ndarray
    g_std: np.ndarray
    f_std: np.ndarray

    def __post_init__(self) -> None:
        for name in ("weights", "tau", "sensitivity", "deltas", "e_factor", "g_std", "f_std"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "known", _frozen(self.known, bool))
        S = len(self.sites)
        if self.e_factor.ndim != 2 or self.e_factor.shape[0] != S or self.known.shape != self.e_factor.shape:
            raise ValueError("'e_factor' and 'known' must have shape (n_sites, m).")

    def scaled(self, k: float) -> "NoisePlan":
        """The same plan with every noise std multiplied by ``k`` (CAPE's solution is linear in tau)."""
        return replace(self, tau=self.tau * k, e_factor=self.e_factor * k, g_std=self.g_std * k,
                       f_std=self.f_std * k)

    def rescaled(self, k: float) -> "NoisePlan":
        """Every std and the sensitivity multiplied by ``k``: the same ratios, the same guarantees (new bounds)."""
        return replace(self.scaled(k), sensitivity=self.sensitivity * k)

    def subset(self, names: Sequence[str]) -> "NoisePlan":
        """The plan restricted to ``names`` (sites that failed before the deal are planned out)."""
        idx = [self.index(s) for s in names]
        return replace(self, sites=tuple(names), n=tuple(self.n[i] for i in idx), weights=self.weights[idx],
                       tau=self.tau[idx], sensitivity=self.sensitivity[idx], deltas=self.deltas[idx],
                       e_factor=self.e_factor[idx], known=self.known[idx], g_std=self.g_std[idx],
                       f_std=self.f_std[idx])

    def to_dict(self) -> dict[str, list[Any]]:
        out = {k: getattr(self, k) for k in _FIELDS}
        out = {k: (v.tolist() if isinstance(v, np.ndarray) else list(v)) for k, v in out.items()}
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "NoisePlan":
        data = dict(data)
        if set(data) != set(_FIELDS):
            raise ValueError("a noise plan holds exactly the fields " + ", ".join(_FIELDS) + ".")
        data["sites"], data["n"] = tuple(str(s) for s in data["sites"]), tuple(int(v) for v in data["n"])
        return cls(**data)

    @property
    def n_sites(self) -> int:
        return len(self.sites)

    @property
    def e_std(self) -> np.ndarray:
        return np.sqrt(np.sum(self.e_factor**2, axis=1))

    def index(self, site: str) -> int:
        return self.sites.index(site)

    def view_covariance(self) -> np.ndarray:
        """Covariance of the aggregator's view noise ``e + g`` (one coordinate), (S, S)."""
        return self.e_factor @ self.e_factor.T + np.diag(self.g_std**2)

    def conditional_covariance(self, observed: Sequence[int], colluders: Iterable[int] = ()) -> np.ndarray:
        """Covariance of the noise of the ``observed`` sites given the colluders' knowledge."""
        L = self.e_factor
        rows = [L[t] for t in colluders]
        for t in colluders:
            rows.extend(np.eye(L.shape[1])[self.known[t]])
        L_obs = L[list(observed)]
        if rows:
            K = np.array(rows)
            L_obs = L_obs - (L_obs @ np.linalg.pinv(K)) @ K
        return L_obs @ L_obs.T + np.diag(self.g_std[list(observed)] ** 2)

    def mahalanobis(self, site: Union[str, int], colluders: Iterable[int] = (),
                    survivors: Optional[Iterable[int]] = None) -> float:
        """``Delta_M`` of ``site`` against the aggregator and ``colluders`` (indices).

        The two sets every report asks about for every site are solved once per plan and read
        site by site (the same numbers, O(S^3) in all instead of O(S^4)): no colluders (one LU
        of the observed sites' covariance per survivor set) and all other sites colluding
        (one factorisation of the noise factor: :meth:`_all_others_variance`). Any other colluder
        set is solved on its own (:meth:`_mahalanobis_direct`).
        """
        s = self.index(site) if isinstance(site, str) else int(site)
        if self.tau[s] == 0:
            return math.inf
        seen = tuple(range(self.n_sites)) if survivors is None else tuple(int(t) for t in survivors)
        colluders = tuple(int(t) for t in colluders)
        if not colluders:
            return self._alone(s, seen)
        if s in seen and set(colluders) == set(range(self.n_sites)) - {s}:
            return self._all_others(s, colluders, seen)
        return self._mahalanobis_direct(s, colluders, seen)

    def _all_others(self, s: int, colluders: Iterable[int], seen: tuple[int, ...]) -> float:
        """``Delta_M`` of site index ``s`` with every other site colluding, once per site (survivors change nothing:
        only ``s`` is left to observe)."""
        cache = self.__dict__.setdefault("_all_others_cache", {})
        if s not in cache:
            variance = self._all_others_variance()[s]
            cache[s] = self._mahalanobis_direct(s, colluders, seen) if variance is None else \
                math.inf if variance == 0 else float(self.sensitivity[s] * math.sqrt(1.0 / variance))
        return cache[s]

    def _mahalanobis_direct(self, s: int, colluders: Iterable[int], seen: Iterable[int]) -> float:
        """``Delta_M`` of site index ``s`` for one colluder set: the conditional covariance solved outright."""
        observed = [t for t in seen if t not in colluders]
        cov = self.conditional_covariance(observed, colluders)
        k = observed.index(s)
        unit = np.zeros(len(observed))
        unit[k] = 1.0
        try:
            return float(self.sensitivity[s] * math.sqrt(unit @ np.linalg.solve(cov, unit)))
        except np.linalg.LinAlgError:  # noise that some view cancels exactly (no local noise): nothing is hidden
            return math.inf

    def _alone(self, s: int, seen: tuple[int, ...]) -> float:
        """``Delta_M`` of site index ``s`` without colluders: one LU of the observed sites' covariance per survivor
        set, then one triangular solve per site (the same LAPACK steps as solving for each site outright, so the
        same bits: a plan met against the aggregator, hence its seeded release, is unchanged)."""
        observed, lu = self._alone_lu(seen)
        k = observed.index(s)
        if lu is None:  # noise that some view cancels exactly (no local noise): nothing is hidden
            return math.inf
        from scipy.linalg import lu_solve  # here: keeps the Flower apps' start-up fast

        unit = np.zeros(len(observed))
        unit[k] = 1.0
        return float(self.sensitivity[s] * math.sqrt(unit @ lu_solve(lu, unit, check_finite=False)))

    def _alone_lu(self, seen: tuple[int, ...]) -> tuple[list[int], Optional[tuple[np.ndarray, np.ndarray]]]:
        """``(observed, LU factors of their covariance)`` without colluders, once per survivor set (``None``:
        exactly singular, where solving raises)."""
        cache = self.__dict__.setdefault("_alone_cache", {})
        if seen not in cache:
            from scipy.linalg import get_lapack_funcs  # lu_factor's own getrf, without its warning when singular

            observed = list(seen)
            cov = self.conditional_covariance(observed)
            lu = None
            if observed:
                getrf, = get_lapack_funcs(("getrf",), (cov,))
                factors, pivots, info = getrf(cov)
                lu = (factors, pivots) if info == 0 else None  # info > 0: exactly singular
            cache[seen] = (observed, lu)
        return cache[seen]

    def _all_others_variance(self) -> list[Optional[float]]:
        r"""Per site, the variance of its noise given everything every other site knows (``None``: solve it outright).

        Site ``s`` alone is observed; the others know their rows of ``e_factor`` and the components
        they hold (``known``). A component some other site holds is known outright, so what stays
        hidden is row ``s`` of ``L_F`` (the components no other site holds) off the span of the
        other rows: zero when ``s`` is in the support of a left null vector of ``L_F`` (CAPE: the
        weights, every site), else ``1 / sum_k U_{sk}^2 / sigma_k^2`` over ``L_F``'s singular
        triplets (the residual of a row off the others, from one SVD). Plus ``g_s^2``. Done once
        per plan when every component is held by no site or by two or more (CAPE, pairwise masks,
        no masks); a site whose answer the SVD leaves in doubt (or with no local noise) is ``None``.
        """
        cache = self.__dict__
        if "_all_others_variances" not in cache:
            cache["_all_others_variances"] = self._all_others_solved()
        return cache["_all_others_variances"]

    def _all_others_solved(self) -> list[Optional[float]]:
        S, holders = self.n_sites, self.known.sum(axis=0)
        if S < 2 or np.any(holders == 1):  # a component one site alone holds: the hidden part differs by site
            return [None] * S
        free = self.e_factor[:, holders == 0]
        residual, sure = np.zeros(S), np.ones(S, bool)
        if free.size and np.any(free):
            u, sv, _ = np.linalg.svd(free, full_matrices=True)
            rank = int(np.sum(sv > sv[0] * max(free.shape) * np.finfo(float).eps))
            in_null = np.sum(u[:, rank:] ** 2, axis=1)
            spanned = np.sum((u[:, :rank] / sv[:rank]) ** 2, axis=1)
            residual = np.divide(1.0, spanned, out=np.zeros(S), where=in_null <= _SURELY_IN)
            sure = (in_null > _SURELY_IN) | ((in_null < _SURELY_OUT) & (sv[rank - 1] > _WELL_CONDITIONED * sv[0]))
        variance = residual + self.g_std**2
        return [float(v) if ok and g > 0 else None for v, ok, g in zip(variance, sure, self.g_std)]

    def aggregate_variance(self, survivors: Optional[Iterable[int]] = None) -> float:
        """Variance of ``sum_s mu'_s (e_s + g_s)`` over survivors, ``mu'`` renormalised."""
        idx = list(range(self.n_sites)) if survivors is None else list(survivors)
        mu = self.weights[idx] / self.weights[idx].sum()
        return float(mu @ self.view_covariance()[np.ix_(idx, idx)] @ mu)

    def sample_view_noise(self, size: int, rng: Any) -> np.ndarray:
        """``size`` draws of the view noise ``e + g`` of one coordinate, shape (size, S)."""
        z = gaussian_noise((size, self.e_factor.shape[1]), 1.0, rng)
        return z @ self.e_factor.T + gaussian_noise((size, self.n_sites), 1.0, rng) * self.g_std


#: ``_all_others_solved``'s margins: a site whose left-null-space weight lies between the two, or whose
#: spanned residual rests on a singular value this far below the largest, is solved outright instead.
_SURELY_IN, _SURELY_OUT, _WELL_CONDITIONED = 1e-8, 1e-24, 1e-6

_FIELDS = ("sites", "n", "weights", "tau", "sensitivity", "deltas", "e_factor", "known", "g_std", "f_std")


def guarantee_from_ratio(ratio: float, delta: float, calibration: str = "analytic") -> AnyGuarantee:
    """The guarantee of a Gaussian mechanism with sensitivity/sigma ``ratio``.

    ``ZCDP(ratio**2 / 2)`` for ``calibration="zcdp"``, otherwise the exact
    (epsilon, delta) at ``delta`` (Balle & Wang), with ``rho`` recorded.
    """
    if math.isinf(ratio):
        return PureDP(math.inf)
    rho = 0.5 * ratio**2
    if calibration == "zcdp":
        return ZCDP(rho)
    eps = gaussian_epsilon(1.0, delta, ratio)
    return ApproxDP(max(eps, np.finfo(float).tiny), delta, rho=rho)


@dataclass(frozen=True)
class JointView:
    """The joint-view analysis of one site: worst colluders, ``Delta_M`` and the guarantee."""

    site: str
    colluders: tuple[str, ...]
    delta_m: float
    guarantee: AnyGuarantee
    exhaustive: bool


def joint_view(plan: NoisePlan, site: str, colluders: int = 0, *, calibration: str = "analytic",
               survivors: Optional[Iterable[int]] = None, max_subsets: int = 5000) -> JointView:
    """Worst-case joint-view guarantee of ``site`` with ``colluders`` colluding sites.

    Parameters
    ----------
    plan : NoisePlan
    site : str
    colluders : int
        Number of other sites colluding with the aggregator (0 <= c <= S - 1).
    calibration : str
        ``"zcdp"`` reports :class:`ZCDP`; anything else (epsilon, delta).
    survivors : sequence of int, optional
        Sites whose messages the aggregator received (dropout); default all.
    max_subsets : int
        Colluder sets enumerated; beyond it the safe bound (all others collude) is used.
    """
    s = plan.index(site)
    others = [t for t in range(plan.n_sites) if t != s]
    if not 0 <= colluders <= len(others):
        raise ValueError(f"'colluders' must be in [0, {len(others)}]; got {colluders}.")
    exhaustive = math.comb(len(others), colluders) <= max_subsets
    subsets = itertools.combinations(others, colluders) if exhaustive else [tuple(others)]
    best, worst = -1.0, ()  # type: float, tuple[int, ...]
    for subset in subsets:
        dm = plan.mahalanobis(s, subset, survivors)
        if dm > best:
            best, worst = dm, subset
    guarantee = guarantee_from_ratio(best, float(plan.deltas[s]), calibration)
    return JointView(site, tuple(plan.sites[t] for t in worst), best, guarantee, exhaustive)
