"""Settings written by earlier versions, read under today's names: the one reader of old setting names.

A setting that changed its name keeps loading from YAML files (``stare train --config``, a run's ``config.yaml``,
a ``stare compare`` grid and its ``cell.yaml``) and from the command line, with a deprecation warning that names
both spellings. Given under both names with different values, it is an error: which one was meant is unknown.

====================================  ============================  =============================================
old name                              today's name                  why
====================================  ============================  =============================================
``bonus_target_entropy``              ``target_entropy``            one name for the entropy target of whichever
                                                                    mechanism holds one (issue 44)
``stare_gate`` (verl ``policy_loss``)  ``gate_entropy``              an adapter setting of every memoryless
                                                                    controller, not a STARE field (issue 44)
====================================  ============================  =============================================
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

RENAMED_SETTINGS: Mapping[str, str] = {"bonus_target_entropy": "target_entropy", "stare_gate": "gate_entropy"}


def _deprecated(old: str, new: str, where: str) -> None:
    logger.warning("%s: %s is the old name of %s; read as %s (rename it: the old name will be dropped)",
                   where, old, new, new)


def current_settings(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``values`` (``{field: value}``) with every old setting name (:data:`RENAMED_SETTINGS`) replaced by today's.

    Raises:
        ValueError: a setting given under its old and its new name with different values.
    """
    out = dict(values)
    for old, new in RENAMED_SETTINGS.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out and out[new] != value:
            raise ValueError(f"{where}: {old}={value!r} and {new}={out[new]!r} are one setting ({old} is the old "
                             f"name of {new}); give it once, as {new}")
        _deprecated(old, new, where)
        out[new] = value
    return out


def current_flags(argv: list[str], where: str = "the command line") -> list[str]:
    """``argv`` with every ``--<old name>`` (also ``--old-name`` and ``--old_name=value``) spelled with today's name."""
    spellings = {f"--{spelling}": new for old, new in RENAMED_SETTINGS.items()
                 for spelling in (old, old.replace("_", "-"))}
    out = []
    for tok in argv:
        flag, eq, value = tok.partition("=")
        if flag in spellings:
            _deprecated(flag.lstrip("-"), spellings[flag], where)
            tok = f"--{spellings[flag]}{eq}{value}"
        out.append(tok)
    return out


__all__ = ["RENAMED_SETTINGS", "current_flags", "current_settings"]
