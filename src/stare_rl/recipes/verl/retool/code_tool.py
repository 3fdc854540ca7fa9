"""The ReTool-style recipe's code interpreter, as a verl function tool.

verl loads this file from ``actor_rollout_ref.rollout.multi_turn.function_tool_path`` (``run.sh`` sets it)
and exposes every ``@function_tool`` to the model through the chat template's tool schema; the tool agent
loop (``agent.default_agent_loop: tool_agent``) calls it on each tool call, appends the result as a tool turn
and marks those tokens 0 in ``response_mask``, which is the loss mask stare-rl's registered losses receive.
Execution: :func:`stare_rl.engines.verl.sandbox.run_python` (fresh interpreter, temporary directory, CPU/memory/file
limits, wall-clock timeout; not a security boundary — see that module).
"""

from __future__ import annotations

from verl.tools.function_tool import function_tool

from stare_rl.engines.verl.sandbox import SandboxLimits, run_python

LIMITS = SandboxLimits(timeout_s=10.0, cpu_s=10, memory_mb=1024, max_output_chars=4000)


@function_tool
def code_interpreter(code: str) -> str:
    """Execute Python code and return what it prints (stdout; the traceback if it fails).

    Args:
        code: a complete Python program; print the values you need to see.
    """
    return run_python(code, LIMITS)
