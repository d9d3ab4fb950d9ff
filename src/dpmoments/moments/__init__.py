"""Bounds, exact moments in one streaming pass, and the noisy :class:`Release`."""

from .accumulate import MomentSums, accumulate_moments
from .auto_release import BoundBudget
from .counts import COUNT_SHARE, NoisyCount, noisy_count
from .bounds import clip_entries, clip_responses, clip_rows
from .private_bounds import SearchRange, private_quantiles
from .psd import project_psd
from .release import Release
from .releases import MECHANISMS, release_cross_moment, release_second_moment, release_third_moment
from .sensitivity import NEIGHBOURS, moment_sensitivity
from .sparse_sums import sparse_moment_sums
from .symmetry import symmetrise_matrix, symmetrise_tensor

__all__ = [
    "Release",
    "release_second_moment",
    "release_cross_moment",
    "release_third_moment",
    "MECHANISMS",
    "NEIGHBOURS",
    "COUNT_SHARE",
    "NoisyCount",
    "noisy_count",
    "moment_sensitivity",
    "MomentSums",
    "accumulate_moments",
    "sparse_moment_sums",
    "clip_rows",
    "clip_entries",
    "clip_responses",
    "symmetrise_matrix",
    "symmetrise_tensor",
    "project_psd",
    "BoundBudget",
    "SearchRange",
    "private_quantiles",
]
