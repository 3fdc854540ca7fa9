"""A local sandbox for model-written Python: a fresh interpreter in a temporary directory, with limits.

Used by the ReTool-style verl recipe's code tool (``recipes/verl/retool/code_tool.py``). Each call runs
``python -I -c CODE`` (isolated mode: no user site, no ``PYTHON*`` variables) in a new session, in an empty
temporary working directory that is deleted afterwards, with a minimal environment, no stdin, and POSIX
resource limits: CPU seconds, address space, size of written files, open files. A call that runs past its
wall-clock timeout has its whole process group killed.

This bounds runaway or accidental damage (infinite loops, memory blow-ups, huge outputs, stray files); it is
**not** a security boundary against hostile code (no namespaces, no syscall filter, network not blocked).
For untrusted models at scale use a real sandbox service (verl's ``SandboxFusionTool``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run."""

    timeout_s: float = field(default=10.0, metadata={"help": "Wall-clock limit; the process group is killed after."})
    cpu_s: int = field(default=10, metadata={"help": "RLIMIT_CPU of the interpreter (seconds)."})
    memory_mb: int = field(default=1024, metadata={"help": "RLIMIT_AS of the interpreter (MiB)."})
    file_mb: int = field(default=16, metadata={"help": "RLIMIT_FSIZE: largest file the code may write (MiB)."})
    max_output_chars: int = field(default=4000, metadata={"help": "Longer output keeps its head and tail."})

    def __post_init__(self) -> None:
        for name in ("timeout_s", "cpu_s", "memory_mb", "file_mb", "max_output_chars"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name}={value!r} must be > 0")


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    return f"{text[:head]}\n...[{len(text) - limit} characters truncated]...\n{text[len(text) - (limit - head):]}"


def run_python(code: str, limits: SandboxLimits | None = None) -> str:
    """Run ``code`` in the sandbox; return what a code interpreter shows: stdout, then stderr when it failed.

    Never raises for anything the code does: a timeout returns ``"error: timeout after N s"``, a crash its
    traceback (stderr) after any stdout, an empty result ``"(no output)"``.
    """
    import resource

    limits = limits or SandboxLimits()
    if not isinstance(code, str):
        return f"error: code must be a string, got {type(code).__name__}"

    def set_limits() -> None:  # runs in the child between fork and exec
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    with tempfile.TemporaryDirectory(prefix="stare-sandbox-") as workdir:
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
               "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.Popen(  # noqa: S603 - the interpreter itself, no shell
            [sys.executable, "-I", "-c", code], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
            start_new_session=True, preexec_fn=set_limits,  # noqa: PLW1509 - limits must be set before exec
        )
        try:
            out, err = proc.communicate(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole session: children the code started too
            proc.communicate()
            return f"error: timeout after {limits.timeout_s:g} s"
    text = out if proc.returncode == 0 else (out + ("\n" if out and err else "") + err)
    return _truncate(text.strip(), limits.max_output_chars) or "(no output)"


__all__ = ["SandboxLimits", "run_python"]
