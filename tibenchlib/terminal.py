"""Where progress and logs go: the terminal, never a saved document.

``tibench run`` executes the phases' notebooks in a kernel started from the ``tibench``
kernelspec (:func:`tibenchlib.notebook.ensure_kernelspec`): that kernel does not capture its
process's file descriptors, and its environment sets :data:`BATCH_ENV`. There
``sys.__stderr__`` is still the terminal ``tibench run`` was started from, so progress bars and
tibench's log records are written there and the executed notebook keeps only what a reader
should read.

In a notebook opened by a person (JupyterLab), a bar is one output line updated in place and
emptied when the work is done: the reader sees it move while measuring, and the saved
document keeps an empty output, not a log.

Anywhere else (the command line with ``--in-process``, a script, a test) bars go to stderr.
Where stderr is not a terminal (a pipe, a CI log), a bar prints one line when it closes
instead of redrawing itself.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from typing import IO

from tqdm.std import tqdm

from .texttable import display_width

#: The widest a paragraph tibench prints may be, whatever the terminal's width.
MAX_WIDTH = 120
#: The narrowest it is made (a terminal narrower than this gets lines as wide as this).
MIN_WIDTH = 40

#: Set in the environment of the kernels ``tibench run`` starts (see the module's doc).
BATCH_ENV = "TIBENCH_BATCH_KERNEL"
LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def in_batch_kernel() -> bool:
    """Whether this process is a notebook kernel started by ``tibench run``."""
    return os.environ.get(BATCH_ENV) == "1"


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython with a kernel attached)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def stream() -> IO[str]:
    """The terminal's stream: the kernel process's own stderr in a batch kernel, else stderr."""
    if in_batch_kernel() and sys.__stderr__ is not None:
        return sys.__stderr__
    return sys.stderr


def _is_tty(f) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


class OneLineBar(tqdm):
    """A tqdm bar that draws nothing while it runs and prints its final state as one line
    when closed: what a log file or a pipe should get instead of redraws."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._out = kwargs.get("file") or sys.stderr

    def display(self, *args, **kwargs) -> bool:
        return True  # nothing is drawn while running (tqdm calls this on every refresh)

    def close(self) -> None:
        if not self.disable and self.total is not None and self.leave:
            print(str(self), file=self._out, flush=True)
        self.disable = True  # tqdm's own close would draw the bar again
        super().close()


class _DisplayLine:
    """A file-like sink for tqdm that shows the bar's current line as one notebook output,
    updated in place, and empties it when tqdm clears the line (``leave=False``)."""

    def __init__(self) -> None:
        from IPython.display import Pretty, display  # import inside: IPython, in a kernel only

        self._pretty = Pretty
        self._handle = display(Pretty(""), display_id=True)

    def write(self, text: str) -> int:
        line = text.replace("\n", "\r").rstrip("\r").rsplit("\r", 1)[-1]
        self._handle.update(self._pretty(line.strip() and line))
        return len(text)

    def flush(self) -> None:
        pass


def bar(
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    *,
    enabled: bool = True,
    iterable=None,
    step: bool = False,
    **kwargs,
) -> tqdm:
    """A progress bar on the terminal (see the module's doc for where it is drawn).

    Parameters
    ----------
    total, desc, unit, iterable, kwargs
        As for :class:`tqdm.tqdm`.
    enabled
        ``False`` gives a disabled bar (its ``update`` and ``close`` do nothing).
    step
        A short step within a phase (analyze, load): drawn while it runs, and leaving no line
        once done, so a finished phase leaves its one line (its runs' bar) on the terminal.
    """
    kw = dict(iterable=iterable, total=total, desc=desc, unit=unit, disable=not enabled, **kwargs)
    if not in_batch_kernel() and in_notebook():
        return tqdm(file=_DisplayLine() if enabled else None, leave=False, **kw)
    out = stream()
    if _is_tty(out):
        return tqdm(file=out, dynamic_ncols=True, leave=not step, **kw)
    return OneLineBar(file=out, leave=not step, **kw)


def route_logging(level: int = logging.WARNING) -> None:
    """In a batch kernel, send tibench's log records and Python's warnings to the terminal
    (they would otherwise be stderr blocks of the executed notebook); elsewhere do nothing."""
    if not in_batch_kernel():
        return
    logging.captureWarnings(True)
    for name in ("tibenchlib", "py.warnings"):
        logger = logging.getLogger(name)
        if any(getattr(h, "_tibench_terminal", False) for h in logger.handlers):
            continue
        h = logging.StreamHandler(stream())
        h.setFormatter(logging.Formatter(LOG_FORMAT))
        h._tibench_terminal = True
        logger.addHandler(h)
        logger.setLevel(level)
        logger.propagate = False


_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
#: Marks that never begin a line (they stay with what precedes them) and marks that never end
#: one (they stay with what follows): the rule Chinese typesetting keeps.
_CLOSE = "，。、；：！？）」』》】］%,.;:!?)"
_OPEN = "（「『《【［(“‘"
#: A pointer to numbered notes ("[note 1]", "［注 1、2］"): it stays with the word before it.
_MARK = re.compile(r"\[notes? [\d, ]+\]|［注 [\d、]+］")
_TOKEN = re.compile(
    rf"{_MARK.pattern}"
    rf"|\[[^\[\]\n]{{0,60}}\]"  # an interval, "[−3, +8]": one piece, its space included
    rf"|\b[A-Za-zδ]{{1,3}} = [+−-]?[\d,.]*\d%?"  # a named figure, "n = 3", "p = 0.038"
    rf"|\s+"  # where a line may break
    rf"|[{_CJK}]"  # one Chinese character or full-width mark
    rf"|\("  # an opening parenthesis: it joins what follows
    rf"|[^\s{_CJK}\[(]+"  # a word or a number, "+106.8%"
    rf"|\["  # a bracket that closes nowhere near
)


def width() -> int:
    """The width paragraphs are wrapped to: the terminal's (``COLUMNS`` where it is set), at
    most :data:`MAX_WIDTH`, :data:`MAX_WIDTH` where output is not a terminal."""
    cols = shutil.get_terminal_size(fallback=(MAX_WIDTH, 24)).columns
    return max(MIN_WIDTH, min(MAX_WIDTH, cols))


def _pieces(text: str) -> list[str]:
    """``text`` cut where a line may break: spaces, and between Chinese characters; a number,
    a word or an interval is one piece, a closing mark joins the piece before it and an
    opening mark the piece after it."""
    out: list[str] = []
    glue = False  # the last piece ends with an opening mark: the next joins it
    for tok in _TOKEN.findall(text):
        if tok.isspace():
            out.append(" ")
            glue = False
            continue
        if _MARK.fullmatch(tok) and out:
            space = out[-1].isspace()
            if space and len(out) > 1:
                out.pop()
            out[-1] += (" " if space and tok[0] == "[" else "") + tok
        elif out and not out[-1].isspace() and (glue or tok[0] in _CLOSE):
            out[-1] += tok
        else:
            out.append(tok)
        glue = tok[-1] in _OPEN
    return out


def wrap(text: str, cols: int | None = None, first: str = "", rest: str = "") -> str:
    """``text`` wrapped to ``cols`` display columns (a Chinese character takes two; default
    :func:`width`), the first line led by ``first`` and the others by ``rest``.

    A line breaks at a space or between two Chinese characters, never inside a number or an
    interval ("+106.8%", "[−3, +8]"), never before a closing mark (，。）) nor after an
    opening one (（); only a piece wider than a whole line is cut.
    """
    cols = cols or width()
    lines: list[str] = []
    line, space, empty = first, False, True
    for piece in _pieces(" ".join(text.split("\n"))):
        if piece == " ":
            space = not empty
            continue
        cand = line + (" " if space else "") + piece
        if display_width(cand) <= cols or empty:
            line, empty = cand, False
        else:
            lines.append(line.rstrip())
            line, empty = rest + piece, False
        space = False
        while display_width(line) > cols:  # one piece wider than a line: cut it
            cut = len(line)
            while cut > 1 and display_width(line[:cut]) > cols:
                cut -= 1
            lines.append(line[:cut])
            line = rest + line[cut:]
    lines.append(line.rstrip())
    return "\n".join(lines)
