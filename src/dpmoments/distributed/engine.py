"""The in-process engine: runs a protocol's message flow as a loop over site objects.

This is the default (and CI) backend. It is transport-agnostic in the sense
that every hop goes through :meth:`InProcessEngine.send`, which records what
crossed (type, sender, receiver, shape, never values) in ``transcript``; a real
transport (Flower, HTTPS) would replace only that hop. Each role gets its own
generator from :func:`dpmoments._rng.spawn`.

Failures can be injected per site (for tests and drills):

* ``"before-deal"``: the site never joins; the protocol plans for the others.
* ``"after-deal"``: the site received its shares and crashed before sending.
  Its ``e_s`` is then missing from the sum, so ``sum_{received} mu_s e_s != 0``:
  the aggregate carries *extra* noise (never less), which the protocol reports.
"""

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator, spawn
from .messages import SiteFailure, describe
from .roles import Aggregator, NoiseGenerator

__all__ = ["InProcessEngine", "Outcome", "PHASES"]

PHASES = ("before-deal", "after-deal")


@dataclass(frozen=True, eq=False)
class Outcome:
    """What a run produced: the weighted aggregate, who took part, and what the aggregator received."""

    aggregate: object
    received: tuple
    dropped: tuple
    messages: dict


class InProcessEngine:
    """Run a protocol in this process.

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        Split into independent streams for the noise generator, the
        aggregator, each site and each pairwise seed.
    failures : dict of str -> {"before-deal", "after-deal"}, optional
        Sites to fail, and when.
    """

    def __init__(self, rng=None, failures=None):
        failures = dict(failures or {})
        for name, phase in failures.items():
            if phase not in PHASES:
                raise ValueError(f"failure phase for site {name!r} must be one of {PHASES}; got {phase!r}.")
        self.failures = failures
        self.transcript = []
        gen = as_generator(rng)
        self._dealer_rng, self._aggregator_rng, self._site_root, self._pair_root = spawn(gen, 4)

    # -- transport -----------------------------------------------------------------------------
    def send(self, sender, receiver, message):
        """One hop; the message was already checked by the egress guard in its constructor."""
        self.transcript.append({"from": sender, "to": receiver, **describe(message)})
        return message

    def _fails(self, name, phase):
        return self.failures.get(name) == phase

    # -- phases --------------------------------------------------------------------------------
    def enrol(self, sites):
        """Sites that are up at the start, and the (name, phase) of those that are not."""
        names = [s.name for s in sites]
        if len(set(names)) != len(names):
            raise ValueError(f"site names must be unique; got {names}.")
        unknown = set(self.failures) - set(names)
        if unknown:
            raise ValueError(f"failures name unknown sites: {sorted(unknown)}.")
        alive = [s for s in sites if not self._fails(s.name, "before-deal")]
        dropped = tuple((s.name, "before-deal") for s in sites if self._fails(s.name, "before-deal"))
        return alive, dropped

    def site_generators(self, sites):
        return dict(zip([s.name for s in sites], spawn(self._site_root, len(sites))))

    def pair_seeds(self, sites):
        """A seed per pair ``(s, t)``, ``s < t``, known to both sites only.

        In a deployment these come from a key agreement (e.g. Diffie-Hellman
        between the two sites) and never pass through the aggregator; here they
        are drawn from the engine's own stream.
        """
        names = [s.name for s in sites]
        gen = self._pair_root
        return {(a, b): np.random.SeedSequence(gen.integers(0, 2**63, size=4).tolist())
                for i, a in enumerate(names) for b in names[i + 1:]}

    def run_additive(self, sites, plan, statistic, *, masking="dealer"):
        """Deal, respond, aggregate. ``masking``: ``"dealer"`` (CAPE), ``"pairwise"``, ``"none"``."""
        d = sites[0].n_features
        rngs = self.site_generators(sites)
        shares = {s.name: [] for s in sites}
        if masking == "dealer" and np.any(plan.e_factor != 0):
            for name, share in _dealer(self, plan, statistic, d).items():
                shares[name].append(self.send("noise-generator", name, share))
        aggregator = _aggregator(self)
        for name, share in aggregator.masks(plan, statistic, d).items():
            shares[name].append(self.send("aggregator", name, share))
        masks = _pair_masks(self, sites, plan) if masking == "pairwise" else {}
        messages, dropped = {}, []
        for i, site in enumerate(sites):
            try:
                if self._fails(site.name, "after-deal"):
                    raise SiteFailure(f"site {site.name!r} failed after the shares were dealt (injected).")
                msg = site.respond(statistic, shares=shares[site.name], g_std=float(plan.g_std[i]),
                                   rng=rngs[site.name], masks=masks.get(site.name, ()))
            except SiteFailure:
                dropped.append((site.name, "after-deal"))
                continue
            messages[site.name] = self.send(site.name, "aggregator", msg)
        weights = dict(zip(plan.sites, plan.weights))
        aggregate = aggregator.combine(messages, weights) if messages else None
        self.aggregator = aggregator
        return Outcome(aggregate, tuple(messages), tuple(dropped), messages)

    def run_factors(self, sites, plan, rank):
        """DPdisPCA: every site sends a partial square root of its noisy second moment."""
        rngs = self.site_generators(sites)
        messages, dropped = {}, []
        for i, site in enumerate(sites):
            if self._fails(site.name, "after-deal"):
                dropped.append((site.name, "after-deal"))
                continue
            msg = site.respond_factor(rank, g_std=float(plan.g_std[i]), rng=rngs[site.name])
            messages[site.name] = self.send(site.name, "aggregator", msg)
        aggregator = _aggregator(self)
        weights = dict(zip(plan.sites, plan.weights))
        aggregate = aggregator.combine_factors(messages, weights) if messages else None
        self.aggregator = aggregator
        return Outcome(aggregate, tuple(messages), tuple(dropped), messages)


def _dealer(engine, plan, statistic, d):
    return NoiseGenerator(engine._dealer_rng).deal(plan, statistic, d)


def _aggregator(engine):
    return Aggregator(engine._aggregator_rng)


def _pair_masks(engine, sites, plan):
    """Per site: (coefficient, seed) for each of its pairs; component order = ``plan`` columns."""
    seeds = engine.pair_seeds(sites)
    out = {s.name: [] for s in sites}
    for j, (a, b) in enumerate(seeds):
        for name in (a, b):
            out[name].append((float(plan.e_factor[plan.index(name), j]), seeds[(a, b)]))
    return out
