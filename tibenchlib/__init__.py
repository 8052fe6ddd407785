"""tibench: a reproducible, statistically honest benchmark study of TiDB and MySQL-compatible databases."""

__version__ = "0.1.0"
