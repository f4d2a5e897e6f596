"""Ctrl-C that is never lost.

Python's own SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread is; raised
inside a finalizer or a weak-reference callback (h5py closing the objects of a file being
written, say) it is printed as "Exception ignored" and dropped, and a run went on.  The
handler installed here also records the interrupt, and the window loop calls
:func:`raise_pending` after every window, which raises it again if it was dropped."""
from __future__ import annotations

import signal

_pending = False


def _on_sigint(signum, frame):
    global _pending
    _pending = True
    raise KeyboardInterrupt


def install():
    """Install the handler (in the main thread); returns the handler it replaces."""
    global _pending
    _pending = False
    return signal.signal(signal.SIGINT, _on_sigint)


def uninstall(previous) -> None:
    """Restore ``previous`` (what :func:`install` returned) and forget any interrupt."""
    global _pending
    signal.signal(signal.SIGINT, previous)
    _pending = False


def raise_pending() -> None:
    """Raise ``KeyboardInterrupt`` if SIGINT arrived since :func:`install` (again, when the
    one its handler raised was dropped)."""
    if _pending:
        raise KeyboardInterrupt
