"""The exponential mechanism's replica, shared by the audits of a private draw on the grid.

A replica draws as the mechanism does (Gumbel-max over log-weights ``factor * epsilon * score``; the mechanism's
factor is 1/2) and knows each outcome's exact privacy loss between the audited pair of data sets ``"A"`` and
``"B"``: the audit compares what it observes with that, and a replica at twice the factor is the negative control.
"""

import numpy as np

from dpmoments.mechanisms import exponential_mechanism_probabilities


def log_probabilities(scores, epsilon, factor=0.5):
    """The log-probability of each outcome of the draw at ``factor * epsilon`` on these scores."""
    return np.log(exponential_mechanism_probabilities(scores, 2 * factor * epsilon, 1.0, minimise=False))


def gumbel_draw(log_weights, rng, size):
    """``size`` draws of the outcome with probability proportional to ``exp(log_weights)``."""
    return np.argmax(log_weights + rng.gumbel(size=(size, log_weights.size)), axis=1)


def replica(scores, epsilon, factor=0.5):
    """``(draw, loss)`` for the scores of each data set by name: ``draw(name, rng, size)`` the outcomes,
    ``loss(k)`` the exact log-probability ratio of outcome ``k`` between ``"A"`` and ``"B"``."""
    log_w = {name: factor * epsilon * s for name, s in scores.items()}
    log_p = {name: log_probabilities(s, epsilon, factor) for name, s in scores.items()}

    def draw(name, rng, size):
        return gumbel_draw(log_w[name], rng, size)

    def loss(k):
        return np.round(log_p["A"][k] - log_p["B"][k], 9)

    return draw, loss


def pair_loss(scores, epsilon, factor=0.5):
    """The exact worst privacy loss of one draw on the pair (the analysis bounds it by ``epsilon``)."""
    a, b = (log_probabilities(scores[name], epsilon, factor) for name in ("A", "B"))
    return float(np.abs(a - b).max())
