"""The studies are scripts outside the package (``python studies/<study>/<script>.py``): run that way, a script's
own folder is first on ``sys.path`` and its sibling modules import by name (``from frontier_rules import ...``).
The tests put the same folders on ``sys.path``, so ``import frontier`` here is studies/frontier/frontier.py."""

from __future__ import annotations

import sys
from pathlib import Path

_STUDIES = Path(__file__).resolve().parents[2] / "studies"
for _d in (_STUDIES / "frontier",):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))
