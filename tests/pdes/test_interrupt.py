"""A Ctrl-C that Python drops (raised inside a finalizer) is raised again by the window loop."""
import signal

import pytest

from pdes import interrupt
from pdes.engine import run_local
from tests.helpers import make_cfg


class _Finalized:
    def __del__(self):
        # the handler runs in this finalizer: its KeyboardInterrupt is printed as "Exception
        # ignored" and dropped, as one raised while h5py closes a file's objects is
        signal.raise_signal(signal.SIGINT)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_dropped_interrupt_is_raised_again():
    previous = interrupt.install()
    try:
        _Finalized()                  # dropped: nothing is raised here
        with pytest.raises(KeyboardInterrupt):
            interrupt.raise_pending()
    finally:
        interrupt.uninstall(previous)
    interrupt.raise_pending()         # uninstall forgets it


def test_the_window_loop_raises_a_pending_interrupt():
    """The run ends at the window after the interrupt, not at its end."""
    previous = interrupt.install()
    try:
        interrupt._pending = True
        with pytest.raises(KeyboardInterrupt):
            run_local(make_cfg(preset="plan"))
    finally:
        interrupt.uninstall(previous)
