"""Shared pytest configuration: the test tree mirrors the package (tests/core, tests/methods, tests/engines/trl,
...); helper modules (``_core_batches``, ``_tiny``) and the engine tests whose fixtures other tests reuse
(``test_trl_engine``, ``test_verl_main``, ``test_resume``, ``test_auto_fallback``) are importable by name from any test; a hypothesis profile without
deadlines (CPU shared by many processes); and the library's progress lines shown as ``stare`` shows them
(:func:`stare_rl.commands.console.show_progress`), so a test calling ``stare_rl.train.run.main`` or
``stare_rl.compare.run.main`` reads in ``capsys`` what a user reads on the terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from stare_rl.commands.console import show_progress

_HERE = Path(__file__).resolve().parent
for _d in (_HERE, _HERE / "engines" / "trl", _HERE / "engines" / "verl", _HERE / "train", _HERE / "methods" / "stare"):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

settings.register_profile(
    "stare", deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "stare"))


@pytest.fixture(autouse=True, scope="session")
def _progress_on_the_terminal() -> None:
    show_progress()
