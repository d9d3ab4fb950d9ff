"""What a covariance's intervals hold and leave out, in words (the error budget's parts: error_budget.py)."""

__all__ = ["covers_text", "not_covered_text"]


def covers_text(target, clip_summary_present, centre_bounded=False):
    """What the intervals hold, for ``uncertainty_['covers']``."""
    what = ("the population covariance of the distribution the rows were drawn from" if target == "population"
            else "the covariance of these rows without privacy (about their mean, unclipped)")
    parts = "the added noise, the private centre's noise (its exact law)" + (
        ", sampling variability (a bound that holds for any law of the clipped rows)" if target == "population" else "")
    if clip_summary_present:
        parts += ", clipping bias where the clipping-excess release detects it"
    if centre_bounded:
        parts += ", the private centre's own clipping bias (a bound from the release)"
    return f"{what}; counted: {parts}"


def not_covered_text(target, clip_summary_present, centre_bounded=False):
    """What the intervals leave out, for ``uncertainty_['not_covered']``."""
    unmeasured = "clipping bias (no clipping-excess release measures it: a public row_norm, or its share set to 0)"
    left = ["the clipping loss off the diagonal where it is not detected, beyond what shrinking elliptical rows gives"
            if clip_summary_present else unmeasured,
            "what rows beyond the outer bound lost beyond it (the columns that bear such rows, where they are "
            "detected, are marked 'biased' and their intervals withheld; where they are not ruled out, so is a "
            "clipped column's variance, and every other variance counts as much again as its band lost: a tail "
            "heavier than |x|^-3, a t with 3 degrees of freedom, can lose more; off the diagonal, where the band's loss is not detected, it is not counted)",
            "the private mean's own clipping bias where its rows beyond its bound are not bounded (a public bound)"
            if not centre_bounded else "the centre's clipping bias where its clipped rows exceed their bound (e^-5 "
            "of the bound's draws; across sites, the bound step's count beyond its upper end at the level)"]
    return "; ".join(left)
