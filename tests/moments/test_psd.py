"""Eigenvalue flooring: PSD output, exact symmetry, PSD input unchanged."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpmoments.moments.psd import project_psd

finite = st.floats(-100, 100, allow_nan=False, allow_infinity=False)
squares = st.integers(1, 6).flatmap(lambda d: arrays(np.float64, (d, d), elements=finite))


@settings(max_examples=60, deadline=None)
@given(squares, st.sampled_from([0.0, 1e-3, 0.5, 2.0]))
def test_output_is_psd_above_floor(M, floor):
    S_psd, n_clipped = project_psd(M, floor=floor)
    np.testing.assert_array_equal(S_psd, S_psd.T)
    scale = max(1.0, np.abs(M).max())
    assert np.linalg.eigvalsh(S_psd).min() >= floor - 1e-12 * scale
    S = (M + M.T) / 2
    assert n_clipped == int(np.sum(np.linalg.eigh(S)[0] < floor))
    assert isinstance(n_clipped, int) and 0 <= n_clipped <= M.shape[0]
    if n_clipped == 0:
        np.testing.assert_array_equal(S_psd, S)


@settings(max_examples=40, deadline=None)
@given(squares)
def test_psd_input_unchanged(A):
    S = A @ A.T + 0.1 * np.eye(A.shape[0])
    S_psd, n_clipped = project_psd(S)
    assert n_clipped == 0
    np.testing.assert_array_equal(S_psd, S)


def test_known_spectrum():
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    lam = np.array([-2.0, -0.1, 0.05, 1.0, 3.0])
    S = (Q * lam) @ Q.T
    S_psd, n_clipped = project_psd(S, floor=0.1)
    assert n_clipped == 3
    np.testing.assert_allclose(np.linalg.eigvalsh(S_psd), [0.1, 0.1, 0.1, 1.0, 3.0], atol=1e-12)
    # eigenvectors are kept
    np.testing.assert_allclose(S_psd @ Q[:, 4], 3.0 * Q[:, 4], atol=1e-12)


def test_floor_zero_is_nearest_psd():
    S = np.diag([1.0, -0.5])
    S_psd, n_clipped = project_psd(S)
    np.testing.assert_array_equal(S_psd, np.diag([1.0, 0.0]))
    assert n_clipped == 1


def test_non_symmetric_input_is_symmetrised_first():
    M = np.array([[2.0, 1.0], [0.0, 2.0]])
    S_psd, n_clipped = project_psd(M)
    np.testing.assert_array_equal(S_psd, [[2.0, 0.5], [0.5, 2.0]])
    assert n_clipped == 0


def test_errors():
    with pytest.raises(ValueError, match="'S' must be a square"):
        project_psd(np.ones((2, 3)))
    with pytest.raises(ValueError, match="'floor'"):
        project_psd(np.eye(2), floor=-1.0)
    with pytest.raises(TypeError, match="'floor'"):
        project_psd(np.eye(2), floor="0")
    with pytest.raises(ValueError, match="NaN"):
        project_psd(np.full((2, 2), np.nan))


def test_the_cholesky_shortcut_returns_what_eigh_alone_returns():
    """Matrices clearly above the floor skip ``eigh``; the result is the same, also at and near the boundary."""
    def by_eigh(S, floor):
        S = (S + S.T) / 2
        w, Q = np.linalg.eigh(S)
        low = w < floor
        if not low.any():
            return S, 0
        out = (Q * np.where(low, floor, w)) @ Q.T
        return (out + out.T) / 2, int(low.sum())

    rng = np.random.default_rng(7)
    for t in range(400):
        d = int(rng.integers(1, 25))
        A = rng.standard_normal((d, d))
        S = A @ A.T * rng.choice([1e-8, 1.0, 1e8])
        floor = float(rng.choice([0.0, 1e-3, 1.0]))
        if t % 4 == 1:
            S = S - np.linalg.eigvalsh(S)[0] * np.eye(d)  # singular: the smallest eigenvalue at rounding level
        elif t % 4 == 2:
            S = S + rng.standard_normal((d, d)) * 0.1  # indefinite, and not symmetric
        elif t % 4 == 3:  # the floor at the smallest eigenvalue, give or take an ulp
            floor = max(0.0, float(np.linalg.eigvalsh((S + S.T) / 2)[0]) * (1 + rng.choice([-1e-15, 0.0, 1e-15])))
        expected, got = by_eigh(S, floor), project_psd(S, floor)
        assert got[1] == expected[1] and np.array_equal(got[0], expected[0])


def test_a_shared_spectrum_gives_the_same_projection_and_is_made_only_where_needed():
    """``SymmetricSpectrum`` is the decomposition ``project_psd`` would make; a positive definite matrix never
    makes it (the Cholesky test), and another matrix's spectrum is refused."""
    from dpmoments.moments.psd import SymmetricSpectrum

    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    noisy = A + A.T
    spectrum = SymmetricSpectrum(noisy)
    expected = project_psd(noisy)
    got = project_psd(noisy, spectrum=spectrum)
    assert got[1] == expected[1] and np.array_equal(got[0], expected[0]) and spectrum._pairs is not None
    definite = SymmetricSpectrum(A @ A.T + np.eye(6))
    project_psd(definite.matrix, spectrum=definite)
    assert definite._pairs is None
    with pytest.raises(ValueError, match="'spectrum' must be the SymmetricSpectrum of this 'S'"):
        project_psd(noisy.copy(), spectrum=spectrum)


def test_the_error_budget_reads_the_shared_spectrum_shifted():
    """The error budget's projection of ``M - c I`` from the spectrum of ``M`` equals its own ``eigh`` of
    ``M - c I`` to rounding, and exactly where ``c`` is 0."""
    from dpmoments.estimators.error_budget import _psd, _shifted_psd
    from dpmoments.moments.psd import SymmetricSpectrum

    rng = np.random.default_rng(4)
    A = rng.standard_normal((40, 40))
    M = A + A.T
    spectrum = SymmetricSpectrum(M)
    assert np.array_equal(_shifted_psd(spectrum, 0.0), _psd(M))
    for c in (0.5, 3.0):
        assert np.allclose(_shifted_psd(spectrum, c), _psd(M - c * np.eye(40)), rtol=0, atol=1e-12 * np.abs(M).max())
