"""The `stare train` commands shown in README.md and docs/ parse and validate (issue 43: the front door's commands
keep working). Each line of a fenced code block that starts with ``stare train`` goes through `stare train`'s own
parser and checks (``plan_run``: nothing is trained or written). Skipped: commands that name a file the reader
supplies (``--config``, ``--model``, ``--dataset``, a checkpoint to resume), lines with a placeholder (``<...>``,
``[...]``, ``$VAR``), quoted output (``stare train: error: ...``) and commands marked ``# as run at <commit>``
(a record of an older default)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from stare_rl.train.plan import plan_run

ROOT = Path(__file__).resolve().parent.parent
USER_FILES = ("--config", "--model", "--dataset", "--eval_dataset", "--resume_from_checkpoint")


def commands() -> list[tuple[str, int, str]]:
    out = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        fenced = False
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                fenced = not fenced
                continue
            m = re.match(r"^\s*stare train(\s.*)?$", line) if fenced else None
            if not m or "as run at" in line:
                continue
            cmd = (m.group(1) or "").split(" #", 1)[0].strip()
            if cmd.startswith(":") or re.search(r"[<\[$]", cmd):
                continue
            argv = shlex.split(cmd)
            if any(a.split("=", 1)[0] in USER_FILES for a in argv):
                continue
            out.append((str(page.relative_to(ROOT)), n, cmd))
    return out


def test_the_front_door_has_commands_to_check() -> None:
    assert any(page == "README.md" for page, _, _ in commands())


@pytest.mark.parametrize("page,line,cmd", commands(), ids=lambda v: str(v))
def test_documented_stare_train_command_validates(page: str, line: int, cmd: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            plan_run(shlex.split(cmd))
        except (ValueError, SystemExit) as e:
            pytest.fail(f"{page}:{line}: `stare train {cmd}` is refused: {e}")
