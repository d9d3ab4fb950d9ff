"""A calibration asked for and not used is announced (issue 29): with a private centre, scale or bound every part is
calibrated in zCDP; 'classic' asked for by name warns, and the release and its reports say which was used and why."""

import warnings

import numpy as np
import pytest

from dpmoments.estimators import PrivateCovariance
from dpmoments.exceptions import CalibrationWarning

X = np.random.default_rng(0).normal(size=(2000, 3))
pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.BoundWarning")  # 2000 rows: weak draws


def test_classic_with_a_private_centre_is_announced():
    with pytest.warns(CalibrationWarning, match="'classic' was asked for and not used"):
        est = PrivateCovariance(epsilon=1, delta=1e-6, row_norm=4, calibration="classic", rng=0).fit(X)
    rel = est.release_
    assert rel.calibration == "zcdp" and rel.calibration_asked == "classic"
    assert "not used" in rel.to_dict()["calibration_note"]
    assert "not used" in est.privacy_report_["release"]["calibration_note"]


def test_the_default_is_recorded_without_a_warning_and_a_public_centre_uses_what_was_asked():
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        rel = PrivateCovariance(epsilon=1, delta=1e-6, row_norm=4, rng=0).fit(X).release_
        public = PrivateCovariance(epsilon=1, delta=1e-6, row_norm=4, center=np.zeros(3), calibration="classic",
                                   rng=0).fit(X).release_
    assert rel.calibration_asked == "analytic" and "calibration_note" in rel.to_dict()
    assert public.calibration == "classic" and public.calibration_asked is None
    assert "calibration_note" not in public.to_dict()
