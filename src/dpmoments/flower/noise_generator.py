"""The trusted noise generator: deal CAPE's zero-sum shares ``e_s`` into per-site files.

It runs at the trusted party (not the aggregator), from the public plan only. Each
``<site>.npz`` must reach its site over a channel the aggregator does not control
(e.g. the site fetches it over its own TLS connection to the noise generator, or it is
carried by hand); ``plan.json`` is public and goes to the aggregator. The aggregator
never sees any ``e_s``: if it did, it could strip ``e_s + f_s`` from a message.
"""

from pathlib import Path

from .._rng import as_generator
from ..distributed import NoiseGenerator
from .plan import FlowerPlan, write_plan, write_share

__all__ = ["deal_shares"]


def deal_shares(plan, out_dir, rng=None):
    """Write ``out_dir/plan.json`` (public) and ``out_dir/<site>.npz`` (secret, one per site).

    Parameters
    ----------
    plan : FlowerPlan
    out_dir : path
    rng : None, int or Generator
        None (default) draws from OS entropy: use that for a real run.

    Returns
    -------
    dict of str -> Path
        Each site's share file, plus ``"plan"``.
    """
    if not isinstance(plan, FlowerPlan):
        raise TypeError(f"'plan' must be a FlowerPlan; got {type(plan).__name__}.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    noise_plan, _, _ = plan.build()
    shares = NoiseGenerator(as_generator(rng)).deal(noise_plan, plan.statistic, plan.n_features)
    paths = {}
    for name, share in shares.items():
        path = out / f"{name}.npz"
        write_share(path, share, plan)
        path.chmod(0o600)
        paths[name] = path
    write_plan(plan, out / "plan.json")
    paths["plan"] = out / "plan.json"
    return paths
