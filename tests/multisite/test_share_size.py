"""A site's share file holds its own part and the plan's digest: its size does not grow with the number of sites."""

import numpy as np
import pytest

from dpmoments.multisite import Plan, deal_files, read_bundle


def _plan(n_sites):
    return Plan.build("cape", [f"s{i}" for i in range(n_sites)], [100] * n_sites, n_features=4, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)


def test_a_share_does_not_grow_with_the_sites_and_names_its_plan(tmp_path):
    sizes = {}
    for n_sites in (4, 40):
        plan = _plan(n_sites)
        paths = deal_files(plan, tmp_path / str(n_sites), rng=0)
        sizes[n_sites] = paths["s0"].stat().st_size
        assert read_bundle(paths["s0"], "s0").plan.digest == plan.digest
    assert sizes[40] == sizes[4]  # the same e_s shapes; the plan travels once, as plan.json


def test_a_share_beside_another_plan_or_none_is_refused(tmp_path):
    plan = _plan(4)
    paths = deal_files(plan, tmp_path / "a", rng=0)
    other = deal_files(_plan(5), tmp_path / "b", rng=0)
    with pytest.raises(ValueError, match="is for plan .* not .* another dealing"):
        read_bundle(paths["s0"], "s0", plan=other["plan"])
    (tmp_path / "a" / "plan.json").unlink()
    with pytest.raises(ValueError, match="public plan.json .* must be beside it"):
        read_bundle(paths["s0"], "s0")
    bundle = read_bundle(paths["s0"], "s0", plan=plan)
    assert bundle.shares and all(np.all(np.isfinite(e)) for e in bundle.shares.values())


def test_every_second_moment_share_is_exactly_symmetric_with_many_sites():
    """The dealer's sum over many sites (BLAS-blocked) left entries (j, k) and (k, j) a rounding apart: every
    reply of a 200-site run at d = 50 was refused by the site's own egress guard."""
    from dpmoments.multisite import deal

    plan = Plan.build("cape", [f"s{i}" for i in range(150)], [100] * 150, n_features=30, row_norm=1.0,
                      epsilon=1.0, delta=1e-5)
    for bundle in deal(plan, rng=0).values():
        for e in bundle.shares.values():
            assert np.array_equal(e, e.T)
