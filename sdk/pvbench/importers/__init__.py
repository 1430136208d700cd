"""Importers: bring results measured elsewhere into the same store and analytics."""
