"""Building blocks of the DM load-tuning study (report 003): a second private MariaDB as the
target, the real mydumper/myloader runners, verification by checksums, MariaDB parallel
replication standing in for DM's sync unit, and the parsing of real DM's OpenAPI and dmctl output.

Each module takes explicit arguments and returns records or DataFrames; the phase glue (arms,
repeats, the catalog) lives with the run loop, not here.
"""
