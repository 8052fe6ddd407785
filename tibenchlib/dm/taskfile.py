"""DM task files (``task.yaml``) for ``dmctl start-task``: one arm's settings, in the dialect of
the cluster's DM version.

The keys follow DM's "task configuration file (full)" pages for v1.0, v2.0 and v5.3+
(docs.pingcap.com, ``tidb-data-migration/<version>/task-configuration-file-full``) and "Optimize
Configuration of DM" (``dm-tune-configuration``):

* ``mydumpers.<name>``: ``threads``, ``chunk-filesize``, ``extra-args``; since DM 2.0 also
  ``rows`` (single-table concurrent export). DM 1.0 runs mydumper itself, so report 003 set rows
  and statement size as mydumper flags in ``extra-args`` (``-r 320000 -s 1000000``); from 2.0
  the dump unit is dumpling, which takes ``--statement-size`` in ``extra-args`` too.
* ``loaders.<name>``: ``pool-size`` (the load threads), ``dir``.
* ``syncers.<name>``: ``worker-count``, ``batch``.
* the table filter is ``block-allow-list`` since DM 2.0 (``black-white-list`` before).
* DM 1.0 reads ``remove-meta`` from the task file; later versions take ``--remove-meta`` on
  ``start-task`` (:func:`start_args`).

The target's password is in the file DM reads (DM accepts it plain or ``dmctl encrypt``-ed):
that file is written 0600 under the study's private folder and removed after ``start-task``;
what is kept as raw output is :func:`masked`.
"""

from __future__ import annotations

import copy
import re

import yaml

from ..db import ConnInfo
from .dump import DumpSettings
from .load import LoadSettings

__all__ = ["check_task", "dm_version", "masked", "start_args", "task_file", "task_yaml"]

CONFIG = "tibench"  # the one mydumper/loader/syncer config each task uses


def dm_version(version: str | None) -> tuple[int, int]:
    """``"v1.0.7"`` → ``(1, 0)``; None (not given) is a current DM."""
    if version is None:
        return (99, 0)
    m = re.match(r"^v?(\d+)(?:\.(\d+))?", version.strip())
    if not m:
        raise ValueError(f"dm.version {version!r} is not a version like v1.0.7 or 5.4.0")
    return int(m.group(1)), int(m.group(2) or 0)


def check_task(name: str, task_mode: str, workers: int, batch: int) -> None:
    """What a DM task needs of its settings, for the task file and the OpenAPI request alike."""
    if task_mode not in ("all", "full", "incremental"):
        raise ValueError(f"dm task_mode '{task_mode}' is not one of all, full, incremental")
    if workers < 1 or batch < 1:
        raise ValueError(f"dm workers and batch must be ≥ 1, got {workers} and {batch}")
    if not re.match(r"^[A-Za-z0-9_-]+$", name):
        raise ValueError(f"dm task name {name!r}: letters, digits, _ and - only")


def task_file(
    name: str,
    *,
    source_name: str,
    target: ConnInfo,
    schema: str,
    dump: DumpSettings,
    load: LoadSettings,
    workers: int = 16,
    batch: int = 100,
    task_mode: str = "all",
    version: str | None = None,
    data_dir: str = "./dumped_data",
) -> dict:
    """The task file of one arm: ``schema`` of ``source_name`` migrated to ``target`` with the
    dump, load and sync settings (rows and statement size included, unlike the OpenAPI)."""
    check_task(name, task_mode, workers, batch)
    old = dm_version(version) < (2, 0)
    rule = "tibench-rule"
    filter_key = "black-white-list" if old else "block-allow-list"
    extra = []
    if old and dump.rows is not None:
        extra.append(f"-r {dump.rows}")
    extra.append(f"{'-s' if old else '--statement-size'} {dump.statement_size}")
    mydumper: dict = {"threads": dump.threads, "chunk-filesize": 64, "extra-args": " ".join(extra)}
    if not old and dump.rows is not None:
        mydumper["rows"] = dump.rows
    doc: dict = {
        "name": name,
        "task-mode": task_mode,
        "meta-schema": "dm_meta",
        "target-database": {
            "host": target.host,
            "port": target.port,
            "user": target.user,
            "password": target.password or "",
        },
        "mysql-instances": [
            {
                "source-id": source_name,
                filter_key: rule,
                "mydumper-config-name": CONFIG,
                "loader-config-name": CONFIG,
                "syncer-config-name": CONFIG,
            }
        ],
        filter_key: {rule: {"do-dbs": [schema]}},
        "mydumpers": {CONFIG: mydumper},
        "loaders": {CONFIG: {"pool-size": load.threads, "dir": data_dir}},
        "syncers": {CONFIG: {"worker-count": workers, "batch": batch}},
    }
    if old:
        doc["remove-meta"] = True
    return doc


def start_args(version: str | None) -> list[str]:
    """Flags of ``start-task`` before the file: ``--remove-meta`` from DM 2.0 (1.0 reads
    ``remove-meta`` from the file), so every run starts from a clean checkpoint."""
    return [] if dm_version(version) < (2, 0) else ["--remove-meta"]


def task_yaml(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def masked(doc: dict) -> dict:
    """A copy with the target's password shown as ``***`` (what may be kept or shown)."""
    out = copy.deepcopy(doc)
    if out.get("target-database", {}).get("password"):
        out["target-database"]["password"] = "***"
    return out
