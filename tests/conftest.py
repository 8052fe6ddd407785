"""Shared fixtures: a private MariaDB for the whole test session, started and stopped here, and a
private data directory per test."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from tibenchlib import paths
from tibenchlib.dm.servers import target_server
from tibenchlib.server import (
    TEMPLATE_ENV,
    EmbeddedServer,
    ServerError,
    embedded,
    make_datadir_template,
)


def pytest_configure(config):
    # As root, the embedded MariaDB runs as the mysql user, which must reach its datadir. pytest
    # makes /tmp/pytest-of-root 0700 again at the start of every session (anyone's), so servers
    # under it would lose their path mid-run: give root's sessions a base of their own instead.
    if os.geteuid() == 0 and not config.option.basetemp:
        tag = hashlib.sha1(str(config.rootpath).encode()).hexdigest()[:10]
        config.option.basetemp = str(Path(tempfile.gettempdir()) / f"tibench-pytest-{tag}")
        config.stash[_OWN_BASETEMP] = Path(config.option.basetemp)
    # One pristine datadir for the session's sixty-odd servers (and the tibench processes the
    # tests start), copied instead of running mariadb-install-db for each; made once, before
    # pytest-xdist's workers start, which inherit the variable.
    if not hasattr(config, "workerinput") and not os.environ.get(TEMPLATE_ENV):
        top = Path(tempfile.mkdtemp(prefix="tibench-pytest-datadir-"))
        try:
            os.environ[TEMPLATE_ENV] = str(make_datadir_template(top / "datadir"))
            config.stash[_OWN_TEMPLATE] = top
        except ServerError:  # no MariaDB here: the tests that need it skip
            shutil.rmtree(top, ignore_errors=True)
    if not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
        _rewrite_test_modules_once(config)


def _rewrite_test_modules_once(config) -> None:
    """pytest rewrites the asserts of the test modules it imports (their failure messages) and
    caches the rewritten code in ``__pycache__`` only where Python may write bytecode: with
    ``PYTHONDONTWRITEBYTECODE`` set (as in CI here), each of pytest-xdist's workers rewrites all
    of them again, about 5 s of CPU each. The controller writes that cache once before the
    workers start, and they read it (pytest reads a valid cache whatever the variable says).

    pytest's own rewriting, through its private module: should it change, the cache is not
    written and each worker rewrites for itself, as before."""
    try:
        from _pytest.assertion import rewrite

        if config.getoption("assertmode") != "rewrite":
            return
        state = config.stash[rewrite.assertstate_key]
        for fn in sorted(Path(__file__).parent.glob("test_*.py")):
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc):
                continue
            pyc.parent.mkdir(exist_ok=True)
            source_hash, co = rewrite._rewrite_test(fn, config)
            rewrite._write_pyc(state, co, source_hash, pyc)
    except Exception:  # noqa: BLE001 - only a cache; the workers rewrite what it lacks
        return


def pytest_unconfigure(config):
    top = config.stash.get(_OWN_TEMPLATE, None)
    if top is not None:
        os.environ.pop(TEMPLATE_ENV, None)
        shutil.rmtree(top, ignore_errors=True)


_OWN_BASETEMP = pytest.StashKey[Path]()
_OWN_TEMPLATE = pytest.StashKey[Path]()


def pytest_sessionfinish(session, exitstatus):
    """A passed session removes the base directory it chose (pytest removes only the ones it
    chose itself): every clone has its own, and each left behind holds its servers' datadirs."""
    config = session.config
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is None or hasattr(config, "workerinput") or exitstatus != 0:
        return
    shutil.rmtree(own, ignore_errors=True)


#: The one test file that starts from the CI study's run and checks it (its terminal output, its
#: executed notebooks, its report); it goes first, being the longest.
CI_STUDY_HEAD = "test_notebooks.py"
#: The test files that only read the CI study once measured (the notebooks opened in a browser on
#: a Chinese copy of the study, in two halves; the study resumed, nbval's re-execution; its
#: caveats on the terminal and in the report): each on a
#: worker of its own, given out as soon as the study exists (conftest's scheduler), the longest
#: first.
CI_STUDY_READERS = (
    "test_notebooks_browser.py",
    "test_notebooks_browser_tools.py",
    "test_notebooks_resume.py",
    "test_caveats_ci.py",
)
#: In the session's base directory (shared by pytest-xdist's workers): the CI study's run, once
#: measured, and the lock its first asker holds while it measures.
CI_STUDY_RESULT = "ci-study.json"


def _session_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base directory of the whole pytest session: a pytest-xdist worker's is inside it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` (Makefile's ``test``), each test file goes to one worker, in the
    order of :func:`pytest_collection_modifyitems`; a file that only reads the CI study is held
    back while the study is measured (its worker would only wait) and given out first once it
    exists.

    (xdist's own ``--dist loadgroup`` names its groups in node ids that this pytest no longer
    reads back.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # only under pytest-xdist

    # the controller's base directory, the one its workers' are made in (xdist reads it so)
    measured = config._tmp_path_factory.getbasetemp() / CI_STUDY_RESULT

    class ReadersOnceMeasured(LoadFileScheduling):
        def _assign_work_unit(self, node) -> None:
            readers = [s for s in self.workqueue if Path(s).name in CI_STUDY_READERS]
            others = [s for s in self.workqueue if s not in readers]
            if readers and (measured.exists() or not others):
                self.workqueue.move_to_end(readers[0], last=False)
            elif readers:
                self.workqueue.move_to_end(others[0], last=False)
            super()._assign_work_unit(node)

    return ReadersOnceMeasured(config, log)


def pytest_collection_modifyitems(config, items):
    """On a pytest-xdist worker, the CI study's run comes first (it is the longest), then the
    files that read it, then the files with the most slow tests, so that the longest work starts
    first (Makefile's ``--no-loadscope-reorder`` keeps this order rather than xdist's, by number
    of tests)."""
    if not hasattr(config, "workerinput"):
        return
    slow: dict[str, int] = {}
    for item in items:
        f = item.path.name
        slow[f] = slow.get(f, 0) + (item.get_closest_marker("slow") is not None)

    def rank(item) -> tuple[int, int]:
        f = item.path.name
        if f == CI_STUDY_HEAD:
            return (0, 0)
        return (1, CI_STUDY_READERS.index(f)) if f in CI_STUDY_READERS else (2, -slow[f])

    items[:] = sorted(items, key=rank)  # stable: the order inside a file holds


@pytest.fixture(scope="session")
def ci_study(tmp_path_factory, sysbench_bin) -> subprocess.CompletedProcess:
    """`tibench run params/ci.yaml` in the clone's data/ci, as a user runs it: once per pytest
    session, by the first worker that asks (the others wait on a file lock, pytest-xdist's
    pattern for a session fixture run once), its terminal output (stdout and stderr,
    interleaved) kept for every asker. The servers it started are stopped when it ends."""
    base = _session_base(tmp_path_factory)
    result = base / CI_STUDY_RESULT
    with open(base / f"{CI_STUDY_RESULT}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not result.exists():
            proc = _measure_ci_study()
            out = {"returncode": proc.returncode, "stdout": proc.stdout}
            # written whole, then renamed: the scheduler never reads half a file
            (base / f"{CI_STUDY_RESULT}.part").write_text(json.dumps(out))
            (base / f"{CI_STUDY_RESULT}.part").rename(result)
    out = json.loads(result.read_text())
    return subprocess.CompletedProcess(CI_STUDY_ARGS, out["returncode"], out["stdout"])


CI_STUDY_ARGS = [sys.executable, "-m", "tibenchlib.cli", "run", str(paths.ROOT / "params/ci.yaml")]


def _measure_ci_study() -> subprocess.CompletedProcess:
    with mock.patch.dict(os.environ):
        os.environ.pop("TIBENCH_DATA", None)
        # it starts from nothing, so the suite sees prepare and the sweep do real work; the
        # readers' re-executions then exercise resume (everything already measured)
        shutil.rmtree(paths.study_dir("ci"), ignore_errors=True)
        try:
            proc = subprocess.Popen(
                CI_STUDY_ARGS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                cwd=paths.ROOT,
            )  # fmt: skip
            with proc:
                _ahead(proc.pid)
                try:
                    out, _ = proc.communicate(timeout=3600)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    raise
            return subprocess.CompletedProcess(CI_STUDY_ARGS, proc.returncode, out)
        finally:
            embedded().stop()
            target_server().stop()  # the dm phase's second server


#: How far ahead of the other workers' load the CI study runs (a nice value).
CI_STUDY_NICE = -5


def _ahead(pid: int) -> None:
    """The CI study is the suite's longest path: every file that reads it waits until it is
    measured. Where the machine allows it (root), it runs ahead of the other workers' load:
    a lower nice value, set before it starts anything, so that its kernels, tools and servers
    inherit it. Elsewhere it runs as before."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, CI_STUDY_NICE)
    except OSError:
        pass


@pytest.fixture(scope="module")
def clone_data_dir():
    """The clone's own data/ (no ``TIBENCH_DATA``) for one module: the CI study is measured and
    read in data/ci there, whichever pytest-xdist worker runs it."""
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
