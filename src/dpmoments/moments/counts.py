"""The number of rows: released with noise under add-remove, and compared with delta.

Under add/remove neighbours the two data sets differ in their number of rows,
so ``n`` is as private as any row. A release then spends a declared share
``count_share`` of its budget on the count (sensitivity 1, the statistic's
own noise family), the rest on the unnormalised sums, and divides the noisy
sums by the noisy count (rounded, floored at 1): post-processing. The two
guarantees compose (:func:`dpmoments.privacy.composition.compose`).

A delta of ``1/n`` or more is no privacy at all: "publish one row chosen at
random" is (0, 1/n)-DP. :func:`warn_if_delta_large` says so.
"""

import math
import numbers
import warnings
from dataclasses import dataclass

from ..exceptions import PrivacyLeakWarning

# NumPy and the calibrations are imported by the functions that release: the command line reads COUNT_SHARE to
# build its options, and '--help' imports no NumPy (tests/test_import_cost.py).

__all__ = ["COUNT_SHARE", "NoisyCount", "check_count_share", "count_share_unused", "split_budget", "splits_in_rho",
           "noisy_count", "published_count", "planned_guarantee", "warn_if_delta_large"]

COUNT_SHARE = 0.05
"""Default share of epsilon (and of delta) spent on the count under add-remove."""


@dataclass(frozen=True)
class NoisyCount:
    """A row count released with noise.

    Attributes
    ----------
    value : int
        The noisy count, rounded and floored at 1 (post-processing).
    noise_scale : float
        Gaussian sigma or Laplace scale b of the count's noise.
    share : float
        The share of the budget the count used.
    guarantee : PureDP, ApproxDP, ZCDP or Uncertified
        What the count's release alone satisfies under add-remove.
    """

    value: int
    noise_scale: float
    share: float
    guarantee: object


def check_count_share(count_share, neighbours=None):
    """A share of the budget in (0, 1); one other than the default is refused under a relation other than add-remove
    (``neighbours``, checked), where the row count is public and the share would be silently ignored."""
    if isinstance(count_share, bool) or not isinstance(count_share, numbers.Real) \
            or not 0.0 < float(count_share) < 1.0:
        raise ValueError(f"'count_share' must be a fraction in (0, 1) of the budget spent on the row count; "
                         f"got {count_share!r}.")
    default = math.isclose(count_share, COUNT_SHARE, rel_tol=1e-6)  # the default given as a float32 too
    if neighbours not in (None, "add-remove") and not default:
        raise ValueError(count_share_unused("'count_share'", "neighbours='add-remove'", neighbours) + ".")
    return float(count_share)


def count_share_unused(option, add_remove, neighbours):
    """The one wording, library and command line, of a row count's share given where nothing is counted."""
    return (f"{option} applies only with {add_remove} (its noisy row count); under {neighbours} the number of rows "
            f"is public and nothing is counted: leave it out")


def splits_in_rho(mechanism, calibration):
    """Whether :func:`split_budget` splits ``rho``: float noise shared in zCDP (Gaussian) calibrated in zCDP."""
    return mechanism.zcdp and not mechanism.discrete and calibration == "zcdp"


def split_budget(epsilon, delta, count_share, in_rho=False):
    """``((epsilon, delta) of the count, (epsilon, delta) of the sums)``; they compose to the total.

    ``in_rho`` (Gaussian noise calibrated in zCDP): the split is of the largest ``rho`` that meets
    ``(epsilon, delta)``, each part given the ``(epsilon, delta)`` whose zCDP calibration returns its
    share of ``rho`` (a hair under, so that the conversion's rounding up never tips the sum over):
    the two rho's add up to the budget's. Split in ``(epsilon, delta)`` instead, each part's
    conversion to zCDP loses a little (the pair composed to 0.957 of an asked epsilon of 1).
    Otherwise epsilon and delta are split linearly (basic composition adds them back).
    """
    if in_rho and delta is not None and math.isfinite(epsilon):
        from ..privacy.calibration import calibrate_gaussian
        from ..privacy.conversions import zcdp_to_approx_dp

        rho = calibrate_gaussian(epsilon, delta, 1.0, "zcdp")[1].rho * (1.0 - 1e-12)
        return ((zcdp_to_approx_dp(count_share * rho, delta), delta),
                (zcdp_to_approx_dp((1.0 - count_share) * rho, delta), delta))
    eps_count = count_share * epsilon
    delta_count = None if delta is None else count_share * delta
    return (eps_count, delta_count), (epsilon - eps_count, None if delta is None else delta - delta_count)


def noisy_count(n, *, epsilon, delta, mechanism, calibration, share, secure, rng):
    """Release the row count ``n`` (sensitivity 1 under add-remove) with noise.

    Parameters
    ----------
    n : int
        The exact count (never leaves this function unnoised).
    epsilon, delta : the count's share of the budget.
    mechanism : Mechanism
        :data:`~dpmoments.mechanisms.laws.GAUSSIAN` or :data:`~dpmoments.mechanisms.laws.LAPLACE`.
    calibration : str
        Gaussian calibration (float noise).
    share : float
        Recorded in the result.
    secure : bool
        Exact discrete noise from the OS CSPRNG (``rng`` None or a
        ``random.Random``), as :func:`~dpmoments.moments.secure_noise.secure_noisy`.
    rng : numpy.random.Generator, or (``secure``) None / random.Random

    Privacy
    -------
    Add/remove changes ``n`` by 1: Gaussian noise calibrated to L2
    sensitivity 1 gives the (epsilon, delta) of the calibration; Laplace with
    scale ``1/epsilon`` gives epsilon-DP. Rounding and the floor are
    post-processing.
    """
    import numpy as np

    from .calibrated import calibrate
    from .secure_noise import secure_noisy

    if secure:
        noisy, fields = secure_noisy(np.array([float(n)]), sensitivity_of=lambda norm: 1.0, epsilon=epsilon,
                                     delta=delta, mechanism=mechanism, symmetric=False, rng=rng)
        raw, scale, guarantee = float(noisy[0]), fields["noise_scale"], fields["guarantee"]
    else:
        scale, guarantee = calibrate(mechanism, epsilon, delta, 1.0, calibration)
        raw = n + float(mechanism.vector(1, scale, rng)[0])
    return NoisyCount(published_count(raw), scale, share, guarantee)


def published_count(raw):
    """The count a release divides by and publishes: the noisy count rounded, floored at 1 (post-processing)."""
    import numpy as np

    return max(1, int(np.rint(raw)))


def planned_guarantee(epsilon, delta, mechanism, calibration, neighbours, count_share):
    """The guarantee a Gaussian or Laplace release will carry, known before any data.

    Guarantees do not depend on the sensitivity, so each part is calibrated
    at sensitivity 1; under add-remove the count's and the sums' compose.
    """
    from ..privacy.composition import compose
    from .calibrated import calibrate

    def one(eps, dlt):
        return calibrate(mechanism, eps, dlt, 1.0, calibration)[1]

    if neighbours != "add-remove" or math.isinf(epsilon):
        return one(epsilon, delta)
    (eps_c, delta_c), (eps_s, delta_s) = split_budget(epsilon, delta, count_share,
                                                      splits_in_rho(mechanism, calibration))
    return compose([one(eps_c, delta_c), one(eps_s, delta_s)])


def warn_if_delta_large(delta, n, *, noisy, stacklevel=3):
    """Warn (``PrivacyLeakWarning``) when ``delta >= 1/n``, naming n and delta.

    ``n`` must be public: the exact count under replace-one / zero-out, the
    noisy count under add-remove (``noisy=True``, and said so).
    ``stacklevel`` counts from the caller, as ``warnings.warn`` called there would.
    """
    if delta is None or delta <= 0 or delta * n < 1:
        return
    which = "the noisy row count" if noisy else "rows"
    below = 10.0 ** math.floor(math.log10(0.01 / n))  # a power of ten at least 100 times below 1/n
    warnings.warn(
        f"delta={delta:g} >= 1/n with n={n} ({which}): an (epsilon, delta) guarantee with delta >= 1/n allows "
        f"publishing a whole row at random; choose delta well below 1/n (e.g. {below:g}).",
        PrivacyLeakWarning, stacklevel=stacklevel + 1,
    )
