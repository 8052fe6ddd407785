"""Real DM through its OpenAPI (DM ≥ 5.3): the task request with the swept settings, the task
status as the tidy rows of :mod:`.dmctl`, and a small client.

DM's OpenAPI task has ``export_threads`` (mydumper ``threads``), ``import_threads`` (the loader's
pool-size), ``repl_threads`` (the syncer's worker-count) and ``repl_batch``; mydumper's ``rows``
and ``statement_size`` have no OpenAPI field, so :func:`task_request` returns them as warnings
(``dm.api: dmctl`` sends them in a task file, :mod:`.taskfile`).

``GET /api/v1/tasks`` returns the target password in clear: :func:`masked` is what may be stored
or shown.
"""

from __future__ import annotations

import copy
import json

import pandas as pd

from ..db import ConnInfo
from ..httpclient import Access, HttpClient, HttpError
from .dmctl import STATUS_COLUMNS, DmStatusError, status_row
from .dump import DumpSettings
from .load import LoadSettings
from .taskfile import check_task

API = "/api/v1"


def task_request(
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
    data_dir: str = "./dumped_data",
) -> tuple[dict, list[str]]:
    """The body of ``POST /api/v1/tasks`` migrating ``schema`` from ``source_name`` to
    ``target``, and warnings for settings the API cannot carry.

    Settings map: dump ``threads`` → ``export_threads``, load ``threads`` (pool-size) →
    ``import_threads``, ``workers`` (worker-count) → ``repl_threads``, ``batch`` →
    ``repl_batch``.
    """
    check_task(name, task_mode, workers, batch)
    warnings = []
    if dump.rows is not None:
        warnings.append(
            f"dump rows={dump.rows} has no OpenAPI field: DM uses its own chunking "
            "(dm.api: dmctl sends it in a task file)"
        )
    if dump.statement_size != DumpSettings().statement_size:
        warnings.append(
            f"dump statement_size={dump.statement_size} has no OpenAPI field "
            "(dm.api: dmctl sends it in a task file)"
        )
    body = {
        "remove_meta": True,
        "source_name_list": [source_name],
        "task": {
            "name": name,
            "task_mode": task_mode,
            "shard_mode": "pessimistic",
            "meta_schema": "dm_meta",
            "enhance_online_schema_change": True,
            "on_duplicate": "error",
            "target_config": {
                "host": target.host,
                "port": target.port,
                "user": target.user,
                "password": target.password or "",
            },
            "table_migrate_rule": [
                {
                    "source": {"source_name": source_name, "schema": schema, "table": "*"},
                    "target": {"schema": schema, "table": "*"},
                }
            ],
            "source_config": {
                "full_migrate_conf": {
                    "export_threads": dump.threads,
                    "import_threads": load.threads,
                    "data_dir": data_dir,
                    "consistency": "auto",
                },
                "incr_migrate_conf": {"repl_threads": workers, "repl_batch": batch},
                "source_conf": [{"source_name": source_name}],
            },
        },
    }
    return body, warnings


def masked(body: dict) -> dict:
    """A copy of a task request or task with every ``password`` shown as ``***``."""

    def walk(o):
        if isinstance(o, dict):
            return {k: ("***" if k == "password" and v else walk(v)) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v) for v in o]
        return o

    return walk(copy.deepcopy(body))


def parse_task_status(obj: dict | str) -> pd.DataFrame:
    """``GET /api/v1/tasks/{task}/status`` (JSON text or parsed) → :data:`STATUS_COLUMNS` rows,
    one per source of the task. The documented schema carries no error text: ``stage`` (Paused)
    tells a failed subtask; ``dmctl query-status`` gives the error."""
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as e:
            raise DmStatusError(f"DM OpenAPI status is not valid JSON: {e}") from None
    if "data" not in obj:
        raise DmStatusError("DM OpenAPI status has no 'data': not a task status list")
    rows = []
    for st in obj["data"] or []:
        rows.append(
            status_row(
                task=st.get("name"),
                source=st.get("source_name"),
                worker=st.get("worker_name"),
                stage=st.get("stage"),
                unit=st.get("unit"),
                sync=st.get("sync_status"),
                load=st.get("load_status"),
                # the documented schema has no error field: a Paused stage is the failure
                error=None,
            )
        )
    return pd.DataFrame(rows, columns=STATUS_COLUMNS)


def finished(status: pd.DataFrame, task_mode: str = "all") -> bool:
    """Whether every subtask is done with its full phase (``full``: stage Finished; ``all``:
    in the sync unit and synced)."""
    if not len(status):
        return False
    if task_mode == "full":
        return bool((status["stage"].str.lower() == "finished").all())
    return bool(((status["unit"] == "sync") & (status["synced"] == True)).all())  # noqa: E712


class DmClient:
    """A minimal client of a DM master's OpenAPI (``http://host:8261``); ``access`` is TLS and
    authentication (the study's ``dm.master_http``)."""

    def __init__(self, master_url: str, access: Access | None = None, timeout_s: float = 30):
        self.http = HttpClient(master_url.rstrip("/") + API, access, timeout_s)
        self.base = self.http.base_url
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        try:
            text = self.http.request(method, path, json=body).text
        except HttpError as e:
            if e.unreachable:
                raise DmStatusError(f"DM master unreachable: {e}") from None
            detail = " ".join(e.body.split())[:300]
            err = DmStatusError(f"DM OpenAPI {method} {path}: HTTP {e.status}: {detail}")
            err.http_status = e.status
            raise err from None
        try:
            return json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as e:
            raise DmStatusError(f"DM OpenAPI {method} {path}: answer is not JSON: {e}") from None

    def masters(self) -> dict:
        return self._call("GET", "/cluster/masters")

    def check(self) -> dict:
        """The master answers (its masters' list)."""
        return self.masters()

    def create_task(self, body: dict) -> dict:
        return self._call("POST", "/tasks", body)

    def start_task(self, name: str, *, remove_meta: bool = True) -> dict:
        """Start a task; ``remove_meta`` (its first start) drops the checkpoints, so the task
        migrates from scratch; a stopped task resumes from them with ``remove_meta=False``."""
        return self._call("POST", f"/tasks/{name}/start", {"remove_meta": remove_meta})

    def stop_task(self, name: str) -> dict:
        return self._call("POST", f"/tasks/{name}/stop")

    # the sync runs' stop and catch-up, the same names as :class:`.dmctl_client.DmctlClient`
    def pause_task(self, name: str) -> dict:
        return self.stop_task(name)

    def resume_task(self, name: str) -> dict:
        return self.start_task(name, remove_meta=False)

    def status(self, name: str) -> pd.DataFrame:
        return parse_task_status(self._call("GET", f"/tasks/{name}/status"))

    def delete_task(self, name: str) -> dict:
        return self._call("DELETE", f"/tasks/{name}?force=true")
