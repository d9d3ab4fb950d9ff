"""What a private bound says when its draw is refused or its result is doubtful.

A draw refused for too few rows names the smallest epsilon (and budget share) at which it runs
(:func:`minimum_on_refusal`, from the public ``n`` and grid only); a release that clipped more than
``CLIPPED_WARNING`` of its rows beyond its noise, or a choice that fell at an end of its search
range, raises a :class:`~dpmoments.exceptions.BoundWarning` saying what the bias does and what to
change. The choices themselves are made in :mod:`~dpmoments.moments.auto_release`.
"""

import contextlib
import math
import warnings

from ..exceptions import BoundWarning, TooFewRowsError
from ..privacy import calibrate_gaussian, zcdp_to_approx_dp

__all__ = ["CLIPPED_WARNING", "clipping_bias", "minimum_on_refusal", "round_up", "warn_clipped", "warn_range_end"]

CLIPPED_WARNING = 0.10  # a release warns when more than this share of its rows was clipped (beyond 2 noise sd)


def round_up(x):
    """``x`` rounded up to two significant digits: a minimum a refusal names, which still suffices as printed."""
    if not math.isfinite(x) or x <= 0:
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(f"{math.ceil(x / step * (1 - 1e-12)) * step:.2g}")


@contextlib.contextmanager
def minimum_on_refusal(*, epsilon, delta, share, zcdp, option="'bound_budget'", also="", basis="the same shares"):
    """A refused draw says the smallest total epsilon, and ``option``'s share, at which it would run.

    The draw's epsilon is ``share * epsilon / k`` (pure shares) or
    ``sqrt(8 share rho / k)`` (zCDP shares of the ``rho`` that fits
    ``(epsilon, delta)``), proportional to ``share`` of ``option``, so the
    refusal's ratio ``needed / epsilon_each`` (from the public ``n`` and grid,
    :func:`~dpmoments.moments.private_bounds.check_margin`) scales either.
    Nothing here reads the data; a refusal is only raised where ``n`` is public.
    """
    try:
        yield
    except TooFewRowsError as err:
        ratio = err.needed_each / err.epsilon_each
        if zcdp:
            rho = calibrate_gaussian(epsilon, delta, 1.0, calibration="zcdp")[1].rho
            least, share_needed = zcdp_to_approx_dp(rho * ratio**2, delta), share * ratio**2
        else:
            least, share_needed = epsilon * ratio, share * ratio
        other = f", or at this epsilon from {option} {round_up(share_needed):g}" if share_needed < 0.5 else ""
        raise TooFewRowsError(
            f"{err.what}: too few rows for a private draw at this budget (it would land anywhere in the search "
            f"range); with {basis} it runs from epsilon {round_up(least):g}{other}; give a larger budget share "
            f"or epsilon, a narrower search range, or a public value{also}.", what=err.what,
            epsilon_each=err.epsilon_each, needed_each=err.needed_each) from None


def clipping_bias(at_range_end):
    """What clipping many rows does to the estimate, in words; ``at_range_end``: a private choice fell at an end
    of its search range, so the data may lie beyond it (a centre there is far from them and inflates the estimate)."""
    if at_range_end:
        return ("a private choice fell at an end of its search range, so the data may lie beyond it: the estimate "
                "is biased, shrunk by the clipping or inflated by a centre far from the data")
    return "the estimate is biased towards zero"


def warn_clipped(fraction, sd, at_range_end=False):
    if fraction - 2.0 * sd > CLIPPED_WARNING:
        advice = ("widen the search range (BoundBudget(search=...)) or standardise the columns (scale='private')"
                  if at_range_end else "give a larger 'bound_budget' or quantile, or a public bound")
        shown = 100 * min(fraction, 1.0)  # a noisy share above 100% is the noise's
        warnings.warn(f"about {shown:.0f}% (noise sd {100 * sd:.1f}%) of the rows were clipped to the "
                      f"private row bound: {clipping_bias(at_range_end)}; {advice}.", BoundWarning, stacklevel=4)


def warn_range_end(label, search):
    its = "their" if label.endswith("s") else "its"  # "the private bounds ... their search range"
    warnings.warn(f"the private {label} fell at an end of {its} search range [{search.low:g}, {search.high:g}]: "
                  "widen the range or give a larger budget share.", BoundWarning, stacklevel=4)
