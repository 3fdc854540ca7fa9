"""Shared pytest configuration: the test tree mirrors the package (tests/core, tests/methods, tests/engines/trl,
...); helper modules (``_core_batches``, ``_tiny``) and the engine tests whose fixtures other tests reuse
(``test_trl_engine``, ``test_verl_main``, ``test_resume``) are importable by name from any test; a hypothesis profile without
deadlines (CPU shared by many processes)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

_HERE = Path(__file__).resolve().parent
for _d in (_HERE, _HERE / "engines" / "trl", _HERE / "engines" / "verl", _HERE / "train"):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

settings.register_profile(
    "stare", deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "stare"))
