"""A site's noisy counts (bound and location steps) must be counts of its own rows.

Privacy holds whatever a site sends, but the sum of the sites' noisy histograms picks everyone's
bound or centre: one forged count of -1e12 in the lowest bin set the bound to the top of the search
range (1e8). The aggregator refuses counts beyond six standard deviations of the site's own noise
from counts of its ``N_s`` rows (public facts only), and an honest site is never refused.
"""

from dataclasses import replace

import numpy as np
import pytest

from dpmoments.multisite import InProcessTransport, MessageRefused, Reply, Site, from_wire, to_wire
from dpmoments.multisite.api import analyse


def _parts(mean=0.0, n=13_000, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, 3)) + mean for _ in range(3)]


def _forging(site, change):
    def door(data):
        reply = from_wire(site.handle(data))
        if isinstance(reply, Reply) and any(s in ("histogram", "location") for s, _ in reply.values.values()):
            values = {r: (s, change(v.copy()) if s in ("histogram", "location") else v)
                      for r, (s, v) in reply.values.items()}
            reply = replace(reply, values=values)
        return to_wire(reply)
    return door


def _run(parts, change, **kwargs):
    sites = [Site(f"s{i}", X, row_norm="auto", **kwargs) for i, X in enumerate(parts)]
    handlers = {s.name: s.handle for s in sites}
    handlers["s1"] = _forging(sites[1], change)
    return analyse(sites, "covariance", epsilon=1.0, delta=1e-6, rng=0,
                   transport=lambda alive: InProcessTransport(handlers))


def _lowest(v):
    v[..., 0] = -1e12
    return v


def _everything_in_one_bin(v):
    v[...] = 0.0
    v[..., -1] = v.shape[-1] * 1e6
    return v


@pytest.mark.parametrize("change", [_lowest, _everything_in_one_bin])
@pytest.mark.parametrize("center", [None, "private"])
def test_forged_counts_are_refused(change, center):
    with pytest.raises(MessageRefused, match=r"site 's1' \(implausible\)") as err:
        _run(_parts(), change, center=center)
    assert err.value.reason == "implausible"


def test_honest_noisy_counts_pass_and_a_small_shift_is_not_refused():
    rel, _ = _run(_parts(mean=100.0), lambda v: v + 1.0, center="private")  # within the noise: accepted
    assert rel.row_norm < 20
