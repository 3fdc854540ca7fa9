"""Is the stare-rl verl plugin installed so that verl's own processes load it?

verl imports every ``verl.plugins`` entry point at the end of ``import verl`` and logs a failure only at
DEBUG level, so a broken install leaves ``loss_mode=stare`` unknown in the Ray workers without a word. This
module repeats verl's steps and says which one fails:

1. the entry point ``stare_rl = stare_rl.engines.verl.plugin`` is in the installed package metadata (a
   ``PYTHONPATH`` checkout has none: ``pip install -e .``);
2. ``VERL_USE_EXTERNAL_PLUGINS`` lets verl load it (``auto``, or a list naming ``stare_rl``);
3. ``entry_point.load()`` succeeds (the error verl hides is shown);
4. after a bare ``import verl`` (a fresh interpreter, as a worker starts) verl's policy-loss registry holds
   ``stare_rl.<method>`` for every registered method, and, in that interpreter, a worker's model start-up
   succeeds: the FSDP engine module imports and verl's real ``apply_monkey_patch`` runs on a tiny Llama and
   Qwen2 (this is where verl 0.9.1 imports trl's value-head class, see :mod:`stare_rl.engines.verl.compat`);
5. the exact entry point ``stare_rl.engines.verl.main`` imports (the STARE/STEER recipes run through it).

``stare check-verl`` prints the report; the exact entry point (``engines.verl.main``) calls :func:`require_plugin` (steps 1-4 in process)
before it starts Ray.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from importlib import metadata

from stare_rl.core.registry import list_methods

ENTRY_POINT_GROUP = "verl.plugins"
ENTRY_POINT_NAME = "stare_rl"
ENTRY_POINT_VALUE = "stare_rl.engines.verl.plugin"
PLUGIN_POLICY_ENV = "VERL_USE_EXTERNAL_PLUGINS"
VERSION_OF = ("stare-rl", "verl", "torch", "transformers", "trl", "ray", "vllm")
NAME_PREFIX = "stare_rl."


@dataclass
class VerlCheck:
    """What each step found; ``problems`` lists what is missing, in words, with the fix."""

    versions: dict[str, str | None] = field(default_factory=dict)
    entry_point: str | None = None            # "name = module" as installed, None when absent
    plugin_policy: str = "auto"               # VERL_USE_EXTERNAL_PLUGINS as verl reads it
    load_error: str | None = None             # ep.load() failure (what verl logs at DEBUG)
    expected: list[str] = field(default_factory=list)     # stare_rl.<method> for every core method
    registered: list[str] = field(default_factory=list)   # stare-rl names in verl's registry after import verl
    registry_error: str | None = None         # the fresh `import verl` itself failed
    worker_error: str | None = None           # a worker's model start-up (verl's monkey patches) failed
    exact_entry_point: str | None = None      # None = imports; else the error

    @property
    def missing(self) -> list[str]:
        return sorted(set(self.expected) - set(self.registered))

    @property
    def problems(self) -> list[str]:
        out = []
        if self.versions.get("verl") is None:
            out.append("verl is not installed: pip install 'stare-rl[verl]'")
        if self.entry_point is None:
            out.append(f"no '{ENTRY_POINT_GROUP}' entry point '{ENTRY_POINT_NAME}' in the installed metadata: "
                       "verl's workers will not load stare-rl (install the package: pip install -e . or "
                       "pip install stare-rl, not only PYTHONPATH)")
        if not plugin_allowed(self.plugin_policy):
            out.append(f"{PLUGIN_POLICY_ENV}={self.plugin_policy!r} stops verl from loading '{ENTRY_POINT_NAME}' "
                       f"(unset it, or add {ENTRY_POINT_NAME} to the list)")
        if self.load_error:
            out.append(f"importing the plugin failed (verl hides this at DEBUG level): {self.load_error}")
        if self.registry_error:
            out.append(f"a fresh `import verl` failed: {self.registry_error}")
        elif self.missing:
            out.append(f"after `import verl`, verl's policy-loss registry lacks {self.missing}")
        if self.worker_error:
            out.append("verl's worker start-up (import of the FSDP engine, apply_monkey_patch on a tiny model) "
                       f"failed: {self.worker_error}")
        if self.exact_entry_point:
            out.append("the exact entry point stare_rl.engines.verl.main (STARE/STEER recipes) does not import: "
                       f"{self.exact_entry_point}")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems

    def format(self) -> str:
        lines = ["versions:"]
        lines += [f"  {name:<13} {version or '-'}" for name, version in self.versions.items()]
        lines += ["", f"entry point:   {self.entry_point or '-'} (group {ENTRY_POINT_GROUP})",
                  f"{PLUGIN_POLICY_ENV}: {self.plugin_policy}",
                  f"plugin import: {'ok' if not self.load_error else 'FAILED'}",
                  f"registered after `import verl`: {len(set(self.expected) & set(self.registered))}/"
                  f"{len(self.expected)} stare-rl methods"]
        lines += [f"  {name}" for name in self.registered]
        lines.append(f"worker start-up (fresh interpreter, apply_monkey_patch): "
                     f"{'-' if self.registry_error else (self.worker_error or 'ok')}")
        lines.append(f"exact entry point (stare_rl.engines.verl.main): {self.exact_entry_point or 'ok'}")
        lines += ["", "OK: verl will load stare-rl in every process." if self.ok else "PROBLEMS:"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def plugin_allowed(policy: str) -> bool:
    """verl's rule for ``VERL_USE_EXTERNAL_PLUGINS``: ``auto`` loads all, ``none`` none, else a name list."""
    policy = policy.strip().lower()
    if policy == "auto":
        return True
    if policy == "none":
        return False
    return ENTRY_POINT_NAME in {name.strip() for name in policy.split(",") if name.strip()}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _entry_point() -> metadata.EntryPoint | None:
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == ENTRY_POINT_NAME:
            return ep
    return None


def _expected() -> list[str]:
    return [NAME_PREFIX + name for name in list_methods()]


def _load_error(ep: metadata.EntryPoint | None) -> str | None:
    if ep is None:
        return None
    try:
        ep.load()  # exactly what verl calls
    except Exception as err:  # noqa: BLE001 - report any import failure, as verl swallows any
        return "".join(traceback.format_exception_only(type(err), err)).strip()
    return None


# What a verl worker does at start-up, in a fresh interpreter: `import verl` (plugins load), import the FSDP
# engine module the actor/critic/ref workers build their model with, then run its `apply_monkey_patch` on a tiny
# model of each architecture the tiny models use. verl 0.9.1 imports trl's value-head class there whenever trl is
# importable, and trl 1.16 has none: a worker would raise ImportError at start-up, which this probe catches.
_FRESH_PROBE = (
    "import json, traceback, verl\n"
    "from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY as R\n"
    f"print(json.dumps(sorted(k for k in R if k.startswith({NAME_PREFIX!r}))), flush=True)\n"
    "err = None\n"
    "try:\n"
    "    import verl.workers.engine.fsdp.transformer_impl\n"
    "    from verl.models.transformers.monkey_patch import apply_monkey_patch\n"
    "    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM\n"
    "    kw = dict(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,\n"
    "              num_attention_heads=2, num_key_value_heads=1)\n"
    "    for cls, cfg in ((LlamaForCausalLM, LlamaConfig), (Qwen2ForCausalLM, Qwen2Config)):\n"
    "        apply_monkey_patch(model=cls(cfg(**kw)), use_remove_padding=True, ulysses_sp_size=1)\n"
    "except Exception as e:\n"
    "    err = ''.join(traceback.format_exception_only(type(e), e)).strip()\n"
    "print(json.dumps(err))\n"
)


@dataclass(frozen=True)
class FreshProbe:
    """What a fresh interpreter saw: stare-rl names in verl's registry, and the errors (None = fine)."""

    registered: list[str]
    registry_error: str | None
    worker_error: str | None


def fresh_probe(timeout_s: float = 300.0) -> FreshProbe:
    """A bare ``import verl`` in a new interpreter (registry), then a worker's model start-up (monkey patches)."""
    proc = subprocess.run([sys.executable, "-c", _FRESH_PROBE], capture_output=True, text=True,
                          timeout=timeout_s, env=os.environ.copy())
    lines = [ln for ln in proc.stdout.strip().splitlines() if ln.startswith(("[", "null", '"'))]
    if proc.returncode != 0 or len(lines) < 2:
        error = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return FreshProbe([], error, None)
    return FreshProbe(json.loads(lines[0]), None, json.loads(lines[-1]))


EXACT_ENTRY_POINT = "stare_rl.engines.verl.main"


def _exact_entry_point_error() -> str | None:
    try:  # by name, as verl's launcher would (and no import cycle: main.py imports this module)
        importlib.import_module(EXACT_ENTRY_POINT)  # the import registers the trainer mode
    except Exception as err:  # noqa: BLE001 - any failure means the recipes cannot run
        return "".join(traceback.format_exception_only(type(err), err)).strip()
    return None


def check_verl(*, fresh: bool = True, exact: bool = True) -> VerlCheck:
    """Run the checks. ``fresh``: read the registry from a new interpreter (else this process's registry,
    after loading the entry point). ``exact``: also import the exact entry point."""
    report = VerlCheck(versions={name: _version(name) for name in VERSION_OF},
                       plugin_policy=os.getenv(PLUGIN_POLICY_ENV, "auto"))
    if report.versions["verl"] is None:
        return report
    ep = _entry_point()
    report.entry_point = f"{ep.name} = {ep.value}" if ep is not None else None
    report.load_error = _load_error(ep)
    report.expected = _expected()
    if fresh:
        probe = fresh_probe()
        report.registered, report.registry_error, report.worker_error = (
            probe.registered, probe.registry_error, probe.worker_error)
    else:
        from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY

        report.registered = sorted(k for k in POLICY_LOSS_REGISTRY if k.startswith(NAME_PREFIX))
    if exact:
        report.exact_entry_point = _exact_entry_point_error()
    return report


def require_plugin() -> None:
    """Raise ``RuntimeError`` with the report when verl's workers would not load stare-rl (in process, no
    subprocess: steps 1-4, the registry read after loading the entry point here)."""
    report = check_verl(fresh=False, exact=False)
    if report.entry_point is not None and report.entry_point != f"{ENTRY_POINT_NAME} = {ENTRY_POINT_VALUE}":
        report.load_error = report.load_error or f"entry point points at {report.entry_point!r}"
    if not report.ok:
        raise RuntimeError("stare-rl is not usable as a verl plugin; verl's workers would not know its "
                           "loss modes:\n" + "\n".join(f"  - {p}" for p in report.problems)
                           + "\nRun `stare check-verl` for the full report.")
