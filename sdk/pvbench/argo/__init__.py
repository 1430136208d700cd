"""pvbench on Argo Workflows: Hera definitions (../../workflows), rendering, checks, submission.

Everything a template runs is a ``pvbench`` command; this package only describes how
Argo wires those commands together and never re-implements them.
"""
