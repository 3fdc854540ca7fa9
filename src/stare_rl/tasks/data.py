"""Load prompt/answer rows from parquet, jsonl, a saved Hugging Face dataset, or a (cached) hub id.

Two row schemas are accepted and normalised to ``{"prompt": str | list[message], "answer": str}``:

- plain: ``{"prompt": "...", "answer": "..."}``;
- verl / DAPO: ``{"prompt": [{"role": "user", "content": "..."}, ...],
  "reward_model": {"ground_truth": "..."}, "data_source": ...}`` (chat prompts are kept as message lists;
  TRL's trainers apply the model's chat template).

``data_source`` is kept when present. Malformed rows raise one ``ValueError`` listing every problem of the
file (up to :data:`MAX_REPORTED`), each with where it is, counted from 1: ``line N`` of a jsonl file (blank
lines count, as in an editor), ``row N`` of a parquet / json / saved dataset.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DATA_SUFFIXES = (".parquet", ".jsonl", ".json")
MAX_REPORTED = 20  # problems listed in one error message; the rest are counted


class DatasetNotFoundError(FileNotFoundError, ValueError):
    """The dataset spec names no file, directory or loadable hub dataset."""


def load_dataset_rows(spec: str | Path, split: str | None = None) -> list[dict[str, Any]]:
    """:func:`load_located_rows` without the locations."""
    return load_located_rows(spec, split)[0]


def load_located_rows(spec: str | Path, split: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """``(rows, where)``: the rows of the dataset ``spec``: a ``.parquet``/``.jsonl``/``.json`` file, a directory (saved with
    ``datasets``' ``save_to_disk`` or holding data files), or a hub id available offline in the cache.

    Args:
        spec: path or hub id.
        split: for a dataset dict or hub id, which split (default ``"train"``); for a directory of files,
            only files whose name starts with it.

    Returns:
        The normalised rows and, for each, where it is in the source (``"line 3"``, ``"row 3"``), for messages.

    Raises:
        ValueError: no rows, or malformed rows (all of them listed, 1-based, in one message).
    """
    raw = _read_raw(str(spec), split)
    if not raw:
        raise ValueError(f"dataset={str(spec)!r} has no rows")
    rows, problems = [], []
    for where, row in raw:
        try:
            if isinstance(row, _BadLine):
                raise ValueError(row.message)
            rows.append(normalize_row(row, where))
        except ValueError as err:
            problems.append(str(err))
    if problems:
        shown = "; ".join(problems[:MAX_REPORTED])
        more = f"; ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        raise ValueError(f"dataset={str(spec)!r}: {len(problems)} bad row(s) of {len(raw)}: {shown}{more}")
    return rows, [where for where, _ in raw]


class _BadLine:
    """A jsonl line that is not JSON (kept in place so that every problem is reported at once)."""

    def __init__(self, message: str) -> None:
        self.message = message


Located = list[tuple[str, Any]]  # (where, raw row): ("line 3", {...}) or ("row 3", {...})


def _read_raw(spec: str, split: str | None) -> Located:
    path = Path(spec).expanduser()
    if path.is_file():
        return _read_file(path)
    if path.is_dir():
        return _read_dir(path, split)
    looks_like_hub_id = spec.count("/") == 1 and not spec.startswith((".", "/", "~")) and not spec.endswith(
        DATA_SUFFIXES
    )
    if not looks_like_hub_id:
        raise DatasetNotFoundError(f"dataset={spec!r}: no such file or directory")
    try:
        import datasets

        return _numbered(datasets.load_dataset(spec, split=split or "train"))
    except Exception as err:  # noqa: BLE001 - any hub failure becomes one clear message
        raise DatasetNotFoundError(
            f"dataset={spec!r} is not a local file or directory and could not be loaded from the Hugging Face "
            f"hub cache ({type(err).__name__}: {err}); download it first or pass a local path"
        ) from err


def _numbered(rows: Any, prefix: str = "") -> Located:
    return [(f"{prefix}row {i}", row) for i, row in enumerate(rows, start=1)]


def _read_file(path: Path, prefix: str = "") -> Located:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return _numbered(pq.read_table(path).to_pylist(), prefix)
        except Exception as err:  # noqa: BLE001 - pyarrow raises several types for a broken file
            raise ValueError(f"dataset={str(path)!r} is not a readable parquet file ({err})") from err
    if path.suffix not in (".jsonl", ".json"):
        raise ValueError(f"dataset={str(path)!r}: unsupported file type {path.suffix!r}; use {DATA_SUFFIXES}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"dataset={str(path)!r} is not UTF-8 text (byte {err.start})") from err
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"dataset={str(path)!r}: line {err.lineno} is not valid JSON ({err.msg})") from err
        return _numbered(data, prefix)
    rows: Located = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"{prefix}line {line_no}", json.loads(line)))
        except json.JSONDecodeError as err:
            rows.append((f"{prefix}line {line_no}", _BadLine(f"{prefix}line {line_no}: not valid JSON ({err.msg})")))
    return rows


def _read_dir(path: Path, split: str | None) -> Located:
    if (path / "dataset_dict.json").is_file() or (path / "dataset_info.json").is_file():
        import datasets

        loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            name = split or "train"
            if name not in loaded:
                raise ValueError(f"split={name!r} is not in dataset={str(path)!r}; splits: {list(loaded)}")
            loaded = loaded[name]
        return _numbered(loaded)
    files = sorted(p for p in path.rglob("*") if p.suffix in DATA_SUFFIXES and p.is_file())
    if split:
        files = [p for p in files if p.name.startswith(split) or split in p.relative_to(path).parts[:-1]]
    if not files:
        raise DatasetNotFoundError(f"dataset={str(path)!r}: no {DATA_SUFFIXES} files (split={split!r})")
    return [item for f in files for item in _read_file(f, prefix=f"{f.relative_to(path)} ")]


def normalize_row(row: Any, where: str | int) -> dict[str, Any]:
    """One raw row -> ``{"prompt", "answer"[, "data_source"]}``; ``ValueError`` naming ``where`` and the field.

    Args:
        row: the raw row.
        where: its place in the file, e.g. ``"line 3"``; an int is a 0-based row index (shown 1-based).
    """
    where = f"row {where + 1}" if isinstance(where, int) else where
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object with fields, got {type(row).__name__}")
    if "prompt" not in row:
        raise ValueError(f"{where}: missing field 'prompt' (fields: {sorted(row)})")
    prompt = row["prompt"]
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError(f"{where}: field 'prompt' is empty")
    elif isinstance(prompt, list):
        _check_messages(prompt, where)
    else:
        raise ValueError(f"{where}: field 'prompt' must be a string or a list of chat messages, "
                         f"got {type(prompt).__name__}")
    out: dict[str, Any] = {"prompt": prompt, "answer": _answer_of(row, where)}
    if row.get("data_source") is not None:
        out["data_source"] = str(row["data_source"])
    return out


def _check_messages(messages: list[Any], where: str) -> None:
    if not messages:
        raise ValueError(f"{where}: field 'prompt' is an empty message list")
    for j, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str) or not isinstance(
            msg.get("content"), str
        ):
            raise ValueError(f"{where}: field 'prompt[{j}]' must be {{'role': str, 'content': str}}, got {_short(msg)}")


def _answer_of(row: dict[str, Any], where: str) -> str:
    if "answer" in row and row["answer"] is not None:
        value, field = row["answer"], "answer"
    elif "reward_model" in row:
        rm = row["reward_model"]
        if isinstance(rm, str):
            try:
                rm = json.loads(rm)
            except json.JSONDecodeError as err:
                raise ValueError(f"{where}: field 'reward_model' is a string that is not JSON") from err
        if not isinstance(rm, dict) or rm.get("ground_truth") is None:
            raise ValueError(f"{where}: field 'reward_model.ground_truth' is missing")
        value, field = rm["ground_truth"], "reward_model.ground_truth"
    else:
        raise ValueError(f"{where}: missing field 'answer' (or 'reward_model.ground_truth'); "
                         f"fields: {sorted(row)}")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{where}: field {field!r} must be a string or a number, got {_short(value)}")
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"{where}: field {field!r} is empty")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: field {field!r} is {value!r}, not an answer")
    return str(value)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
