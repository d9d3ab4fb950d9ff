"""Benchmarks for dpmoments: ``python -m benchmarks NAME [--quick]``.

Benchmarks are run by hand, never as tests. Each one times its candidates
against a reference measured in the same run and reports ratios: absolute
seconds drift with the load of these shared 2-core machines, ratios much
less.

BLAS is pinned to one thread here, before numpy is imported: threaded BLAS
made ``X.T @ X`` 15-30x slower on a busy 2-core machine. The runner also
wraps every benchmark in ``threadpoolctl.threadpool_limits(1)``.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

from . import moments  # noqa: E402  (after the thread pin)
from . import tensor  # noqa: E402
from . import glasso  # noqa: E402
from . import anchors  # noqa: E402  (calls Rscript where R is installed)
from . import glasso_large  # noqa: E402
from . import dask_moments  # noqa: E402  (imports dask lazily, inside run)
from . import secure_noise  # noqa: E402
from . import capeagn  # noqa: E402
from . import flower_overhead  # noqa: E402  (imports flwr lazily, inside run)
from . import bounds  # noqa: E402
from . import multisite_bounds  # noqa: E402
from . import utility  # noqa: E402  (imports its designs, diffprivlib and OpenDP inside run)
from . import uncertainty  # noqa: E402
from . import figures  # noqa: E402
from . import io_floor  # noqa: E402  (runs the command line in fresh processes)
from . import ranges  # noqa: E402  (imports statsmodels and scikit-learn's data inside run)
from . import select_real  # noqa: E402  (the command line in fresh processes)
from . import select_small  # noqa: E402  (the command line in fresh processes)
from . import speed  # noqa: E402  (start-up and large d in fresh processes)
from . import default_choices  # noqa: E402  (the command line in fresh processes)
from . import large_d  # noqa: E402  (the command line in fresh processes)
from . import coverage  # noqa: E402  (loads scikit-learn and statsmodels data inside run)
from . import coverage_misses  # noqa: E402
from . import covariance_parts  # noqa: E402  (loads scikit-learn and statsmodels data inside run)
from . import clipping_check  # noqa: E402  (loads statsmodels' data inside run)
from . import cluster  # noqa: E402  (imports dask and distributed inside run)
from . import sites_scale  # noqa: E402  (imports grpc inside run)
from . import ranges_sites  # noqa: E402  (loads statsmodels data inside run)
from . import ranges_small  # noqa: E402  (loads scikit-learn's data inside run)
from . import sites_coverage  # noqa: E402  (loads statsmodels' data inside run)
from . import sites_structure  # noqa: E402
from . import sites_width  # noqa: E402
from . import sites_pca  # noqa: E402  (loads statsmodels' data inside run)
from . import private_scales  # noqa: E402  (loads statsmodels' data inside run)
from . import site_scales  # noqa: E402  (loads statsmodels' data inside run)
from . import small_tables  # noqa: E402  (loads scikit-learn and statsmodels data inside run)
from . import small_regress  # noqa: E402  (loads statsmodels data inside run)
from . import small_sites  # noqa: E402  (loads scikit-learn and statsmodels data inside run)
from . import tensor_coverage  # noqa: E402  (loads statsmodels' data inside run)
from . import sites_irls_coverage  # noqa: E402  (imports statsmodels inside run)
from . import irls_clipping  # noqa: E402  (imports statsmodels inside run)
from . import irls_scales  # noqa: E402  (imports statsmodels inside run)
from . import real_unseen  # noqa: E402  (loads the data inside run; the command line in fresh processes)
from . import zero_out_irls  # noqa: E402
from . import pca_width  # noqa: E402  (loads scikit-learn and statsmodels data inside run)

# name -> function(quick: bool) -> list of timing.Table
BENCHMARKS = {
    "ranges": ranges.run,
    "select_real": select_real.run,
    "select_small": select_small.run,
    "moments": moments.run,
    "tensor": tensor.run,
    "glasso": glasso.run,
    "anchors": anchors.run,
    "glasso_large": glasso_large.run,
    "dask_moments": dask_moments.run,
    "secure_noise": secure_noise.run,
    "capeagn": capeagn.run,
    "flower_overhead": flower_overhead.run,
    "bounds": bounds.run,
    "multisite_bounds": multisite_bounds.run,
    "utility": utility.run,
    "uncertainty": uncertainty.run,
    "figures": figures.run,
    "io_floor": io_floor.run,
    "speed": speed.run,
    "default_choices": default_choices.run,
    "large_d": large_d.run,
    "startup": speed.run_startup,
    "release_pass": speed.run_release_pass,
    "coverage": coverage.run,
    "coverage_misses": coverage_misses.run,
    "covariance_parts": covariance_parts.run,
    "clipping_check": clipping_check.run,
    "sites_coverage": sites_coverage.run,
    "sites_structure": sites_structure.run,
    "sites_width": sites_width.run,
    "sites_pca": sites_pca.run,
    "cluster": cluster.run,
    "cluster_defaults": cluster.run_defaults,
    "sites_scale": sites_scale.run,
    "ranges_sites": ranges_sites.run,
    "ranges_small": ranges_small.run,
    "private_scales": private_scales.run,
    "site_scales": site_scales.run,
    "small_tables": small_tables.run,
    "small_regress": small_regress.run,
    "small_sites": small_sites.run,
    "tensor_coverage": tensor_coverage.run,
    "sites_irls_coverage": sites_irls_coverage.run,
    "irls_clipping": irls_clipping.run,
    "irls_scales": irls_scales.run,
    "real_unseen": real_unseen.run,
    "zero_out_irls": zero_out_irls.run,
    "pca_width": pca_width.run,
}

__all__ = ["BENCHMARKS"]
