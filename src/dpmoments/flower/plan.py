"""The public plan of a Flower CAPE run, and the per-site share files.

A :class:`FlowerPlan` holds only public facts (site names, row counts ``N_s``,
``d``, the public row bound, ``(epsilon, delta)``...). The noise generator, the
aggregator and every site rebuild the same :class:`~dpmoments.distributed.NoisePlan`
from it (deterministically), and check that they agree through its ``digest``.

A share file (``<site>.npz``) holds the site's secret ``e_s`` plus the plan; it is
written by the noise generator and read only by that site.
"""

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..distributed import NoiseShare
from ..distributed.messages import STATISTIC_NDIM
from ..distributed.planning import calibrate_sites, plan_cape

__all__ = ["FlowerPlan", "PublicSite", "load_plan", "load_share", "read_data"]

PLAN_VERSION = 1


class PublicSite:
    """What everybody knows about a site: its name, ``N_s`` and the public bounds (never its rows)."""

    def __init__(self, name, n, n_features, row_norm):
        self.name, self.n, self.n_features, self.row_norm = name, int(n), int(n_features), float(row_norm)
        self.response_bound = None
        self.center = None


@dataclass(frozen=True)
class FlowerPlan:
    """Public parameters of one CAPE run across sites (JSON-able)."""

    sites: tuple
    n: tuple
    n_features: int
    epsilon: float
    delta: float
    row_norm: float
    statistic: str = "second"
    neighbours: str = "replace-one"
    calibration: str = "analytic"
    protocol: str = "cape"

    def __post_init__(self):
        object.__setattr__(self, "sites", tuple(str(s) for s in self.sites))
        object.__setattr__(self, "n", tuple(int(v) for v in self.n))
        if len(self.sites) < 2 or len(set(self.sites)) != len(self.sites):
            raise ValueError(f"a CAPE plan needs at least 2 distinct site names; got {list(self.sites)}.")
        if len(self.n) != len(self.sites) or min(self.n) < 1:
            raise ValueError("'n' must give one positive row count per site.")
        if self.statistic not in ("second", "third"):
            raise ValueError(f"the Flower apps release 'second' or 'third' moments; got {self.statistic!r}.")
        if self.protocol != "cape":
            raise ValueError(f"only protocol 'cape' is deployed on Flower; got {self.protocol!r}.")
        if int(self.n_features) < 1 or not self.row_norm > 0:
            raise ValueError("'n_features' must be >= 1 and 'row_norm' > 0.")

    # -- identity --------------------------------------------------------------------------------
    def to_dict(self):
        out = asdict(self)
        out["sites"], out["n"] = list(self.sites), list(self.n)
        out["epsilon"] = "inf" if math.isinf(self.epsilon) else float(self.epsilon)
        out["version"] = PLAN_VERSION
        return out

    @classmethod
    def from_dict(cls, data):
        data = dict(data)
        if data.pop("version", PLAN_VERSION) != PLAN_VERSION:
            raise ValueError("plan file of an unknown version.")
        data["epsilon"] = float(data["epsilon"])
        return cls(**data)

    @property
    def digest(self):
        """SHA-256 of the canonical JSON: the sites and the aggregator check they share one plan."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def public_sites(self):
        return [PublicSite(s, n, self.n_features, self.row_norm) for s, n in zip(self.sites, self.n)]

    def build(self):
        """``(noise_plan, claimed, extra)`` exactly as :func:`~dpmoments.distributed.run_cape` builds them."""
        sites = self.public_sites()
        S = len(sites)
        sens, tau, claimed = calibrate_sites(sites, self.statistic, [self.epsilon] * S, [self.delta] * S,
                                        self.neighbours, self.calibration)
        n = np.array(self.n, dtype=np.float64)
        plan, sol = plan_cape(sites, n / n.sum(), tau, sens, np.array([self.delta] * S))
        extra = None if sol is None else dict(sol.constraints, exact=sol.exact, kappa=sol.kappa,
                                              tau_pool=sol.tau_pool)
        return plan, claimed, extra

    @property
    def shape(self):
        return (int(self.n_features),) * STATISTIC_NDIM[self.statistic]


def write_plan(plan, path):
    Path(path).write_text(json.dumps(plan.to_dict(), indent=2, sort_keys=True) + "\n")


def load_plan(path):
    """Read a public ``plan.json``."""
    return FlowerPlan.from_dict(json.loads(Path(path).read_text()))


def write_share(path, share, plan):
    np.savez(path, e=np.asarray(share.matrix), site=np.array(share.site), plan=np.array(json.dumps(plan.to_dict())))


def load_share(path, site=None):
    """Read a share file: ``(NoiseShare e_s, FlowerPlan)``; checks it is meant for ``site``."""
    with np.load(path, allow_pickle=False) as z:
        e, name, plan = z["e"], str(z["site"]), FlowerPlan.from_dict(json.loads(str(z["plan"])))
    if site is not None and name != site:
        raise ValueError(f"share file {path} is for site {name!r}, not {site!r}.")
    if name not in plan.sites:
        raise ValueError(f"share file {path}: site {name!r} is not in its plan.")
    return NoiseShare(name, "noise-generator", plan.statistic, e), plan


def read_data(path):
    """A site's rows from ``.npy`` or a numeric ``.csv`` (one header line allowed)."""
    path = Path(path)
    if path.suffix == ".npy":
        X = np.load(path, allow_pickle=False)
    elif path.suffix in (".csv", ".txt"):
        with open(path) as fh:
            first = fh.readline()
        try:
            [float(v) for v in first.strip().split(",")]
            skip = 0
        except ValueError:
            skip = 1
        X = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2)
    else:
        raise ValueError(f"site data must be .npy or .csv; got {path.name!r}.")
    return np.asarray(X, dtype=np.float64)
