"""Running ``kubectl`` for one TiDB Operator cluster: its namespace, its kubeconfig context and
file, arguments as lists (never a shell string), a secret only ever on standard input."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from ..db import child_env

__all__ = ["Kubectl", "KubectlError"]


class KubectlError(RuntimeError):
    """kubectl is missing, or a call failed; the message is one line naming the call."""


@dataclass(frozen=True)
class Kubectl:
    """How to reach one namespace: ``kubectl [--context C] --namespace NS …``.

    ``kubeconfig_env`` names the variable holding the kubeconfig file's path; kubectl gets it
    as ``KUBECONFIG`` in its environment, so the path is not on the command line either.
    """

    namespace: str
    context: str | None = None
    kubeconfig_env: str | None = None
    binary: str = "kubectl"

    @classmethod
    def for_target(cls, k8s) -> Kubectl:
        """From a study's ``target.kubernetes`` (:class:`tibenchlib.params.KubernetesTarget`)."""
        return cls(namespace=k8s.namespace, context=k8s.context, kubeconfig_env=k8s.kubeconfig_env)

    def installed(self) -> str | None:
        """The path of the kubectl binary, or None."""
        return shutil.which(self.binary)

    def argv(self, args: Sequence[str]) -> list[str]:
        ctx = ["--context", self.context] if self.context else []
        return [self.binary, *ctx, "--namespace", self.namespace, *args]

    def env(self) -> dict[str, str]:
        env = child_env()
        if self.kubeconfig_env:
            path = os.environ.get(self.kubeconfig_env)
            if not path:
                raise KubectlError(
                    f"target.kubernetes.kubeconfig_env: {self.kubeconfig_env} is not set "
                    "(export it with the kubeconfig file's path)"
                )
            env["KUBECONFIG"] = path
        return env

    def run(self, args: Sequence[str], *, stdin: str | None = None, timeout: float = 60) -> str:
        """Run one call and return its standard output; a failure raises :class:`KubectlError`
        with kubectl's last line of standard error."""
        argv = self.argv(args)
        shown = " ".join(["kubectl", *args])
        try:
            res = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=self.env(),
            )
        except FileNotFoundError:
            raise KubectlError(f"{self.binary} is not installed (not found on PATH)") from None
        except subprocess.TimeoutExpired:
            raise KubectlError(f"{shown}: no answer within {timeout:g} s") from None
        if res.returncode != 0:
            lines = [ln for ln in (res.stderr or res.stdout).splitlines() if ln.strip()]
            why = lines[-1].strip() if lines else "printed nothing"
            raise KubectlError(f"{shown} exited with {res.returncode}: {why}")
        return res.stdout

    def start(self, args: Sequence[str]) -> subprocess.Popen:
        """Start a long call (``kubectl wait``) without waiting for it."""
        try:
            return subprocess.Popen(
                self.argv(args),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                env=self.env(),
            )
        except FileNotFoundError:
            raise KubectlError(f"{self.binary} is not installed (not found on PATH)") from None
