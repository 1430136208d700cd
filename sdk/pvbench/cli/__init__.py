"""The ``pvbench`` command line (pvbench.cli.main composes it)."""

import os

# Before numpy and SciPy load: each starts an OpenBLAS thread pool at import, a thread per core,
# whose start and spinning cost ~0.3 s of CPU in every command (measured: importing the CLI and
# scipy.special, 0.8 s of CPU against 0.5 s with one thread). pvbench's numpy work is on short
# vectors, never a BLAS call worth a thread. A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
