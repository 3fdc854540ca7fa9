"""How ``stare train`` reads its command line and its config files, before any check: ``--flag -1e-4`` kept as a
value, argparse errors as one-line ``ValueError`` s, YAML values converted the way argparse converts flags (so a
wrong type is named up front), and which methods own a field that the chosen method does not have.

Every problem raises one ``ValueError`` whose message names the field and the value; the command turns it into
``stare train: error: ...`` and exit status 2. The checks on the parsed values are :mod:`stare_rl.train.checks`.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from stare_rl.train.config import DICT_FIELDS


def join_negative_values(argv: Sequence[str]) -> list[str]:
    """``--flag -1e-4`` -> ``--flag=-1e-4``: argparse reads ``-1e-4`` (or ``-inf``) as an option otherwise."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if tok.startswith("--") and "=" not in tok and nxt is not None and nxt.startswith("-") and _is_number(nxt):
            out.append(f"{tok}={nxt}")
            i += 2
        else:
            out.append(tok)
            i += 1
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def raise_instead_of_exit(parser: argparse.ArgumentParser) -> None:
    """argparse errors become one-line ``ValueError`` s (no 200-line usage dump, no ``SystemExit``)."""

    def error(message: str) -> None:
        raise ValueError(_argparse_message(message))

    parser.error = error  # type: ignore[method-assign]


def _argparse_message(message: str) -> str:
    # "argument --learning_rate/--learning-rate: invalid float value: 'x'" -> "--learning_rate: invalid ..."
    if message.startswith("argument "):
        head, _, rest = message[len("argument "):].partition(": ")
        return f"{head.split('/')[0]}: {rest} (on the command line)"
    return message


def coerce_config_values(values: dict[str, Any], parser: Any, origin: dict[str, str]) -> dict[str, Any]:
    """Config-file values converted the way argparse converts flags, so a wrong type is named up front.

    Args:
        values: ``{field: value}`` from the YAML file(s).
        parser: the ``HfArgumentParser`` of the run.
        origin: ``{field: file it came from}`` for the message.

    Returns:
        The converted values, ready for ``parser.set_defaults``.
    """
    actions = {a.dest: a for a in parser._actions}
    fields = {f.name: f for dc in parser.dataclass_types for f in dataclasses.fields(dc)}
    out = {}
    for key, value in values.items():
        action, where = actions.get(key), origin.get(key, "the config")
        if action is None or key in DICT_FIELDS:
            out[key] = value
            continue
        if value is None:
            fld = fields.get(key)
            if fld is not None and fld.default is not None and "None" not in str(fld.type) and "Optional" not in str(
                fld.type
            ):
                raise ValueError(f"{key}=null in {where}: a value is required ({_expected(action)})")
            out[key] = None
            continue
        if action.nargs in ("+", "*"):
            items = value if isinstance(value, list) else [value]
            out[key] = [_convert(key, v, action, where) for v in items]
        elif isinstance(value, list | dict):
            raise ValueError(f"{key}={value!r} in {where}: expected a single value ({_expected(action)}), "
                             f"got a {type(value).__name__}")
        else:
            out[key] = _convert(key, value, action, where)
    return out


def _expected(action: argparse.Action) -> str:
    if action.choices:
        return f"one of {list(action.choices)}"
    if action.nargs == 0 or getattr(action.type, "__name__", "") == "string_to_bool":
        return "true or false"
    return f"a {getattr(action.type, '__name__', 'value')}" if action.type in (int, float, str) else "a value"


def _convert(key: str, value: Any, action: argparse.Action, where: str) -> Any:
    wants_bool = action.nargs == 0 or getattr(action.type, "__name__", "") == "string_to_bool"
    if wants_bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
        raise ValueError(f"{key}={value!r} in {where}: expected true or false")
    if action.type is int and (isinstance(value, bool) or isinstance(value, float)):
        raise ValueError(f"{key}={value!r} in {where}: expected an integer")
    if action.type is float and isinstance(value, bool):
        raise ValueError(f"{key}={value!r} in {where}: expected a number")
    if action.type is str and isinstance(value, bool):
        raise ValueError(f"{key}={value!r} in {where}: expected a string, got a boolean (quote it)")
    if action.type is None:
        return value
    try:
        converted = action.type(value if isinstance(value, str) else str(value))
    except (TypeError, ValueError, argparse.ArgumentTypeError) as err:
        raise ValueError(f"{key}={value!r} in {where}: expected {_expected(action)}") from err
    if action.choices and converted not in action.choices:
        raise ValueError(f"{key}={value!r} in {where}: expected one of {list(action.choices)}")
    return converted


def owners_of_field(key: str, methods: Iterable[str], config_of: Any) -> list[str]:
    """Registered methods whose own config has ``key`` (``config_of(name)`` -> its config class)."""
    return sorted(m for m in methods if key in {f.name for f in dataclasses.fields(config_of(m))})
