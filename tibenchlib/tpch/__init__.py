"""TPC-H: data, queries, verified execution, TiFlash paths and scaling statistics."""
