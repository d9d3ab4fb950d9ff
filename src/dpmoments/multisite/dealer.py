"""The trusted noise generator: deals each site its secrets for a plan, out of band.

For CAPE a site's :class:`Bundle` holds its zero-sum share ``e_s`` of every round
(``sum_s mu_s e_s = 0`` exactly for every draw) and the plan (in a file: the plan's digest, the
plan itself travelling once as the public ``plan.json``); for secure aggregation
(simulated in process) the seeds of the pairwise masks it shares. A bundle reaches its
site only, never through the aggregator: if the aggregator saw ``e_s`` it could strip
the noise from that site's message. In a deployment it is a file (:func:`write_bundle`,
mode 600) that the site is given by hand or over its own channel.
"""

import io
import itertools
import json
import math
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .._rng import as_generator
from .plan import Plan
from .spent import answered_in_process

__all__ = ["Bundle", "deal", "deal_bytes", "write_bundle", "read_bundle", "deal_files", "plan_json"]


@dataclass(frozen=True, eq=False)
class Bundle:
    """What one site needs from the dealer for one plan: its shares (round -> ``e_s``) and pairwise masks."""

    plan: Plan
    site: str
    shares: dict = field(default_factory=dict)
    masks: dict = field(default_factory=dict)  # round -> [(coefficient, SeedSequence)] (in process only)
    path: Optional[Path] = None  # the share file it was read from, where its use is recorded (spent.py)

    def __post_init__(self):
        if self.site not in self.plan.sites:
            raise ValueError(f"site {self.site!r} is not in the plan's sites {list(self.plan.sites)}.")
        shares = {}
        for r, e in self.shares.items():
            arr = np.array(e, dtype=np.float64)
            arr.setflags(write=False)
            shares[int(r)] = arr
        object.__setattr__(self, "shares", shares)


def deal(plan, rng=None, pair_seeds=None):
    """One :class:`Bundle` per site of ``plan`` (``rng=None``: OS entropy, as a real deal must be).

    ``pair_seeds`` maps a pair ``(s, t)`` to the seed both sites agreed on (secure
    aggregation, simulated in process); the dealer does not draw them.
    """
    gen = as_generator(rng)
    d = plan.n_features
    shares = {s: {} for s in plan.sites}
    masks = {s: {} for s in plan.sites}
    for r, (rnd, noise) in enumerate(zip(plan.rounds, plan.noise)):
        L = noise.e_factor
        if plan.masking == "dealer" and np.any(L != 0):
            stat = rnd.stat
            Z = stat.unit_noise(d, gen, size=L.shape[1])
            E = np.tensordot(L, Z, axes=1)
            for i, s in enumerate(plan.sites):
                shares[s][r] = _mirrored(E[i]) if stat.mirrored else E[i]
        elif plan.masking == "pairwise" and np.any(L != 0):
            for j, pair in enumerate(itertools.combinations(plan.sites, 2)):
                for s in pair:
                    seed = np.random.SeedSequence(pair_seeds[pair].entropy, spawn_key=(r,))
                    masks[s].setdefault(r, []).append((float(L[plan.index(s), j]), seed))
    return {s: Bundle(plan, s, shares[s], masks[s]) for s in plan.sites}


def _mirrored(M):
    """``M`` exactly symmetric: its upper triangle mirrored. ``tensordot`` over many sites (BLAS blocks the sum)
    can leave entry (j, k) and (k, j) one rounding apart, and a site's reply must be exactly symmetric (its
    egress guard refused every reply of a 200-site run at d = 50). The map is linear: the shares still sum to
    zero as before."""
    upper = np.triu(M)
    return upper + np.triu(M, 1).T


def deal_bytes(plan):
    """About the most memory :func:`deal` takes for ``plan``: every round's draws and every site's share, float64.

    Computed from the plan alone, before anything is drawn, so that a plan too large for the machine is
    refused at once (at 10^5 features one site's second-moment share alone is 80 GB).
    """
    if plan.masking != "dealer":
        return 0
    return sum(8 * (noise.e_factor.shape[1] + len(plan.sites))
               * math.prod(rnd.stat.noise_shape(plan.n_features))
               for rnd, noise in zip(plan.rounds, plan.noise) if np.any(noise.e_factor != 0))


def write_bundle(bundle, path):
    """Write a deployable bundle to ``path``, readable by its owner only: the plan's digest and ``e_s`` per round.

    The plan itself is public and travels once, as ``plan.json`` (:func:`deal_files` writes it beside the
    shares): a share names it by digest, so a share's size is its own ``e_s`` and does not grow with the
    number of sites (each share carrying the whole plan made the shares of S sites grow as S^2).
    """
    if bundle.masks:
        raise ValueError("pairwise masks are simulated in process only; they are not written to files.")
    if bundle.path is not None:  # a copy without the original's mark and records would look unused
        raise ValueError(f"the share of site {bundle.site!r} was read from '{bundle.path}': a share is one file and "
                         "is not written again (a share answers once)")
    if answered_in_process(bundle.plan.digest, bundle.site):
        # its record is in this process only: a file written now would look unused and answer again
        raise ValueError(f"the share of site {bundle.site!r} has answered in this process; it cannot be written "
                         "to a file (a share answers once): deal the plan again")
    buf = io.BytesIO()
    np.savez(buf, plan_digest=np.array(bundle.plan.digest), site=np.array(bundle.site),
             **{f"e{r}": e for r, e in bundle.shares.items()})
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(buf.getvalue())
    path.chmod(0o600)
    return path


def read_bundle(path, site=None, plan=None):
    """Read a share file; check it is meant for ``site`` and for ``plan`` (default: ``plan.json`` beside it).

    A share names its plan by digest; the public plan is read from ``plan`` (a :class:`Plan` or a path to
    its ``plan.json``) and must have that digest. A share written with the plan inside it (before the
    plan travelled once) is read as it is.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            inside = Plan.from_json(str(z["plan"])) if "plan" in z.files else None
            digest = None if inside is not None else str(z["plan_digest"])
            name = str(z["site"])
            shares = {int(k[1:]): z[k] for k in z.files if k.startswith("e")}
    except FileNotFoundError:
        raise ValueError(f"share file '{path}' does not exist.") from None
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:  # truncated, damaged
        raise ValueError(f"share file '{path}' is not a dpmoments share file ({type(exc).__name__}).") from None
    if site is not None and name != site:
        raise ValueError(f"share file '{path}' is for site {name!r}, not {site!r}.")
    plan = inside if inside is not None else _public_plan(path, plan, digest)
    return Bundle(plan, name, shares, path=Path(path))


def _public_plan(path, plan, digest):
    """The plan a share names by ``digest``: ``plan``, or ``plan.json`` beside the share; refused if another."""
    where = Path(path).with_name("plan.json") if plan is None else plan
    if not isinstance(where, Plan):
        try:
            where = Plan.from_json(Path(where).read_text())
        except FileNotFoundError:
            raise ValueError(f"share file '{path}' names its plan by digest; the public plan.json the noise "
                             f"generator wrote with it must be beside it ('{where}' is missing).") from None
    if where.digest != digest:
        raise ValueError(f"share file '{path}' is for plan {digest[:12]}, not {where.digest[:12]} (a plan.json of "
                         "another dealing?).")
    return where


def plan_json(plan):
    """The text of ``plan.json``: the public plan, readable (its digest is of the canonical form)."""
    from .report import collusion_dict

    # "collusion" is a reading aid for the operator, not part of the plan (from_dict drops it; the digest ignores it)
    return json.dumps(dict(plan.to_dict(), collusion=collusion_dict(plan.collusion)), indent=1, sort_keys=True) + "\n"


def deal_files(plan, out_dir, rng=None):
    """Deal ``plan`` into ``out_dir``: ``plan.json`` (public) and ``<site>.npz`` (secret, one per site)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {s: write_bundle(b, out / f"{s}.npz") for s, b in deal(plan, rng).items()}
    (out / "plan.json").write_text(plan_json(plan))
    paths["plan"] = out / "plan.json"
    return paths
