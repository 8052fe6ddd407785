"""The phases' names in study order, as plain strings: what a study file may list.

:mod:`tibenchlib.params` validates ``phases`` against them without importing the phases
themselves (which import ``params``); a test asserts they equal :data:`tibenchlib.registry.NAMES`.
"""

NAMES: tuple[str, ...] = (
    "environment",
    "prepare",
    "sweep",
    "compare",
    "numa",
    "tpch_scaling",
    "dm",
    "ycsb",
    "tpcc",
)
