"""Load prompt/answer rows from parquet, jsonl, a saved Hugging Face dataset, or a (cached) hub id.

Two row schemas are accepted and normalised to ``{"prompt": str | list[message], "answer": str}``:

- plain: ``{"prompt": "...", "answer": "..."}``;
- verl / DAPO: ``{"prompt": [{"role": "user", "content": "..."}, ...],
  "reward_model": {"ground_truth": "..."}, "data_source": ...}`` (chat prompts are kept as message lists;
  TRL's trainers apply the model's chat template).

``data_source`` is kept when present. A malformed row raises ``ValueError`` naming the row index and field.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DATA_SUFFIXES = (".parquet", ".jsonl", ".json")


class DatasetNotFoundError(FileNotFoundError, ValueError):
    """The dataset spec names no file, directory or loadable hub dataset."""


def load_dataset_rows(spec: str | Path, split: str | None = None) -> list[dict[str, Any]]:
    """Rows of the dataset ``spec``: a ``.parquet``/``.jsonl``/``.json`` file, a directory (saved with
    ``datasets``' ``save_to_disk`` or holding data files), or a hub id available offline in the cache.

    Args:
        spec: path or hub id.
        split: for a dataset dict or hub id, which split (default ``"train"``); for a directory of files,
            only files whose name starts with it.
    """
    raw = _read_raw(str(spec), split)
    if not raw:
        raise ValueError(f"dataset={str(spec)!r} has no rows")
    return [normalize_row(row, i) for i, row in enumerate(raw)]


def _read_raw(spec: str, split: str | None) -> list[dict[str, Any]]:
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

        return list(datasets.load_dataset(spec, split=split or "train"))
    except Exception as err:  # noqa: BLE001 - any hub failure becomes one clear message
        raise DatasetNotFoundError(
            f"dataset={spec!r} is not a local file or directory and could not be loaded from the Hugging Face "
            f"hub cache ({type(err).__name__}: {err}); download it first or pass a local path"
        ) from err


def _read_file(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if path.suffix not in (".jsonl", ".json"):
        raise ValueError(f"dataset={str(path)!r}: unsupported file type {path.suffix!r}; use {DATA_SUFFIXES}")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" and text.lstrip().startswith("["):
        return json.loads(text)
    rows = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(f"dataset={str(path)!r}: line {line_no} is not valid JSON ({err.msg})") from err
    return rows


def _read_dir(path: Path, split: str | None) -> list[dict[str, Any]]:
    if (path / "dataset_dict.json").is_file() or (path / "dataset_info.json").is_file():
        import datasets

        loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            name = split or "train"
            if name not in loaded:
                raise ValueError(f"split={name!r} is not in dataset={str(path)!r}; splits: {list(loaded)}")
            loaded = loaded[name]
        return list(loaded)
    files = sorted(p for p in path.rglob("*") if p.suffix in DATA_SUFFIXES and p.is_file())
    if split:
        files = [p for p in files if p.name.startswith(split) or split in p.relative_to(path).parts[:-1]]
    if not files:
        raise DatasetNotFoundError(f"dataset={str(path)!r}: no {DATA_SUFFIXES} files (split={split!r})")
    return [row for f in files for row in _read_file(f)]


def normalize_row(row: Any, index: int) -> dict[str, Any]:
    """One raw row -> ``{"prompt", "answer"[, "data_source"]}``; ``ValueError`` naming ``index`` and field."""
    if not isinstance(row, dict):
        raise ValueError(f"row {index}: expected an object with fields, got {type(row).__name__}")
    if "prompt" not in row:
        raise ValueError(f"row {index}: missing field 'prompt' (fields: {sorted(row)})")
    prompt = row["prompt"]
    if isinstance(prompt, str):
        if not prompt:
            raise ValueError(f"row {index}: field 'prompt' is empty")
    elif isinstance(prompt, list):
        _check_messages(prompt, index)
    else:
        raise ValueError(f"row {index}: field 'prompt' must be a string or a list of chat messages, "
                         f"got {type(prompt).__name__}")
    out: dict[str, Any] = {"prompt": prompt, "answer": _answer_of(row, index)}
    if row.get("data_source") is not None:
        out["data_source"] = str(row["data_source"])
    return out


def _check_messages(messages: list[Any], index: int) -> None:
    if not messages:
        raise ValueError(f"row {index}: field 'prompt' is an empty message list")
    for j, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str) or not isinstance(
            msg.get("content"), str
        ):
            raise ValueError(f"row {index}: field 'prompt[{j}]' must be {{'role': str, 'content': str}}, got {msg!r}")


def _answer_of(row: dict[str, Any], index: int) -> str:
    if "answer" in row and row["answer"] is not None:
        value, field = row["answer"], "answer"
    elif "reward_model" in row:
        rm = row["reward_model"]
        if isinstance(rm, str):
            try:
                rm = json.loads(rm)
            except json.JSONDecodeError as err:
                raise ValueError(f"row {index}: field 'reward_model' is a string that is not JSON") from err
        if not isinstance(rm, dict) or rm.get("ground_truth") is None:
            raise ValueError(f"row {index}: field 'reward_model.ground_truth' is missing")
        value, field = rm["ground_truth"], "reward_model.ground_truth"
    else:
        raise ValueError(f"row {index}: missing field 'answer' (or 'reward_model.ground_truth'); "
                         f"fields: {sorted(row)}")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"row {index}: field {field!r} must be a string or a number, got {value!r}")
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"row {index}: field {field!r} is empty")
    return str(value)
