"""verl plugin module: importing it registers every stare-rl method in verl's policy-loss registry.

It also installs :mod:`stare_rl.engines.verl.compat` (verl 0.9's start-up import of trl's removed value-head
class, answered with a stand-in only where trl lacks it), so verl's actors start with trl installed next to it, and, in a plain ``verl.trainer.main_ppo`` process
only, :mod:`stare_rl.engines.verl.guard` (losses that need our entry point refuse before Ray starts), and, only
when ``VERL_PLATFORM=stare_cpu``, the CPU mode (:mod:`stare_rl.engines.verl.cpu`).

verl (>= 0.9) imports every ``verl.plugins`` entry point at the end of ``import verl`` (``_ep.load()``: the
module is imported, nothing is called), so the registration happens here, at import time. verl swallows
plugin import errors at DEBUG level; ``tests/engines/verl/test_verl_plugin.py`` therefore checks the registry after a
bare ``import verl`` in a fresh interpreter.
"""

from stare_rl.engines.verl import compat, cpu, guard
from stare_rl.engines.verl.adapter import register

compat.install()
REGISTERED: list[str] = register()
guard.install()  # only in a `python -m verl.trainer.main_ppo` process: refuse entry-point-only losses before Ray
if cpu.requested():  # VERL_PLATFORM=stare_cpu (stare verl-dryrun): the CPU platform, hf rollout and fixes
    cpu.activate()
