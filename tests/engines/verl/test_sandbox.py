"""The local code sandbox: output, errors, limits (time, memory), isolation of the working directory."""

from __future__ import annotations

import pytest

from stare_rl.engines.verl.sandbox import SandboxLimits, run_python


def test_output_and_errors() -> None:
    assert run_python("print(2**70)") == str(2**70)
    assert run_python("") == "(no output)"
    out = run_python("print('before'); 1/0")
    assert out.startswith("before\n") and out.endswith("ZeroDivisionError: division by zero")
    assert run_python(123) == "error: code must be a string, got int"  # type: ignore[arg-type]


def test_limits_and_isolation(tmp_path) -> None:  # noqa: ANN001
    assert run_python("while True: pass", SandboxLimits(timeout_s=1.0, cpu_s=5)) == "error: timeout after 1 s"
    assert run_python("x = bytearray(3 * 1024**3)", SandboxLimits(memory_mb=512)).endswith("MemoryError")
    cwd = run_python("import os; open('f.txt', 'w').write('x'); print(os.getcwd())")
    assert cwd.startswith("/") and "stare-sandbox-" in cwd
    long = run_python("print('a' * 10000)", SandboxLimits(max_output_chars=100))
    assert len(long) < 200 and "truncated" in long
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
