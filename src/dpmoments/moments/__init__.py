"""Bounds, exact moments in one streaming pass, and the noisy :class:`Release`."""

from .. import _lazy

# Imported on first use: a command that reads no data (``--help``) loads none of them.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "accumulate": ("MomentSums", "accumulate_moments"),
    "auto_release": ("BoundBudget",),
    "counts": ("COUNT_SHARE", "NoisyCount", "noisy_count"),
    "bounds": ("clip_entries", "clip_responses", "clip_rows"),
    "private_bounds": ("SearchRange", "private_quantiles"),
    "psd": ("project_psd",),
    "release": ("Release",),
    "releases": ("MECHANISMS", "release_cross_moment", "release_third_moment"),
    "second_moment": ("release_second_moment",),
    "choice_budget": ("CenterBudget",),
    "sensitivity": ("NEIGHBOURS", "moment_sensitivity"),
    "sparse_sums": ("sparse_moment_sums",),
    "symmetry": ("symmetrise_matrix", "symmetrise_tensor"),
})

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
    "CenterBudget",
    "SearchRange",
    "private_quantiles",
]
