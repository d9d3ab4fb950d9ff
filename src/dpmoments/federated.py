r"""Federated estimators: the multi-site protocols feeding the moment estimators (layer 4).

:mod:`dpmoments.distributed` (layer 3) releases a moment from data held at several
sites; :mod:`dpmoments.estimators` (layer 3) fits from a release. Neither may import
the other, so the glue lives here:

* :func:`cape_pca` -- capePCA (Imtiaz & Sarwate, ``algorithms.md`` §2.5): one
  distributed release of the second moment, then :class:`~dpmoments.estimators.pca.PrivatePCA`.
* :func:`cape_agn` -- capeAGN (§2.6): distributed releases of the moments of a
  spherical Gaussian mixture (``"mog"``) or a single-topic model (``"stm"``), then
  :class:`~dpmoments.estimators.tensor.PrivateTensorDecomposition` (whitening from the
  distributed :math:`\hat M_2`, the power method on :math:`\hat M_3(W,W,W)`).

``protocol`` picks how the sites combine: ``"cape"`` (trusted dealer, pooled-level
noise), ``"conventional"`` (every site adds its full noise), ``"secure-aggregation"``,
``"local"`` (one site alone), ``"dpdispca"`` (PCA only) and ``"pooled"`` (the reference:
a trusted curator holding every row).

Which statistics cross the wire (and why three releases for MOG)
----------------------------------------------------------------
The protocols release only the library's three *plain* normalised statistics of a
site's clipped rows (``"second"`` :math:`\frac1{N_s}\sum xx^\top`, ``"cross"``
:math:`\frac1{N_s}\sum x y`, ``"third"`` :math:`\frac1{N_s}\sum x^{\otimes3}`): a
:class:`~dpmoments.distributed.Site` computes them itself and there is no hook for a
custom per-site statistic (by design: the sensitivity is derived from the public
row bound of *that* statistic). So:

* **MOG.** The model statistic :math:`\frac1{N_s}\sum[x^{\otimes3} - \sigma^2\mathcal T(x)]`
  is not a plain moment. It is linear in two plain ones, so the sites make **three
  releases**: the second moment (whitening), the plain third moment, and the mean
  (``"cross"`` with ``y = 1``, ``|y| <= 1``); the aggregator forms
  :math:`\hat M_3 = \hat T_3 - \sigma^2\mathcal T(\hat m)` (post-processing). Budget:
  :class:`AGNBudget` shares ``(second, third, mean)`` of ``(epsilon, delta)``, default
  ``(0.5, 0.4, 0.1)``. Sensitivities (replace-one, L2 on the noised coordinates):
  :math:`\sqrt2R^2/N_s`, :math:`2R^3/N_s`, :math:`2R/N_s`. The centralised release
  (:func:`~dpmoments.estimators.tensor_moments.release_mog_moments`) folds the mean into
  one statistic of sensitivity :math:`(2R^3 + 2\sigma^2R\sqrt{D+8})/n` and is slightly
  better; the distributed version pays a third release instead.
* **STM.** A document's statistics :math:`\mathrm{sym}(x_1\otimes x_2)` and
  :math:`\mathrm{sym}(x_1\otimes x_2\otimes x_3)` are not moments of a single row
  either. Each document becomes one row :math:`z = (x_1, x_2, x_3) \in \{0,1\}^{3D}`,
  :math:`\|z\| = \sqrt3` (public, exact). The (1,2,3) block of
  :math:`\frac1N\sum z^{\otimes3}`, symmetrised, is exactly the centralised
  :math:`\mathrm{sym}\frac1N\sum x_1\otimes x_2\otimes x_3`; :math:`\hat M_2` is the
  symmetrised mean of the (1,2), (1,3), (2,3) blocks of the second moment (all word
  pairs: a better estimate than the single pair (1,2) of the centralised release, with
  six independent noise draws per entry averaged). **Two releases**, shares
  ``(second, third)``. Price: the generic sensitivities of the embedded rows
  (:math:`\sqrt2\cdot3/N_s` and :math:`2\cdot3^{3/2}/N_s`) exceed the one-hot-specific
  :math:`\sqrt2/N` of the centralised release; after the block averaging the noise per
  entry is about 1.5x (M2) and 3x (M3) the centralised one. And the third-moment
  release is a :math:`(3D)^3` tensor per site (communication; the paper's sites send the
  projected :math:`K^3` tensor).

Projection on the whitening matrix :math:`W` happens at the aggregator here
(post-processing of the full released tensor), not at the sites as in the paper's
Algorithm 2 step 10: the released aggregate, hence the fit, has the same distribution;
only the communication differs (:math:`D^3` instead of :math:`K^3` per site).

Privacy accounting
------------------
Each release is a run of the chosen protocol at its share of the budget; its report
carries the paper's per-site claim and the honest **joint-view** guarantee against the
aggregator (:mod:`dpmoments.distributed.accounting`). :func:`cape_agn` composes the
parts' claims and, the same way, the parts' joint views: basic composition by default
(the claims then add up to exactly ``(epsilon, delta)``, the paper's view), or
``composition="zcdp"`` (rhos add, converted at the summed delta; tighter, valid). Each part's joint view is already
the worst site's, so composing the worst parts bounds every site (tight for equal
sites). Everything after the releases is post-processing.
"""

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from ._rng import describe_randomness, spawn
from ._validation import check_int, check_nonnegative, check_option, check_positive
from .distributed import (
    Site,
    run_cape,
    run_conventional,
    run_dpdispca,
    run_local,
    run_pooled,
    run_secure_aggregation,
)
from .estimators.pca import PrivatePCA
from .estimators.tensor import PrivateTensorDecomposition
from .moments.tensor_moments import TensorBudget, TensorMoments, mean_correction, word_ids
from .moments import Release, symmetrise_matrix, symmetrise_tensor
from .privacy.composition import compose

__all__ = ["PROTOCOLS", "AGNBudget", "FederatedReport", "cape_pca", "cape_agn", "mog_sites", "topic_sites",
           "compose_guarantees"]

PROTOCOLS = ("cape", "conventional", "secure-aggregation", "local", "dpdispca", "pooled")
MODELS = ("mog", "stm")


# -- budget and report ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AGNBudget:
    """Shares of ``(epsilon, delta)`` for the distributed releases of :func:`cape_agn`.

    ``mean`` is used by ``"mog"`` only (the first moment for the mean correction);
    ``"stm"`` needs no mean and a non-zero ``mean`` share is left unspent. Shares sum
    to at most 1.
    """

    second: float = 0.5
    third: float = 0.4
    mean: float = 0.1

    def __post_init__(self):
        for name in ("second", "third"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"'{name}' must be a share in (0, 1]; got {v!r}.")
        if isinstance(self.mean, bool) or not isinstance(self.mean, (int, float)) or not 0 <= self.mean < 1:
            raise ValueError(f"'mean' must be a share in [0, 1); got {self.mean!r}.")
        if self.second + self.third + self.mean > 1 + 1e-12:
            raise ValueError(f"shares must sum to <= 1; got {self.second} + {self.third} + {self.mean}.")


@dataclass(frozen=True, eq=False)
class FederatedReport:
    """What a federated fit claims and what holds, over all its releases.

    Attributes
    ----------
    protocol, model : str
    claimed : guarantee
        The paper's per-site claim, composed over the releases (basic composition).
    joint_view : guarantee
        The honest guarantee against the aggregator (the composed joint views).
    parts : dict of str -> ProtocolReport
        One report per release (``"second"``, ``"third"``, ``"mean"``).
    budget : AGNBudget
    notes : tuple of str
    """

    protocol: str
    model: str
    claimed: object
    joint_view: object
    parts: dict
    budget: AGNBudget
    notes: tuple = field(default_factory=tuple)

    def to_dict(self):
        return {"protocol": self.protocol, "model": self.model, "claimed": self.claimed.to_dict(),
                "joint_view": self.joint_view.to_dict(), "budget": dataclasses.asdict(self.budget),
                "parts": {k: {"claimed": r.claimed.to_dict(), "joint_view": r.joint_view.to_dict(),
                              "aggregate_std": r.aggregate_std} for k, r in self.parts.items()},
                "notes": list(self.notes)}


def compose_guarantees(guarantees, composition="basic"):
    """Compose the guarantees of sequential releases (see :func:`dpmoments.privacy.composition.compose`)."""
    return compose(guarantees, composition=composition)


# -- running one protocol ---------------------------------------------------------------------------------------
def _run(protocol, sites, *, epsilon, delta, statistic, neighbours, calibration, colluders, local_site, rank, rng):
    if delta is None and math.isinf(float(epsilon)):
        delta = 0.5  # noise off: delta is not used, but the protocols validate it
    common = dict(epsilon=epsilon, delta=delta, neighbours=neighbours, calibration=calibration, rng=rng)
    if protocol == "cape":
        return run_cape(sites, statistic=statistic, colluders=colluders, **common)
    if protocol == "conventional":
        return run_conventional(sites, statistic=statistic, colluders=colluders, **common)
    if protocol == "secure-aggregation":
        return run_secure_aggregation(sites, statistic=statistic, colluders=colluders, **common)
    if protocol == "local":
        return run_local(sites[local_site], statistic=statistic, **common)
    if protocol == "pooled":
        return run_pooled(sites, statistic=statistic, **common)
    if statistic != "second":
        raise ValueError("protocol='dpdispca' releases a low-rank second moment only (capePCA's baseline).")
    return run_dpdispca(sites, rank=rank, **common)


def _check_sites(sites):
    if isinstance(sites, Site):
        sites = [sites]
    sites = list(sites)
    if not sites or not all(isinstance(s, Site) for s in sites):
        raise TypeError(f"'sites' must be a non-empty sequence of Site objects; got {sites!r}.")
    return sites


def cape_pca(sites, *, n_components, epsilon, delta, protocol="cape", neighbours="replace-one",
             calibration="analytic", colluders=0, rank=None, local_site=0, eigensolver="auto", rng=None):
    """Distributed private PCA (capePCA and its baselines, ``algorithms.md`` §2.5).

    Parameters
    ----------
    sites : sequence of Site
        Each with its rows and the shared public ``row_norm`` (and ``center``).
    n_components : int
        ``K``.
    epsilon, delta : float
        Each site's budget (the paper's per-site claim).
    protocol : {"cape", "conventional", "secure-aggregation", "local", "dpdispca", "pooled"}
    neighbours : {"replace-one", "add-remove"}
        ``"add-remove"`` with ``calibration="classic"`` is the paper's noise (sensitivity
        :math:`R^2/N_s`, classic Gaussian formula).
    calibration : {"analytic", "classic", "zcdp"}
    colluders : int
        Sites assumed to collude with the aggregator (joint-view accounting).
    rank : int, optional
        DPdisPCA's factor rank (default ``2 K``, as the paper).
    local_site : int
        Which site ``"local"`` uses (default the first).
    eigensolver : str
    rng : None, int or Generator

    Returns
    -------
    (PrivatePCA, ProtocolReport)
        The fitted estimator (``components_`` the top-K eigenvectors of the released
        aggregate) and the protocol's report (``claimed`` and ``joint_view``).

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from dpmoments.distributed import Site
    >>> rng = np.random.default_rng(0)
    >>> sites = [Site(f"s{i}", rng.normal(size=(2000, 4)) * [3, 1, 1, 1] / 8, row_norm=1.0) for i in range(4)]
    >>> pca, report = cape_pca(sites, n_components=1, epsilon=1.0, delta=1e-5, rng=0)
    >>> bool(abs(pca.components_[0, 0]) > 0.99), report.joint_view.epsilon > report.claimed.epsilon
    (True, True)
    """
    protocol = check_option(protocol, "protocol", PROTOCOLS)
    sites = _check_sites(sites)
    K = check_int(n_components, "n_components", minimum=1)
    rank = 2 * K if rank is None else check_int(rank, "rank", minimum=1)
    rank = min(rank, sites[0].n_features)
    local_site = check_int(local_site, "local_site", minimum=0)
    if local_site >= len(sites):
        raise ValueError(f"'local_site' must be in [0, {len(sites) - 1}]; got {local_site}.")
    release, report = _run(protocol, sites, epsilon=epsilon, delta=delta, statistic="second",
                           neighbours=neighbours, calibration=calibration, colluders=colluders,
                           local_site=local_site, rank=rank, rng=rng)
    pca = PrivatePCA(n_components=K, epsilon=epsilon, delta=delta, row_norm=sites[0].row_norm,
                     neighbours=neighbours, calibration=calibration, eigensolver=eigensolver)
    return pca.fit_release(release), report


# -- capeAGN ----------------------------------------------------------------------------------------------------
def mog_sites(sites_data, *, row_norm, names=None):
    """One :class:`Site` per array of rows, with ``y = 1`` (the mean rides along as the cross moment)."""
    names = names or [f"site{i}" for i in range(len(sites_data))]
    return [Site(name, X, np.ones(np.shape(X)[0]), row_norm=row_norm, response_bound=1.0)
            for name, X in zip(names, sites_data)]


def topic_sites(sites_data, *, vocabulary_size=None, names=None):
    """One :class:`Site` per set of documents; each document is the row ``(x1, x2, x3)`` in ``{0,1}^{3D}``.

    Returns ``(sites, D)``. Rows have norm exactly ``sqrt(3)`` (the public bound).
    """
    names = names or [f"site{i}" for i in range(len(sites_data))]
    out, D = [], None
    for name, docs in zip(names, sites_data):
        ids, d = word_ids(docs, vocabulary_size)
        if D is not None and d != D:
            raise ValueError(f"all sites must share the vocabulary size; got {D} and {d}.")
        D = d
        n = ids.shape[0]
        # three non-zeros per row: sparse, so the site's (3D)^3 third moment costs O(n), not O(n D^3)
        Z = sparse.csr_array((np.ones(3 * n), (ids + np.arange(3) * D).ravel(), np.arange(0, 3 * n + 1, 3)),
                             shape=(n, 3 * D))
        out.append(Site(name, Z, row_norm=math.sqrt(3.0)))
    return out, D


def _stm_blocks(second, third, D):
    """The model statistics from the embedded moments (post-processing)."""
    b = [slice(j * D, (j + 1) * D) for j in range(3)]
    M2 = symmetrise_matrix((second[b[0], b[1]] + second[b[0], b[2]] + second[b[1], b[2]]) / 3.0)
    M3 = symmetrise_tensor(third[b[0], b[1], b[2]])
    return M2, M3


def _derived(release, statistic_name, value, n_features, guarantee, steps):
    """A Release holding a statistic computed from one or more distributed releases."""
    exact = release.mechanism == "none"
    return Release(n=release.n, n_features=n_features, row_norm=release.row_norm, mechanism=release.mechanism,
                   noise_scale=release.noise_scale, neighbours=release.neighbours, guarantee=guarantee,
                   randomness=release.randomness, calibration=release.calibration,
                   sensitivity=None if exact else release.sensitivity,
                   sensitivity_norm=None if exact else release.sensitivity_norm,
                   postprocessing=release.postprocessing + tuple(steps), **{statistic_name: value})


def cape_agn(sites_data, *, n_components, model, epsilon, delta, sigma2=None, row_norm=None,
             vocabulary_size=None, budget=None, protocol="cape", neighbours="replace-one", calibration="analytic",
             colluders=0, local_site=0, composition="basic", eigenvalue_floor=1e-6, n_restarts=10, n_iter=30,
             rng=None, names=None):
    r"""Distributed private orthogonal tensor decomposition (capeAGN and baselines, ``algorithms.md`` §2.6).

    Parameters
    ----------
    sites_data : sequence of arrays, or of Site
        ``"mog"``: one ``(n_s, D)`` array of rows per site; ``"stm"``: one ``(n_s, 3)``
        integer array of word ids (or one-hot ``(n_s, 3, D)``) per site. Or the sites
        already built by :func:`mog_sites` / :func:`topic_sites` (a site caches its
        exact statistics, so repeated runs on the same sites skip the data pass).
    n_components : int
        ``K``.
    model : {"mog", "stm"}
    epsilon, delta : float
        The total per-site budget, split by ``budget``.
    sigma2 : float
        ``"mog"``: the mixture's public noise variance (never estimated from the data).
    row_norm : float
        ``"mog"``: the public row bound R (rows are clipped to it).
    vocabulary_size : int
        ``"stm"`` with integer word ids.
    budget : AGNBudget, optional
        Default ``AGNBudget(0.5, 0.4, 0.1)`` for MOG, ``AGNBudget(0.5, 0.5, 0)`` for STM.
    protocol : {"cape", "conventional", "secure-aggregation", "local", "pooled"}
    neighbours, calibration, colluders, local_site
        As in :func:`cape_pca`.
    composition : {"basic", "zcdp"}
        How the releases' guarantees compose in the report (both the claim and the
        joint view, so that they compare): ``"basic"`` (the paper's: shares add up to
        ``(epsilon, delta)``) or ``"zcdp"`` (tighter, see :func:`compose_guarantees`).
    eigenvalue_floor, n_restarts, n_iter
        Of :class:`~dpmoments.estimators.tensor.PrivateTensorDecomposition`.
    rng : None, int or Generator
        Split into one stream per release and one for the power method.
    names : list of str, optional
        Site names.

    Returns
    -------
    (PrivateTensorDecomposition, FederatedReport)

    Examples
    --------
    >>> import warnings; warnings.simplefilter("ignore")
    >>> from dpmoments.datasets.mixtures import make_mog
    >>> m = make_mog(4000, 5, 2, sigma2=0.01, rng=0)
    >>> est, rep = cape_agn(np.array_split(m.X, 4), n_components=2, model="mog", epsilon=float("inf"),
    ...                     delta=None, sigma2=0.01, row_norm=2.0, rng=0)
    >>> est.components_.shape, rep.joint_view.is_private
    ((2, 5), False)
    """
    model = check_option(model, "model", MODELS)
    protocol = check_option(protocol, "protocol", PROTOCOLS)
    if protocol == "dpdispca":
        raise ValueError("protocol='dpdispca' is a PCA baseline; capeAGN needs additive releases.")
    K = check_int(n_components, "n_components", minimum=1)
    if budget is None:
        budget = AGNBudget() if model == "mog" else AGNBudget(0.5, 0.5, 0.0)
    if not isinstance(budget, AGNBudget):
        raise TypeError(f"'budget' must be an AGNBudget or None; got {type(budget).__name__}.")
    sites_data = list(sites_data)
    if not sites_data:
        raise ValueError("'sites_data' must hold at least one site's data.")
    local_site = check_int(local_site, "local_site", minimum=0)
    if local_site >= len(sites_data):
        raise ValueError(f"'local_site' must be in [0, {len(sites_data) - 1}]; got {local_site}.")
    prebuilt = all(isinstance(s, Site) for s in sites_data)
    if model == "mog":
        if sigma2 is None:
            raise ValueError("model='mog' needs the public noise variance 'sigma2'; got None.")
        sigma2 = check_nonnegative(sigma2, "sigma2")
        if prebuilt:
            sites = sites_data
            R = sites[0].row_norm
            if row_norm is not None and check_positive(row_norm, "row_norm") != R:
                raise ValueError(f"'row_norm'={row_norm} disagrees with the sites' row_norm={R}.")
        else:
            R = check_positive(row_norm, "row_norm")
            sites = mog_sites(sites_data, row_norm=R, names=names)
        D = sites[0].n_features
        parts = [("second", "second", budget.second), ("third", "third", budget.third),
                 ("mean", "cross", budget.mean)]
    else:
        if prebuilt:
            sites = sites_data
            if sites[0].n_features % 3 or sites[0].row_norm != math.sqrt(3.0):
                raise ValueError("model='stm' with Site objects needs sites built by topic_sites().")
            D = sites[0].n_features // 3
        else:
            sites, D = topic_sites(sites_data, vocabulary_size=vocabulary_size, names=names)
        R = math.sqrt(3.0)
        parts = [("second", "second", budget.second), ("third", "third", budget.third)]
    if K > D:
        raise ValueError(f"'n_components' must be an integer in [1, n_features={D}]; got {K}.")
    infinite = math.isinf(float(epsilon))
    streams = spawn(rng, len(parts) + 1)
    releases, reports = {}, {}
    for (name, statistic, share), gen in zip(parts, streams):
        if share == 0:
            raise ValueError(f"model={model!r} needs a positive '{name}' share in the budget.")
        eps = epsilon if infinite else share * epsilon
        dl = delta if infinite or delta is None else share * delta
        releases[name], reports[name] = _run(protocol, sites, epsilon=eps, delta=dl, statistic=statistic,
                                             neighbours=neighbours, calibration=calibration, colluders=colluders,
                                             local_site=local_site, rank=None, rng=gen)
    claimed = compose_guarantees([r.claimed for r in reports.values()], composition)
    joint = compose_guarantees([r.joint_view for r in reports.values()], composition)
    tag = f"federated-capeagn(model={model}, protocol={protocol})"
    if model == "mog":
        third_value = releases["third"].third_moment - sigma2 * mean_correction(releases["mean"].cross_moment)
        g3 = compose_guarantees([releases["third"].guarantee, releases["mean"].guarantee], composition)
        r2 = _derived(releases["second"], "second_moment", releases["second"].second_moment, D,
                      releases["second"].guarantee, (tag,))
        r3 = _derived(releases["third"], "third_moment", symmetrise_tensor(third_value), D, g3,
                      (tag, "third - sigma2 * T(mean) (mean: separate release)"))
        notes = ("MOG: three releases (second, plain third, mean); M3 = third - sigma2 T(mean) at the aggregator.",)
    else:
        M2, M3 = _stm_blocks(releases["second"].second_moment, releases["third"].third_moment, D)
        r2 = _derived(releases["second"], "second_moment", M2, D, releases["second"].guarantee,
                      (tag, "stm: sym mean of blocks (1,2), (1,3), (2,3) of the (x1, x2, x3) embedding"))
        r3 = _derived(releases["third"], "third_moment", M3, D, releases["third"].guarantee,
                      (tag, "stm: sym block (1,2,3) of the (x1, x2, x3) embedding"))
        notes = ("STM: documents embedded as rows (x1, x2, x3) in {0,1}^{3D}, ||z|| = sqrt(3); two releases.",)
    tb = TensorBudget(second=budget.second, third=min(1.0 - budget.second, budget.third + budget.mean)) \
        if model == "mog" else TensorBudget(second=budget.second, third=budget.third)
    moments = TensorMoments(model, r2, r3, joint, sigma2 if model == "mog" else None, tb)
    est = PrivateTensorDecomposition(n_components=K, model=model, epsilon=epsilon, delta=delta, row_norm=R,
                                     sigma2=sigma2 if model == "mog" else None,
                                     vocabulary_size=D if model == "stm" else None, budget=tb,
                                     neighbours=neighbours, calibration=calibration,
                                     eigenvalue_floor=eigenvalue_floor, n_restarts=n_restarts, n_iter=n_iter,
                                     rng=streams[-1])
    est.fit_release(moments)
    report = FederatedReport(protocol, model, claimed, joint, reports, budget,
                             notes + (f"randomness: {describe_randomness(rng)}",))
    return est, report
