"""The compiled extensions are used only where built from the C source their callers expect, and refuse bad buffers.

A stale ``.so`` beside newer Python (an editable install not rebuilt, an old wheel's module) is called with
arguments it does not expect; each extension exports ``ABI`` and its caller falls back to NumPy on a mismatch.
"""

import numpy as np
import pytest

from dpmoments._lazy import matching_extension
from dpmoments.moments import accumulate, binned_sums
from dpmoments.solvers import glasso_certificate

try:
    from dpmoments.moments import _binned, _clip
    from dpmoments.solvers import _glasso_sweep
except ImportError:  # pragma: no cover - built without a C compiler: the NumPy path is all there is
    pytest.skip("the compiled extensions are not built", allow_module_level=True)

EXPECTED = [(_clip, accumulate.CLIP_ABI), (_binned, binned_sums.BINNED_ABI),
            (_glasso_sweep, glasso_certificate.GLASSO_SWEEP_ABI)]


@pytest.mark.parametrize("module, abi", EXPECTED, ids=lambda v: getattr(v, "__name__", str(v)))
def test_the_built_extensions_match_their_callers(module, abi):
    assert module.ABI == abi, f"rebuild {module.__name__} or bump its ABI on both sides"
    assert matching_extension(module, abi) is module


def test_a_mismatched_abi_takes_the_numpy_path(monkeypatch):
    monkeypatch.setattr(_clip, "ABI", accumulate.CLIP_ABI + 1)
    with pytest.warns(RuntimeWarning, match=r"dpmoments\.moments\._clip .*rebuild"):
        assert matching_extension(_clip, accumulate.CLIP_ABI) is None
    monkeypatch.delattr(_clip, "ABI")  # a build from before the constant
    with pytest.warns(RuntimeWarning, match="ABI none"):
        assert matching_extension(_clip, accumulate.CLIP_ABI) is None
    assert matching_extension(None, 1) is None


def test_the_numpy_path_the_fallback_takes_clips_alike(monkeypatch):
    B = np.random.default_rng(0).standard_normal((50, 7)) * 3
    compiled = accumulate._clip_rows_into(B, np.empty_like(B), 0, 0, 2.0)
    monkeypatch.setattr(accumulate, "_compiled", None)
    np.testing.assert_allclose(accumulate._clip_rows_into(B, np.empty_like(B), 0, 0, 2.0), compiled, rtol=1e-15)


def test_bad_buffers_are_errors_not_reads_out_of_bounds():
    B, out = np.ones((4, 3)), np.empty((4, 3))
    with pytest.raises(TypeError, match="clip_rows: 'block' must hold float64"):
        _clip.clip_rows(B.astype(np.float32), out, 3, 1.0)
    with pytest.raises(ValueError, match="C-contiguous"):  # refused by NumPy's buffer export
        _clip.clip_rows(np.asfortranarray(np.ones((4, 3))), out, 3, 1.0)
    with pytest.raises(ValueError, match="inconsistent"):
        _clip.clip_rows(B, np.empty((2, 3)), 3, 1.0)
    with pytest.raises(TypeError, match="clip_gram: 'center'"):
        _clip.clip_gram(B, np.zeros(3, np.float32), np.zeros((3, 3)), 3, 1.0)
    edges, none = np.array([1.0, 2.0]), np.empty(0)
    with pytest.raises(TypeError, match="bin_rows: 'counts' must hold int64"):
        _binned.bin_rows(B, none, none, edges, np.empty(3), np.zeros(3, np.int32), none, none, 3)
    with pytest.raises(ValueError, match="inconsistent"):
        _binned.row_norms(B, none, np.empty(3), 3)
    with pytest.raises(ValueError, match="bin_rows: inconsistent"):  # work: four rows' z
        _binned.bin_rows(B, none, none, edges, np.empty(11), np.zeros(3, np.int64), none, none, 3)
    W = np.eye(3)
    for indptr, indices in (([0, 1, 2, 3], [0, 1, 9]), ([0, 2, 1, 3], [0, 1, 2]), ([-4, 0, 0, 0], [0])):
        with pytest.raises(ValueError, match="residual: inconsistent sparse arrays"):
            _glasso_sweep.residual(W, np.array(indptr, np.int64), np.array(indices, np.int64), np.ones(len(indices)))
