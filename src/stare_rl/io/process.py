"""Process plumbing shared by commands: a child started by ``stare compare`` ends with its parent."""

from __future__ import annotations

import os
import sys

# Set by `stare compare` for the `stare train` processes it starts: the pid of the parent they must not outlive.
PARENT_PID_ENV = "STARE_PARENT_PID"


def exit_with_parent() -> None:
    """When started by ``stare compare`` (``PARENT_PID_ENV`` set, Linux): have the kernel SIGKILL this process
    when its parent dies, however it dies (a SIGKILLed parent cannot stop its children). Without it an orphaned
    cell would keep writing into the run directory that a re-run of the grid resumes. Elsewhere: nothing."""
    parent = os.environ.pop(PARENT_PID_ENV, None)
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != int(parent):  # the parent died before the prctl: nothing would end this process
        os._exit(1)
