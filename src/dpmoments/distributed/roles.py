"""The three roles of a multi-site run (Imtiaz & Sarwate, docs/algorithms.md §2.1).

* :class:`Site` holds its rows and never sends them: it clips them to the
  public bound, forms its normalised statistic and sends only a noisy
  :class:`~dpmoments.distributed.messages.SiteMessage` (the egress guard runs in
  its constructor). A site cannot be pickled, so an engine cannot ship it.
* :class:`NoiseGenerator` (trusted) deals CAPE's correlated shares ``e_s``,
  ``sum_s mu_s e_s = 0`` exactly, over secure channels to the sites only.
* :class:`Aggregator` (untrusted, honest but curious) draws ``f_s``, receives the
  messages, removes ``f_s`` and forms the weighted aggregate.

Rounds. :meth:`Aggregator.masks` opens a *round* for a plan (a fresh id, which
the aggregator's shares carry and a site echoes back); :meth:`Aggregator.receive`
admits at most one message per site of the plan per round and refuses, with a
:class:`~dpmoments.distributed.messages.MessageRefused` naming the site: a
duplicate, a replay of any message seen before (same site and payload bytes;
fresh noise makes a repeat of an honest message impossible), a message tagged
with another round, one after the round closed (``combine`` closes it: a slow
site is a dropout), a payload of the wrong statistic, shape or dtype, and a row
count ``n`` other than the plan's (the noise, weights and guarantees were
computed for the plan's ``n``; they are never silently recomputed).

All noise objects have the statistic's symmetry: every draw is a symmetric
matrix (upper triangle drawn, mirrored) or a symmetric tensor (one draw per
orbit), and linear combinations of those stay symmetric.
"""

import hashlib
import itertools
import uuid

import numpy as np

from .._validation import check_data, check_positive, check_vector
from ..mechanisms import gaussian_noise, symmetric_matrix_noise, symmetric_tensor_noise
from ..moments import accumulate_moments, symmetrise_matrix, symmetrise_tensor
from ..moments.sparse_sums import checked_csr, is_sparse_source
from .messages import FactorMessage, MessageRefused, NoiseShare, SiteMessage, statistic_shape

__all__ = ["Site", "NoiseGenerator", "Aggregator", "unit_noise"]


def unit_noise(statistic, d, rng, size=None):
    """Standard (std 1) noise with the statistic's symmetry; ``size`` stacks draws on axis 0."""
    draw = {"second": lambda g: symmetric_matrix_noise(d, 1.0, g),
            "cross": lambda g: gaussian_noise(d, 1.0, g),
            "third": lambda g: symmetric_tensor_noise(d, 1.0, g)}[statistic]
    if size is None:
        return draw(rng)
    return np.stack([draw(rng) for _ in range(size)]) if size else np.zeros((0,) + statistic_shape(statistic, d))


class Site:
    """One data holder. Its rows stay inside; only noisy statistics leave.

    Parameters
    ----------
    name : str
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        A sparse ``X`` (one-hot documents, indicators) is summed from its non-zeros.
    y : array-like of shape (n_samples,), optional
        Responses, for the cross moment.
    row_norm : float > 0
        The public L2 bound R on each (centred) row; rows are clipped to it.
    response_bound : float > 0, optional
        The public bound r on ``|y|`` (cross moment).
    center : array-like of shape (n_features,), optional
        A public centre, the same at every site.

    Privacy
    -------
    ``n`` (the row count) is public in these protocols, as in the paper.
    """

    def __init__(self, name, X, y=None, *, row_norm, response_bound=None, center=None):
        if not isinstance(name, str) or not name:
            raise TypeError(f"'name' must be a non-empty string; got {name!r}.")
        if is_sparse_source(X):  # e.g. one-hot documents: moments from the non-zeros
            if center is not None:
                raise ValueError(f"site {name!r}: 'center' cannot be used with sparse 'X' (it makes every row dense).")
            X = checked_csr(X)
        else:
            X = check_data(X)
        self.name = name
        self.row_norm = check_positive(row_norm, "row_norm")
        self.response_bound = None if response_bound is None else check_positive(response_bound, "response_bound")
        self.center = None if center is None else check_vector(center, "center", length=X.shape[1])
        self.__X = X
        self.__y = None if y is None else check_vector(y, "y", length=X.shape[0])
        self.__cache = {}

    @property
    def n(self):
        return self.__X.shape[0]

    @property
    def n_features(self):
        return self.__X.shape[1]

    def __repr__(self):
        return f"Site({self.name!r}, n={self.n}, n_features={self.n_features})"

    def __reduce__(self):
        raise TypeError(f"a Site holds private rows and cannot be pickled or sent ({self.name!r}).")

    def _exact(self, statistic):
        """The exact normalised statistic (private: used only inside this site)."""
        if statistic not in self.__cache:
            src = self.__X if statistic != "cross" else (self.__X, self.__y)
            if statistic == "cross" and (self.__y is None or self.response_bound is None):
                raise ValueError(f"site {self.name!r} needs 'y' and 'response_bound' for the cross moment.")
            sums = accumulate_moments(src, row_norm=self.row_norm, third=statistic == "third", center=self.center,
                                      response_bound=self.response_bound if statistic == "cross" else None)
            value = {"second": lambda: symmetrise_matrix(sums.xtx / sums.n),
                     "cross": lambda: sums.xty / sums.n,
                     "third": lambda: symmetrise_tensor(sums.third / sums.n)}[statistic]()
            self.__cache[statistic] = value
        return self.__cache[statistic]

    def respond(self, statistic, *, shares=(), g_std=0.0, rng=None, masks=(), round_id=None):
        """The site's message ``A_s + sum(shares) + masks + g_s``.

        Parameters
        ----------
        statistic : {"second", "cross", "third"}
        shares : sequence of NoiseShare
            Received ``e_s`` and ``f_s``.
        g_std : float
            Std of the local noise ``g_s`` (0: none).
        rng : numpy.random.Generator
            This site's own stream.
        masks : sequence of (coefficient, SeedSequence)
            Pairwise masks (secure aggregation): ``coefficient * unit_noise(seed)``.
        round_id : str, optional
            The round answered; by default the one the aggregator's share carries.
        """
        value = np.array(self._exact(statistic), dtype=np.float64)
        for share in shares:
            if share.site != self.name or share.statistic != statistic:
                raise ValueError(f"site {self.name!r} received a share meant for {share.site!r}/{share.statistic}.")
            if share.round_id is not None:
                if round_id is not None and share.round_id != round_id:
                    raise ValueError(f"site {self.name!r} received shares of two rounds ({round_id!r}, "
                                     f"{share.round_id!r}).")
                round_id = share.round_id
            value = value + share.matrix
        for coefficient, seed in masks:
            value = value + coefficient * unit_noise(statistic, self.n_features, np.random.default_rng(seed))
        if g_std > 0:
            value = value + g_std * unit_noise(statistic, self.n_features, rng)
        return SiteMessage(self.name, self.n, statistic, value, self.n_features, round_id)

    def respond_factor(self, rank, *, g_std, rng):
        """DPdisPCA: ``P_s = U_r diag(sqrt(max(lambda_r, 0)))`` of the noisy second moment.

        The ``rank`` largest eigenvalues of ``A_s + G_s`` (``eigh``) are kept and
        floored at 0 (a noisy second moment may be indefinite; the paper's SVD
        would return ``|lambda|`` instead). Post-processing of a Gaussian release.
        """
        noisy = self._exact("second") + (g_std * unit_noise("second", self.n_features, rng) if g_std > 0 else 0.0)
        lam, U = np.linalg.eigh(noisy)
        lam, U = lam[::-1][:rank], U[:, ::-1][:, :rank]
        return FactorMessage(self.name, self.n, U * np.sqrt(np.maximum(lam, 0.0)), self.n_features)


class NoiseGenerator:
    """The trusted dealer of CAPE's correlated shares ``e = L z`` (``weights @ L == 0``)."""

    def __init__(self, rng):
        self._rng = rng

    def deal(self, plan, statistic, n_features):
        """One :class:`NoiseShare` per site of ``plan``; ``sum_s mu_s e_s = 0`` exactly up to rounding."""
        L = plan.e_factor
        Z = unit_noise(statistic, n_features, self._rng, size=L.shape[1])
        E = np.tensordot(L, Z, axes=1)
        return {name: NoiseShare(name, "noise-generator", statistic, E[i]) for i, name in enumerate(plan.sites)}


class Aggregator:
    """The untrusted aggregator: draws ``f_s``, removes it, combines the messages.

    Each :meth:`masks` call opens a round (see the module docstring): messages
    enter through :meth:`receive` (``combine`` receives those not yet
    received) and the round closes when ``combine`` returns.
    """

    _counter = itertools.count(1)

    def __init__(self, rng):
        self._rng = rng
        self._f = {}
        self._round = None  # dict: id, plan, statistic, n_features, inbox, closed
        self._seen = {}  # payload digest -> round id, over every round of this aggregator

    @property
    def round_id(self):
        """The id of the current (open or last closed) round, or None."""
        return None if self._round is None else self._round["id"]

    def open_round(self, plan, statistic, n_features):
        """Start a round for ``plan``: a fresh id (no generator draw), an empty inbox."""
        self._round = dict(id=f"r{next(Aggregator._counter)}-{uuid.uuid4().hex[:12]}", plan=plan,
                           statistic=statistic, n_features=int(n_features), inbox={}, closed=False)
        return self._round["id"]

    def close_round(self):
        """Close the open round: later messages are refused as late. Returns the inbox."""
        if self._round is not None:
            self._round["closed"] = True
            return dict(self._round["inbox"])
        return {}

    def masks(self, plan, statistic, n_features):
        """Open a round; draw and remember ``f_s`` for every site with ``f_std > 0``; return the shares to send."""
        round_id = self.open_round(plan, statistic, n_features)
        out = {}
        for name, std in zip(plan.sites, plan.f_std):
            if std > 0:
                f = std * unit_noise(statistic, n_features, self._rng)
                self._f[name] = f
                out[name] = NoiseShare(name, "aggregator", statistic, f, round_id)
        return out

    def receive(self, message):
        """Admit one site message into the open round, or raise :class:`MessageRefused` naming the site."""
        site = getattr(message, "site", None)
        rnd = self._round

        def refuse(reason, text):
            raise MessageRefused(f"aggregator refused a message from site {site!r} ({reason}): {text} "
                                 "No release is made from this round.", site=site, reason=reason)

        if not isinstance(message, SiteMessage):
            refuse("wrong-payload", f"expected a SiteMessage; got {type(message).__name__}.")
        if rnd is None:
            refuse("late", "no round is open.")
        plan = rnd["plan"]
        if rnd["closed"]:
            refuse("late", f"round {rnd['id']!r} closed before it arrived (a slow site is a dropout).")
        if message.round_id is not None and message.round_id != rnd["id"]:
            refuse("stale-round", f"it answers round {message.round_id!r}, not the open round {rnd['id']!r}.")
        if site not in plan.sites:
            refuse("unknown-site", f"not a site of the plan {list(plan.sites)}.")
        if site in rnd["inbox"]:
            refuse("duplicate", f"a message from this site was already received in round {rnd['id']!r}.")
        value = message.value
        shape = statistic_shape(rnd["statistic"], rnd["n_features"])
        if (message.statistic != rnd["statistic"] or message.n_features != rnd["n_features"]
                or not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.shape != shape
                or not np.all(np.isfinite(value))):
            refuse("wrong-payload", f"payload {message.statistic!r} of shape {getattr(value, 'shape', None)} and dtype "
                   f"{getattr(value, 'dtype', type(value).__name__)} (n_features={message.n_features}); the round "
                   f"expects {rnd['statistic']!r} of shape {shape} and dtype float64.")
        planned = int(plan.n[plan.index(site)])
        if int(message.n) != planned:
            refuse("wrong-n", f"it claims n={message.n}, the plan has n={planned}; the noise, weights and "
                   "guarantees were computed for the plan's n.")
        digest = hashlib.sha256(f"{site}|{message.statistic}|{message.n}|".encode() + value.tobytes()).hexdigest()
        if digest in self._seen:
            refuse("replayed", f"the same payload was already received in round {self._seen[digest]!r}.")
        self._seen[digest] = rnd["id"]
        rnd["inbox"][site] = message
        return message

    def combine(self, messages, weights):
        """``sum_s mu'_s (y_s - f_s)`` over the received messages, ``mu'`` renormalised.

        With a round open, every message not yet received goes through
        :meth:`receive` first (its key must be its site), and the round closes.
        """
        rnd = self._round
        if rnd is not None and not rnd["closed"]:
            for name, msg in messages.items():
                if getattr(msg, "site", None) != name:
                    raise MessageRefused(f"aggregator refused a message filed under site {name!r} but sent by "
                                         f"{getattr(msg, 'site', None)!r}. No release is made from this round.",
                                         site=name, reason="unknown-site")
                if rnd["inbox"].get(name) is not msg:
                    self.receive(msg)
            self.close_round()
        names = list(messages)
        mu = np.array([weights[n] for n in names], dtype=np.float64)
        mu = mu / mu.sum()
        total = 0.0
        for m, name in zip(mu, names):
            total = total + m * (messages[name].value - self._f.get(name, 0.0))
        return total

    def combine_factors(self, messages, weights):
        """DPdisPCA: ``sum_s mu'_s P_s P_s^T``."""
        names = list(messages)
        mu = np.array([weights[n] for n in names], dtype=np.float64)
        mu = mu / mu.sum()
        return sum(m * (messages[n].value @ messages[n].value.T) for m, n in zip(mu, names))

    def top_up(self, statistic, n_features, std):
        """Extra noise the aggregator adds so the output never has less noise than promised."""
        return std * unit_noise(statistic, n_features, self._rng) if std > 0 else 0.0
