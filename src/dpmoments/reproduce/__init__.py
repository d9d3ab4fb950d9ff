"""Paper reproductions (layer 4): each module has ``run(quick=False) -> str`` (markdown)
and is runnable as ``python -m dpmoments.reproduce.NAME [--quick]``, writing
``benchmarks/results/NAME.md``."""
