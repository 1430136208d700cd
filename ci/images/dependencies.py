"""Print pvbench's pinned dependencies, one per line, from sdk/pyproject.toml (the one place they
are declared), for an image's `pip install -r`: installed in a layer of their own, before
pvbench's code is copied, a change to the code reinstalls pvbench alone, not NumPy, SciPy and
DuckDB.

    python3 dependencies.py sdk/pyproject.toml > requirements.txt
"""

import sys
import tomllib

with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
