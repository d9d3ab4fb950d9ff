"""A site: holds its rows, answers each step of each plan once, and sends nothing but what its door lets out.

:meth:`Site.handle` is the one door of a site, on every transport: bytes in (a
:class:`~.messages.Query`), bytes out -- a :class:`~.messages.Reply` whose payloads passed the
egress guard, or a :class:`~.messages.SiteError` carrying a fixed code and nothing else.
No exception text, no data value, no file name leaves through it; a failure's detail is
written to the site's own log, by its type only.

Before answering, the site checks the query against the plan it holds (from the dealer,
:meth:`Site.accept`), then records the answer in its :class:`~.ledger.SiteLedger` (which
refuses a second answer to a step and a plan beyond the site's budget), and only then
computes and sends. It reads its data once, when built, and keeps its state (shares,
ledger, cached exact statistics) between rounds.

Privacy
-------
Each message is the site's exact normalised statistic of its clipped rows plus Gaussian
noise of the plan's stds (``e_s + f_s + g_s`` for CAPE); the site's row count ``n_s`` is
public. What that guarantees against the aggregator is :meth:`~.plan.Plan.cost`.
"""

import logging
import math
from types import SimpleNamespace

import numpy as np
from scipy import sparse

from .._rng import as_generator
from .._validation import check_data, check_int, check_positive, check_vector
from ..data import as_source
from ..moments.sparse_sums import checked_csr
from .column_ranges import check_column_scale, plan_ranges, ranged_columns
from .dealer import Bundle
from .ledger import Refused, SiteLedger
from .spent import ShareRecord
from .location import location_counts
from .messages import Hello, Reply, SiteError, from_wire, to_wire
from .statistics import SECOND
from .site_moments import bound_counts, exact_moment, intercept, sampling_moment, weighted_moment
from .site_rows import mapped_response, mapped_rows, scaled_center, stm_rows

__all__ = ["Site", "stm_rows"]

log = logging.getLogger("dpmoments.site")
_NO_PLAN = "0" * 64


def _bound(value, name):
    if value is None or (isinstance(value, str) and value == "auto"):
        return value
    return check_positive(value, name)


def _carried(plan, query):
    """``(centre, bounds, scales)``: which chosen values ``query`` must carry at its step, or ``None`` where it
    carries others, or bounds or scales of the wrong form."""
    want_center = plan.location is not None and query.step != 0
    want_bounds = plan.auto is not None and query.step > plan.bound_step
    want_scale = plan.scale is not None and query.step > plan.location_steps[-1]
    if (query.center is not None) != want_center or (query.bounds is not None) != want_bounds or \
            (query.column_scale is not None) != want_scale:
        return None
    if (want_bounds and query.bounds.shape != (len(plan.auto.names),)) or \
            (want_scale and not check_column_scale(query.column_scale, plan.ranges, plan.n_features)):
        return None
    return want_center, want_bounds, want_scale


class Site:
    """One data holder. Its rows stay inside; only what :meth:`handle` lets out leaves.

    Parameters
    ----------
    name : str
    X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
        The rows (a sparse ``X`` is summed from its non-zeros); three-word documents
        (word ids, shape ``(n, 3)``) for a single-topic plan. Sites given as frames must name the same
        columns in the same order (refused otherwise: the sums add position by position).
    y : array-like of shape (n_samples,), optional
        Responses (cross moments, model selection, IRLS).
    row_norm, response_bound, center : optional
        This site's public bounds; a plan with other bounds is refused. ``None``: take the plan's.
        ``"auto"``: a bound chosen by the plan's bound step (noisy histograms, :mod:`~dpmoments.multisite.bounds`);
        a plan with a public bound is then refused, as a public bound refuses an ``auto`` plan.
        ``center="private"``: a centre chosen by the plan's location step (noisy per-coordinate
        counts, :mod:`~dpmoments.multisite.location`), with a mean round; a plan without one is refused.
    budget : None, guarantee or (epsilon, delta)
        The most this site spends, against the aggregator, over every plan it answers.
    ledger : path, optional
        Where the site's budget ledger lives (what it charged over every plan, and its refusals;
        survives restarts); default in memory. Which steps a share answered is recorded with the
        share itself, wherever the ledger is (:mod:`~dpmoments.multisite.spent`): a step of a plan
        is answered once per site in this process and, for a share read from a file, on this machine.
    colluders : int, optional
        How many other sites this site assumes collude with the aggregator when it charges
        a plan to its budget: the larger of this and the plan's own ``colluders`` (a site
        may be more cautious than the dealer, never less). Default: the plan's.
    ranges : mapping or sequence, optional
        Public per-column ranges (:mod:`~dpmoments.multisite.column_ranges`): ``{column: (lower, upper)}``
        keyed by a name of a frame ``X`` or a 0-based position, or one ``(lower, upper)`` or ``None`` per
        column. A plan with other ranges is refused. ``None``: take the plan's (each site applies the
        plan's ranges to its own rows).
    """

    def __init__(self, name, X, y=None, *, row_norm=None, response_bound=None, center=None, budget=None,
                 ledger=None, colluders=None, ranges=None):
        if not isinstance(name, str) or not name:
            raise TypeError(f"'name' must be a non-empty string; got {name!r}.")
        source = as_source(X)
        X = source.data  # a Source is held as the input it holds
        self.ranges = None if ranges is None else plan_ranges(ranges, source.n_features, source.feature_names)
        if source.sparse:
            if center is not None:
                raise ValueError(f"site {name!r}: 'center' cannot be used with sparse 'X' (it makes rows dense).")
            X = checked_csr(X)
        elif np.asarray(X).dtype.kind in "iu":  # word ids, or integer data: kept exact
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"site {name!r}: 'X' must be 2-D; got {X.ndim}-D.")
        else:
            X = check_data(X)
        self.name = name
        # a frame's column names (public schema), so that sites whose frames order their columns differently are
        # refused (check_sites) rather than summed position by position; None for arrays and files read by name
        self.feature_names = None if source.feature_names is None else tuple(map(str, source.feature_names))
        self.row_norm = _bound(row_norm, "row_norm")
        self.response_bound = _bound(response_bound, "response_bound")
        self.center = center if center is None or (isinstance(center, str) and center == "private") else \
            check_vector(center, "center", length=X.shape[1])
        self.__X = X
        self.__y = None if y is None else check_vector(y, "y", length=X.shape[0])
        self.__cache = {}
        self.__bundles = {}
        self.__records = {}   # plan digest -> the share's record of the steps it answered (spent.py)
        self.__rngs = {}
        self.__costs = {}
        self.__resolved = {}  # plan digest -> the bounds of its first moment step
        self.__centres = {}   # plan digest -> {step: the centre it was answered at} (a private centre)
        self.__scales = {}    # plan digest -> the private column scales of its first step after the location
        self.ledger = SiteLedger(name, budget, ledger)
        self.colluders = None if colluders is None else check_int(colluders, "colluders", minimum=0)

    def cost(self, plan):
        """What answering ``plan`` costs this site against the aggregator, with the colluders it assumes."""
        return plan.cost(self.name, colluders=max(plan.colluders, self.colluders or 0))

    @classmethod
    def from_file(cls, name, path, *, target=None, columns=None, **kwargs):
        """A site reading its rows (and, with ``target``, its response column) once from a file.

        Any failure to read is one data-free line naming the file: the reader's own text may
        quote a cell, and nothing derived from a cell may reach an error message.
        """
        from ..data import iter_chunks

        try:
            chunks = list(iter_chunks(path, columns=columns, target=target))
            if target is None:
                X, y = np.vstack(chunks), None
            else:
                X, y = np.vstack([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])
        except FileNotFoundError:
            raise ValueError(f"site {name!r}: the data file '{path}' does not exist.") from None
        except Exception as exc:
            raise ValueError(f"site {name!r}: the data file '{path}' could not be read as a numeric table "
                             f"({type(exc).__name__}: a cell that is not a number, a missing value, or another "
                             "format); nothing was sent.") from None
        return cls(name, X, y, **kwargs)

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

    # -- the dealer's bundle ------------------------------------------------------------------------------------
    def accept(self, bundle, rng=None, *, throwaway=False):
        """Hold ``bundle`` (this site's shares of a plan); its local noise comes from ``rng`` (default OS entropy).

        The share's steps are recorded with it (:class:`~.spent.ShareRecord`): a step another site object of
        this process, or (a share read from a file) another process on this machine, answered is refused, and
        a share file used before whose record is missing raises :class:`~.spent.ShareRecordError`.
        ``throwaway=True`` opts out, for a reproduction that recomputes a run from its shares (a check, a
        test): nothing is read or recorded with the share (this site's own ledger still answers each step
        once). Such a site must answer no one but its own check.
        """
        if not isinstance(bundle, Bundle) or bundle.site != self.name:
            raise ValueError(f"site {self.name!r} was handed a bundle meant for another site.")
        self._check_plan(bundle.plan)
        self.__records[bundle.plan.digest] = None if throwaway else ShareRecord(bundle.plan.digest, self.name,
                                                                                 bundle.path)
        self.__bundles[bundle.plan.digest] = bundle
        self.__rngs[bundle.plan.digest] = as_generator(rng)
        return bundle.plan.digest

    def answered(self, plan_digest):
        """The steps of the plan this site's share has answered, wherever it ran (its record; [] if none)."""
        record = self.__records.get(plan_digest)
        return [] if record is None else record.answered()

    def _check_plan(self, plan):
        """Raise ``ValueError`` (data-free) if this site's data or bounds do not fit ``plan``."""
        i = plan.index(self.name)
        if plan.n[i] != self.n or self._rows_width(plan) != plan.n_features:
            raise ValueError(f"site {self.name!r}: its data do not match the plan (the plan expects "
                             f"{plan.n[i]} rows; the rows it forms must have {plan.n_features} columns).")
        self._check_bounds(plan)
        if isinstance(self.center, str) != (plan.location is not None) and self.center is not None:
            raise ValueError(f"site {self.name!r}: the plan's centre differs from this site's (private or not).")
        if self.center is not None and not isinstance(self.center, str) and \
                (plan.center is None or not np.array_equal(self.center, plan.center)):
            raise ValueError(f"site {self.name!r}: the plan's public centre differs from this site's.")
        self._check_ranges(plan)
        if plan.location is not None and sparse.issparse(self.__X):
            raise ValueError(f"site {self.name!r}: a private centre cannot be used with sparse rows (they become "
                             "dense).")

    def _check_bounds(self, plan):
        """The plan's public (or ``auto``) bounds against this site's own; ``None`` takes the plan's."""
        auto = () if plan.auto is None else plan.auto.names
        features_bound = plan.row_norm / intercept(plan)[1]  # the bound on x (an intercept plan's rows: larger)
        for ours, theirs, what in ((self.row_norm, features_bound, "row_norm"),
                                   (self.response_bound, plan.response_bound, "response_bound")):
            if ours is None or (what == "response_bound" and ours == "auto" and plan.option("response_range")):
                continue  # a response range bounds the mapped response by 1, for free
            if ours == "auto" and what == "row_norm" and _bounds_the_box(plan):
                continue  # every column ranged: the box's bound, which no mapped row exceeds (Plan.build)
            if (ours == "auto") != (what in auto) or (ours != "auto" and theirs is not None and ours != theirs):
                raise ValueError(f"site {self.name!r}: the plan's {what} differs from this site's.")

    def _check_ranges(self, plan):
        if self.ranges is not None and plan.ranges != self.ranges:
            raise ValueError(f"site {self.name!r}: the plan's ranges differ from this site's.")
        if plan.ranges is not None and sparse.issparse(self.__X):
            raise ValueError(f"site {self.name!r}: ranges cannot be used with sparse rows (they become dense).")

    def _rows_width(self, plan):
        if plan.rows == "stm":
            return 3 * int(plan.vocabulary_size) if self.__X.shape[1] == 3 else -1
        return self.n_features + (plan.rows == "xy") + plan.intercept_columns

    # -- the door -------------------------------------------------------------------------------------------------
    def handle(self, data):
        """Bytes in, bytes out: the only way anything leaves this site."""
        try:
            query = from_wire(data, kinds=("Query", "Hello"))
        except ValueError:
            log.warning("site %s: refused an undecodable query", self.name)
            return to_wire(SiteError(self.name, _NO_PLAN, 0, "none", "bad-query"))
        if isinstance(query, Hello):
            if query.plan in self.__bundles:
                return to_wire(Hello(query.plan, self.name))
            return to_wire(SiteError(self.name, query.plan, 0, "hello", "plan-unknown"))
        return to_wire(self.answer(query))

    def answer(self, query):
        """A :class:`Reply` to ``query``, or a :class:`SiteError` (recorded in the ledger and the site's log)."""
        tags = (self.name, query.plan, query.step, query.round_id)
        try:
            return self._answer(query)
        except Refused as exc:
            log.warning("site %s: refused step %s of plan %s: %s", self.name, query.step, query.plan[:12], exc.code)
            return SiteError(*tags, exc.code)
        except Exception as exc:  # the detail stays here, by type: its text may hold data
            log.error("site %s: failed on step %s of plan %s (%s)", self.name, query.step, query.plan[:12],
                      type(exc).__name__)
            return SiteError(*tags, "internal")

    def _answer(self, query):
        bundle = self.__bundles.get(query.plan)
        if bundle is None:
            self.ledger.refuse(query.plan, query.step, "plan-unknown")
        plan = bundle.plan
        rounds = plan.rounds_of(query.step)
        if not rounds:
            self.ledger.refuse(query.plan, query.step, "step-unknown")
        plan = self._resolve(plan, query)
        if plan is None or not self._query_fits(plan, rounds, query):
            self.ledger.refuse(query.plan, query.step, "bad-query")
        if plan.digest not in self.__costs:
            self.__costs[plan.digest] = self.cost(plan)
        # recorded before anything is sent: in the budget ledger and with the share, wherever it was used
        self.ledger.admit(plan.digest, query.step, self.__costs[plan.digest], plan.neighbours,
                          spend=self._spend(plan.digest, query.step))
        if plan.location is not None:  # the centre this step was answered at (step 0: the origin)
            self.__centres.setdefault(plan.digest, {})[query.step] = \
                np.zeros(plan.n_features) if plan.center is None else np.asarray(plan.center)
        values = {r: self._noisy(plan, bundle, r, query) for r in rounds}
        return Reply(self.name, plan.digest, query.step, query.round_id, self.n, plan.n_features, values)

    def _spend(self, digest, step):
        record = self.__records[digest]
        return None if record is None else (lambda: record.spend(step))

    def _resolve(self, plan, query):
        """The plan at what the query carries, or ``None`` if it does not fit.

        The choosing steps' queries carry nothing chosen yet: the first location step no centre,
        the bound step no bounds. Every later query carries the bounds on their grid (``auto``
        bounds), the same at every step (the first ones are kept), and the centre so far (a
        private centre): this site must have answered the step before, and the centre may move
        from the one that step carried only after a location step, and then by a grid edge per
        coordinate (the median that step found). A bound or centre is public whatever its
        value: the noise is scaled to the sensitivity at that bound, and no sensitivity
        depends on the centre.
        """
        wanted = _carried(plan, query)
        if wanted is None:
            return None
        want_center, want_bounds, want_scale = wanted
        if not (want_center or want_bounds):
            return plan
        try:
            resolved = plan.resolved(
                bounds=dict(zip(plan.auto.names, (float(v) for v in query.bounds))) if want_bounds else None,
                center=query.center if want_center else None, column_scale=query.column_scale)
        except ValueError:  # not on the plan's grid, or not a centre
            return None
        if want_center and not self._centre_follows(plan, query.step, np.asarray(resolved.center)):
            return None
        if want_scale and self.__scales.setdefault(plan.digest, resolved.column_scale) != resolved.column_scale:
            return None  # the scales are fixed once chosen, as the bounds
        if want_bounds and self.__resolved.setdefault(plan.digest, resolved.chosen) != resolved.chosen:
            return None
        return resolved

    def _centre_follows(self, plan, step, center):
        """Whether ``center`` follows the centre this site answered the step before at (see :meth:`_resolve`)."""
        before = self.__centres.get(plan.digest, {}).get(step - 1)
        if before is None:
            return False
        if step - 1 in plan.location_steps:
            return plan.location.on_grid(center - before, np.maximum(np.abs(center), np.abs(before)))
        return bool(np.array_equal(center, before))

    def _query_fits(self, plan, rounds, query):
        i = plan.index(self.name)
        d = plan.n_features
        needs_f = {r for r in rounds if plan.noise[r].f_std[i] > 0}
        if set(query.shares) != needs_f:
            return False
        if any(query.shares[r].shape != plan.rounds[r].stat.shape(d) for r in needs_f):
            return False
        shapes = {plan.rounds[r].stat.params_shape(d, plan.rounds[r].w_max is not None) for r in rounds}
        if len(shapes) != 1:
            return False
        shape = shapes.pop()  # IRLS's iterate (d,), a sampling step's iterate and bandwidth (d + 1,), or none
        return query.params is None if shape is None else (query.params is not None and query.params.shape == shape)

    # -- statistics -----------------------------------------------------------------------------------------------
    def _noisy(self, plan, bundle, r, query):
        rnd, noise = plan.rounds[r], plan.noise[r]
        i = plan.index(self.name)
        g = float(noise.g_std[i])
        rng = self.__rngs[plan.digest]
        stat = rnd.stat
        if stat.counts:  # a bound or location step: exact counts plus this site's own noise, nothing else
            counts = self._histogram(plan, rnd) if rnd.bound is not None else self._location_counts(plan)
            return rnd.statistic, stat.noisy(counts, g, rng)
        value = np.array(self._statistic(plan, rnd, query.params), dtype=np.float64)
        k = plan.noise_factor(r)  # the shares were dealt at the unit bounds of an auto plan (Plan.resolved)
        if r in bundle.shares:
            value = value + k * bundle.shares[r]
        if r in query.shares:
            value = value + query.shares[r]
        for coefficient, seed in bundle.masks.get(r, ()):
            value = value + k * coefficient * stat.unit_noise(plan.n_features, np.random.default_rng(seed))
        if plan.rank is not None:  # DPdisPCA: a factor of the noisy second moment
            noisy = value + (g * SECOND.unit_noise(plan.n_features, rng) if g > 0 else 0.0)
            lam, U = np.linalg.eigh(noisy)
            lam, U = lam[::-1][:plan.rank], U[:, ::-1][:, :plan.rank]
            return "factor", U * np.sqrt(np.maximum(lam, 0.0))
        if g > 0:
            value = value + g * stat.unit_noise(plan.n_features, rng)
        return rnd.statistic, value

    def _rows(self, plan):
        if plan.rows == "stm":
            return stm_rows(self.__X, plan.vocabulary_size), None
        X = mapped_rows(self.__X, plan, self.__cache)  # the plan's public ranges (and chosen scales) first
        y = mapped_response(self.__y, plan)
        if plan.rows == "xy":
            if y is None:
                raise ValueError("this plan needs the site's responses y")
            X = np.hstack([X, y[:, None]])
        return X, y

    def _statistic(self, plan, rnd, params):
        """The exact normalised statistic of one round (private: used only inside this site)."""
        if rnd.stat.sampling:
            return sampling_moment(plan, rnd, *self._rows(plan), params)
        if rnd.w_max is not None:
            return weighted_moment(plan, rnd, *self._rows(plan), params)
        key = (plan.rows, plan.vocabulary_size, rnd.statistic, rnd.response, plan.row_norm, plan.response_bound,
               plan.center, getattr(plan, "ranges", None), getattr(plan, "chosen_scale", None),
               str(dict(getattr(plan, "options", ())).get("response_range")))
        if key not in self.__cache:
            self.__cache[key] = exact_moment(plan, rnd, *self._rows(plan), scaled_center(plan))
        return self.__cache[key]

    def _histogram(self, plan, rnd):
        """Exact counts of this site's row norms (or ``|y|``) on the plan's public grid (private: used only here)."""
        key = ("histogram", plan.digest, rnd.bound)
        if key not in self.__cache:
            self.__cache[key] = bound_counts(plan, rnd, *self._rows(plan), scaled_center(plan))
        return self.__cache[key]

    def _location_counts(self, plan):
        """Exact per-coordinate counts of this site's rows, centred at the location so far, on the plan's signed grid
        (private: used only here)."""
        X, center = self._rows(plan)[0], scaled_center(plan)
        return location_counts(X if center is None else X - center, plan.location.edges())

    def _pooled_rows(self):
        """This site's rows, for the pooled reference only (a trusted curator's in-process simulation)."""
        if as_source(self.__X).sparse:
            raise ValueError(f"site {self.name!r}: the pooled reference with a private centre or bound needs dense "
                             "rows.")
        return self.__X

    def _exact(self, statistic):
        """The exact normalised statistic of this site's own rows and bounds (tests and the pooled reference)."""
        from .plan import Round

        if isinstance(self.center, str):
            raise ValueError(f"site {self.name!r}: a private centre has no exact statistic of its own (it is chosen "
                             "across sites).")
        facts = SimpleNamespace(rows="x", vocabulary_size=None, row_norm=self.row_norm,
                                response_bound=self.response_bound, ranges=self.ranges,
                                center=None if self.center is None else tuple(self.center))
        return self._statistic(facts, Round(statistic), None)


def _bounds_the_box(plan):
    """Whether ``plan`` has no bound step, every column ranged and a public row bound no mapped row exceeds
    (``sqrt(d)`` about the midpoints): a site's ``row_norm="auto"`` takes it (the plan of the ranges alone)."""
    return plan.auto is None and plan.ranges is not None and ranged_columns(plan.ranges).all() and \
        plan.row_norm >= math.sqrt(len(plan.ranges)) * (1 - 1e-12)
