"""tibench's own builds of go-ycsb and go-tpc: pinned versions, fetched by the ``go`` command from
the Go module proxy and built once per version into a cache outside the clone.

Both tools are Go modules that the proxy serves. go-ycsb cannot be ``go install``-ed (its
``go.mod`` carries a ``replace`` directive, which Go refuses for ``go install …@version``), so
both are built the same way: ``go mod download -json <module>@<version>`` (Go checks the module
against the checksum database, and :func:`build` against the hash pinned here), the module's
folder copied and made writable, ``go build`` of its command there, every dependency checked
against the module's own ``go.sum``. go-ycsb keeps only its ``mysql`` binding (and ``basic``,
its test database): its command imports every back end it has (TiKV, Spanner, RocksDB…); built
cold (an empty Go build cache) on a busy 2-core machine, the trimmed build took 39 s of CPU and
3 min of wall time for 15.5 MB, every back end 207 s of CPU and 15 min for 98.8 MB.

The builds live in ``<cache>/<tool>-<version>[-<flavour>]/`` (:func:`cache_dir`:
``TIBENCH_TOOLS_CACHE``, else ``$XDG_CACHE_HOME/tibench/go``, else ``~/.cache/tibench/go``),
each beside a ``source.json`` saying what it was built from, so every clone and data directory
of the same user shares them. ``python -m tibenchlib.gobuild`` builds what is missing.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "GO_HINT",
    "TOOLS",
    "GoBuildError",
    "GoTool",
    "build",
    "build_all",
    "built",
    "cache_dir",
    "find_go",
    "source_of",
]

#: What to install when the ``go`` command is missing.
GO_HINT = "install Go 1.21 or later (apt-get install golang-go, or go.dev/dl into /usr/local/go)"
#: Where the official Go archive is unpacked, used when ``go`` is not on PATH.
_GO_DEFAULT = Path("/usr/local/go/bin/go")
_SOURCE = "source.json"


class GoBuildError(RuntimeError):
    """A pinned Go tool could not be fetched or built."""


@dataclass(frozen=True)
class GoTool:
    """One pinned Go command: its module, version, the module's ``h1:`` hash (as in a
    ``go.sum``), the command's package inside the module and the back ends kept (go-ycsb)."""

    name: str
    module: str
    version: str
    sum: str
    package: str
    keep_db: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The cache folder's name: tool, version and, for a trimmed build, what it keeps."""
        flavour = "-" + "+".join(self.keep_db) if self.keep_db else ""
        return f"{self.name}-{self.version}{flavour}"


#: The tools report 001 runs, at the versions tibench is tested with.
TOOLS: dict[str, GoTool] = {
    "go-ycsb": GoTool(
        "go-ycsb",
        "github.com/pingcap/go-ycsb",
        "v1.0.3",
        "h1:WP3/GwQWGBA148h+5s1ZpyF+pjqLTJY3SIIz8RkkbpQ=",
        "./cmd/go-ycsb",
        keep_db=("basic", "mysql"),
    ),
    "go-tpc": GoTool(
        "go-tpc",
        "github.com/pingcap/go-tpc",
        "v1.0.7",
        "h1:su+ZPXu4X3jf8GZOkP/iH0HBfyWmBqhhmL+TGyn1fl4=",
        "./cmd/go-tpc",
    ),
}


def cache_dir() -> Path:
    """The folder holding the builds, shared by every clone of the user."""
    env = os.environ.get("TIBENCH_TOOLS_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "tibench" / "go"


def find_go() -> str | None:
    """The ``go`` command: on PATH, else the official archive's ``/usr/local/go/bin/go``."""
    go = shutil.which("go")
    if go:
        return go
    return str(_GO_DEFAULT) if os.access(_GO_DEFAULT, os.X_OK) else None


def built(name: str) -> Path | None:
    """The cached build of ``name`` (a key of :data:`TOOLS`), or None when it is not built."""
    tool = TOOLS.get(name)
    if tool is None:
        return None
    exe = cache_dir() / tool.key / tool.name
    return exe if exe.is_file() and (exe.parent / _SOURCE).is_file() else None


def source_of(exe: str | Path) -> dict | None:
    """What a cached build was made from (module, version, hash, Go version, when), or None
    for an executable that is not one of tibench's builds."""
    f = Path(exe).parent / _SOURCE
    try:
        return json.loads(f.read_text()) if f.is_file() else None
    except (OSError, ValueError):
        return None


def _go_env() -> dict[str, str]:
    # the module proxy only, every module checked against the checksum database (through the
    # proxy, as Go does by default): settings a user's environment may carry are reset
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GONOSUM", "GOINSECURE"))}
    env.update(
        GOPROXY="https://proxy.golang.org",
        GOSUMDB="sum.golang.org",
        GOPRIVATE="",
        GONOPROXY="",
        GOFLAGS="-mod=mod -buildvcs=false",
        GOTOOLCHAIN="local",
    )
    return env


def _go(go: str, args: list[str], cwd: Path | None = None) -> str:
    r = subprocess.run(
        [go, *args], cwd=cwd, env=_go_env(), capture_output=True, text=True, check=False
    )
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise GoBuildError(f"go {' '.join(args)} failed: {' | '.join(tail)}")
    return r.stdout


def _trim_backends(main_go: Path, keep: tuple[str, ...]) -> None:
    """Drop the back-end imports of go-ycsb's command not in ``keep`` (each is a blank import
    of ``…/go-ycsb/db/<name>`` that registers it)."""
    text = main_go.read_text()
    pattern = re.compile(r'^\s*_ "github\.com/pingcap/go-ycsb/db/(\w+)"\s*$', re.M)
    found = set(pattern.findall(text))
    if not set(keep) <= found:
        raise GoBuildError(f"{main_go}: no import of the back ends {sorted(set(keep) - found)}")
    main_go.write_text(pattern.sub(lambda m: m.group(0) if m.group(1) in keep else "", text))


def build(name: str, *, force: bool = False) -> Path:
    """Build ``name`` (a key of :data:`TOOLS`) into the cache unless it is there; returns the
    executable. Several processes building at once wait for the first (a lock per tool).

    Raises
    ------
    GoBuildError
        ``go`` is missing (the message names what to install), the module's hash differs from
        the pinned one, or the download or build failed.
    """
    tool = TOOLS[name]
    if not force and (exe := built(name)):
        return exe
    go = find_go()
    if go is None:
        raise GoBuildError(f"{name} is built with the go command, which is missing: {GO_HINT}")
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{tool.key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and (exe := built(name)):
            return exe  # another process built it while this one waited
        return _build_locked(go, tool, root)


def _build_locked(go: str, tool: GoTool, root: Path) -> Path:
    t0 = time.monotonic()
    info = json.loads(_go(go, ["mod", "download", "-json", f"{tool.module}@{tool.version}"]))
    if info.get("Sum") != tool.sum:
        raise GoBuildError(
            f"{tool.module}@{tool.version}: the module's hash is {info.get('Sum')}, "
            f"expected {tool.sum}"
        )
    with tempfile.TemporaryDirectory(prefix=f".{tool.key}-", dir=root) as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(info["Dir"], src)
        for d, _dirs, files in os.walk(src):  # the module cache's copy is read-only
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(Path(d) / f, 0o644)
        if tool.keep_db:
            _trim_backends(src / tool.package / "main.go", tool.keep_db)
        out = Path(tmp) / tool.name
        _go(go, ["build", "-o", str(out), tool.package], cwd=src)
        version = _go(go, ["env", "GOVERSION"]).strip()
        dest = root / tool.key
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir()
        shutil.move(out, dest / tool.name)
        (dest / _SOURCE).write_text(
            json.dumps(
                {
                    "tool": tool.name,
                    "module": tool.module,
                    "version": tool.version,
                    "sum": tool.sum,
                    "backends": list(tool.keep_db) or None,
                    "go": version,
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "build_s": round(time.monotonic() - t0, 1),
                },
                indent=1,
            )
            + "\n"
        )
    return dest / tool.name


def build_all(names: list[str] | None = None) -> int:
    """Build every tool (or ``names``) that is missing, one line for each one built; 0 when
    all are there or ``go`` is missing (one line names what to install: the tests that run
    these tools skip), 1 when a build failed (its line says why)."""
    names = names or list(TOOLS)
    missing = [n for n in names if built(n) is None]
    if missing and find_go() is None:
        print(f"tibench setup: {' and '.join(missing)} not built: {GO_HINT}", file=sys.stderr)
        return 0
    rc = 0
    for name in missing:
        t0 = time.monotonic()
        try:
            exe = build(name)
        except GoBuildError as e:
            print(f"tibench setup: {e}", file=sys.stderr)
            rc = 1
            continue
        print(f"tibench setup: {name} {TOOLS[name].version} built in "
              f"{time.monotonic() - t0:.0f} s: {exe}")  # fmt: skip
    return rc


if __name__ == "__main__":  # pragma: no cover - make setup's entry
    sys.exit(build_all(sys.argv[1:] or None))
