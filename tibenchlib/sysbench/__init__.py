"""sysbench specifics, apart from the phases that use them.

- :mod:`.command`: the command lines (run, prepare, cleanup), password excluded;
- :mod:`.runner`: one run on an open arm (raw log, execution, resource sampling, record) and
  the warm-up runs of an arm just opened;
- :mod:`.record`: a parsed run checked and turned into a :class:`~tibenchlib.record.RunRecord`;
- :mod:`.prepare`: the ``sbtestN`` tables prepared, analyzed, warmed up and verified.

The parser is :mod:`tibenchlib.parse.sysbench` (pure, like every parser). The run loop
(:mod:`tibenchlib.runloop`) knows no tool; the sweep and NUMA phases hand it
:func:`.runner.run_one` as their ``run`` callable.
"""
