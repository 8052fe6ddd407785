"""Shared fixtures: a private MariaDB for the whole test session, started and stopped here, and a
private data directory per test."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from tibenchlib import paths
from tibenchlib.server import EmbeddedServer, embedded


def pytest_configure(config):
    # As root, the embedded MariaDB runs as the mysql user, which must reach its datadir. pytest
    # makes /tmp/pytest-of-root 0700 again at the start of every session (anyone's), so servers
    # under it would lose their path mid-run: give root's sessions a base of their own instead.
    if os.geteuid() == 0 and not config.option.basetemp:
        tag = hashlib.sha1(str(config.rootpath).encode()).hexdigest()[:10]
        config.option.basetemp = str(Path(tempfile.gettempdir()) / f"tibench-pytest-{tag}")
        config.stash[_OWN_BASETEMP] = Path(config.option.basetemp)


_OWN_BASETEMP = pytest.StashKey[Path]()


def pytest_sessionfinish(session, exitstatus):
    """A passed session removes the base directory it chose (pytest removes only the ones it
    chose itself): every clone has its own, and each left behind holds its servers' datadirs."""
    config = session.config
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is None or hasattr(config, "workerinput") or exitstatus != 0:
        return
    shutil.rmtree(own, ignore_errors=True)


#: The CI study's chain, in this order: `tibench run params/ci.yaml` in the clone's data/, then
#: the notebooks opened in a browser and on a Chinese study, which read what it measured, and
#: nbval's re-execution of its executed notebooks (a resume).
CI_STUDY_CHAIN = (
    "test_notebooks.py",
    "test_notebooks_browser.py",
    "test_notebooks_zh.py",
    "test_notebooks_resume.py",
)


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` (Makefile's ``test``), each test file goes to one worker, and
    the CI study's chain is one unit on one worker, in its order.

    (xdist's own ``--dist loadgroup`` names its groups in node ids that this pytest no longer
    reads back.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # only under pytest-xdist

    class ChainAsOneFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "ci-study-chain" if Path(scope).name in CI_STUDY_CHAIN else scope

    return ChainAsOneFile(config, log)


def pytest_collection_modifyitems(config, items):
    """On a pytest-xdist worker, the CI study's chain comes first (it is the longest), then the
    files with the most slow tests, so that the longest work starts first (Makefile's
    ``--no-loadscope-reorder`` keeps this order rather than xdist's, by number of tests)."""
    if not hasattr(config, "workerinput"):
        return
    slow: dict[str, int] = {}
    for item in items:
        f = item.path.name
        slow[f] = slow.get(f, 0) + (item.get_closest_marker("slow") is not None)

    def rank(item) -> tuple[int, int]:
        f = item.path.name
        return (0, CI_STUDY_CHAIN.index(f)) if f in CI_STUDY_CHAIN else (1, -slow[f])

    items[:] = sorted(items, key=rank)  # stable: the order inside a file holds


@pytest.fixture(scope="module")
def clone_data_dir():
    """The clone's own data/ (no ``TIBENCH_DATA``) for one module: the CI study's chain measures
    and reads data/ci there, whichever pytest-xdist worker runs it."""
    with mock.patch.dict(os.environ):
        os.environ.pop("TIBENCH_DATA", None)
        yield paths.data_dir()


@pytest.fixture(scope="session", autouse=True)
def _worker_data_dir(tmp_path_factory):
    """Under pytest-xdist, each worker's default data directory (``TIBENCH_DATA``) is its own, so
    workers never share a catalog, a study lock or the embedded server; the one that a test
    started in it is stopped at the end."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("TIBENCH_DATA"):
        yield None
        return
    d = tmp_path_factory.getbasetemp() / "data"
    shared = {"TIBENCH_YCSB_HOME": str(paths.ycsb_home())}  # one YCSB build, as in one process
    with mock.patch.dict(os.environ, {"TIBENCH_DATA": str(d), **shared}):
        yield d
        embedded().stop()


def _have_mariadb() -> bool:
    try:
        from tibenchlib.server import find_binary

        find_binary("mariadbd", "mysqld")
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory):
    """A started :class:`EmbeddedServer` (own datadir, 127.0.0.1, free port) for the session."""
    if not _have_mariadb():
        pytest.skip("mariadbd is not installed (make setup installs it)")
    srv = EmbeddedServer(name="pytest", root=tmp_path_factory.mktemp("mariadb"))
    srv.ensure()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def mariadb_engine(mariadb):
    """SQLAlchemy engine on the session's MariaDB, database ``sbtest``."""
    eng = mariadb.conninfo().engine()
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def sysbench_bin():
    path = shutil.which("sysbench")
    if not path:
        pytest.skip("sysbench is not installed (make setup installs it)")
    return path


@pytest.fixture
def kill_after():
    """``kill_after(proc)`` returns ``proc`` and kills it (then waits) when the test ends."""
    procs: list[subprocess.Popen] = []

    def register(proc: subprocess.Popen) -> subprocess.Popen:
        procs.append(proc)
        return proc

    yield register
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A private data directory (``TIBENCH_DATA``) for one test; the embedded server a phase
    started in it is stopped afterwards."""
    d = tmp_path / "data"
    monkeypatch.setenv("TIBENCH_DATA", str(d))
    yield d
    embedded().stop()
