"""Build tibench's YCSB binding (``java/``) with Maven, once per version of its sources.

YCSB's own JDBC binding is not on Maven Central; its core (``site.ycsb:core:0.17.0``) and
MariaDB Connector/J are. ``java/`` holds a small binding over JDBC (``tibench.ycsb.JdbcClient``)
and a ``pom.xml``; :func:`build_binding` copies them to ``<home>/build-<hash>/``, runs
``mvn package`` there with a project-local repository (``<home>/m2``, never ``~/.m2``) and
returns the class path of the result. A second call with the same sources returns at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from .. import paths
from ..tools import ToolMissing, require

__all__ = [
    "BuildError",
    "SOURCE_DIR",
    "build_binding",
    "is_built",
    "require_java",
    "source_hash",
    "ycsb_home",
]

#: What to install when Java is missing (Debian/Ubuntu, then RHEL-like).
JAVA_HINT = "apt-get install default-jre-headless (Debian/Ubuntu) / dnf install java-headless"

#: The binding's Maven project, shipped inside the package.
SOURCE_DIR = Path(__file__).resolve().parent / "java"
#: The YCSB class that drives a load or a run, and tibench's binding for ``-db``.
CLIENT_CLASS = "site.ycsb.Client"
BINDING_CLASS = "tibench.ycsb.JdbcClient"
_MARKER = "classpath.txt"


def require_java() -> str:
    """The ``java`` that runs YCSB, checked to start (``java -version``): a JRE removed or
    broken after the binding was built fails here, once, before any run.

    Raises
    ------
    ToolMissing
        No ``java`` on PATH, or it does not start; the message names the package to install.
    """
    java = shutil.which("java")
    if not java:
        raise ToolMissing(f"java is not installed (YCSB runs on it): {JAVA_HINT}")
    try:
        r = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolMissing(f"{java} does not start ({e}): {JAVA_HINT}") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToolMissing(f"{java} does not start ({last}): {JAVA_HINT}")
    return java


class BuildError(RuntimeError):
    """Maven could not build the binding; the message ends with Maven's last lines."""


def ycsb_home() -> Path:
    """Where the built binding and its Maven repository live: ``<data dir>/ycsb``, or
    ``TIBENCH_YCSB_HOME`` (so several data directories share one build)."""
    return paths.ycsb_home()


def _sources(src: Path) -> list[Path]:
    return sorted([src / "pom.xml", *(src / "src").rglob("*.java")])


def source_hash(src: Path = SOURCE_DIR) -> str:
    """A short hash of the binding's sources: a changed source gets a new build directory."""
    h = hashlib.sha256()
    for p in _sources(src):
        h.update(p.relative_to(src).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def is_built(home: str | Path | None = None, *, src: Path = SOURCE_DIR) -> bool:
    """Whether :func:`build_binding` would find the binding of these sources already built
    (a build of older sources does not count: it is rebuilt)."""
    home = Path(home) if home is not None else ycsb_home()
    return (home / f"build-{source_hash(src)}" / _MARKER).is_file()


def build_binding(
    home: str | Path | None = None, *, src: Path = SOURCE_DIR, timeout_s: float = 900
) -> str:
    """The Java class path of YCSB core, MariaDB Connector/J and tibench's binding.

    Builds with ``mvn`` (``default-jdk-headless`` and ``maven`` from Debian) on first use; the
    jars Maven fetches go to ``<home>/m2``. Concurrent callers wait for one build.

    Parameters
    ----------
    home
        Build root; :func:`ycsb_home` when None.
    src
        The Maven project to build (the shipped ``java/`` folder by default).
    timeout_s
        Longest the first build (which downloads the jars) may take.

    Raises
    ------
    ToolMissing
        ``mvn`` or ``java`` is not installed.
    BuildError
        Maven failed; the message holds the end of its output.
    """
    home = Path(home) if home is not None else ycsb_home()
    build = home / f"build-{source_hash(src)}"
    marker = build / _MARKER
    # Java first: a binding built earlier is of no use without it, and a phase calls this
    # before its first run
    require_java()
    if marker.is_file():
        return marker.read_text().strip()
    mvn = require("mvn")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file():  # built by another caller while this one waited
            return marker.read_text().strip()
        shutil.rmtree(build, ignore_errors=True)
        shutil.copytree(src, build, ignore=shutil.ignore_patterns("target"))
        log = build / "maven.log"
        cmd = [mvn, "-B", "-q", f"-Dmaven.repo.local={home / 'm2'}", "-DskipTests", "package"]
        with open(log, "wb") as out:
            try:
                rc = subprocess.run(
                    cmd, cwd=build, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
                ).returncode
            except subprocess.TimeoutExpired:
                rc = None
        if rc != 0:
            tail = log.read_text(errors="replace")[-2000:]
            why = "timed out" if rc is None else f"exited {rc}"
            raise BuildError(f"building the YCSB binding in {build}: mvn {why}:\n{tail}")
        target = build / "target"
        jars = sorted(target.glob("*.jar")) + sorted((target / "lib").glob("*.jar"))
        if not any(j.name.startswith("core-") for j in jars):
            raise BuildError(f"mvn built {build} but YCSB core is not among {target}/lib")
        cp = os.pathsep.join(str(j) for j in jars)
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(cp + "\n")
        tmp.replace(marker)  # written last: a killed build is rebuilt, never half-used
        return cp
