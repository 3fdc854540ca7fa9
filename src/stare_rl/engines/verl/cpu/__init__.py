"""CPU mode for verl 0.9: dry-run a verl recipe on a laptop with a tiny model (``stare verl-dryrun``).

Inert unless asked for: :func:`activate` runs (from the plugin, at ``import verl``) only when
``VERL_PLATFORM=stare_cpu`` is set, in the driver and, through the inherited environment, in every Ray
worker. It then fixes, without editing verl, what stock verl 0.9 lacks on a CPU-only machine:

1. a platform (:class:`~stare_rl.engines.verl.cpu.platform.StareCPUPlatform`, ``device_name == "cpu"``, gloo,
   no-op memory calls) registered with verl's ``PlatformRegistry`` under :data:`PLATFORM_NAME`;
2. a rollout on transformers ``generate`` (:mod:`stare_rl.engines.verl.cpu.rollout`), registered as
   ``actor_rollout_ref.rollout.name=hf`` in verl's replica and server-adapter registries;
3. the worker process group: verl builds the backend ``"cpu:gloo,<device>:<backend>"``, i.e.
   ``"cpu:gloo,cpu:gloo"`` ("Duplicate device type") on a CPU platform; the wrapper passes ``"cpu:gloo"``;
4. verl's FSDP language-model engine registered for ``device="cpu"`` (it is registered for cuda/npu only;
   FSDP2 runs on CPU, FSDP1 does not: the dry-run sets ``strategy=fsdp2``).

What a config must say (sdpa attention, one logical GPU for Ray's resource pool, enough logical CPUs for
TransferQueue's storage units) is in :func:`stare_rl.engines.verl.cpu.dryrun.cpu_overrides`.
Pinned to verl 0.9.x: another version stops with a clear error.
"""

from __future__ import annotations

import functools
import logging
import os

logger = logging.getLogger(__name__)

PLATFORM_NAME = "stare_cpu"
PLATFORM_ENV = "VERL_PLATFORM"
ROLLOUT_NAME = "hf"
SUPPORTED_VERL = "0.9."


def requested() -> bool:
    """Whether this process was asked for the CPU mode (``VERL_PLATFORM=stare_cpu``)."""
    return os.environ.get(PLATFORM_ENV, "").strip().lower() == PLATFORM_NAME


def check_verl_version(version: str | None = None) -> None:
    """Raise ``RuntimeError`` unless verl is 0.9.x (the CPU mode patches verl 0.9's own functions)."""
    if version is None:
        from importlib import metadata

        version = metadata.version("verl")
    if not version.startswith(SUPPORTED_VERL):
        raise RuntimeError(f"{PLATFORM_ENV}={PLATFORM_NAME}: stare-rl's verl CPU mode supports verl {SUPPORTED_VERL}x "
                           f"only, found verl {version}; install verl==0.9.* (pip install 'stare-rl[verl]') or unset "
                           f"{PLATFORM_ENV}")


@functools.cache
def activate() -> None:
    """Register the CPU platform, the hf rollout and the CPU fixes (once per process)."""
    check_verl_version()
    # platform and rollout import verl (optional): only activating the CPU back-end needs them
    from stare_rl.engines.verl.cpu import platform, rollout

    platform.register()
    rollout.register()
    logger.info("stare-rl verl CPU mode active (%s=%s)", PLATFORM_ENV, PLATFORM_NAME)
