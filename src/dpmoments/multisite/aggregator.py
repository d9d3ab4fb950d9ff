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
"""

import hashlib
import itertools
import math
import uuid

import numpy as np

from .._rng import as_generator
from .messages import STATISTIC_NDIM, MessageRefused, Query, Reply, statistic_shape
from .noise import unit_noise

#: How far, in standard deviations of a site's own noise, its noisy counts may stray from counts of its
#: rows before they are refused: 6 leaves an honest site's d x B counts refused with probability < 1e-4.
#: A moment's margin adds ``sqrt(2 ln m)`` for its ``m`` entries (:func:`moment_limit`).
PLAUSIBLE_SD = 6.0

__all__ = ["Aggregator"]


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
    rnd, noise, d = plan.rounds[r], plan.noise[r], plan.n_features
    R = float(plan.row_norm)
    if rnd.statistic == "cross":
        bound = R * (1.0 if rnd.response == "ones" else float(plan.response_bound))
    else:
        bound = R ** STATISTIC_NDIM[rnd.statistic]  # second: R^2, third: R^3
    bound *= 1.0 if rnd.w_max is None else float(rnd.w_max)
    m = {"second": d * (d + 1) // 2, "cross": d, "third": math.comb(d + 2, 3)}[rnd.statistic]
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
        self._f = {}       # round -> {site: f_s}
        self._round = None  # the open (or last) round: id, step, sites, inbox, closed
        self._seen = {}    # payload digest -> round id, over every round of this aggregator

    @property
    def round_id(self):
        return None if self._round is None else self._round["id"]

    def open_step(self, step, sites, params=None):
        """Open a round for ``step``: draw ``f_s`` where the plan has it; return ``{site: Query}``."""
        plan = self.plan
        rid = f"r{next(Aggregator._counter)}-{uuid.uuid4().hex[:12]}"
        self._round = dict(id=rid, step=step, sites=tuple(sites), inbox={}, closed=False)
        queries = {}
        for name in sites:
            i = plan.index(name)
            shares = {}
            for r in plan.rounds_of(step):
                std = float(plan.noise[r].f_std[i])
                if std > 0:
                    f = std * unit_noise(plan.rounds[r].statistic, plan.n_features, self._rng)
                    self._f.setdefault(r, {})[name] = f
                    shares[r] = f
            queries[name] = Query(plan.digest, step, rid, params, shares, plan.chosen, plan.chosen_center)
        return queries

    def close_step(self):
        """Close the open round (later replies are refused as late); return its inbox."""
        if self._round is None:
            return {}
        self._round["closed"] = True
        return dict(self._round["inbox"])

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
        if site in rnd["inbox"]:
            refuse("duplicate", f"a message from this site was already received in round {rnd['id']!r}.")
        self._check_payload(reply, refuse)
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
        rnd["inbox"][site] = reply
        return reply

    def _noisy(self, reply):
        """Whether the site's message carries noise of its own, so that bytes seen before are a replay."""
        i = self.plan.index(reply.site)
        return any(self.plan.noise[r].g_std[i] > 0 or self.plan.noise[r].e_std[i] > 0 for r in reply.values)

    def _check_payload(self, reply, refuse):
        plan = self.plan
        want = set(plan.rounds_of(self._round["step"]))
        if set(reply.values) != want or reply.n_features != plan.n_features:
            refuse("wrong-payload", f"it answers rounds {sorted(reply.values)} with n_features={reply.n_features}; "
                   f"the step has rounds {sorted(want)} with n_features={plan.n_features}.")
        for r, (statistic, value) in reply.values.items():
            kind = plan.rounds[r].statistic
            kind = "factor" if plan.rank is not None and kind not in ("histogram", "location") else kind
            bins = plan.location.n_bins if kind == "location" else (plan.auto and plan.auto.n_bins)
            shape = statistic_shape(kind, plan.n_features, plan.rank, bins)
            if (statistic != kind or not isinstance(value, np.ndarray) or value.dtype != np.float64
                    or value.shape != shape or not np.all(np.isfinite(value))):
                refuse("wrong-payload", f"round {r}: payload {statistic!r} of shape {getattr(value, 'shape', None)} "
                       f"and dtype {getattr(value, 'dtype', type(value).__name__)}; the round expects {kind!r} of "
                       f"shape {shape} and dtype float64.")
            if kind in ("histogram", "location"):
                self._check_counts(r, value, reply.site, refuse)
            elif kind != "factor":
                self._check_moment(r, value, reply.site, refuse)

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

    def _check_moment(self, r, value, site, refuse):
        """A noisy moment, less the aggregator's ``f_s``, must lie within what the site's clipped rows can give
        (:func:`moment_limit`). Privacy holds whatever a site sends; this keeps one site from deciding the
        release (its second moment times 1e6 made every variance 1e4 times the data's, reported as signal)."""
        bound, sd, k = moment_limit(self.plan, r, self.plan.index(site))
        entries = value - self._f.get(r, {}).get(site, 0.0)
        if not np.all(np.abs(entries) <= bound * (1 + 1e-9) + k * sd):  # 1e-9: the rounding of clipping
            rnd = self.plan.rounds[r]
            what = "mean" if rnd.response == "ones" else f"{rnd.statistic} moment"
            refuse("implausible", f"round {r}: its noisy {what} lies beyond what rows clipped to the plan's bounds "
                   f"can give (by more than {k:.1f} standard deviations of its own noise).")

    def combine(self, round_index, replies):
        """``sum_s mu'_s (y_s - f_s)`` over the replies (``mu'`` renormalised); factors: ``sum mu'_s P_s P_s^T``."""
        plan = self.plan
        names = [s for s in plan.sites if s in replies]
        if not names:
            return None
        mu = np.array([plan.weights[plan.index(s)] for s in names])
        mu = mu / mu.sum()
        f = self._f.get(round_index, {})
        total = 0.0
        for m, name in zip(mu, names):
            value = replies[name].value(round_index)
            total = total + m * (value @ value.T if plan.rank is not None else value - f.get(name, 0.0))
        return total

    def resolve(self, bounds=None, center=None):
        """After a choosing step: the plan with its chosen ``center`` or ``bounds`` (and what was chosen before);
        every later query carries them."""
        plan = self.plan
        if bounds is None and plan.bounds_chosen:
            bounds = dict(zip(plan.auto.names, plan.chosen))
        self.plan = plan.resolved(bounds=bounds, center=plan.chosen_center if center is None else center)
        return self.plan

    def sum_histograms(self, round_index, replies):
        """The sum of the sites' noisy histograms of one round (counts add; no weights, no shares): a bound
        step's ``(B,)`` or a location step's ``(d, B)``."""
        names = [s for s in self.plan.sites if s in replies]
        return sum(replies[name].value(round_index) for name in names) if names else None

    def top_up(self, statistic, std):
        """Extra noise so the output never has less noise than every survivor's claim needs."""
        return std * unit_noise(statistic, self.plan.n_features, self._rng) if std > 0 else 0.0
