"""Shared pytest configuration: the test tree mirrors the package (tests/core, tests/methods, tests/engines/trl,
...); helper modules (``_core_batches``, ``_tiny``) and the engine tests whose fixtures other tests reuse
(``test_trl_engine``, ``test_verl_main``, ``test_resume``, ``test_auto_fallback``) are importable by name from any test; a hypothesis profile without
deadlines (CPU shared by many processes); and the library's progress lines shown as ``stare`` shows them
(:func:`stare_rl.commands.console.show_progress`), so a test calling ``stare_rl.train.run.main`` or
``stare_rl.compare.run.main`` reads in ``capsys`` what a user reads on the terminal; and a run that cannot fit on the
disk stops before its first test, saying so (a full disk otherwise shows as dozens of unrelated fixture errors)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
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


# The whole suite writes up to ~6 GB at once under the temp folder (each real-LM test's SmolLM2 checkpoints with
# optimizer state, ~2 GB); the suite without slow tests well under 1 GB.
FREE_GB_NEEDED = {"all": 8.0, "fast": 1.0}


def pytest_sessionstart(session: pytest.Session) -> None:
    fast = "not slow" in (session.config.getoption("markexpr", "") or "")
    need = float(os.environ.get("STARE_TEST_FREE_GB", FREE_GB_NEEDED["fast" if fast else "all"]))
    where = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    free = shutil.disk_usage(where).free / 2**30
    if free < need:
        pytest.exit(f"error: {free:.1f} GB free under {where}; this run needs about {need:.0f} GB there (free some "
                    f"space, point TMPDIR elsewhere, or set STARE_TEST_FREE_GB to override)", returncode=1)
