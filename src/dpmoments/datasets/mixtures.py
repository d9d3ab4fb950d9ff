r"""Synthetic latent-variable models for orthogonal tensor decomposition (``docs/algorithms.md`` §2.7).

* :func:`make_mog`: a spherical mixture of Gaussians with orthonormal means
  ``mu_k`` and common noise variance ``sigma2`` (public);
* :func:`make_single_topic`: the single-topic model, three words per
  document, topics from a random orthogonal matrix with negatives set to 0
  and columns normalised to sum 1.

Weights default to Imtiaz & Sarwate's ``linspace(1, 10K, K) / sum``. Unlike
their scripts, nothing is rescaled by the data's own maximum norm (a leak,
``docs/algorithms.md`` §0.6): pick a public ``row_norm`` instead.
"""

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import check_int, check_nonnegative

__all__ = ["Mixture", "make_mog", "make_single_topic", "default_weights"]


@dataclass(frozen=True, eq=False)
class Mixture:
    """A sample from a latent-variable model and the truth that generated it.

    Attributes
    ----------
    X : ndarray
        ``(n_samples, n_features)`` rows (MOG) or ``(n_docs, 3)`` word ids
        (single topic).
    components : ndarray of shape (n_components, n_features)
        Means (MOG, orthonormal rows) or topic word distributions (rows sum 1).
    weights : ndarray of shape (n_components,)
    labels : ndarray of shape (n,)
        The latent component of every row / document.
    """

    X: np.ndarray
    components: np.ndarray
    weights: np.ndarray
    labels: np.ndarray


def default_weights(n_components):
    """``linspace(1, 10 K, K) / sum``: the papers' mixing weights."""
    K = check_int(n_components, "n_components", minimum=1)
    w = np.linspace(1.0, 10.0 * K, K)
    return w / w.sum()


def _weights(weights, K):
    if weights is None:
        return default_weights(K)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (K,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(f"'weights' must be {K} non-negative numbers summing to 1; got {weights!r}.")
    return w


def _orthonormal(d, K, gen):
    Q, _ = np.linalg.qr(gen.standard_normal((d, d)))
    return Q[:, :K].T


def make_mog(n_samples, n_features, n_components, *, sigma2=0.05, weights=None, rng=None):
    r"""Spherical Gaussian mixture :math:`x = \mu_h + \sqrt{\sigma^2} z`, ``h ~ weights``.

    Parameters
    ----------
    n_samples, n_features, n_components : int
        ``n_components <= n_features``.
    sigma2 : float >= 0, default=0.05
    weights : array-like of shape (n_components,), optional
    rng : None, int or numpy.random.Generator

    Returns
    -------
    Mixture
        ``components`` are orthonormal rows (the first columns of a random
        orthogonal matrix).

    Examples
    --------
    >>> m = make_mog(100, 5, 2, rng=0)
    >>> m.X.shape, m.components.shape
    ((100, 5), (2, 5))
    """
    n = check_int(n_samples, "n_samples", minimum=1)
    d = check_int(n_features, "n_features", minimum=1)
    K = check_int(n_components, "n_components", minimum=1)
    if K > d:
        raise ValueError(f"'n_components' must be <= n_features={d}; got {K}.")
    sigma2 = check_nonnegative(sigma2, "sigma2")
    gen = as_generator(rng)
    w = _weights(weights, K)
    means = _orthonormal(d, K, gen)
    labels = gen.choice(K, size=n, p=w)
    X = means[labels] + np.sqrt(sigma2) * gen.standard_normal((n, d))
    return Mixture(X=X, components=means, weights=w, labels=labels)


def make_single_topic(n_docs, vocabulary_size, n_topics, *, weights=None, rng=None):
    r"""Single-topic model: each document draws a topic ``h`` and three words i.i.d. from ``mu_h``.

    Parameters
    ----------
    n_docs, vocabulary_size, n_topics : int
        ``n_topics <= vocabulary_size``.
    weights : array-like of shape (n_topics,), optional
    rng : None, int or numpy.random.Generator

    Returns
    -------
    Mixture
        ``X`` holds integer word ids of shape (n_docs, 3); ``components``
        the topics (rows sum to 1).

    Examples
    --------
    >>> m = make_single_topic(50, 8, 3, rng=0)
    >>> m.X.shape, bool(np.allclose(m.components.sum(axis=1), 1))
    ((50, 3), True)
    """
    n = check_int(n_docs, "n_docs", minimum=1)
    D = check_int(vocabulary_size, "vocabulary_size", minimum=1)
    K = check_int(n_topics, "n_topics", minimum=1)
    if K > D:
        raise ValueError(f"'n_topics' must be <= vocabulary_size={D}; got {K}.")
    gen = as_generator(rng)
    w = _weights(weights, K)
    topics = np.maximum(_orthonormal(D, K, gen), 0.0)
    for k in range(K):  # a column with no positive entry: flip its sign instead
        if topics[k].sum() == 0:
            topics[k] = np.maximum(-_orthonormal(D, K, gen)[k], 0.0)
    topics /= topics.sum(axis=1, keepdims=True)
    labels = gen.choice(K, size=n, p=w)
    cdf = np.cumsum(topics, axis=1)
    cdf[:, -1] = 1.0
    u = gen.random((n, 3))
    words = np.empty((n, 3), dtype=np.int64)
    for j in range(3):
        words[:, j] = np.minimum((u[:, j, None] > cdf[labels]).sum(axis=1), D - 1)
    return Mixture(X=words, components=topics, weights=w, labels=labels)
