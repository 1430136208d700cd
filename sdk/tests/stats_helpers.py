"""Synthetic result documents for the statistics tests: pvbench.testing.documents, under the name the tests import."""

from pvbench.testing.documents import T0, doc, write

__all__ = ["T0", "doc", "write"]
