"""The private choices' console lines (estimators/summary.py) and the range-end warning's words
(moments/bound_messages.py): a noisy count or share is shown as a count or share, the report keeps the release."""

import warnings

from dpmoments.estimators.summary import choices_lines
from dpmoments.moments.bound_messages import warn_range_end
from dpmoments.moments.release import Part
from dpmoments.privacy import ZCDP


def test_noisy_counts_and_shares_are_floored_and_said_to_be_noisy():
    g = ZCDP(0.01)
    excess = Part("clipping excess", g, 0.1, {"noise_sd": 0.17, "rows_beyond_outer": -89.47,
                                              "rows_beyond_noise_sd": 45.3})
    clipped = Part("clipped rows", g, 0.01, {"clipped_fraction": -0.0004, "clipped_fraction_noise_sd": 0.007})
    lines = choices_lines([excess, clipped], g)
    assert "rows_beyond_outer 0 (noisy, floored at 0)" in lines[1] and "-89" not in lines[1]
    assert "clipped rows (noisy): 0.0% (noise sd 0.7%)" in lines[-1]
    assert excess.released["rows_beyond_outer"] == -89.47  # the release itself, as the report gives it
    over = Part("clipped rows", g, 0.01, {"clipped_fraction": 1.032, "clipped_fraction_noise_sd": 0.015})
    assert "clipped rows (noisy): 100.0%" in choices_lines([over], g)[-1]


def test_a_plural_choice_fell_at_an_end_of_their_range():
    from types import SimpleNamespace

    search = SimpleNamespace(low=1e-6, high=1e8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_range_end("bounds", search)
        warn_range_end("row_norm", search)
    assert "bounds fell at an end of their search range" in str(caught[0].message)
    assert "row_norm fell at an end of its search range" in str(caught[1].message)
