"""The plan of :class:`~dpmoments.estimators.PrivateModelSelection`: its candidates and its budget's parts.

Everything here reads public values only, before any data are read: the candidate family (fixed,
never data-driven), the checks of the parameters, and the split of ``epsilon`` between the private
bounds (``bound_budget``), the private radius (``R_SHARE`` of it when ``R="private"`` without its
own ``R_epsilon``) and the selection.
"""

import itertools
import math

from .._validation import check_nonnegative, check_positive
from ..moments.auto_release import as_bound_budget, is_auto, is_default_share
from ..privacy.relations import check_neighbours
from ._column_map import check_one_response_bound
from ._params import check_parameters
from ._selection_share import selection_bound_share
from .model_defaults import R_SHARE

__all__ = ["MECHANISMS", "R_SHARE", "candidate_family", "SelectionPlanMixin", "check_R_range", "check_gap_tolerance",
           "check_phi", "check_replace_one"]
MECHANISMS = ("noisy-min", "exponential")
# The least 'gap_tolerance': Q_R is a sum of n squared residuals, each at most Delta, whose rounding
# (about 1e-16 n d Delta) must stay well below the tolerance Delta * gap_tolerance that the noise covers.
MIN_GAP_TOLERANCE = 1e-9
_MAX_CANDIDATES = 20_000


def candidate_family(candidates, max_size, d):
    """The fixed, data-independent family as a tuple of sorted index tuples."""
    if isinstance(candidates, str):
        return _named_family(candidates, _family_size(max_size, d), d)
    return _listed_family(candidates, d)


def _family_size(max_size, d):
    """The largest model size: ``max_size`` (an integer >= 1), or every column where it is None."""
    try:
        k = d if max_size is None else int(max_size)
    except (TypeError, ValueError, OverflowError):  # "3", nan, inf, a list: no count of columns
        k = 0
    if k < 1 or (max_size is not None and k != max_size):
        raise ValueError(f"'max_size' must be an integer >= 1; got {max_size!r}.")
    return k


def _named_family(candidates, k, d):
    """``"all"`` subsets of at most ``k`` columns, or the ``"nested"`` prefixes."""
    if candidates == "all":
        count = sum(math.comb(d, s) for s in range(1, min(k, d) + 1))
        if count > _MAX_CANDIDATES:
            fits = max(s for s in range(1, d + 1) if sum(math.comb(d, t) for t in range(1, s + 1)) <= _MAX_CANDIDATES)
            raise ValueError(f"candidates='all' gives {count} models (> {_MAX_CANDIDATES}); lower 'max_size' "
                             f"(to at most {fits} for {d} columns).")
        return tuple(m for s in range(1, min(k, d) + 1) for m in itertools.combinations(range(d), s))
    if candidates == "nested":
        return tuple(tuple(range(s)) for s in range(1, min(k, d) + 1))
    raise ValueError(f"'candidates' must be 'all', 'nested' or a list of column-index tuples; got {candidates!r}.")


def _listed_family(candidates, d):
    """The user's list of models, each as sorted distinct column indices in ``[0, d)``, duplicates dropped."""
    try:
        family = [tuple(sorted({int(j) for j in m})) for m in candidates]
    except TypeError as exc:
        raise TypeError(f"'candidates' must be a list of iterables of column indices: {exc}") from exc
    family = tuple(dict.fromkeys(family))
    if not family:
        raise ValueError("'candidates' must hold at least one model; got an empty family.")
    for m in family:
        if any(j < 0 or j >= d for j in m):
            raise ValueError(f"candidate {m} has a column index outside [0, {d}).")
    return family


class SelectionPlanMixin:
    """The plan's methods (no data): the budget's parts and the parameters' checks."""

    def _budget_parts(self, n_candidates):
        eps = check_positive(self.epsilon, "epsilon", allow_inf=True)
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"'mechanism' must be one of {MECHANISMS}; got {self.mechanism!r}.")
        if self.release_scores and self.mechanism != "noisy-min":
            raise ValueError("'release_scores=True' needs mechanism='noisy-min'.")
        autos = self._autos()
        share = self._bounds_share() if autos else 0.0
        parts = {"bounds": eps * share} if autos else {}
        if self._radius_share():
            parts["R"] = eps * self._radius_share()
        select = self._selection_epsilon()
        parts["selection"] = select * n_candidates / 2.0 if self.release_scores else select
        for name, flag in (("R", self.R == "private" and self.R_epsilon is not None), ("sigma2", self.sigma2 == "private")):
            value = getattr(self, f"{name}_epsilon")
            if flag:
                parts[name] = check_positive(value, f"{name}_epsilon")
            elif value is not None:
                raise ValueError(f"'{name}_epsilon' is only used with {name}='private'; got {value!r}.")
        if self.refit_epsilon is not None:
            parts["refit"] = check_positive(self.refit_epsilon, "refit_epsilon")
        return parts

    def _autos(self):
        """The bounds drawn privately: "auto" ones that the public ranges do not give for free."""
        cmap = getattr(self, "_map", None)
        free = {"bounds": cmap is not None and cmap.all_ranged,
                "response_bound": cmap is not None and cmap.y_range is not None}
        return {name: stat for name, stat in (("bounds", "max-abs-entry"), ("response_bound", "abs-response"))
                if is_auto(getattr(self, name)) and not free[name]}

    def _radius_share(self):
        """``R="private"`` without ``R_epsilon``: the share of ``epsilon`` its estimate takes (``R_SHARE``)."""
        return R_SHARE if self.R == "private" and self.R_epsilon is None else 0.0

    def _selection_epsilon(self):
        """The selection's epsilon: ``epsilon`` less the private bounds' and the private radius's shares."""
        share = self._bounds_share() if self._autos() else 0.0
        return float(self.epsilon) * (1.0 - share - self._radius_share())

    def _bounds_share(self):
        """The bounds' share of ``epsilon``: ``bound_budget``'s, or, where it is the default, on a small table the
        least that runs their draws (:func:`~dpmoments.estimators._selection_share.selection_bound_share`; ``_rows``,
        the public ``n``). A share the user chose is theirs: kept as given, and refused where too small."""
        budget = as_bound_budget(self.bound_budget)
        if not is_default_share(budget):
            return budget.share
        return selection_bound_share(getattr(self, "_rows", None), float(self.epsilon), budget.share,
                                     len(self._autos()), budget.search)

    def _validate(self):
        """The parameters' declared checks (model_selection.py), then the bounds taken together."""
        check_parameters(self)
        check_one_response_bound(self.response_bound, self.response_range)


# The checks of PrivateModelSelection's parameters that are its own (declared with them in model_selection.py).
def check_phi(phi, name):
    if phi not in ("bic", "theorem"):
        if isinstance(phi, str):
            raise ValueError(f"'{name}' must be a number >= 0, 'theorem' or 'bic'; got {phi!r}.")
        check_nonnegative(phi, name)


def check_R_range(R_range, name):
    try:
        lo, hi = (float(v) for v in R_range)
    except (TypeError, ValueError):  # not a pair of numbers
        lo = hi = math.nan
    if not 0 < lo < hi:
        raise ValueError(f"'{name}' must be (low, high) with 0 < low < high; got {R_range!r}.")


def check_gap_tolerance(tolerance, name):
    if not MIN_GAP_TOLERANCE <= check_positive(tolerance, name) < 1:
        raise ValueError(f"'{name}' must be in [{MIN_GAP_TOLERANCE:g}, 1) (below, the rounding of Q_R in floating "
                         f"point is larger than the tolerance); got {tolerance}.")


def check_replace_one(neighbours, name):
    check_neighbours(neighbours, ("replace-one",), "the analysis (BIC, private R and sigma2) is for replace-one with n "
                     "public, which also covers zero-out pairs")

