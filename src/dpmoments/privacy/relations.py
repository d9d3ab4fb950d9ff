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

__all__ = ["NEIGHBOURS"]

NEIGHBOURS = ("replace-one", "zero-out", "add-remove")
