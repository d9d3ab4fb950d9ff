"""Private choices read the data once per choice: each bound's pass also sums what the next release needs.

The fused route (moments/binned_sums.py) must release what the two-pass route
releases (to rounding), with the same parts, guarantee and report.
"""

import warnings

import numpy as np
import pytest

from dpmoments.estimators import CenterBudget
from dpmoments.moments.private_release import private_second_moment
from dpmoments.moments import binned_sums

RNG = np.random.default_rng(5)
X = 40.0 + RNG.standard_normal((40_000, 5)) @ np.diag([1.0, 2.0, 0.5, 3.0, 1.0])


class CountedChunks:
    """Chunks read afresh at every iteration (as the command line reads a file), counting the full reads."""

    passes = 0

    def __init__(self, chunks):
        self.chunks = chunks

    def __iter__(self):
        yield from self.chunks
        type(self).passes += 1


def _release(source, **kwargs):
    args = dict(epsilon=1.0, delta=1e-6, row_norm="auto", center="private", center_budget=CenterBudget(),
                scale=None, bound_budget=0.1, mechanism="gaussian", neighbours="replace-one", calibration="analytic",
                rng=11)
    args.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return private_second_moment(source, **args)


def _chunks():
    CountedChunks.passes = 0
    return CountedChunks(np.array_split(X, 7))


CASES = [dict(), dict(scale="private"), dict(center=None), dict(center=X.mean(0).round()),
         dict(center_budget=CenterBudget(prior=np.full(5, 39.0))), dict(neighbours="add-remove")]


@pytest.mark.parametrize("kwargs", CASES)
def test_the_fused_passes_release_what_two_passes_release(kwargs, monkeypatch):
    fused = _release(_chunks(), **kwargs)
    fused_passes = CountedChunks.passes
    monkeypatch.setattr(binned_sums, "FUSE_BYTES", 0)  # every fused pass drops its sums: the old route
    two = _release(_chunks(), **kwargs)
    assert fused_passes <= CountedChunks.passes
    scale = np.abs(two.second_moment).max()
    np.testing.assert_allclose(fused.second_moment, two.second_moment, rtol=1e-9, atol=1e-9 * scale)
    if two.center is not None:
        np.testing.assert_allclose(fused.center, two.center, rtol=1e-9, atol=1e-9)
    else:
        assert fused.center is None
    assert fused.guarantee == two.guarantee and fused.noise_scale == pytest.approx(two.noise_scale, rel=1e-12)
    assert [(p.label, p.share, p.guarantee) for p in fused.parts] == [(p.label, p.share, p.guarantee)
                                                                       for p in two.parts]
    for a, b in zip(fused.parts, two.parts):
        assert a.released.keys() == b.released.keys()


def test_data_about_the_origin_take_one_pass_for_the_choices_and_one_for_the_release():
    CountedChunks.passes = 0
    rel = _release(CountedChunks(np.array_split(X - X.mean(0), 7)))
    assert CountedChunks.passes == 2 and [p.label for p in rel.parts][:2] == ["location", "location mean"]


def test_the_steps_not_taken_go_to_the_second_moment_and_the_final_mean():
    rel = _release(_chunks())
    shares = {p.label: p.share for p in rel.parts}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["mean"] == pytest.approx(0.2 - 0.01 - 0.01)  # CenterBudget().mean less the two steps' means
    public = _release(_chunks(), center_budget=CenterBudget(prior=np.full(5, 40.0))).guarantee  # no steps at all
    assert (rel.guarantee.epsilon, rel.guarantee.delta) == (pytest.approx(public.epsilon, rel=1e-9), public.delta)


@pytest.mark.parametrize("moment", ["mean", "second", "counts"])
def test_a_dask_collection_bins_and_sums_in_its_blocks_what_memory_does(moment):
    da = pytest.importorskip("dask.array")
    from dpmoments.moments import SearchRange

    centre = X.mean(0).round()
    mem = binned_sums.binned_pass(X, moment=moment, search=SearchRange(), center=centre)
    blocks = binned_sums.binned_pass(da.from_array(X, chunks=(6000, 5)), moment=moment, search=SearchRange(),
                                     center=centre)
    assert np.array_equal(mem.counts, blocks.counts) and (mem.n, mem.d, mem.fused) == (blocks.n, blocks.d, blocks.fused)
    if moment != "counts":
        R = SearchRange().edges()[np.searchsorted(SearchRange().edges(), 5.0)]
        a, b = mem.clipped(R, centre), blocks.clipped(R, centre)
        np.testing.assert_allclose(a.xtx, b.xtx, rtol=1e-10, atol=1e-8)
        np.testing.assert_allclose(np.asarray(a.xty if moment == "mean" else 0.0),
                                   np.asarray(b.xty if moment == "mean" else 0.0), rtol=1e-10)


def _counted_dask(rows):
    """``X`` as a dask array whose blocks count the rows each read hands over (threads: one process)."""
    da = pytest.importorskip("dask.array")

    def counted(block):
        rows.append(block.shape[0])
        return block

    return da.from_array(X, chunks=(6000, 5)).map_blocks(counted, dtype=float)


# The passes of a stream of chunks: the default (40 off the origin) takes two location steps, each pass choosing its
# bound and summing its mean (the first one counting the rows); the step that settled (it moved the centre by a tenth
# of its bound) ends the refinement and its pass also serves the final bound and mean; then the release, which also
# sums what clipping removed (ExcessTap). A public centre: the bound's counts, then the release.
@pytest.mark.parametrize("kwargs, chunk_passes, array_passes", [
    (dict(), 3, ["mean", "mean"]), (dict(center=None), 2, ["counts"]),
    (dict(scale="private"), 7, None)])  # (with scales, the chunks alone: test time)
def test_a_dask_collection_is_read_as_often_as_a_stream_on_one_machine(kwargs, chunk_passes, array_passes,
                                                                        monkeypatch):
    """Issue 28: on a cluster the default run makes no more passes than on one machine. The release's blocks
    also sum what clipping removed, in the same tasks (ExcessTap.moment_sums), as the stream's pass does.
    Issue 27: the blocks' histograms and sums give the seeded release of the rows in memory and of the chunks
    (the same draws, centre and parts; the sums to rounding: their order of addition). An array in memory keeps
    a pass of its own for the second moment (``array_passes``: no fused "second"): over memory a second pass
    costs less than the fused pass's second Gram product per row."""
    import dask

    rows, moments, real = [], [], binned_sums.binned_pass
    with dask.config.set(scheduler="threads"):
        blocks = _release(_counted_dask(rows), **kwargs)
    chunks = _release(_chunks(), **kwargs)
    assert sum(rows) == CountedChunks.passes * X.shape[0] and CountedChunks.passes == chunk_passes
    others = [chunks]
    if array_passes is not None:
        monkeypatch.setattr("dpmoments.moments.private_passes.binned_pass",
                            lambda *a, **k: moments.append(k["moment"]) or real(*a, **k))
        others.append(_release(X, **kwargs))
        assert moments == array_passes
    for other in others:
        scale = np.abs(other.second_moment).max()
        np.testing.assert_allclose(blocks.second_moment, other.second_moment, rtol=1e-12, atol=1e-12 * scale)
        assert (blocks.center is None) == (other.center is None)
        assert blocks.center is None or np.array_equal(blocks.center, other.center)
        assert (blocks.guarantee, blocks.noise_scale, blocks.row_norm) == (other.guarantee, other.noise_scale,
                                                                           other.row_norm)
        assert [(p.label, p.share, p.released.keys()) for p in blocks.parts] == \
            [(p.label, p.share, p.released.keys()) for p in other.parts]
        for a, b in zip(blocks.parts, other.parts):  # the draws the same; a mean's offset to rounding
            for key, value in a.released.items():
                if isinstance(value, str):
                    assert value == b.released[key]
                else:
                    np.testing.assert_allclose(value, b.released[key], rtol=1e-9, atol=1e-12, err_msg=key)


def test_the_fused_dask_pass_gives_the_sums_of_the_two_passes_bit_for_bit():
    da = pytest.importorskip("dask.array")
    import dask

    from dpmoments.moments.clipping_bias import ExcessTap, clipping_excess_sums
    from dpmoments.moments.dask_moments import dask_moment_sums

    x, centre = da.from_array(X, chunks=(6000, 5)), X.mean(0).round()
    with dask.config.set(scheduler="threads"):
        tap = ExcessTap(x, centre, 6.0)
        fused, alone = tap.moment_sums(), dask_moment_sums(x, row_norm=6.0, center=centre)
        loss = clipping_excess_sums(x, centre, None, 6.0)
    assert fused.n == alone.n and np.array_equal(fused.xtx, alone.xtx) and np.array_equal(fused.center, alone.center)
    assert tap.sums()[0] == loss[0] and np.array_equal(tap.sums()[1], loss[1]) and tap.sums()[2] == loss[2] > 0
