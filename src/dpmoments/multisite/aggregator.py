"""The untrusted aggregator: opens a round per step, draws its own noise ``f_s``, admits what belongs, combines.

:meth:`Aggregator.open_step` opens a round for one step of the plan (a fresh round id,
which every query carries and every reply must echo) and returns the queries.
:meth:`Aggregator.receive` admits at most one reply per site per round and refuses, with
a :class:`~.messages.MessageRefused` naming the site and the reason: a reply to another
plan, step or round (a replay of an earlier round, or one with its tags stripped, does
not decode), one after the round closed (a slow site is a dropout), a duplicate, the same
payload bytes seen before, a payload of the wrong statistic, shape or dtype, and a row
count ``n`` other than the plan's (the noise, weights and guarantees were computed for
the plan's ``n`` and are never recomputed from a site's claim), and values no honest site
could send (``implausible``: noisy counts that are not counts of its rows, a moment beyond
what its clipped rows can give; :meth:`Aggregator._check_counts`, :meth:`Aggregator._check_moment`).

A reply that passes is added to the round's running sums at once and dropped (:class:`RunningSum`), so
the aggregator holds ``O(d^2)`` numbers per round whatever the number of sites, never every site's
message. Its own noise ``f_s`` is not kept either: the generator's state before each site's draw is
(a few hundred bytes), and ``f_s`` is drawn again from it to build the query and to check and add
the reply. The sums are compensated (:class:`RunningSum`), so the order the replies arrive in leaves
the result as it is: every transport gives the same bytes.
"""

import hashlib
import itertools
import math
import uuid
from collections.abc import Mapping

import numpy as np

from .._rng import as_generator
from .messages import MessageRefused, Query, Reply
from .statistics import FACTOR, LOCATION, as_statistic

#: How far, in standard deviations of a site's own noise, its noisy counts may stray from counts of its
#: rows before they are refused: 6 leaves an honest site's d x B counts refused with probability < 1e-4.
#: A moment's margin adds ``sqrt(2 ln m)`` for its ``m`` entries (:func:`moment_limit`).
PLAUSIBLE_SD = 6.0

__all__ = ["Aggregator", "RunningSum"]


class RunningSum:
    """A sum of arrays added one at a time whose result does not depend on the order they came in.

    Each addition is error-free (Knuth's TwoSum): ``hi`` carries the rounded sum and ``lo`` every
    rounding error, so ``hi + lo`` is the exact sum to about ``n 2^-106`` of its terms' magnitude and,
    rounded once at the end, the correctly rounded sum whatever the order (a different double only
    when the exact sum lies that close to a rounding boundary). Holds two arrays of the terms' shape.
    """

    def __init__(self):
        self.hi = self.lo = None
        self.count = 0

    def add(self, term):
        term = np.asarray(term, dtype=np.float64)
        self.count += 1
        if self.hi is None:
            self.hi, self.lo = term.copy(), np.zeros_like(term)
            return
        total = self.hi + term
        back = total - self.hi
        self.lo += (self.hi - (total - back)) + (term - back)
        self.hi = total

    def value(self):
        """The sum (``None`` before the first term)."""
        return None if self.hi is None else self.hi + self.lo


class _Queries(Mapping):
    """One round's queries, each built when it is read: the aggregator's ``f_s`` drawn again from the saved
    state of its generator, so that only one site's ``f_s`` is in memory at a time."""

    def __init__(self, sites, make):
        self._sites, self._make = tuple(sites), make

    def __getitem__(self, site):
        if site not in self._sites:
            raise KeyError(site)
        return self._make(site)

    def __iter__(self):
        return iter(self._sites)

    def __len__(self):
        return len(self._sites)


def moment_limit(plan, r, index):
    """``(bound, sd, k)``: no honest entry of site ``index``'s round ``r`` moment, less ``f_s``, exceeds
    ``bound + k sd`` in absolute value.

    Each site sends a mean over its rows (never a sum), each row clipped to the plan's ``row_norm``
    ``R`` (as resolved, in an ``auto`` plan; about the plan's centre, public or chosen) and each
    response to ``response_bound`` ``r``. So every entry of an honest ``A_s`` is at most ``R^2``
    (second moment), ``R r`` (cross moment; ``R`` for the mean round, whose response is 1) or
    ``R^3`` (third moment) in absolute value, times ``w_max`` in the IRLS rounds (weights at most
    ``w_max``). What remains, ``e_s + g_s``, has per-entry std ``sd``: each unit draw has std 1 per
    entry, and a resolved plan's stds already carry its :meth:`~.plan.Plan.noise_factor`.

    ``k = 6 + sqrt(2 ln m)`` for the ``m`` distinct entries (``d(d+1)/2``, ``d``, ``C(d+2, 3)``): the
    largest of ``m`` standard normals is about ``sqrt(2 ln m)``, and six more leave an honest
    message, even one at its bound, refused with probability at most ``m * 2 Phi(-k) <= 2e-9``
    for every ``m`` (union bound). Not checked: DPdisPCA's factors (a factor of a noisy matrix has
    no bound of this kind) and the choosing steps' counts (:meth:`Aggregator._check_counts`).
    """
    rnd, noise, stat = plan.rounds[r], plan.noise[r], plan.rounds[r].stat
    response = 1.0 if rnd.response == "ones" else plan.response_bound
    bound = stat.entry_bound(float(plan.row_norm), response) * rnd.weight
    m = stat.distinct_entries(plan.n_features)
    sd = math.hypot(float(noise.e_std[index]), float(noise.g_std[index]))
    return bound, sd, PLAUSIBLE_SD + math.sqrt(2.0 * math.log(m))


class Aggregator:
    """The aggregator's side of one plan.

    Parameters
    ----------
    plan : Plan
    rng : None, int or Generator
        Its own noise ``f_s`` and the top-up (never the sites' noise).
    """

    _counter = itertools.count(1)

    def __init__(self, plan, rng=None):
        self.plan = plan
        self._rng = as_generator(rng)
        self._scratch = None  # a generator of the same kind, set to a saved state to draw a site's f_s again
        self._round = None  # the open (or last) round: id, step, sites, received, closed, states, running sums
        self._seen = {}    # payload digest -> round id, over every round of this aggregator

    @property
    def round_id(self):
        return None if self._round is None else self._round["id"]

    def open_step(self, step, sites, params=None):
        """Open a round for ``step``: draw ``f_s`` where the plan has it; return ``{site: Query}`` (built on reading)."""
        plan = self.plan
        rid = f"r{next(Aggregator._counter)}-{uuid.uuid4().hex[:12]}"
        sites = tuple(sites)
        rounds = plan.rounds_of(step)
        weights = np.array([plan.weights[plan.index(s)] for s in sites], dtype=float)
        states = {}
        for name in sites:  # the draws of every site, in order, as if each f_s were kept: the same stream after
            states[name] = self._rng.bit_generator.state
            self._draw_f(plan, rounds, name, self._rng)
        self._round = dict(id=rid, step=step, sites=sites, received=set(), closed=False, states=states,
                           mu=dict(zip(sites, weights / weights.sum())) if sites else {},
                           sums={r: RunningSum() for r in rounds}, weight_of={s: float(plan.weights[plan.index(s)])
                                                                               for s in sites})
        chosen, center, scale, digest = plan.chosen, plan.chosen_center, plan.chosen_scale, plan.digest

        def query(name):
            return Query(digest, step, rid, params, self._f_of(plan, states, rounds, name), chosen, center, scale)

        return _Queries(sites, query)

    @staticmethod
    def _draw_f(plan, rounds, name, rng):
        """``{round: f_s}`` of one site's rounds in this step, drawn from ``rng`` (where ``plan`` has ``f``)."""
        i, out = plan.index(name), {}
        for r in rounds:
            std = float(plan.noise[r].f_std[i])
            if std > 0:
                out[r] = std * plan.rounds[r].stat.unit_noise(plan.n_features, rng)
        return out

    def _f_of(self, plan, states, rounds, name):
        """The site's ``f_s`` again, from the generator's state saved before its draw (``plan``: the round's)."""
        if not any(plan.noise[r].f_std[plan.index(name)] > 0 for r in rounds):
            return {}
        if self._scratch is None:
            self._scratch = np.random.Generator(type(self._rng.bit_generator)())
        self._scratch.bit_generator.state = states[name]
        return self._draw_f(plan, rounds, name, self._scratch)

    def f_share(self, round_index, site):
        """The aggregator's ``f_s`` of ``site`` in the open round (0.0 where the plan has none)."""
        rnd = self._round
        return self._f_of(self.plan, rnd["states"], self.plan.rounds_of(rnd["step"]), site).get(round_index, 0.0)

    def close_step(self):
        """Close the open round (later replies are refused as late); return the sites received, in plan order."""
        if self._round is None:
            return ()
        self._round["closed"] = True
        return tuple(s for s in self.plan.sites if s in self._round["received"])

    def receive(self, reply):
        """Admit one reply into the open round, or raise :class:`MessageRefused` naming the site."""
        site = getattr(reply, "site", None)
        rnd, plan = self._round, self.plan

        def refuse(reason, text):
            raise MessageRefused(f"aggregator refused a message from site {site!r} ({reason}): {text} "
                                 "No release is made from this run.", site=site, reason=reason)

        if not isinstance(reply, Reply):
            refuse("wrong-payload", f"expected a Reply; got {type(reply).__name__}.")
        if rnd is None or rnd["closed"]:
            refuse("late", "no round is open (a slow site is a dropout).")
        if reply.plan != plan.digest:
            refuse("wrong-plan", f"it answers plan {reply.plan[:12]}, not {plan.digest[:12]}.")
        if reply.round_id != rnd["id"] or reply.step != rnd["step"]:
            refuse("stale-round", f"it answers round {reply.round_id!r} (step {reply.step}), not the open round "
                                  f"{rnd['id']!r} (step {rnd['step']}).")
        if site not in rnd["sites"]:
            refuse("unknown-site", f"not a site asked in this round {list(rnd['sites'])}.")
        if site in rnd["received"]:
            refuse("duplicate", f"a message from this site was already received in round {rnd['id']!r}.")
        f = self._f_of(plan, rnd["states"], plan.rounds_of(rnd["step"]), site)
        self._check_payload(reply, refuse, f)
        planned = int(plan.n[plan.index(site)])
        if int(reply.n) != planned:
            refuse("wrong-n", f"it claims n={reply.n}, the plan has n={planned}; the noise, weights and "
                   "guarantees were computed for the plan's n.")
        if self._noisy(reply):  # without noise (epsilon=inf) an honest site repeats itself at IRLS's fixed point
            digest = hashlib.sha256(site.encode() + b"|" + b"".join(v.tobytes() for _, v in
                                                                    reply.values.values())).hexdigest()
            if digest in self._seen:
                refuse("replayed", f"the same payload was already received in round {self._seen[digest]!r}.")
            self._seen[digest] = rnd["id"]
        rnd["received"].add(site)
        self._add(reply, f)
        return reply

    def _add(self, reply, f):
        """Add an admitted reply to the round's running sums: ``mu_s (y_s - f_s)`` (``mu`` over the sites asked),
        a factor's ``mu_s P_s P_s^T``, a histogram's counts as they are."""
        rnd = self._round
        m = rnd["mu"][reply.site]
        for r, (statistic, value) in reply.values.items():
            rnd["sums"][r].add(as_statistic(statistic).summand(value, m, f.get(r, 0.0)))

    def _noisy(self, reply):
        """Whether the site's message carries noise of its own, so that bytes seen before are a replay."""
        i = self.plan.index(reply.site)
        return any(self.plan.noise[r].g_std[i] > 0 or self.plan.noise[r].e_std[i] > 0 for r in reply.values)

    def _check_payload(self, reply, refuse, f):
        plan = self.plan
        want = set(plan.rounds_of(self._round["step"]))
        if set(reply.values) != want or reply.n_features != plan.n_features:
            refuse("wrong-payload", f"it answers rounds {sorted(reply.values)} with n_features={reply.n_features}; "
                   f"the step has rounds {sorted(want)} with n_features={plan.n_features}.")
        for r, (statistic, value) in reply.values.items():
            kind = plan.rounds[r].stat
            kind = FACTOR if plan.rank is not None and not kind.counts else kind
            bins = plan.location.n_bins if kind is LOCATION else (plan.auto and plan.auto.n_bins)
            shape = kind.shape(plan.n_features, plan.rank, bins)
            if (statistic != kind.name or not isinstance(value, np.ndarray) or value.dtype != np.float64
                    or value.shape != shape or not np.all(np.isfinite(value))):
                refuse("wrong-payload", f"round {r}: payload {statistic!r} of shape {getattr(value, 'shape', None)} "
                       f"and dtype {getattr(value, 'dtype', type(value).__name__)}; the round expects {kind.name!r} of "
                       f"shape {shape} and dtype float64.")
            if kind.counts:
                self._check_counts(r, value, reply.site, refuse)
            elif kind is not FACTOR:
                self._check_moment(r, value - f.get(r, 0.0), reply.site, refuse)

    def _check_counts(self, r, value, site, refuse):
        """Noisy counts must be counts of the site's ``N_s`` rows, to within :data:`PLAUSIBLE_SD` of its noise.

        Each count within that many of the site's per-count std of ``[0, N_s]``, each histogram's total
        within that many of its std (``sqrt(B)`` times) of ``N_s``: public facts only. Privacy holds
        whatever a site sends; this keeps one site from choosing everyone's bound or centre (a count
        of -1e12 in the lowest bin set the bound to the top of the search range).
        """
        index = self.plan.index(site)
        sd, n_s = PLAUSIBLE_SD * float(self.plan.noise[r].g_std[index]), float(self.plan.n[index])
        rows = np.atleast_2d(value)
        if np.any(rows < -sd) or np.any(rows > n_s + sd) or \
                np.any(np.abs(rows.sum(axis=1) - n_s) > sd * np.sqrt(rows.shape[1])):
            refuse("implausible", f"round {r}: its noisy counts are not counts of its {int(n_s)} rows (beyond "
                   f"{PLAUSIBLE_SD:g} standard deviations of its own noise).")

    def _check_moment(self, r, entries, site, refuse):
        """A noisy moment, less the aggregator's ``f_s``, must lie within what the site's clipped rows can give
        (:func:`moment_limit`). Privacy holds whatever a site sends; this keeps one site from deciding the
        release (its second moment times 1e6 made every variance 1e4 times the data's, reported as signal)."""
        bound, sd, k = moment_limit(self.plan, r, self.plan.index(site))
        if not np.all(np.abs(entries) <= bound * (1 + 1e-9) + k * sd):  # 1e-9: the rounding of clipping
            rnd = self.plan.rounds[r]
            what = "mean" if rnd.response == "ones" else rnd.stat.label
            refuse("implausible", f"round {r}: its noisy {what} lies beyond what rows clipped to the plan's bounds "
                   f"can give (by more than {k:.1f} standard deviations of its own noise).")

    def combine(self, round_index, received):
        """``sum_s mu'_s (y_s - f_s)`` over the ``received`` sites (``mu'`` renormalised over them); factors:
        ``sum mu'_s P_s P_s^T``. Summed as the replies came (:meth:`receive`); rescaled here where some of
        the sites asked did not answer."""
        rnd = self._round
        names = [s for s in rnd["sites"] if s in received]
        total = rnd["sums"][round_index].value() if names else None
        if total is None:
            return None
        if len(names) < len(rnd["sites"]):
            w = rnd["weight_of"]
            total = total * (sum(w[s] for s in rnd["sites"]) / sum(w[s] for s in names))
        return total

    def resolve(self, bounds=None, center=None, column_scale=None):
        """After a choosing step: the plan with its chosen ``center``, ``column_scale`` or ``bounds`` (and what was
        chosen before); every later query carries them."""
        plan = self.plan
        if bounds is None and plan.bounds_chosen:
            bounds = dict(zip(plan.auto.names, plan.chosen))
        self.plan = plan.resolved(bounds=bounds, center=plan.chosen_center if center is None else center,
                                  column_scale=plan.chosen_scale if column_scale is None else column_scale)
        return self.plan

    def sum_histograms(self, round_index, received):
        """The sum of the sites' noisy histograms of one round (counts add; no weights, no shares): a bound
        step's ``(B,)`` or a location step's ``(d, B)``; summed as the replies came."""
        return self._round["sums"][round_index].value() if received else None

    def top_up(self, statistic, std):
        """Extra noise so the output never has less noise than every survivor's claim needs."""
        return std * as_statistic(statistic).unit_noise(self.plan.n_features, self._rng) if std > 0 else 0.0
