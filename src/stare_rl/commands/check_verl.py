"""``stare check-verl``: will verl load stare-rl in every process? Versions, entry point, registered names.

verl imports its plugins at the end of ``import verl`` and hides a failure at DEBUG level; this command
repeats its steps (:mod:`stare_rl.engines.verl.check`) and prints what each found and what is missing.
Exit status 0 when everything is in place, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys

from stare_rl.engines.verl.check import check_verl


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare check-verl",
        description="Check that verl loads the stare-rl plugin the way its workers do: installed entry point, "
        "VERL_USE_EXTERNAL_PLUGINS, the plugin import, verl's policy-loss registry after a bare `import verl` "
        "in a fresh interpreter, a worker's model start-up there (verl's FSDP engine import and its "
        "apply_monkey_patch on a tiny model), and the exact entry point stare_rl.engines.verl.main.",
    )
    p.add_argument("--json", action="store_true", help="Print the report as JSON.")
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)

    report = check_verl()
    if args.json:
        print(json.dumps({"ok": report.ok, "problems": report.problems, "versions": report.versions,
                          "entry_point": report.entry_point, "plugin_policy": report.plugin_policy,
                          "registered": report.registered, "missing": report.missing,
                          "worker_error": report.worker_error}, indent=2))
    else:
        print(report.format())
    if not report.ok:
        print(f"stare check-verl: {len(report.problems)} problem(s)", file=sys.stderr)
    return 0 if report.ok else 1
