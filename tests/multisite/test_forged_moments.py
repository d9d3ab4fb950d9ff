"""A site's noisy moment must be a moment of rows clipped to the plan's bounds, to within its own noise.

Privacy holds whatever a site sends, but one site could decide the release: its second moment
times 1e6 made every variance 1e4 times the data's, and the report called it signal. The
aggregator refuses an entry, less its own ``f_s``, beyond the statistic's public bound (``R^2``,
``R r``, ``R``, ``R^3``, times ``w_max`` for IRLS) by more than ``6 + sqrt(2 ln m)`` stds of the
site's ``e_s + g_s`` (:func:`~dpmoments.multisite.aggregator.moment_limit`); an honest site is
never refused, even with every row at the bound.
"""

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest

from dpmoments.exceptions import NotPrivateWarning
from dpmoments.multisite import InProcessTransport, MessageRefused, Reply, Site, from_wire, to_wire
from dpmoments.multisite.aggregator import moment_limit
from dpmoments.multisite.api import analyse, run_rounds

INF = math.inf
MOMENTS = ("second", "cross", "third")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def _forging(site, change):
    def door(data):
        reply = from_wire(site.handle(data))
        if isinstance(reply, Reply):
            reply = replace(reply, values={r: (s, change(s, v.copy())) for r, (s, v) in reply.values.items()})
        return to_wire(reply)
    return door


def _parts(d=3, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, d)) / 3 for _ in range(3)]


FORGERIES = {
    "second times 1e6": lambda s, v: v * 1e6 if s == "second" else v,
    "second plus 100 I": lambda s, v: v + 100 * np.eye(v.shape[0]) if s == "second" else v,
    "mean plus 1e6": lambda s, v: v + 1e6 if s == "cross" else v,
}


@pytest.mark.parametrize("protocol", ["cape", "conventional"])
@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_forged_moment_is_refused_in_one_line_naming_the_site(forgery, protocol):
    center = "private" if forgery.startswith("mean") else None
    sites = [Site(f"s{i}", X, row_norm=1.0, center=center) for i, X in enumerate(_parts())]
    handlers = {s.name: s.handle for s in sites}
    handlers["s1"] = _forging(sites[1], FORGERIES[forgery])
    with pytest.raises(MessageRefused, match=r"site 's1' \(implausible\)") as err:
        analyse(sites, "covariance", protocol=protocol, epsilon=1.0, delta=1e-6, rng=0,
                transport=lambda alive: InProcessTransport(handlers))
    assert err.value.reason == "implausible" and err.value.site == "s1" and "\n" not in str(err.value)
    assert "No release" in str(err.value)


def test_a_forgery_within_the_noise_is_not_refused_and_one_past_the_bound_is():
    """The margin is that of the site's own noise: a shift of one std passes, one of the bound plus 20 stds does not."""
    def run(shift):
        sites = [Site(f"s{i}", X, row_norm=1.0) for i, X in enumerate(_parts())]
        handlers = {s.name: s.handle for s in sites}
        handlers["s1"] = _forging(sites[1], lambda s, v: v + shift)
        return run_rounds(sites, protocol="conventional", analysis="covariance", epsilon=1.0, delta=1e-6, rng=0,
                          transport=lambda alive: InProcessTransport(handlers))

    plan = run(0.0).plan
    bound, sd, k = moment_limit(plan, 0, plan.index("s1"))
    assert bound == 1.0 and 7 < k < 8 and sd > 0
    run(sd)
    with pytest.raises(MessageRefused, match="implausible"):
        run(bound + 20 * sd)


def _recording(site, seen):
    """A door keeping each moment payload less the aggregator's ``f_s`` (for the noise's std)."""
    def door(data):
        query = from_wire(data)
        reply = from_wire(site.handle(data))
        if isinstance(reply, Reply):
            for r, (s, v) in reply.values.items():
                if s in MOMENTS:
                    seen.append((reply.site, r, v - query.shares.get(r, 0.0)))
        return to_wire(reply)
    return door


@pytest.mark.parametrize("protocol,kwargs", [
    ("cape", dict(row_norm=1.0)), ("conventional", dict(row_norm=1.0)), ("secure-aggregation", dict(row_norm=1.0)),
    ("cape", dict(row_norm="auto")),  # a resolved plan: the dealt shares rescaled by its noise factor
])
def test_the_margin_is_measured_in_the_std_the_messages_carry(protocol, kwargs):
    """Sites with all-zero rows send pure noise: its std per entry is the ``sd`` the check uses."""
    seen = []
    n = 20_000 if kwargs["row_norm"] == "auto" else 500
    zeros = np.zeros((n, 20))
    zeros[:, 0] = 0.5  # rows of norm 0.5: an auto bound's histogram has them, the moments are known
    sites = [Site(f"s{i}", zeros, **kwargs) for i in range(3)]
    handlers = {s.name: _recording(s, seen) for s in sites}
    result = run_rounds(sites, protocol=protocol, analysis="covariance", epsilon=0.5, delta=1e-6, rng=1,
                        transport=lambda alive: InProcessTransport(handlers))
    plan = result.plan
    exact = np.zeros((20, 20))
    exact[0, 0] = 0.25
    for name, r, noise in seen:
        bound, sd, k = moment_limit(plan, r, plan.index(name))
        upper = (noise - exact)[np.triu_indices(20)]
        assert 0.8 < upper.std() / sd < 1.25, (protocol, name)


def _honest(analysis, protocol, epsilon, seed, sites):
    options = {"tensor-mog": {"sigma2": 0.02}, "tensor-stm": {"vocabulary_size": 4},
               "regress": {"n_iter": 3, "w_max": 10.0}}.get(analysis)
    return analyse(sites, analysis, protocol=protocol, epsilon=epsilon, delta=1e-6 if epsilon < INF else 0.5,
                   options=options, rng=seed)


def _sites(analysis, seed, at_bound):
    """Three sites; ``at_bound``: every row (and response) at the bound, the honest worst case."""
    rng = np.random.default_rng(seed)
    n, d = 400, 3
    if analysis == "tensor-stm":
        return [Site(f"s{i}", rng.integers(0, 4, size=(n, 3))) for i in range(3)]
    X = rng.normal(size=(n, d))
    X = X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0, 2, size=(n, 1))
    if at_bound:  # every row (2, 0, 0) and response 1.5: the moments reach R^2, R^3, R and R r exactly
        X = np.tile([2.0, 0.0, 0.0], (n, 1))
    y = np.full(n, 1.5) if at_bound else rng.uniform(-1.5, 1.5, n)
    needs_y = analysis in ("select", "regress")
    return [Site(f"s{i}", X, y if needs_y else None, row_norm=2.0 if analysis != "select" else 4.0,
                 response_bound=1.5 if needs_y else None) for i in range(3)]


ANALYSES = ("covariance", "pca", "precision", "ridge", "select", "tensor-mog", "tensor-stm", "regress")


@pytest.mark.parametrize("analysis", ANALYSES)
@pytest.mark.parametrize("protocol", ["cape", "conventional", "secure-aggregation"])
def test_honest_sites_are_never_refused(analysis, protocol):
    """Heavy noise, little noise (where the bound itself must hold) and none, on rows inside and at the bound.

    A false refusal needs a draw ``6 + sqrt(2 ln m)`` stds out, so repeating a case under more seeds would
    not see one: each case runs once, under a seed of its own. That the margin is the std the messages
    carry is checked at a middle budget above (``test_the_margin_is_measured_in_the_std_the_messages_carry``)."""
    cases = [(epsilon, at_bound) for epsilon in (0.05, 30.0, INF) for at_bound in (False, True)]
    for seed, (epsilon, at_bound) in enumerate(cases):
        _honest(analysis, protocol, epsilon, seed, _sites(analysis, seed, at_bound))


@pytest.mark.parametrize("center", [None, "private"])
def test_honest_auto_and_private_centre_plans_are_never_refused(center):
    rng = np.random.default_rng(5)
    for seed in range(2):
        parts = [rng.normal(size=(13_000, 3)) + 7.0 for _ in range(3)]
        sites = [Site(f"s{i}", X, row_norm="auto", center=center) for i, X in enumerate(parts)]
        analyse(sites, "covariance", epsilon=1.0, delta=1e-6, rng=seed)



@pytest.mark.parametrize("protocol,count", [("local", 1), ("dpdispca", 3)])
def test_honest_local_and_dpdispca_runs_pass(protocol, count):
    for seed in range(3):
        for epsilon in (0.05, 1.0, INF):
            sites = _sites("covariance", seed, True)[:count]
            analyse(sites, "pca" if protocol == "dpdispca" else "covariance", protocol=protocol, epsilon=epsilon,
                    delta=1e-6 if epsilon < INF else 0.5, rng=seed, **({"rank": 2} if protocol == "dpdispca" else {}))
