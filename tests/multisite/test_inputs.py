"""Bad inputs: TypeError for the wrong kind, ValueError for the wrong range, named parameters."""

import numpy as np
import pytest

from dpmoments.multisite import Site, check_sites, run_cape, run_dpdispca, run_local

from .conftest import make_sites


def test_site_validation():
    with pytest.raises(TypeError, match="name"):
        Site("", np.ones((3, 2)), row_norm=1.0)
    with pytest.raises(ValueError, match="row_norm"):
        Site("a", np.ones((3, 2)), row_norm=-1.0)
    with pytest.raises(ValueError, match="NaN"):
        Site("a", np.array([[np.nan, 1.0]]), row_norm=1.0)
    with pytest.raises(ValueError, match="cross-moment round needs"):
        run_cape(make_sites(2), epsilon=1.0, delta=1e-5, statistic="cross", rng=0)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(delta=1.5), ValueError, "delta"),
    (dict(statistic="fourth"), ValueError, "statistic"),
    (dict(neighbours="swap"), ValueError, "neighbours"),
    (dict(calibration="exact"), ValueError, "calibration"),
    (dict(weights=[0.5, 0.5]), ValueError, "weights"),
    (dict(weights=[0.6, 0.3, 0.3]), ValueError, "sum to 1"),
    (dict(colluders=3), ValueError, "colluders"),
    (dict(colluders=-1), ValueError, "colluders"),
    (dict(failures={"nobody": "after-deal"}), ValueError, "unknown"),
    (dict(failures={"site-0": "sometime"}), ValueError, "phase"),
    (dict(on_dropout="retry"), ValueError, "on_dropout"),
    (dict(epsilon=[1.0, float("inf"), 1.0]), ValueError, "inf"),
    (dict(epsilon=[1.0, 1.0]), ValueError, "one value per site"),
])
def test_protocol_arguments(kwargs, exc, match):
    args = dict(epsilon=1.0, delta=1e-5, rng=0) | kwargs
    with pytest.raises(exc, match=match):
        run_cape(make_sites(3), **args)


def test_sites_must_agree():
    a = make_sites(2, d=3)
    b = make_sites(1, d=4, seed=1)
    b[0].name = "other"
    with pytest.raises(ValueError, match="n_features"):
        run_cape(a + b, epsilon=1.0, delta=1e-5)
    c = Site("c", np.ones((5, 3)) / 4, row_norm=2.0)
    with pytest.raises(ValueError, match="row_norm"):
        run_cape(a + [c], epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="unique"):
        run_cape(a + a, epsilon=1.0, delta=1e-5)
    with pytest.raises(TypeError, match="Site"):
        run_cape([np.ones((3, 3))], epsilon=1.0, delta=1e-5)
    with pytest.raises(TypeError, match="Site"):
        run_local(a, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="rank"):
        run_dpdispca(a, epsilon=1.0, delta=1e-5, rank=4)
    with pytest.raises(ValueError, match="phase"):
        run_cape(a, epsilon=1.0, delta=1e-5, failures={"site-0": "later"})


def test_frames_with_their_columns_in_another_order_are_refused():
    """Two sites' frames naming the same columns in another order were summed position by position."""
    import pandas as pd

    X = np.random.default_rng(0).normal(size=(20, 3)) / 4
    a, b = pd.DataFrame(X, columns=["p", "q", "r"]), pd.DataFrame(X, columns=["r", "q", "p"])
    with pytest.raises(ValueError, match="in the same order"):
        run_cape([Site("a", a, row_norm=1.0), Site("b", b, row_norm=1.0)], epsilon=1.0, delta=1e-5)
    same = [Site("a", a, row_norm=1.0), Site("b", b[["p", "q", "r"]], row_norm=1.0), Site("c", X, row_norm=1.0)]
    assert check_sites(same) == same  # the same names, or an array beside them: as before
