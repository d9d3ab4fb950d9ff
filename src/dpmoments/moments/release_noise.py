"""How a release is noised: its privacy arguments checked, the noise calibrated and drawn, the Release made.

Shared by the ``release_*`` functions of :mod:`.releases`: :func:`_check_privacy` checks epsilon, delta,
the mechanism, the relation and the calibration once; :func:`_noised` adds Gaussian or Laplace noise
to a normalised statistic (exact grid noise with ``secure``; under add-remove a noisy count from its
share of the budget, the quotient and the composed guarantee); :func:`_wishart` gives a Wishart
release's scale, degrees of freedom and guarantee; :func:`_finish` makes the :class:`Release`.
"""

import math
import warnings
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._validation import check_delta, check_epsilon, check_option, check_sensitivity
from ..exceptions import NotPrivateWarning, UncertifiedPrivacyWarning
from ..mechanisms.laws import ADDITIVE, Mechanism, as_mechanism, offered
from .._rng import as_generator
from ..privacy.calibration import CALIBRATIONS
from ..privacy.composition import compose
from ..privacy.guarantees import ApproxDP, PureDP, Uncertified
from ..privacy.wishart import wishart_degrees_of_freedom, wishart_delta
from .calibrated import calibrate, recorded_calibration
from .counts import check_count_share, noisy_count, split_budget, splits_in_rho, warn_if_delta_large
from .release import Release
from .secure_noise import secure_noisy
from .sensitivity import NEIGHBOURS, moment_sensitivity
from .statistics import as_moment


_WISHART_REASON = (
    "Wishart noise with d+1 degrees of freedom is not epsilon-DP: the support of the output depends on the "
    "data (docs/algorithms.md §1.5.1; diffprivlib#23). What holds is computed exactly in dpmoments.privacy.wishart."
)


def _check_privacy(epsilon, delta, mechanism, neighbours, calibration, allowed, count_share):
    epsilon = check_epsilon(epsilon)
    mechanism = as_mechanism(mechanism, "mechanism", allowed)
    neighbours = check_option(neighbours, "neighbours", NEIGHBOURS)
    calibration = check_option(calibration, "calibration", CALIBRATIONS)
    count_share = check_count_share(count_share, neighbours)
    if neighbours == "add-remove" and not mechanism.additive:
        raise ValueError(f"mechanism={mechanism.name!r} has no analysis with a noisy row count: use "
                         f"neighbours='zero-out' (n public) or mechanism {offered(ADDITIVE)} for add-remove.")
    needs_delta = mechanism.needs_delta and not math.isinf(epsilon)
    if needs_delta and delta is None:
        raise ValueError(f"mechanism={mechanism.name!r} needs 'delta' in (0, 1); got None.")
    if delta is not None:
        delta = check_delta(delta, allow_zero=not needs_delta)
    return _Privacy(epsilon, delta if needs_delta else None, mechanism, neighbours, calibration, count_share)


@dataclass(frozen=True)
class _Privacy:
    """The checked privacy arguments of one release."""

    epsilon: float
    delta: Optional[float]  # None where the mechanism does not use it
    mechanism: Mechanism
    neighbours: str
    calibration: str
    count_share: float


def _additive(statistic, values, sensitivity_of, epsilon, delta, p, secure, rng):
    """Gaussian or Laplace noise on ``values``: ``(noisy, release fields)``.

    ``sensitivity_of(norm)`` is the statistic's sensitivity; ``rng`` a
    Generator (float noise) or, with ``secure``, None / ``random.Random``.
    """
    if secure:
        return secure_noisy(values, sensitivity_of=sensitivity_of, epsilon=epsilon, delta=delta,
                            mechanism=p.mechanism, symmetric=statistic.mirrored, rng=rng)
    norm = p.mechanism.norm
    sens = sensitivity_of(norm)
    scale, guarantee = calibrate(p.mechanism, epsilon, delta, sens, p.calibration)
    noisy = statistic.add_noise(p.mechanism, values, scale, rng)  # a matrix: divided_by's own new array, in place
    return noisy, dict(mechanism=p.mechanism.name, noise_scale=scale, sensitivity=sens, sensitivity_norm=norm,
                       guarantee=guarantee, calibration=recorded_calibration(p.mechanism, p.calibration))


def _noised(statistic, divided_by, n, p, sensitivity_of, secure, rng):
    """The noisy normalised statistic: ``(noisy, release fields)``.

    ``divided_by(k)`` is the exact (symmetrised) sum divided by ``k``.
    Replace-one and zero-out: noise on the mean ``divided_by(n)`` (n
    public). Add-remove: a noisy count from ``count_share`` of the budget,
    noise on the sum ``divided_by(1)`` from the rest, their quotient, and
    the composed guarantee.
    """
    statistic = as_moment(statistic)
    gen = rng if secure else as_generator(rng)
    if p.neighbours != "add-remove":
        return _additive(statistic, divided_by(n), lambda norm: sensitivity_of(norm, n), p.epsilon, p.delta, p,
                         secure, gen)
    total = divided_by(1)
    (eps_c, delta_c), (eps_s, delta_s) = split_budget(p.epsilon, p.delta, p.count_share,
                                                      not secure and splits_in_rho(p.mechanism, p.calibration))
    count = noisy_count(n, epsilon=eps_c, delta=delta_c, mechanism=p.mechanism, calibration=p.calibration,
                        share=p.count_share, secure=secure, rng=gen)
    noisy_sum, fields = _additive(statistic, total, lambda norm: sensitivity_of(norm, None), eps_s, delta_s, p,
                                  secure, gen)
    fields.update(n=count.value, noise_scale=fields["noise_scale"] / count.value,
                  sum_noise_scale=fields["noise_scale"], count_noise_scale=count.noise_scale,
                  count_share=count.share, count_guarantee=count.guarantee,
                  guarantee=compose([count.guarantee, fields["guarantee"]]))
    return noisy_sum / count.value, fields


def _finish(noisy, fields, p, common, statistic):
    """The Release, after the delta >= 1/n check on the n it publishes."""
    if isinstance(noisy, np.ndarray) and noisy.base is None:
        noisy.setflags(write=False)  # this release's own new array: frozen as it is, not copied again (d x d)
    rel = Release(**{**common, **fields, as_moment(statistic).slot: noisy})
    warn_if_delta_large(p.delta, rel.n, noisy=not rel.n_public, stacklevel=3)
    return rel


def _exact(epsilon):
    if math.isinf(epsilon):
        warnings.warn("epsilon=inf: the exact statistic is released, with no privacy.", NotPrivateWarning, stacklevel=3)
        return True
    return False


def bounded_sensitivity(statistic, **kwargs):
    """:func:`moment_sensitivity`, refused in one line (naming the bounds) where it leaves the float range."""
    try:
        sens = moment_sensitivity(statistic, **kwargs)
    except OverflowError:
        sens = math.inf
    r = kwargs.get("response_bound")
    cause = f"'row_norm' = {kwargs['row_norm']:g}" + ("" if r is None else f" with 'response_bound' = {r:g}")
    return check_sensitivity(sens, cause)


def _wishart(sums, epsilon, delta, mechanism, neighbours, row_norm):
    """Scale (a variance), degrees of freedom and guarantee of a Wishart release (n public)."""
    check_sensitivity(row_norm * row_norm, f"'row_norm' = {row_norm:g}")  # the Wishart scale is R^2 / n
    d, n = sums.n_features, sums.n
    # The Wishart analysis is of the sum: zero-out with n public is its rank-one ("add-remove") step.
    step = "replace-one" if neighbours == "replace-one" else "add-remove"
    if not mechanism.certified:
        # Jiang, Xie & Zhang (2016), as used by Wang et al. and Park & Welling: C = 3 R^2 / (2 n eps).
        scale_un = 3.0 * row_norm**2 / (2.0 * epsilon)
        df = d + 1
        real_delta = wishart_delta(epsilon, d, df, row_norm**2 / scale_un, step)
        holds = ApproxDP(epsilon, real_delta) if real_delta < 1 else None
        warnings.warn(_WISHART_REASON, UncertifiedPrivacyWarning, stacklevel=3)
        return scale_un / n, df, Uncertified(PureDP(epsilon), _WISHART_REASON, holds=holds)
    df = wishart_degrees_of_freedom(d, epsilon, delta, step)
    return row_norm**2 / n, df, ApproxDP(epsilon, delta)
