"""Which part of a covariance interval is conservative, and by how much? Each part of the error budget left out.

A diagnostic for issue 25 (``python -m benchmarks covariance_parts``): the covariance's 90% intervals at the defaults
(delta = 1e-6) are refitted on the same seeds with one part of the error budget (``dpmoments.estimators.error_budget``)
left out at a time, by patching the budget's own functions for that fit only:

- **sampling**: the bound without fourth moments (``sampling_bound``) left out, or replaced by normal theory,
  ``(S_ii S_jj + S_ij^2) / n`` (what a Gaussian population's fourth moments give);
- **clipping**: the clipping-excess release ignored (every clipping allowance, the unclear-sign rule and the
  withholding with it); **towards**: only the undetected loss's off-diagonal allowance (towards a larger |entry|);
  **tail**: the factor 2 for what rows beyond twice the bound lost beyond it (``tail_factor``) taken as 1;
- **centre noise**: the private centre's noise scale taken as 0 (its ``e e^T`` and the centre-bias terms it
  multiplies); **centre bias**: the centre's own clipping bias bound left out.

Each cell is ``width / noise-only (hold full)`` (hold pop. after a slash in simulation): the median ratio of the
interval's width to the noise-only interval's, and the share of printed intervals that hold the full-data value. A
part whose removal keeps coverage at or above the level is conservative by the width it adds; one whose removal
drops it is needed. The intervals printed by the library are the ``all parts`` column. Reads rows only to score
(as ``coverage``); the patched fits are never released to anyone.

A second table sets the width each part adds (the width with it less the width without it) beside the error
of that kind the rows realised, entry by entry, read from the rows (a benchmark may; the estimators never do):
**clipping**, what clipping at the release's bound about its centre removed from each entry; **centre noise**,
``(x̄ - c)_i (x̄ - c)_j``, the private centre's whole error; **sampling** (simulations), the full-data value less the
population's. ``added / realised`` is the median ratio over entries (above 1: the part is wider than the error it
is for), ``short`` the share of entries whose realised error exceeds the width the part added.

``COVERAGE_DATA`` and ``COVERAGE_EPSILONS`` as for ``coverage``; ``--quick`` runs 2 seeds instead of 5.
"""

import contextlib
import os
import warnings
from unittest import mock

import numpy as np

from .coverage import DELTA, LEVEL, _real, _simulations, chosen_epsilons
from .timing import Table, log

DEFAULT_DATA = ("iris", "grunfeld", "diabetes", "anes96", "gaussian", "t3", "0/1")


def _normal_theory(out, release, sigma):
    v = np.diag(sigma)
    out += (np.outer(v, v) + sigma**2) / release.n


def _variants():
    import dpmoments.estimators.clipping_blocks as blocks
    import dpmoments.estimators.error_budget as budget

    towards = blocks.ClippingShifts._towards

    def no_towards(self, rows, touched):
        shift, sd, positive, negative = towards(self, rows, touched)
        shift *= 0.0
        if sd is not None:
            sd *= 0.0
        return shift, sd, positive, negative

    return {
        "all parts": [],
        "no sampling": [mock.patch.object(budget, "add_sampling_variance", lambda out, release, sigma: None)],
        "normal sampling": [mock.patch.object(budget, "add_sampling_variance", _normal_theory)],
        "no clipping": [mock.patch.object(budget, "clipping_part", lambda release: None)],
        "no towards": [mock.patch.object(blocks.ClippingShifts, "_towards", no_towards)],
        "tail 1": [mock.patch.object(budget, "tail_factor", lambda part: 1.0)],
        "no centre noise": [mock.patch.object(budget, "centre_noise_scale", lambda release: 0.0)],
        "no centre bias": [mock.patch.object(budget, "centre_bias_bound", lambda *a, **k: None)],
    }


def _fit(X, epsilon, seed, patches):
    from dpmoments.estimators import PrivateCovariance

    with contextlib.ExitStack() as stack, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for patch in patches:
            stack.enter_context(patch)
        return PrivateCovariance(epsilon=epsilon, delta=DELTA, level=LEVEL, rng=seed).fit(X)


def _cell(ratios, holds, pops):
    if not holds:
        return "refused"
    pop = f"/{np.mean(pops):.2f}" if pops else ""
    return f"{np.median(ratios):.2f} ({np.mean(holds):.2f}{pop})"


# part -> the variant that leaves it out, whose width the 'all parts' width is compared with
REALISED = {"clipping": "no clipping", "centre noise": "no centre noise", "sampling": "no sampling"}


def _realised(X, release, sigma, iu):
    """Each part's error as the rows realised it (module docstring), entries ``iu``, original units."""
    scale = np.ones(X.shape[1]) if release.column_scale is None else np.asarray(release.column_scale, dtype=float)
    Z = X / scale - np.asarray(release.center, dtype=float)
    norms = np.maximum(np.linalg.norm(Z, axis=1), 1e-300)
    kept = np.minimum(1.0, float(release.row_norm) / norms) ** 2
    units = np.outer(scale, scale)
    lost = (Z * (1.0 - kept)[:, None]).T @ Z / len(Z) * units
    offset = Z.mean(axis=0)
    out = {"clipping": lost[iu], "centre noise": (np.outer(offset, offset) * units)[iu]}
    if sigma is not None:
        out["sampling"] = np.cov(X, rowvar=False)[iu] - sigma[iu]
    return out


def _case(draw, sigma, epsilon, seeds, variants, realised=None):
    scores = {name: ([], [], []) for name in variants}
    for seed in seeds:
        X = draw(np.random.default_rng(10_000 + seed))
        iu = np.triu_indices(X.shape[1])
        full = np.cov(X, rowvar=False)[iu]
        widths = {}
        for name, patches in variants.items():
            try:
                est = _fit(X, epsilon, seed, patches)
            except ValueError:  # refused: too few rows for a private choice
                continue
            if name == "all parts" and realised is not None:
                errors = _realised(X, est.release_, sigma, iu)
            widths[name] = np.diff(est.covariance_interval_[:, iu[0], iu[1]], axis=0)[0]
            lo, hi = est.covariance_interval_[:, iu[0], iu[1]]
            nlo, nhi = est.covariance_noise_interval_[:, iu[0], iu[1]]
            printed, noisy = ~np.isnan(lo), (nhi - nlo) > 0
            ratios, holds, pops = scores[name]
            ratios.extend(((hi - lo)[printed & noisy] / (nhi - nlo)[printed & noisy]).tolist())
            holds.extend(((lo <= full) & (full <= hi))[printed].tolist())
            if sigma is not None:
                pop = sigma[iu]
                pops.extend(((lo <= pop) & (pop <= hi))[printed].tolist())
        if realised is not None and "all parts" in widths:
            for part, without in REALISED.items():
                if part in errors and without in widths:
                    added, error = widths["all parts"] - widths[without], np.abs(errors[part])
                    keep = np.isfinite(added) & (error > 0)
                    realised.setdefault(part, []).append((added[keep], error[keep]))
    return [_cell(*scores[name]) for name in variants]


def _realised_cells(realised):
    cells = []
    for part in REALISED:
        pairs = realised.get(part)
        if not pairs:
            cells += ["-", "-"]
            continue
        added, error = np.concatenate([a for a, _ in pairs]), np.concatenate([e for _, e in pairs])
        cells += [f"{np.median(added / error):.3g}", f"{np.mean(error > added):.2f}"]
    return cells


def run(quick=False):
    """The covariance's width and coverage with each part of its error budget left out, a few real and simulated
    tables, epsilon 1 and 4."""
    seeds = range(2 if quick else 5)
    wanted = [a for a in os.environ.get("COVERAGE_DATA", "").lower().split(",") if a] or list(DEFAULT_DATA)
    cases = [(name, (lambda rng, X=X: X), None) for name, X in _real().items()]
    cases += [(name, draw, sigma) for name, (draw, sigma) in _simulations(5000).items()]
    cases = [c for c in cases if any(a in c[0].lower() for a in wanted)]
    variants = _variants()
    table = Table(f"covariance: width / noise-only (hold full[/hold pop.]) with one part of the error budget left out, "
                  f"90% intervals, delta = {DELTA:g}, {len(seeds)} seeded fits each", ["data", "epsilon", *variants])
    parts = Table(f"covariance: the width each part adds beside the error it is for, as the rows realised it, "
                  f"{len(seeds)} seeded fits each", ["data", "epsilon"] + [f"{p}: {c}" for p in REALISED
                                                                          for c in ("added / realised", "short")])
    for name, draw, sigma in cases:
        for epsilon in chosen_epsilons():
            realised = {}
            table.rows.append([name, f"{epsilon:g}", *_case(draw, sigma, epsilon, seeds, variants, realised)])
            parts.rows.append([name, f"{epsilon:g}", *_realised_cells(realised)])
            log(f"covariance_parts {name} eps={epsilon:g}: {table.rows[-1][2:]} {parts.rows[-1][2:]}")
    parts.notes.append("'added': the interval's width with every part less its width without that part (the "
                       "sampling bound, the clipping part, the centre's noise); 'realised': |what clipping removed "
                       "about the release's centre|, |(x̄ - c)_i (x̄ - c)_j|, |full-data value - population value|, "
                       "read from the rows. A part 'short' on an entry may still be covered by the others.")
    table.notes.append("Each part is left out by patching the error budget's own function for that fit; 'normal "
                       "sampling' replaces the bound without fourth moments by normal theory. A column whose coverage "
                       "stays at or above 0.90 names a conservative part; one that drops names a part the intervals "
                       "need.")
    return [table, parts]
