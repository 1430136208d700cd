"""Local mode: the whole pipeline on one machine, storage classes mapped to directories."""
