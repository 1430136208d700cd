"""Cells of the benchmark matrix: what one is, how the matrix expands, how one runs and is stored."""
