"""Neighbouring relations: what "one person's data" changes in a data set.

A guarantee means nothing without the relation it is stated under, so every
release, spend and report names one of these:

* ``"replace-one"`` -- one row replaced by any other row; ``n`` is fixed by
  the relation and therefore public.
* ``"zero-out"`` -- one row replaced by the zero row (after centring); ``n``
  public. This is the relation behind the papers' ``1/n`` sensitivities.
* ``"add-remove"`` -- one row added or removed; ``n`` itself is private and
  may only be released with noise.
"""

__all__ = ["NEIGHBOURS", "RELATION_WORDS", "check_neighbours", "describe_relation", "n_is_public"]

NEIGHBOURS = ("replace-one", "zero-out", "add-remove")

RELATION_WORDS = {
    "replace-one": "one row replaced by any other row; the number of rows n is public",
    "zero-out": "one row replaced by the zero row (after centring); the number of rows n is public",
    "add-remove": "one row added or removed; the number of rows n is private and released only with noise",
}


def describe_relation(neighbours):
    """The relation in words, for reports and the console.

    Examples
    --------
    >>> describe_relation("zero-out")
    'zero-out (one row replaced by the zero row (after centring); the number of rows n is public)'
    """
    if neighbours not in RELATION_WORDS:
        raise ValueError(f"'neighbours' must be one of {', '.join(map(repr, NEIGHBOURS))}; got {neighbours!r}.")
    return f"{neighbours} ({RELATION_WORDS[neighbours]})"


def n_is_public(neighbours):
    """Whether the relation fixes the number of rows (so it may be released exactly)."""
    return neighbours != "add-remove"


def check_neighbours(neighbours, supported=NEIGHBOURS, why=""):
    """``neighbours`` if it names a relation in ``supported``; else a one-line ``ValueError`` saying why not.

    Examples
    --------
    >>> check_neighbours("zero-out", ("replace-one", "zero-out"))
    'zero-out'
    """
    if not isinstance(neighbours, str) or neighbours not in NEIGHBOURS:
        raise ValueError(f"'neighbours' must be one of {', '.join(map(repr, NEIGHBOURS))}; got {neighbours!r}.")
    if neighbours not in supported:
        raise ValueError(f"neighbours={neighbours!r} is not supported here{': ' + why if why else ''}; use "
                         f"{' or '.join(map(repr, supported))}.")
    return neighbours
