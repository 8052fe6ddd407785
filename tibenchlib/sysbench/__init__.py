"""sysbench specifics: the checks of a parsed run and its :class:`~tibenchlib.record.RunRecord`
(:mod:`.record`).

The run loop (:mod:`tibenchlib.runloop`) knows no tool; the sweep and NUMA phases hand it
:func:`tibenchlib.sweep.run_one` (command, execution, parse, record) as their ``run`` callable.
"""
