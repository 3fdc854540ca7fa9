"""Process memory readings shared by the benchmark scripts (Linux ``/proc``)."""

from __future__ import annotations


def status_kib(field: str) -> int:
    """``field`` (e.g. ``VmRSS``, ``VmHWM``) of ``/proc/self/status`` in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")
