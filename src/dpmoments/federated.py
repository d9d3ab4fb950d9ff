"""Deprecated: multi-site fits are a :mod:`dpmoments.multisite` release plus ``fit_release`` (kept for one release).

``cape_pca(sites, ...)`` is ``PrivatePCA(...).fit_release(multisite.run(sites, ...)[0])`` and
``cape_agn(...)`` is ``PrivateTensorDecomposition(...).fit_release(multisite.release_tensor_moments(...)[0])``;
both return the fitted estimator and the run's report, as before. The default calibration is
now the guarantee against the aggregator (``target="aggregator"``).
"""

import math
import warnings

import numpy as np

from .estimators.pca import PrivatePCA
from .estimators.tensor import PrivateTensorDecomposition
from .moments.tensor_moments import word_ids
from .multisite import AnalysisReport, Site, release_tensor_moments, run
from .privacy.composition import compose

warnings.warn("dpmoments.federated is deprecated: release across sites with dpmoments.multisite and fit with "
              "fit_release; this alias is removed in the next release.", DeprecationWarning, stacklevel=2)

__all__ = ["PROTOCOLS", "AGNBudget", "cape_pca", "cape_agn", "mog_sites", "topic_sites", "compose_guarantees"]

PROTOCOLS = ("cape", "conventional", "secure-aggregation", "local", "dpdispca", "pooled")
FederatedReport = AnalysisReport  # the old name, kept importable (documented once, as multisite.AnalysisReport)


class AGNBudget(tuple):
    """Shares ``(second, third, mean)`` of each site's budget for the capeAGN releases."""

    def __new__(cls, second=0.5, third=0.4, mean=0.1):
        return super().__new__(cls, (second, third, mean))


def compose_guarantees(guarantees, composition="basic"):
    """See :func:`dpmoments.privacy.composition.compose`."""
    return compose(guarantees, composition=composition)


def _local(sites, protocol, local_site):
    return ([sites[local_site]], "local") if protocol == "local" else (sites, protocol)


def cape_pca(sites, *, n_components, epsilon, delta, protocol="cape", rank=None, local_site=0, eigensolver="auto",
             **kwargs):
    """Distributed private PCA: ``(PrivatePCA, report)`` (``rank``: DPdisPCA's, default ``2 K``)."""
    sites, protocol = _local(list(sites), protocol, local_site)
    if protocol == "dpdispca":
        kwargs["rank"] = min(rank or 2 * n_components, sites[0].n_features)
    release, report = run(sites, protocol=protocol, epsilon=epsilon, delta=delta, **kwargs)
    pca = PrivatePCA(n_components=n_components, epsilon=epsilon, delta=delta, row_norm=sites[0].row_norm,
                     eigensolver=eigensolver)
    return pca.fit_release(release), report


def mog_sites(sites_data, *, row_norm, names=None):
    """One :class:`~dpmoments.multisite.Site` per array of rows."""
    names = names or [f"site{i}" for i in range(len(sites_data))]
    return [Site(name, X, row_norm=row_norm) for name, X in zip(names, sites_data)]


def topic_sites(sites_data, *, vocabulary_size=None, names=None):
    """One :class:`~dpmoments.multisite.Site` per set of three-word documents; ``(sites, D)``."""
    names = names or [f"site{i}" for i in range(len(sites_data))]
    docs = [word_ids(d, vocabulary_size) for d in sites_data]
    return [Site(name, ids) for name, (ids, _) in zip(names, docs)], docs[0][1]


def cape_agn(sites_data, *, n_components, model, epsilon, delta, sigma2=None, row_norm=None, vocabulary_size=None,
             budget=None, protocol="cape", local_site=0, composition="basic", eigenvalue_floor=1e-6, n_restarts=10,
             n_iter=30, rng=None, names=None, **kwargs):
    """Distributed private tensor decomposition (capeAGN): ``(PrivateTensorDecomposition, report)``."""
    sites = list(sites_data)
    if not all(isinstance(s, Site) for s in sites):
        sites = mog_sites(sites, row_norm=row_norm, names=names) if model == "mog" else \
            topic_sites(sites, vocabulary_size=vocabulary_size, names=names)[0]
    sites, protocol = _local(sites, protocol, local_site)
    shares = None if budget is None else (tuple(budget) if model == "mog" else tuple(budget)[:2])
    if delta is None and math.isinf(float(epsilon)):
        delta = 0.5  # noise off: delta is not used
    streams = np.random.default_rng(rng).spawn(2) if rng is not None else (None, None)
    moments, report = release_tensor_moments(
        sites, model=model, epsilon=epsilon, delta=delta, sigma2=sigma2, vocabulary_size=vocabulary_size,
        shares=shares, protocol=protocol, composition=composition, rng=streams[0], **kwargs)
    D = moments.second.n_features
    est = PrivateTensorDecomposition(n_components=n_components, model=model, epsilon=epsilon, delta=delta,
                                     row_norm=sites[0].row_norm or math.sqrt(3.0), sigma2=sigma2,
                                     vocabulary_size=D if model == "stm" else None, budget=moments.budget,
                                     eigenvalue_floor=eigenvalue_floor, n_restarts=n_restarts, n_iter=n_iter,
                                     rng=streams[1])
    return est.fit_release(moments), report
