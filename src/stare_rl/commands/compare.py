"""``stare compare``: the command line of :mod:`stare_rl.compare.run` (a grid of methods x seeds, one table)."""

from __future__ import annotations

from stare_rl.compare.run import main as run_main


def main(argv: list[str]) -> int:
    """Entry point of ``stare compare``; returns the exit status (2 = bad input, 1 = a cell failed)."""
    return run_main(argv)
