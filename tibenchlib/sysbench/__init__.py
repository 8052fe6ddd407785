"""sysbench specifics: its commands, the checks of a parsed run, and its :class:`RunRecord`.

The run loop (:mod:`tibenchlib.runloop`) knows no tool; the sweep and NUMA phases hand it
:func:`tibenchlib.sysbench.runner.run_one` as their ``run`` callable.
"""
