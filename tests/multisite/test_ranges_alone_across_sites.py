"""A small table across sites with every column's range: the plan takes the ranges alone (``Plan.build``).

Where the rows cannot bear the choosing steps' noisy counts, a plan whose columns are all ranged has no location
step (the mean round is about the midpoints), no bound step (the box's bound ``sqrt(d)``) and no private scales;
without every range the refusal names them. The step-less plan's replies are reproduced draw for draw by a replica,
and its mean round (the one release this plan makes that no other plan made at a public bound about the midpoints)
is audited on the worst pair the ranges allow, with a negative control.
"""

import functools
import math

import numpy as np
import pytest

from dpmoments._rng import as_generator
from dpmoments.mechanisms import upper_triangle
from dpmoments.multisite import Plan, Query, Site, deal, from_wire, run_cape, to_wire
from dpmoments.multisite.statistics import CROSS, SECOND
from dpmoments.testing import audit

RANGES = {0: (0.0, 10.0), 1: (0.0, 100.0)}
_BACK = np.random.default_rng(5).uniform([0.0, 0.0], [10.0, 100.0], size=(59, 2))
PAIR = {"A": np.array([1e6, 1e6]), "B": np.array([-1e6, -1e6])}  # clipped to the box's corners (1, 1), (-1, -1)


@functools.lru_cache(maxsize=None)
def _plan(ranged=(0, 1), center="private"):
    """The plan (built once: its noise is solved in half a second) with the ranges of the columns ``ranged``."""
    return Plan.build("conventional", ["s", "other"], [60, 60], n_features=2, row_norm="auto", center=center,
                      epsilon=1.0, delta=1e-3, ranges={j: RANGES[j] for j in ranged})


def _mapped(name):
    return (np.clip(np.vstack([_BACK, PAIR[name]]), [0.0, 0.0], [10.0, 100.0]) - [5.0, 50.0]) / [5.0, 50.0]


def test_too_few_rows_for_the_choosing_steps_take_the_ranges_alone_or_name_them():
    plan = _plan()
    assert plan.location.steps == 0 and plan.auto is None and plan.scale is None
    assert plan.row_norm == pytest.approx(math.sqrt(2.0))  # the box's bound about the midpoints
    assert [(r.statistic, r.share, r.step) for r in plan.rounds] == [("second", 0.8, 0), ("cross", 0.2, 0)]
    with pytest.raises(ValueError, match=r"runs from epsilon .*every column's range \(ranges=\)"):
        _plan((0,))
    uncentred = _plan(center=None)  # nothing left chosen privately: composed as a plan of public bounds is
    assert uncentred.location is None and uncentred.auto is None and uncentred.composition == "basic"


def test_the_step_less_plans_replies_are_the_replicas_and_the_centre_is_the_midpoints_plus_the_mean():
    plan = _plan()
    sd = [float(plan.noise[r].g_std[0]) for r in (0, 1)]
    for name in PAIR:
        site = Site("s", np.vstack([_BACK, PAIR[name]]), row_norm="auto", center="private", ranges=RANGES)
        site.accept(deal(plan, 0)["s"], rng=3, throwaway=True)  # one share asked again on purpose: the replica
        reply = from_wire(site.handle(to_wire(Query(plan.digest, 0, "m"))))
        Z, gen = _mapped(name), as_generator(3)
        second = upper_triangle(Z.T @ Z / len(Z)) + sd[0] * upper_triangle(SECOND.unit_noise(2, gen))
        np.testing.assert_allclose(upper_triangle(reply.value(0)), second, rtol=0, atol=1e-15)
        np.testing.assert_allclose(reply.value(1), Z.mean(axis=0) + sd[1] * np.ravel(CROSS.unit_noise(2, gen)),
                                   rtol=0, atol=1e-15)
    sites = [Site(f"s{i}", _BACK[i::2], row_norm="auto", center="private", ranges=RANGES) for i in range(2)]
    rel, _ = run_cape(sites, epsilon=1.0, delta=1e-6, rng=0)
    assert rel.guarantee.epsilon == pytest.approx(1.0) and any("midpoints" in p for p in rel.postprocessing)
    assert np.all(np.abs(rel.center - [5.0, 50.0]) < [5.0, 50.0])  # the midpoints moved by the private mean


def _replica(noise_factor=1.0):
    plan = _plan()
    sd = float(plan.noise[1].g_std[0]) * noise_factor
    exact = {name: _mapped(name).mean(axis=0) for name in PAIR}

    def draw(name, rng, size=1):
        return exact[name] + sd * np.asarray(rng.standard_normal((size, 2)))

    return draw, exact["A"] - exact["B"], plan.claimed(1, "s").epsilon, float(plan.noise[1].deltas[0])


@pytest.mark.statistical
def test_the_mean_rounds_audit_and_its_negative_control():
    draw, direction, eps, delta = _replica()
    assert np.linalg.norm(direction) == pytest.approx(2.0 * math.sqrt(2.0) / 60)  # 2R/n: the sensitivity itself
    result = audit(draw, "A", "B", delta=delta, n_samples=100_000, batch=100_000, projection=direction, rng=47)
    result.check(eps)  # observed 0.086 against the round's claim 0.2
    draw, direction, eps, delta = _replica(noise_factor=0.5)
    result = audit(draw, "A", "B", delta=delta, n_samples=100_000, batch=100_000, projection=direction, rng=48)
    assert not result.consistent_with(eps)  # observed 0.270 (0.285, 0.277 at seeds 49, 50)
