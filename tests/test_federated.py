"""The deprecated paths keep working for one release: dpmoments.distributed, dpmoments.federated, dpmoments.flower."""

import importlib
import math
import sys
import warnings

import numpy as np
import pytest

from dpmoments.datasets.mixtures import make_mog


def _fresh(name):
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]
    with pytest.warns(DeprecationWarning, match="deprecated"):
        return importlib.import_module(name)


def test_distributed_alias_warns_and_runs():
    dist = _fresh("dpmoments.distributed")
    rng = np.random.default_rng(0)
    sites = [dist.Site(f"s{i}", rng.normal(size=(300, 3)) / 3, row_norm=1.0) for i in range(3)]
    release, report = dist.run_cape(sites, epsilon=1.0, delta=1e-5, rng=0)
    assert release.second_moment.shape == (3, 3) and report.guarantee.epsilon == pytest.approx(1.0, rel=1e-6)
    with pytest.raises(AttributeError, match="InProcessTransport"):
        dist.InProcessEngine  # noqa: B018


def test_federated_alias_fits_pca_and_tensor():
    fed = _fresh("dpmoments.federated")
    rng = np.random.default_rng(0)
    sites = [fed.Site(f"s{i}", rng.normal(size=(2000, 4)) * [3, 1, 1, 1] / 8, row_norm=1.0) for i in range(4)]
    pca, report = fed.cape_pca(sites, n_components=1, epsilon=1.0, delta=1e-5, rng=0)
    assert abs(pca.components_[0, 0]) > 0.99 and report.guarantee.epsilon == pytest.approx(1.0, rel=1e-6)
    _, paper = fed.cape_pca(sites, n_components=1, epsilon=1.0, delta=1e-5, rng=0, target="per-site")
    assert paper.claimed.epsilon == pytest.approx(1.0) and paper.guarantee.epsilon > 1.0
    m = make_mog(4000, 5, 2, sigma2=0.01, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, rep = fed.cape_agn(np.array_split(m.X, 4), n_components=2, model="mog", epsilon=math.inf, delta=None,
                                sigma2=0.01, row_norm=2.0, rng=0)
    assert est.components_.shape == (2, 5) and not rep.joint_view.is_private
    assert isinstance(rep, fed.FederatedReport)


def test_flower_alias_builds_and_deals_a_plan(tmp_path):
    fl = _fresh("dpmoments.flower")
    plan = fl.FlowerPlan(("a", "b"), (10, 20), 3, 1.0, 1e-5, 1.0)
    paths = fl.deal_shares(plan, tmp_path, rng=0)
    assert fl.load_plan(paths["plan"]).digest == plan.digest
    bundle, again = fl.load_share(paths["a"], "a")
    assert again.digest == plan.digest and bundle.shares[0].shape == (3, 3)
    assert callable(fl.deploy.make_ca) and fl.FLWR_SPEC
