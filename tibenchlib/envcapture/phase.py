"""The environment phase: client host and database of every arm, saved as JSON and in the
catalog."""

from __future__ import annotations

import pandas as pd

from .. import paths
from ..hosts.capture import capture_client_hosts, client_host_sections
from ..kube.capture import capture_kubernetes
from ..phase import Phase, RunContext
from ..target import open_arm
from .database import capture_database
from .host import capture_host, host_summary
from .plan import estimate
from .redaction import save_capture


class Environment(Phase):
    name = "environment"
    notebook = "00_environment.ipynb"
    summary = "client host and database of every arm"
    titles = {"en": "Environment", "zh": "测试环境"}

    estimate = staticmethod(estimate)

    def run(self, ctx: RunContext, *, arms=None, redo=False) -> pd.DataFrame:
        study, store = ctx.study, ctx.store
        rows = []
        for label in arms or self.arms(study):
            arm = open_arm(study, label, yes=ctx.yes, store=store)
            data_dir = arm.server.datadir if arm.server else paths.study_dir(study.study)
            eng = arm.engine()
            try:
                cap = {
                    "arm": label,
                    "target": arm.conn.masked_url(),
                    "host": capture_host(data_dir=data_dir),
                    "database": capture_database(eng, arm.info.flavor),
                }
            finally:
                eng.dispose()
            if client_host_sections(study):
                cap["client_hosts"] = capture_client_hosts(study, arm.conn)
            k8s = study.target_for(arm.arm).kubernetes
            if k8s is not None:
                cap["kubernetes"] = capture_kubernetes(k8s)
            save_capture(cap, paths.environment_file(study.study, label))
            store.record_environment(study.study, label, cap)
            rows.append(
                {
                    "arm": label,
                    "flavor": arm.info.flavor,
                    "version": arm.info.version,
                    **host_summary(cap["host"]),
                }
            )
        return pd.DataFrame(rows)

    def stored(self, study, store, arms) -> bool:
        caps = store.environment_captures(study.study)
        return all(a in caps for a in arms)

    def results(self, study, store, arms) -> pd.DataFrame:
        caps = store.environment_captures(study.study)
        rows = []
        for a in arms:
            if a in caps:
                db = caps[a].get("database", {})
                rows.append(
                    {
                        "arm": a,
                        "flavor": db.get("flavor"),
                        "version": db.get("version"),
                        **host_summary(caps[a].get("host", {})),
                    }
                )
        return pd.DataFrame(rows)

    def progress(self, study, store, add) -> None:
        have = set(store.read("environment", study.study)["arm"])
        for a in self.arms(study):
            add(self.name, a, "captures", 1, int(a in have), 0)


ENVIRONMENT = Environment()
