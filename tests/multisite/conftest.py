"""Shared site fixtures for the multi-site tests (small, seeded)."""

import numpy as np
import pytest

from dpmoments.multisite import Site


def make_sites(n_sites=4, n=200, d=3, *, sizes=None, seed=0, y=False, **kwargs):
    rng = np.random.default_rng(seed)
    sizes = sizes or [n] * n_sites
    out = []
    for i, m in enumerate(sizes):
        X = rng.normal(size=(m, d)) / 2
        yy = X @ np.ones(d) + 0.1 * rng.normal(size=m) if y else None
        out.append(Site(f"site-{i}", X, yy, row_norm=1.0, response_bound=2.0 if y else None, **kwargs))
    return out


@pytest.fixture
def sites():
    return make_sites()
