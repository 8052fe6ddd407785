"""What a notebook shows, and nothing else: a sentence, a formatted table, a collapsed raw
table. The leaf every section module displays through (it imports only the report's tables and
words)."""

from __future__ import annotations

import html
import warnings

import numpy as np
import pandas as pd

from . import tables as T
from . import words as W

__all__ = ["details", "quiet", "say", "show", "show_object"]


def _ipython():
    # import inside: IPython exists only within a notebook kernel, and the report's command-line
    # path never displays
    from IPython import display

    return display


def show_object(*objs) -> None:
    """Display objects (a figure, a styled table) where the cell is, in order."""
    _ipython().display(*objs)


def say(text: str) -> None:
    """A sentence (Markdown) in the notebook."""
    show_object(_ipython().Markdown(text))


def show(table: pd.DataFrame, lang: str = "en", empty: str | None = None) -> None:
    """A formatted table in full (every row and column), or ``empty`` (default: "Nothing to
    show." in ``lang``) when it has no rows."""
    if table is None or not len(table):
        say(empty or W.say("nothing", lang))
        return
    show_object(T.styled(table, lang))


def details(summary: str, frame: pd.DataFrame, empty: str | None = None, lang: str = "en") -> None:
    """A collapsed block holding a raw table (for the curious), shown in full when opened;
    a ``warnings`` column of lists is shown as notes in ``lang``."""
    if len(frame) and "warnings" in frame:
        frame = frame.assign(warnings=[T.fmt_notes(w, lang) for w in frame["warnings"]])
    body = (
        frame.to_html(index=False, na_rep="", max_rows=None, max_cols=None)
        if len(frame)
        else f"<p>{html.escape(empty or W.say('none', lang))}</p>"
    )
    show_object(
        _ipython().HTML(f"<details><summary>{html.escape(summary)}</summary>{body}</details>")
    )


def quiet(fn, *a, **kw):
    """Call ``fn`` with numpy's floating-point warnings (overflow in a fit's search) silenced:
    the functions report what matters about a fit in their own warnings."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*a, **kw)
