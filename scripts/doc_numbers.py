"""The numbers in README.md and docs/ that come from committed result artifacts, rendered from those artifacts.

Each block sits in its page between ``<!-- numbers:NAME:start -->`` and ``<!-- numbers:NAME:end -->`` and is
rendered here from the JSON (and gzipped metrics) under docs/results; nothing is typed in by hand.
``tests/test_doc_numbers.py`` renders every block again and fails when a page differs (a number edited by hand,
or an artifact that changed without the page).

    python scripts/doc_numbers.py            # check: exit 1 and a diff for each block that differs
    python scripts/doc_numbers.py --write    # rewrite the blocks in place
    python scripts/doc_numbers.py --write --block confirm10   # only that block (a study's driver does this)

The renderers live in ``scripts/doc_render/``, one module per study or page; each declares its blocks
(``BLOCKS``: name -> (page, renderer)) and the numbers it pins in running text (``inline_checks()``: (page, text)).
This script gathers them, checks or rewrites the pages, and is what tests/test_doc_numbers.py and the studies'
drivers call.

Conventions: a ± is the sample standard deviation over the n seeds (n is stated), never over repeats of a seed;
a difference is taken between unrounded means and rounded once, at the end.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: doc_render beside this file, however it is run

from doc_render import (  # noqa: E402
    authority_map,
    benchmarks,
    confirm10,
    controller,
    frontier,
    grids,
    probe,
    real_lm,
    robustness,
    tasks,
)
from doc_render.common import ROOT  # noqa: E402

MODULES = (confirm10, real_lm, frontier, robustness, grids, controller, tasks, probe, authority_map, benchmarks)


def _blocks() -> dict[str, tuple[str, Callable[[], str]]]:
    blocks: dict[str, tuple[str, Callable[[], str]]] = {}
    for module in MODULES:
        twice = sorted(set(blocks) & set(module.BLOCKS))
        if twice:
            raise ValueError(f"{module.__name__}.BLOCKS {twice}: already declared by another module")
        blocks.update(module.BLOCKS)
    return blocks


BLOCKS = _blocks()  # name -> (page, renderer), every module's


def inline_checks() -> list[tuple[str, str]]:
    """Numbers quoted in running text outside the blocks, each rendered from its artifact: (page, the exact text
    that must appear there), every module's. The page keeps its prose; this pins the number inside it."""
    return [check for module in MODULES for check in module.inline_checks()]


def markers(name: str) -> tuple[str, str]:
    return f"<!-- numbers:{name}:start -->", f"<!-- numbers:{name}:end -->"


def current(text: str, name: str) -> str | None:
    start, end = markers(name)
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def replace(text: str, name: str, body: str) -> str:
    start, end = markers(name)
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the blocks in place")
    parser.add_argument("--block", action="append", default=None, metavar="NAME",
                        help="only this block (repeatable); the inline checks are then skipped")
    args = parser.parse_args(argv)
    bad = 0
    unknown = sorted(set(args.block or ()) - set(BLOCKS))
    if unknown:
        parser.error(f"--block {unknown}: not a block (known: {', '.join(sorted(BLOCKS))})")
    for name, (page, render) in BLOCKS.items():
        if args.block and name not in args.block:
            continue
        path = ROOT / page
        text = path.read_text()
        want, have = render(), current(text, name)
        if have is None:
            print(f"{page}: no block {name!r} (markers {markers(name)[0]} ... {markers(name)[1]})")
            bad += 1
        elif have != want:
            if args.write:
                path.write_text(replace(text, name, want))
                print(f"{page}: {name} rewritten")
            else:
                bad += 1
                print("\n".join(difflib.unified_diff(have.splitlines(), want.splitlines(), f"{page} ({name})",
                                                     "rendered", lineterm="")))
    for page, want in [] if args.block else inline_checks():
        if want not in (ROOT / page).read_text():
            bad += 1
            print(f"{page}: does not contain {want!r} (rendered from its artifact)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
