"""What a noise law costs: the one join of a mechanism value and its calibration.

``mechanisms/`` draws noise at a scale and ``privacy/`` turns a budget into a scale; neither knows
the other, so they meet here, once. :data:`CALIBRATE` maps each additive noise law to the function
that gives its scale and guarantee for a budget at a sensitivity (in the law's own norm,
``mechanism.norm``); a new noise law adds one entry.
"""

from ..mechanisms.laws import GAUSSIAN, LAPLACE, Mechanism
from ..privacy.calibration import calibrate_gaussian, calibrate_laplace

__all__ = ["CALIBRATE", "calibrate", "recorded_calibration"]

#: ``mechanism -> (epsilon, delta, sensitivity, calibration) -> (scale, guarantee)``.
CALIBRATE = {
    GAUSSIAN: lambda epsilon, delta, sensitivity, calibration: calibrate_gaussian(epsilon, delta, sensitivity,
                                                                                  calibration),
    LAPLACE: lambda epsilon, delta, sensitivity, calibration: calibrate_laplace(epsilon, sensitivity),
}


def calibrate(mechanism: Mechanism, epsilon, delta, sensitivity, calibration="analytic"):
    """``(scale, guarantee)`` of ``mechanism`` for ``(epsilon, delta)`` at ``sensitivity`` (in ``mechanism.norm``).

    ``calibration`` (``"analytic"``, ``"classic"``, ``"zcdp"``) is read only by a law that offers a
    choice of calibrations (:attr:`~dpmoments.mechanisms.laws.Mechanism.chooses_calibration`).
    """
    return CALIBRATE[mechanism](epsilon, delta, sensitivity, calibration)


def recorded_calibration(mechanism: Mechanism, calibration):
    """The calibration a release of ``mechanism`` records: the chosen one, or None for a law with one calibration."""
    return calibration if mechanism.chooses_calibration else None
