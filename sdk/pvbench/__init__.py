"""pvbench: repeatable, statistically sound benchmarks of Kubernetes storage classes."""

__version__ = "0.1.0"
