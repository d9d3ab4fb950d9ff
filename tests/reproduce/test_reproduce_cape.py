"""Smoke test of the Imtiaz & Sarwate reproduction (capePCA, capeAGN) on a tiny configuration."""

import numpy as np
import pytest

from dpmoments.reproduce import cape


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setattr(cape, "D_PCA", 20)
    mp.setattr(cape, "K_PCA", 4)
    mp.setattr(cape, "N_PCA", 2_000)
    mp.setattr(cape, "_n_grid", lambda quick: [1_000, 2_000])
    mp.setattr(cape, "_eps_grid", lambda quick: [1.0, 10.0])  # eps = 1 carries the paper's value
    mp.setattr(cape, "_delta_grid", lambda quick: [1e-2])
    mp.setattr(cape, "agn_plan", lambda quick, reps=None: [(("mog", 10, 5, 20_000), [0], [1.0, 10.0], ["ours"])])
    prefix = tmp_path_factory.mktemp("cape") / "cape"
    text = cape.run(quick=True, reps=1, jobs=1, figure_prefix=str(prefix))
    mp.undo()
    return text, prefix


def test_report_structure(tiny):
    text, prefix = tiny
    for heading in ("## capePCA (synthetic)", "q_CE vs ε", "q_CE vs N", "q_CE vs δ", "## capeAGN",
                    "MOG D=10 K=5 N_s=20k", "MNIST", "joint-view ε"):
        assert heading in text
    assert "**paper**" in text and "216.4" in text  # the paper's capePCA value at eps = 1 beside ours
    for suffix in ("_pca_eps.png", "_pca_n.png", "_pca_delta.png", "_agn.png"):
        assert (prefix.parent / (prefix.name + suffix)).stat().st_size > 1000


def test_values_are_sane(tiny):
    text, _ = tiny
    rows = [line for line in text.splitlines() if line.startswith("| capeAGN | ours")]
    vals = [float(c) for c in rows[0].strip("|").split("|")[2:]]
    assert all(0 <= v < 1.5 for v in vals)
    np_row = next(line for line in text.splitlines() if line.startswith("| non-private | - |"))
    assert float(np_row.split("|")[3]) > 0


def test_q_comp():
    truth = np.eye(3)
    assert cape.q_comp(2 * np.eye(3), truth, "mog") == pytest.approx(0.0)
    assert cape.q_comp(np.eye(3)[[0, 0, 1]], truth, "stm") == pytest.approx(0.0)
