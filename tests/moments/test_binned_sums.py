"""One pass for a private bound and the sums it serves (moments/binned_sums.py): equal to the two-pass sums."""

import numpy as np
import pytest

from dpmoments import release_second_moment
from dpmoments.moments import accumulate_moments
from dpmoments.moments import binned_sums
from dpmoments.moments.binned_sums import binned_pass, compiled_binned
from dpmoments.moments.private_bounds import SearchRange, quantile_pass

SEARCH = SearchRange(0.05, 200.0, steps=80)
EDGES = SEARCH.edges()
RNG = np.random.default_rng(3)
# norms spread over the whole grid (and beyond both ends), a zero row about the centre, a row exactly on an edge
X = RNG.standard_normal((3000, 4)) * np.exp(RNG.uniform(-4, 6, size=(3000, 1)))
CENTER, SCALE = np.array([0.5, -1.0, 2.0, 0.0]), np.array([1.0, 2.0, 0.5, 3.0])
X[7] = CENTER
X[8] = CENTER + SCALE * np.array([EDGES[40], 0, 0, 0])
CHUNKS = [X[:1000], X[1000:1001], X[1001:]]  # read as a stream of chunks, one of a single row


def _two_pass(R, moment):
    Z = (X - CENTER) / SCALE
    if moment == "second":
        return accumulate_moments([Z], row_norm=R).xtx
    return accumulate_moments([(Z, np.ones(len(Z)))], row_norm=R, response_bound=1.0).xty


@pytest.mark.parametrize("moment", ["second", "mean"])
def test_fused_sums_equal_the_second_pass_at_every_grid_edge(moment):
    binned = binned_pass(CHUNKS, moment=moment, search=SEARCH, center=CENTER, scale=SCALE)
    assert binned.fused and binned.n == len(X) and binned.d == 4
    for R in EDGES:
        got = binned.clipped(R)
        np.testing.assert_allclose(got.xtx if moment == "second" else got.xty, _two_pass(R, moment),
                                   rtol=1e-11, atol=1e-11 * R * R)
        assert got.row_norm == R and got.n == len(X)


def test_counts_are_the_quantile_pass_counts():
    binned = binned_pass(CHUNKS, moment="second", search=SEARCH, center=CENTER, scale=SCALE)
    (bins,), _ = quantile_pass(CHUNKS, [("row-norm", CENTER, SCALE)], search=SEARCH)
    np.testing.assert_array_equal(binned.bin_counts().counts, bins.counts)


@pytest.mark.parametrize("moment", ["second", "mean"])
def test_over_the_memory_cap_the_sums_are_dropped_and_the_counts_kept(moment):
    binned = binned_pass(CHUNKS, moment=moment, search=SEARCH, center=CENTER, scale=SCALE, max_bytes=1000)
    assert not binned.fused and binned.counts.sum() == len(X)
    with pytest.raises(RuntimeError, match="read the data again"):
        binned.clipped(EDGES[3])


def test_a_bound_off_the_grid_is_refused():
    binned = binned_pass(X, moment="mean", search=SEARCH)
    with pytest.raises(ValueError, match="edge of the grid"):
        binned.clipped(1.2345)


def test_a_release_takes_presummed_sums_only_at_their_own_bound_and_centre():
    binned = binned_pass(X, moment="second", search=SEARCH, center=CENTER)
    R = EDGES[50]
    sums = binned.clipped(R, CENTER)
    fused = release_second_moment(sums, epsilon=1.0, delta=1e-6, row_norm=R, center=CENTER, rng=4)
    direct = release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, center=CENTER, rng=4)
    np.testing.assert_allclose(fused.second_moment, direct.second_moment, rtol=1e-10, atol=1e-10 * R * R)
    assert fused.guarantee == direct.guarantee and fused.noise_scale == direct.noise_scale
    for wrong in (dict(row_norm=EDGES[51], center=CENTER), dict(row_norm=R, center=None)):
        with pytest.raises(ValueError, match="summed with this release"):
            release_second_moment(sums, epsilon=1.0, delta=1e-6, rng=4, **wrong)


def test_rows_whose_squares_overflow_leave_the_sums_to_the_clipping_pass():
    big = np.vstack([X, [[1e200, 0, 0, 0]]])
    binned = binned_pass(big, moment="second", search=SEARCH)
    assert not binned.fused and binned.counts[-1] >= 1


def test_an_auto_bound_on_a_stream_reads_it_once_and_releases_what_two_reads_release(monkeypatch):
    from dpmoments.moments import binned_sums

    class Counted:
        passes = 0

        def __iter__(self):
            yield from CHUNKS
            Counted.passes += 1

    args = dict(epsilon=1.0, delta=1e-6, row_norm="auto", center=CENTER, rng=9,
                bound_budget=0.1)
    fused = release_second_moment(Counted(), **args)
    assert Counted.passes == 1
    monkeypatch.setattr(binned_sums, "FUSE_BYTES", 0)
    two = release_second_moment(Counted(), **args)
    assert Counted.passes == 3
    np.testing.assert_allclose(fused.second_moment, two.second_moment, rtol=1e-9,
                               atol=1e-9 * np.abs(two.second_moment).max())
    assert fused.guarantee == two.guarantee and [p.label for p in fused.parts] == [p.label for p in two.parts]


def test_the_compiled_pass_bins_and_sums_what_the_numpy_pass_does(monkeypatch):
    from dpmoments.moments import binned_sums

    wide = np.vstack([X] * 3)  # chunks of several cache-sized blocks
    chunks = [wide[:5000], wide[5000:]]
    compiled = binned_pass(chunks, moment="mean", search=SEARCH, center=CENTER, scale=SCALE)
    monkeypatch.setattr(binned_sums, "_compiled", None)
    plain = binned_pass(chunks, moment="mean", search=SEARCH, center=CENTER, scale=SCALE)
    assert np.array_equal(compiled.counts, plain.counts) and compiled.fused == plain.fused
    np.testing.assert_allclose(compiled.inside, plain.inside, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(compiled.outside, plain.outside, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(compiled_binned() is None, reason="the compiled pass is not built")
def test_the_compiled_pass_stops_at_a_row_inside_a_group_of_four():
    # Rows are normed four at a time: a row whose squares overflow, third of its group, ends the count there.
    B = np.ones((7, 5))
    B[2, 1] = 1e200
    edges, none, counts = np.array([1.0, 3.0]), np.empty(0), np.zeros(3, np.int64)
    done = compiled_binned().bin_rows(B, none, none, edges, np.empty(4 * 5), counts, none, none, 5)
    assert done == 2 and counts.tolist() == [0, 2, 0]
    norms = np.empty(7)
    compiled_binned().row_norms(B, none, norms, 5)
    assert norms[2] == np.inf and np.allclose(np.delete(norms, 2), np.sqrt(5.0), rtol=1e-15)


def test_a_nan_in_a_chunk_is_refused_naming_its_chunk_and_row():
    bad = X.copy()
    bad[1500, 2] = np.nan
    with pytest.raises(ValueError, match=r"chunk 1 at row 500, column 2 of the chunk \(row 1500 overall\)"):
        binned_pass([bad[:1000], bad[1000:]], moment="mean", search=SEARCH, center=CENTER)


def test_a_file_read_in_small_blocks_gives_the_sums_of_its_array(tmp_path, monkeypatch):
    # A mean's pass reads a file in cache-sized blocks (Source.recut): each row is added in order, so the counts
    # and sums are those of the array's pass, bit for bit (the compiled pass; NumPy's sums per block differ).
    np.save(tmp_path / "x.npy", X)
    monkeypatch.setattr(binned_sums, "_RECUT_BYTES", 8 * 4 * 128)  # blocks of 128 rows
    from_file = binned_pass(tmp_path / "x.npy", moment="mean", search=SEARCH, center=CENTER, scale=SCALE)
    in_memory = binned_pass(X, moment="mean", search=SEARCH, center=CENTER, scale=SCALE)
    assert np.array_equal(from_file.counts, in_memory.counts) and from_file.n == in_memory.n == X.shape[0]
    if from_file.fused and compiled_binned() is not None:
        assert np.array_equal(from_file.inside, in_memory.inside) and np.array_equal(from_file.outside,
                                                                                     in_memory.outside)
