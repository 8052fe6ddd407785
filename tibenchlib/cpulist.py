"""Kernel CPU and node lists (``0-3,8,10-11``): read and written, nothing else.

The one place that knows the kernel's list syntax; :mod:`tibenchlib.binding`, the host capture
and the topology reader all use it.
"""

from __future__ import annotations

import re


def parse_cpulist(text: str) -> list[int]:
    """Parse a kernel CPU/node list such as ``"0-3,8,10-11"`` into sorted integers.

    Raises
    ------
    ValueError
        When the text is not a list of integers and ranges.
    """
    out: set[int] = set()
    text = text.strip()
    if not text:
        return []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"not a CPU/node list: {text!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"descending range {part!r} in {text!r}")
        out.update(range(lo, hi + 1))
    return sorted(out)


def format_cpulist(items) -> str:
    """Format integers as a kernel list (``[0, 1, 2, 5]`` → ``"0-2,5"``)."""
    xs = sorted(set(int(x) for x in items))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)
