"""``stare train``: the command line of :mod:`stare_rl.train.run` (plan, prepare, train, evaluate)."""

from __future__ import annotations

from stare_rl.train.run import main as run_main


def main(argv: list[str]) -> int:
    """Entry point of ``stare train``; returns the exit status."""
    return run_main(argv)
