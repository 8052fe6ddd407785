"""Clients on several hosts: ``local`` and SSH destinations driven together (the sweep's
sysbench, YCSB's Java binding, TPC-C's Lua driver).

- :mod:`.spec`: the study file's ``user@host[:port]`` (pure);
- :mod:`.ssh`: one asyncssh connection per host behind a small synchronous facade (tibench's
  own files copied there, a client's output folders copied back, over SFTP);
- :mod:`.preflight`: reachable, tool present at one version, target reachable, clock offset;
- :mod:`.proc`: each host's CPU demand read from ``/proc`` over the same connection;
- :mod:`.execute`: one run's clients started at one agreed instant (the start barrier), raw
  logs streamed back, remote processes killed on failure or abort.

Series and histograms are merged by :mod:`tibenchlib.multiclient` like local clients' (YCSB's
HdrHistograms by :mod:`tibenchlib.ycsb.hdr`); :mod:`.runs` holds the sweep's runs and what every
phase shares (pre-flight per study, target and tool; the ``run_hosts`` rows).
"""
