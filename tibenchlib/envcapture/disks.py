"""The disks: the data directory's filesystem and block device, and every block device's kind
and size from sysfs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil

from .record import unavailable
from .sources import _Host, _read_or_unavailable


def _block_parent(sys_root: Path, name: str) -> str:
    # A partition's sysfs entry sits inside its disk's: class/block/vda1 -> .../block/vda/vda1.
    entry = sys_root / "class/block" / name
    if (entry / "partition").exists():
        return entry.resolve().parent.name
    return name


def _block_device(sys_root: Path, name: str) -> dict:
    base = sys_root / "block" / name
    rot = _read_or_unavailable(base / "queue/rotational")
    size = _read_or_unavailable(base / "size")
    return {
        "name": name,
        "rotational": rot == "1" if isinstance(rot, str) else rot,
        # sysfs counts 512-byte sectors whatever the device's own sector size.
        "size_bytes": int(size) * 512 if isinstance(size, str) and size.isdigit() else size,
        "model": _read_or_unavailable(base / "device/model"),
    }


def _collect_disks(h: _Host) -> dict:
    disks: dict[str, Any] = {}
    if h.data_dir is None:
        disks["data_dir"] = unavailable("no data directory given")
    else:
        path = h.data_dir.expanduser().absolute()
        existing = path
        # The study's folder may not exist before its first run; its parent's disk is the one.
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        usage = psutil.disk_usage(str(existing))
        parts = [
            p
            for p in psutil.disk_partitions(all=True)
            if str(existing) == p.mountpoint
            or str(existing).startswith(p.mountpoint.rstrip("/") + "/")
        ]
        part = max(parts, key=lambda p: len(p.mountpoint), default=None)
        info: dict[str, Any] = {
            "path": str(path),
            "exists": path.exists(),
            "total": usage.total,
            "used": usage.used,
            "free": usage.free,
        }
        if part is None:
            info["mountpoint"] = unavailable("no mounted filesystem holds the data directory")
        else:
            info.update(
                mountpoint=part.mountpoint,
                device=part.device,
                fstype=part.fstype,
                options=part.opts,
            )
            if part.device.startswith("/dev/"):
                name = os.path.basename(os.path.realpath(part.device))
                disk = _block_parent(h.sys, name)
                info["block_device"] = disk
                info["rotational"] = _block_device(h.sys, disk)["rotational"]
            else:
                info["block_device"] = unavailable(f"{part.device} is not a block device")
        disks["data_dir"] = info
    try:
        names = sorted(p.name for p in (h.sys / "block").iterdir())
        disks["block_devices"] = [
            _block_device(h.sys, n) for n in names if not n.startswith(("loop", "ram"))
        ]
    except OSError as e:
        disks["block_devices"] = unavailable(f"cannot list {h.sys / 'block'}: {e.strerror or e}")
    return disks
