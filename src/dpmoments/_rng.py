"""One random generator, normalised once and threaded down.

``rng=None`` draws fresh OS entropy; an integer (or ``SeedSequence``) gives a
reproducible run that reports mark as *seeded* (not secure); a caller's
``numpy.random.Generator`` is used as is. The global ``np.random`` state is
never touched.

NumPy's generators are not cryptographic and floating-point noise is
"idealised numerics" (Mironov 2012): the library documents this rather than
hiding it.
"""

import hmac
import numbers
import secrets

import numpy as np

__all__ = ["as_generator", "bootstrap_generator", "describe_randomness", "noise_source", "secure_randomness",
           "seed_sequence", "spawn"]

OS_ENTROPY = "os-entropy"
SEEDED = "seeded"
CALLER_GENERATOR = "caller-generator"


def as_generator(rng):
    """Return a ``numpy.random.Generator`` for ``rng``.

    Parameters
    ----------
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        ``None`` draws fresh OS entropy.
    """
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"'rng' must be a non-negative integer seed; got {rng}.")
        return np.random.default_rng(int(rng))
    raise TypeError(
        "'rng' must be None, an int seed, a numpy SeedSequence or a numpy "
        f"Generator; got {type(rng).__name__}."
    )


# Keys the tags of noise_source: a tag is then meaningless outside this process and says nothing of the seed.
_PROCESS_KEY = secrets.token_bytes(32)


def noise_source(rng):
    """An opaque tag of where the noise of a run drawn from ``rng`` starts; ``None`` for fresh OS entropy.

    Releases drawn from the same int seed, the same ``SeedSequence``, or
    generators in the same state (a generator deep-copied by scikit-learn's
    ``clone``, say) draw the *same* noise: the difference of two such
    releases is the exact difference of their statistics, and no composition
    theorem covers them. An :class:`~dpmoments.Accountant` given these tags
    refuses a second spend from the same source. Read before the first draw
    (a generator's state moves on as it draws); a keyed hash of the state.
    """
    if rng is None:
        return None
    state = repr(as_generator(rng).bit_generator.state).encode()
    return hmac.new(_PROCESS_KEY, state, "sha256").hexdigest()


def describe_randomness(rng):
    """Say where the noise of a run came from, for privacy reports.

    Returns ``"os-entropy"`` (``rng=None``), ``"seeded"`` (an int or
    ``SeedSequence``: reproducible, hence not secure) or ``"caller-generator"``
    (a ``Generator`` whose seeding the library cannot see).
    """
    if rng is None:
        return OS_ENTROPY
    if isinstance(rng, np.random.Generator):
        return CALLER_GENERATOR
    return SEEDED


def secure_randomness(randomness, *, exact_discrete):
    """Whether noise counts as secure: exact discrete noise drawn from the OS CSPRNG, nothing else.

    Float noise from numpy is "idealised numerics" even when unseeded (its
    low-order bits leak, Mironov 2012); seeded noise can be regenerated.
    Every report's "secure" flag comes from here.
    """
    return randomness == OS_ENTROPY and bool(exact_discrete)


def spawn(rng, n):
    """Return ``n`` independent generators derived from ``rng``.

    Used to give each site (or each repetition) its own stream, so that a
    seeded run never reuses noise across mechanisms.
    """
    if not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"'n' must be a non-negative integer; got {n!r}.")
    return as_generator(rng).spawn(int(n))


_BOOTSTRAP_KEY = 0x626F6F74  # "boot"


def bootstrap_generator(rng):
    """A generator for bootstrap draws, on a stream that no release uses.

    ``None`` gives fresh OS entropy. A seed, ``SeedSequence`` or ``Generator``
    gives a reproducible child stream (spawn key ``0x626F6F74``) of its seed
    sequence: independent of the stream the release's noise came from and of
    the children that :func:`spawn` hands out, and it leaves a
    caller's generator untouched.
    """
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        seq = getattr(rng.bit_generator, "seed_seq", None)
        if not isinstance(seq, np.random.SeedSequence):  # a generator restored from a state: fresh draws from it
            return np.random.default_rng(rng.integers(0, 2**63, size=4))
    elif isinstance(rng, np.random.SeedSequence):
        seq = rng
    else:
        seq = as_generator(rng).bit_generator.seed_seq  # validates the seed
    child = np.random.SeedSequence(seq.entropy, spawn_key=tuple(seq.spawn_key) + (_BOOTSTRAP_KEY,))
    return np.random.default_rng(child)


def seed_sequence(rng):
    """A fresh ``SeedSequence`` drawn from ``rng`` (a key two parties share, e.g. a pairwise mask's seed)."""
    return np.random.SeedSequence(as_generator(rng).integers(0, 2**63, size=4).tolist())
