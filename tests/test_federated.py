"""The layer-4 glue: distributed releases -> PrivatePCA / PrivateTensorDecomposition."""

import math
import warnings

import numpy as np
import pytest

from dpmoments.datasets.mixtures import make_mog, make_single_topic
from dpmoments.distributed import Site
from dpmoments.estimators.pca import PrivatePCA
from dpmoments.moments.tensor_moments import release_mog_moments, release_topic_moments
from dpmoments.exceptions import NotPrivateWarning
from dpmoments.federated import AGNBudget, FederatedReport, cape_agn, cape_pca, compose_guarantees
from dpmoments.privacy import ApproxDP, Uncertified

INF = math.inf


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def _pca_sites(S=5, n=400, d=8, seed=0):
    rng = np.random.default_rng(seed)
    scale = np.linspace(3.0, 0.5, d) / 6
    Xs = [rng.normal(size=(n + 37 * i, d)) * scale for i in range(S)]  # unequal sizes
    return Xs, [Site(f"s{i}", X, row_norm=1.5) for i, X in enumerate(Xs)]


@pytest.mark.parametrize("protocol", ["cape", "conventional", "secure-aggregation", "dpdispca"])
def test_pca_noise_off_equals_pooled(protocol):
    Xs, sites = _pca_sites()
    pooled, _ = cape_pca(sites, n_components=3, epsilon=INF, delta=1e-5, protocol="pooled")
    pca, report = cape_pca(sites, n_components=3, epsilon=INF, delta=1e-5, protocol=protocol,
                           rank=8 if protocol == "dpdispca" else None)
    np.testing.assert_allclose(pca.components_, pooled.components_, atol=1e-10)
    central = PrivatePCA(n_components=3, epsilon=INF, row_norm=1.5).fit(np.vstack(Xs))
    np.testing.assert_allclose(pooled.components_, central.components_, atol=1e-10)
    np.testing.assert_allclose(pooled.explained_variance_, central.explained_variance_, atol=1e-12)
    assert not report.joint_view.is_private


def _energy(components, A):
    V = components.T
    return float(np.trace(V.T @ A @ V))


def test_pca_cape_beats_conventional():
    """S = 10 equal sites: CAPE's aggregate noise is 1/sqrt(S) of conv's -> more captured energy."""
    rng = np.random.default_rng(1)
    d, K, S, n = 30, 5, 10, 300
    lam = np.r_[np.linspace(4, 2, K), 0.3 * np.ones(d - K)]
    A = np.diag(lam)
    R = 1.5 * math.sqrt(lam.sum())
    sites = [Site(f"s{i}", rng.normal(size=(n, d)) * np.sqrt(lam), row_norm=R) for i in range(S)]
    cape, conv = [], []
    for rep in range(6):
        cape.append(_energy(cape_pca(sites, n_components=K, epsilon=0.5, delta=1e-3, protocol="cape",
                                     rng=rep)[0].components_, A))
        conv.append(_energy(cape_pca(sites, n_components=K, epsilon=0.5, delta=1e-3, protocol="conventional",
                                     rng=100 + rep)[0].components_, A))
    assert np.mean(cape) > np.mean(conv) + 1.0, (np.mean(cape), np.mean(conv))


def test_pca_report_carries_both_guarantees():
    _, sites = _pca_sites()
    _, report = cape_pca(sites, n_components=2, epsilon=1.0, delta=1e-5, rng=0)
    assert isinstance(report.claimed, ApproxDP) and report.claimed.epsilon == pytest.approx(1.0)
    assert report.joint_view.epsilon > report.claimed.epsilon  # the aggregator sees more (§2.8 flag 1)
    _, paper = cape_pca(sites, n_components=2, epsilon=2.0, delta=1e-5, neighbours="add-remove",
                        calibration="classic", rng=0)
    assert isinstance(paper.claimed, Uncertified)  # classic formula at epsilon >= 1


# -- capeAGN ------------------------------------------------------------------------------------------------------
def _mog(n=6000, d=6, K=3, S=4, seed=0):
    m = make_mog(n, d, K, sigma2=0.02, rng=seed)
    return m, np.array_split(m.X, S)


@pytest.mark.parametrize("protocol", ["cape", "conventional", "secure-aggregation"])
def test_mog_noise_off_equals_pooled(protocol):
    m, parts = _mog()
    kw = dict(n_components=3, model="mog", epsilon=INF, delta=None, sigma2=0.02, row_norm=2.0, rng=3)
    ref, _ = cape_agn(parts, protocol="pooled", **kw)
    est, rep = cape_agn(parts, protocol=protocol, **kw)
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(est.weights_, ref.weights_, atol=1e-10)
    # the combined moments are the centralised release's (third - sigma2 T(mean) == the folded statistic)
    central = release_mog_moments(m.X, sigma2=0.02, epsilon=INF, row_norm=2.0)
    np.testing.assert_allclose(est.moments_.m2, central.m2, atol=1e-12)
    np.testing.assert_allclose(est.moments_.m3, central.m3, atol=1e-12)
    assert isinstance(rep, FederatedReport) and set(rep.parts) == {"second", "third", "mean"}
    # and the fit recovers the means
    err = np.abs(np.abs(est.components_ @ m.components.T).max(axis=1) - 1)
    assert err.max() < 0.05


def test_stm_noise_off_equals_pooled_and_centralised_third():
    m = make_single_topic(8000, 8, 3, rng=2)
    parts = np.array_split(m.X, 4)
    kw = dict(n_components=3, model="stm", epsilon=INF, delta=None, vocabulary_size=8, rng=5)
    ref, _ = cape_agn(parts, protocol="pooled", **kw)
    est, rep = cape_agn(parts, protocol="cape", **kw)
    np.testing.assert_allclose(est.components_, ref.components_, atol=1e-10)
    central = release_topic_moments(m.X, vocabulary_size=8, epsilon=INF)
    np.testing.assert_allclose(est.moments_.m3, central.m3, atol=1e-12)
    # M2 averages all three word pairs: the same expectation, close to the pair-(1,2) statistic
    assert np.abs(est.moments_.m2 - central.m2).max() < 0.01
    assert set(rep.parts) == {"second", "third"}


def _qcomp(est, truth):
    v = est.components_ / np.linalg.norm(est.components_, axis=1, keepdims=True)
    return float(np.mean([np.min(np.linalg.norm(truth - vk, axis=1)) for vk in v]))


def test_agn_cape_beats_conventional_mog():
    m, parts = _mog(n=40000, d=6, K=3, S=5, seed=4)
    kw = dict(n_components=3, model="mog", epsilon=1.0, delta=1e-2, sigma2=0.02, row_norm=1.8)
    cape = [_qcomp(cape_agn(parts, protocol="cape", rng=r, **kw)[0], m.components) for r in range(8)]
    conv = [_qcomp(cape_agn(parts, protocol="conventional", rng=50 + r, **kw)[0], m.components) for r in range(8)]
    assert np.mean(cape) < np.mean(conv), (np.mean(cape), np.mean(conv))


def test_agn_report_composes_both_guarantees():
    _, parts = _mog()
    est, rep = cape_agn(parts, n_components=3, model="mog", epsilon=1.0, delta=1e-5, sigma2=0.02, row_norm=2.0,
                        budget=AGNBudget(0.5, 0.3, 0.2), rng=0)
    # the paper's view: the three per-site claims add up to the budget
    assert rep.claimed.epsilon == pytest.approx(1.0) and rep.claimed.delta == pytest.approx(1e-5)
    # the honest view against the aggregator is weaker
    assert rep.joint_view.epsilon > rep.claimed.epsilon
    assert est.privacy_ is rep.joint_view
    assert rep.to_dict()["parts"]["mean"]["claimed"]["epsilon"] == pytest.approx(0.2)


def test_compose_guarantees():
    g = compose_guarantees([ApproxDP(0.5, 1e-6, rho=0.01), ApproxDP(0.5, 1e-6, rho=0.01)])
    assert g.delta == pytest.approx(2e-6) and g.epsilon <= 1.0 and g.rho == pytest.approx(0.02)


def test_agn_rejects_bad_input():
    _, parts = _mog()
    with pytest.raises(ValueError):
        cape_agn(parts, n_components=3, model="mog", epsilon=1.0, delta=1e-5, row_norm=2.0)  # no sigma2
    with pytest.raises(ValueError):
        cape_agn(parts, n_components=3, model="mog", epsilon=1.0, delta=1e-5, sigma2=0.02, row_norm=2.0,
                 protocol="dpdispca")
    with pytest.raises(ValueError):
        AGNBudget(0.6, 0.5, 0.1)
