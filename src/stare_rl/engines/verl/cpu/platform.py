"""verl's platform interface on the CPU, the gloo process group and the FSDP engine for ``device="cpu"``."""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Iterator
from typing import Any

import torch
from verl.plugin.platform.platform_base import PlatformBase

from stare_rl.engines.verl.cpu import PLATFORM_NAME

_NO_OPS = ("empty_cache", "ipc_collect", "set_per_process_memory_fraction", "reset_peak_memory_stats")
_ZEROS = ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved")


class _CPUDeviceModule(types.ModuleType):
    """``torch.cpu`` plus the ``torch.cuda`` calls verl makes (memory and cache calls as no-ops)."""

    def __getattr__(self, name: str) -> Any:
        if name in _NO_OPS:
            return lambda *a, **k: None
        if name in _ZEROS:
            return lambda *a, **k: 0
        if name == "mem_get_info":
            return lambda *a, **k: (0, 0)
        if name == "get_rng_state":
            return lambda *a, **k: torch.get_rng_state()
        if name == "set_rng_state":
            return lambda state, *a, **k: torch.set_rng_state(state)
        if name == "get_device_name":
            return lambda *a, **k: "cpu"
        return getattr(torch.cpu, name)


CPU_DEVICE = _CPUDeviceModule("stare_rl_cpu_device")


class StareCPUPlatform(PlatformBase):
    """The CPU as a verl platform: device ``"cpu"``, backend gloo, one logical "GPU" per Ray worker."""

    device_name = "cpu"  # type: ignore[assignment]
    vendor_name = "cpu"  # type: ignore[assignment]
    device_module = CPU_DEVICE  # type: ignore[assignment]

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return False  # never auto-detected: only VERL_PLATFORM=stare_cpu selects it

    def current_device(self) -> str:  # type: ignore[override]
        return "cpu"  # verl moves tensors with .to(get_device_id())

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: Any) -> None:
        return None

    def synchronize(self, device_index: Any = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # what Ray sets for the logical GPU; nothing reads it on the CPU

    @contextlib.contextmanager
    def nvtx_range(self, msg: str) -> Iterator[None]:
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # verl's resource pool counts "GPU": the dry-run declares logical ones to Ray

    def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
        return {"num_gpus": num_gpus}

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def _gloo_process_group(original: Any) -> Any:
    """verl's ``initialize_global_process_group_ray`` with ``"cpu:gloo"`` instead of ``"cpu:gloo,cpu:gloo"``."""

    @functools.wraps(original)
    def initialize_global_process_group_ray(timeout_second: Any = None, backend: Any = None) -> Any:
        return original(timeout_second=timeout_second, backend=backend or "cpu:gloo")

    initialize_global_process_group_ray._stare_rl_cpu = True  # type: ignore[attr-defined]
    return initialize_global_process_group_ray


def register() -> None:
    """Platform, process-group backend and FSDP engines for the CPU (idempotent)."""
    from verl.plugin.platform.platform_manager import PlatformRegistry
    from verl.utils import distributed

    PlatformRegistry.register(PLATFORM_NAME)(StareCPUPlatform)
    if not getattr(distributed.initialize_global_process_group_ray, "_stare_rl_cpu", False):
        patched = _gloo_process_group(distributed.initialize_global_process_group_ray)
        distributed.initialize_global_process_group_ray = patched
        for module in ("verl.workers.engine_workers", "verl.checkpoint_engine.base"):  # bound by name there
            import importlib

            mod = importlib.import_module(module)
            mod.initialize_global_process_group_ray = patched

    from verl.workers.engine.base import EngineRegistry
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead

    for model_type, cls in (("language_model", FSDPEngineWithLMHead), ("value_model", FSDPEngineWithValueHead)):
        for backend in ("fsdp", "fsdp2"):
            EngineRegistry._engines.setdefault(model_type, {}).setdefault(backend, {})["cpu"] = cls
