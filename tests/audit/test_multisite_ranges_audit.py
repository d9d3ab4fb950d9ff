"""Audit of a multi-site second moment with public ranges: one site's reply on a neighbouring pair.

With ``ranges`` in the plan, a site clips each ranged column to its range and standardises it by the midpoint
and half-width before anything else (``dpmoments.multisite.column_ranges``), then sends its normalised second
moment plus the plan's Gaussian noise (conventional protocol: its own noise). The pair is the worst case the
ranges allow: rows far outside both ranges that map to the box corners (1, 1) and (1, -1), whose outer products
differ by 2 in the two off-diagonal entries (replace-one sensitivity sqrt(2) R^2 / n at R = sqrt(2), the box's
bound). A replica (the exact mapped statistic plus the plan's std times standard normals from the same stream)
is checked draw for draw against the site's reply; the audit projects onto the difference and must not refute
the round's claim. Negative control: half the noise, which the same audit refutes.

The same with private column scales (a plan with a private centre and a range for one column: the other column is
divided by the scale the moment step's query carries, then the row is clipped), and model selection's rows
``(x, y)`` mapped by the feature's and the response's ranges (the same reply as the audited one, draw for draw).
"""

import math

import numpy as np
import pytest

from dpmoments._rng import as_generator
from dpmoments.mechanisms import gaussian_noise, upper_triangle
from dpmoments.multisite import Plan, Query, Reply, Site, deal, from_wire, to_wire
from dpmoments.testing import audit

EPS, DELTA = 1.0, 1e-3
RANGES = {0: (0.0, 10.0), 1: (0.0, 100.0)}
_BACK = np.random.default_rng(5).uniform([0.0, 0.0], [10.0, 100.0], size=(499, 2))
PAIR = {"A": np.array([1e6, 1e6]), "B": np.array([1e6, -1e6])}  # outside both ranges: clipped to the corners
N_OTHER = 2_000


def _plan():
    return Plan.build("conventional", ["s", "other"], [500, N_OTHER], n_features=2, row_norm=math.sqrt(2.0),
                      epsilon=EPS, delta=DELTA, ranges=RANGES)


def _exact(name):
    Z = (np.clip(np.vstack([_BACK, PAIR[name]]), [0.0, 0.0], [10.0, 100.0]) - [5.0, 50.0]) / [5.0, 50.0]
    return upper_triangle(Z.T @ Z / len(Z))


def _replica(plan, noise_factor=1.0):
    sd = float(plan.noise[0].g_std[0]) * noise_factor
    exact = {name: _exact(name) for name in PAIR}

    def draw(name, rng, size=1):
        return exact[name] + gaussian_noise((size, exact[name].size), sd, rng)

    return draw, exact["A"] - exact["B"]


def test_replica_reproduces_the_sites_ranged_reply():
    plan = _plan()
    bundle = deal(plan, 0)["s"]
    sd = float(plan.noise[0].g_std[0])
    for name in PAIR:
        for seed in range(3):
            site = Site("s", np.vstack([_BACK, PAIR[name]]), row_norm=math.sqrt(2.0), ranges=RANGES)
            site.accept(bundle, rng=seed, throwaway=True)  # one share asked again on purpose: the replica's check
            reply = from_wire(site.handle(to_wire(Query(plan.digest, 0, f"r-{seed}"))))
            expected = _exact(name) + sd * gaussian_noise(3, 1.0, as_generator(seed))
            np.testing.assert_allclose(upper_triangle(reply.value(0)), expected, rtol=0, atol=1e-15)
    difference = _exact("A") - _exact("B")
    assert np.linalg.norm([difference[0], difference[1], difference[1], difference[2]]) == pytest.approx(
        math.sqrt(2.0) * 2.0 / 500)  # the worst case: the sensitivity itself


def _claim(plan):
    return plan.claimed(0, "s").epsilon, float(plan.noise[0].deltas[0])


@pytest.mark.statistical
def test_ranged_reply_audit():
    plan = _plan()
    draw, direction = _replica(plan)
    eps, delta = _claim(plan)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=43)
    result.check(eps)
    assert result.epsilon_lower_bound > 0.4 * eps  # observed 0.517 (seed 43)


@pytest.mark.statistical
def test_ranged_reply_with_half_the_noise_is_detected():
    plan = _plan()
    draw, direction = _replica(plan, noise_factor=0.5)
    eps, delta = _claim(plan)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=44)
    assert not result.consistent_with(eps)  # observed 1.243 (seed 44)


# -- the rows with private column scales, and model selection's (x, y) rows -----------------------------------------
# A plan with a private centre (one location step) and a range for the first column only: its second column gets a
# private scale, which the moment step's query carries (here 1e4, public once chosen). The worst pair maps, after
# the range, the centre (0) and the scales, to the corners (1, 1) and (1, -1) at the plan's bound sqrt(2): the
# same difference as above, now through the scaled rows.
SCALE = np.array([1.0, 1e4])
SCALED_PAIR = {"A": np.array([1e6, 1e4]), "B": np.array([1e6, -1e4])}


def _scaled_plan():
    from dpmoments.multisite.location import AutoLocation

    return Plan.build("conventional", ["s", "other"], [500, 50_000], n_features=2, row_norm=math.sqrt(2.0),
                      epsilon=EPS, delta=DELTA, ranges={0: (0.0, 10.0)}, center="private",
                      center_budget=AutoLocation(steps=1, share=0.3, low=1e-2, high=1e2))  # rows the step bears


def _scaled_exact(name):
    from dpmoments.moments import clip_rows

    X = np.vstack([_BACK * [1.0, 100.0], SCALED_PAIR[name]])
    Z = clip_rows(np.c_[(np.clip(X[:, 0], 0.0, 10.0) - 5.0) / 5.0, X[:, 1]] / SCALE, math.sqrt(2.0))
    return upper_triangle(Z.T @ Z / len(Z))


def _scaled_reply(name, seed):
    """The site's second moment at the step after its location step, with the scales the query carries."""
    plan = _scaled_plan()
    site = Site("s", np.vstack([_BACK * [1.0, 100.0], SCALED_PAIR[name]]), ranges={0: (0.0, 10.0)}, center="private")
    site.accept(deal(plan, 0)["s"], rng=seed, throwaway=True)
    assert isinstance(from_wire(site.handle(to_wire(Query(plan.digest, 0, "loc")))), Reply)
    query = Query(plan.digest, 1, "moment", center=np.zeros(2), column_scale=SCALE)
    return plan, from_wire(site.handle(to_wire(query)))


def test_replica_reproduces_the_sites_scaled_reply_and_a_scale_off_its_limits_is_refused():
    from dpmoments.multisite.statistics import HISTOGRAM, SECOND

    for name in SCALED_PAIR:
        plan, reply = _scaled_reply(name, 3)
        assert plan.scale == "private"
        r = plan.rounds_of(1)[0]
        g = as_generator(3)
        HISTOGRAM.unit_noise(2 * plan.location.n_bins, g)  # the location step's draw comes first
        expected = _scaled_exact(name) + float(plan.noise[r].g_std[0]) * upper_triangle(SECOND.unit_noise(2, g))
        np.testing.assert_allclose(upper_triangle(reply.value(r)), expected, rtol=0, atol=1e-12)
    difference = _scaled_exact("A") - _scaled_exact("B")
    assert np.linalg.norm([difference[0], difference[1], difference[1], difference[2]]) == pytest.approx(
        math.sqrt(2.0) * 2.0 / 500)  # the worst case: the sensitivity itself
    plan = _scaled_plan()
    site = Site("s", np.vstack([_BACK, [5.0, 0.0]]), ranges={0: (0.0, 10.0)}, center="private")
    site.accept(deal(plan, 0)["s"], rng=0, throwaway=True)
    site.handle(to_wire(Query(plan.digest, 0, "loc")))
    off = Query(plan.digest, 1, "moment", center=np.zeros(2), column_scale=[5.0, 1.0])  # 5 half-widths: above 2
    assert from_wire(site.handle(to_wire(off))).code == "bad-query"


def test_replica_reproduces_model_selections_ranged_reply():
    """Model selection's rows (x, y): the feature's range and the response's map them as the two columns above."""
    from dpmoments.multisite.analyses import plan_analysis

    plan = plan_analysis("select", "conventional", ["s", "other"], [500, N_OTHER], n_features=1,
                         row_norm=math.sqrt(2.0), epsilon=EPS, delta=DELTA, ranges={0: (0.0, 10.0)},
                         options={"response_range": (0.0, 100.0)})
    assert plan.noise[0].g_std[0] == _plan().noise[0].g_std[0]  # the same mechanism as the audited one
    bundle = deal(plan, 0)["s"]
    for name in PAIR:
        X = np.vstack([_BACK, PAIR[name]])
        site = Site("s", X[:, :1], X[:, 1], row_norm=math.sqrt(2.0), ranges={0: (0.0, 10.0)})
        site.accept(bundle, rng=1, throwaway=True)
        reply = from_wire(site.handle(to_wire(Query(plan.digest, 0, "r"))))
        expected = _exact(name) + float(plan.noise[0].g_std[0]) * gaussian_noise(3, 1.0, as_generator(1))
        np.testing.assert_allclose(upper_triangle(reply.value(0)), expected, rtol=0, atol=1e-15)


def _scaled_replica(noise_factor=1.0):
    plan = _scaled_plan()
    r = plan.rounds_of(1)[0]
    sd = float(plan.noise[r].g_std[0]) * noise_factor
    exact = {name: _scaled_exact(name) for name in SCALED_PAIR}

    def draw(name, rng, size=1):
        return exact[name] + gaussian_noise((size, exact[name].size), sd, rng)

    return draw, exact["A"] - exact["B"], plan.claimed(r, "s").epsilon, float(plan.noise[r].deltas[0])


@pytest.mark.statistical
def test_scaled_reply_audit_and_its_negative_control():
    draw, direction, eps, delta = _scaled_replica()
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=45)
    result.check(eps)
    draw, direction, eps, delta = _scaled_replica(noise_factor=0.5)
    result = audit(draw, "A", "B", delta=delta, n_samples=200_000, batch=100_000, projection=direction, rng=46)
    assert not result.consistent_with(eps)
