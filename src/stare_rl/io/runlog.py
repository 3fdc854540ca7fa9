"""Run directory layout and the ``metrics.jsonl`` log every training run writes.

A run directory (``stare train --output_dir DIR``) holds::

    config.yaml          the fully resolved configuration of the run (re-runnable with --config)
    metrics.jsonl        one JSON object per logged step, always with "step"; flushed line by line
    train_summary.json   TRL's end-of-training summary (train_runtime, train_loss, ...)
    checkpoint-<N>/      TRL/HF checkpoints (model, optimizer, RNG, trainer_state.json) plus
                         stare_controller.json (controller state, written atomically, first)
    model/               the final policy (a normal Hugging Face model dir, tokenizer included)
    eval.json            held-out evaluation of model/ (``stare eval`` format)
    eval_initial.json    the same evaluation of the starting policy, before training (``initial_eval``)
    README.md            model card: what was trained, on what, how, and the evaluation

Nothing here imports an engine: the TRL adapter writes through :class:`MetricsWriter`, the report reads
through :func:`read_metrics`.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.jsonl"
CONFIG_FILE = "config.yaml"
MODEL_DIR = "model"
EVAL_FILE = "eval.json"
INITIAL_EVAL_FILE = "eval_initial.json"
CONTROLLER_FILE = "stare_controller.json"
TRAIN_SUMMARY_FILE = "train_summary.json"
TRAINER_STATE_FILE = "trainer_state.json"  # HF's, the last file of a complete checkpoint
_CKPT = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class RunLayout:
    """Paths inside one run directory."""

    root: Path

    @property
    def metrics(self) -> Path:
        return self.root / METRICS_FILE

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def model(self) -> Path:
        return self.root / MODEL_DIR

    @property
    def eval(self) -> Path:
        return self.root / EVAL_FILE

    def checkpoints(self) -> list[Path]:
        """``checkpoint-N`` directories sorted by N."""
        if not self.root.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.root.iterdir() if (m := _CKPT.match(p.name)) and p.is_dir()]
        return [p for _, p in sorted(found)]

    def last_checkpoint(self) -> Path | None:
        """The newest *complete* checkpoint, or None.

        Complete: ``trainer_state.json`` is there (HF writes it after the model, optimizer and RNG states, and
        the TRL engine writes ``stare_controller.json`` before all of them) and, in a run whose checkpoints hold
        controller state, ``stare_controller.json`` too (checkpoints of older versions wrote it last). A
        checkpoint half-written by a killed run is skipped, never resumed from.
        """
        ckpts = self.checkpoints()
        with_controller = any((c / CONTROLLER_FILE).is_file() for c in ckpts)
        for ckpt in reversed(ckpts):
            if (ckpt / TRAINER_STATE_FILE).is_file() and (not with_controller or (ckpt / CONTROLLER_FILE).is_file()):
                return ckpt
        return None


def _jsonable(value: Any) -> Any:
    """Floats that JSON cannot hold (NaN, inf) become ``None``; tensors/numpy scalars become Python numbers."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file and ``os.replace`` (never half-written)."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True))


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and ``os.replace``: a reader
    (or a process killed mid-write) sees the old file or the new one, never a half-written one. A killed
    writer may leave a ``.<name>.*.tmp`` next to it; nothing reads those."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CheckpointWriteError(OSError):
    """Writing ``checkpoint`` failed (disk full, quota, read-only, I/O error); the half-written checkpoint was
    removed and ``previous`` (the last complete checkpoint, or None) is untouched."""

    def __init__(self, checkpoint: Path, previous: Path | None, cause: BaseException) -> None:
        self.checkpoint, self.previous, self.cause = Path(checkpoint), previous, cause
        errno_ = getattr(cause, "errno", None)
        super().__init__(errno_, str(self))

    def __str__(self) -> str:
        cause = self.cause
        what = (f"[Errno {cause.errno}] {cause.strerror}" if isinstance(cause, OSError) and cause.strerror
                else f"{type(cause).__name__}: {' '.join(str(cause).split())}")
        if isinstance(cause, OSError) and cause.filename:
            what += f" ({cause.filename})"
        last = (f"the last complete checkpoint {self.previous} is intact: free space, then re-run with "
                "--resume_from_checkpoint last" if self.previous is not None
                else "no complete checkpoint before it: re-run from the start once there is space")
        return f"could not write checkpoint {self.checkpoint}: {what}; the half-written checkpoint was removed; {last}"


def read_json(path: str | os.PathLike) -> Any:
    with open(path) as f:
        return json.load(f)


class MetricsWriter:
    """Appends one JSON object per line to ``metrics.jsonl`` and flushes it at once.

    Args:
        path: the ``metrics.jsonl`` file (its directory is created).
        resume_step: when resuming from a checkpoint at this step, lines with a larger ``step`` (written by
            the interrupted run after its last checkpoint) are dropped first, so the file holds each step once.
    """

    def __init__(self, path: str | os.PathLike, resume_step: int | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and self.path.exists():
            kept = [r for r in read_metrics(self.path) if int(r.get("step", 0)) <= resume_step]
            tmp = self.path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
            os.replace(tmp, self.path)

    def write(self, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """Append ``{"step": step, **metrics}`` (non-finite floats as null) and flush; returns the record."""
        record = {"step": int(step), **{k: _jsonable(v) for k, v in metrics.items() if k != "step"}}
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
        return record


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All records of a ``metrics.jsonl`` (a run dir or the file), in file order (see :func:`iter_metrics`)."""
    return [record for _, record in iter_metrics(path)]


def metrics_path(path: str | os.PathLike) -> Path:
    """The metrics file of a run directory (``metrics.jsonl``, else ``metrics.jsonl.gz``), or ``path`` itself."""
    path = Path(path)
    if not path.is_dir():
        return path
    plain = path / METRICS_FILE
    gz = path / (METRICS_FILE + ".gz")
    return gz if not plain.is_file() and gz.is_file() else plain


def iter_metrics(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of every record of a ``metrics.jsonl`` (a run dir or the file).

    The one reader of the format. Tolerant: a line that is not a JSON object (a run killed mid-write leaves at
    most one partial last line) is skipped with a ``logging`` warning naming the file and line. A run directory
    holding only ``metrics.jsonl.gz`` (committed results are gzipped) is read from that file. verl's ``file``
    logger writes ``{"step": n, "data": {metric: value}}`` per step; such a line is read as ``{"step": n,
    **data}``, so a verl run's log is a ``metrics.jsonl`` too.
    """
    path = metrics_path(path)
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    lines = raw.decode("utf-8", errors="replace").splitlines()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            what = "truncated last line (run killed mid-write?)" if lineno == len(lines) else "not JSON"
            logger.warning("%s:%d: %s (%s); line skipped", path, lineno, what, exc.msg)
            continue
        if not isinstance(row, dict):
            logger.warning("%s:%d: not a JSON object; line skipped", path, lineno)
            continue
        if set(row) == {"step", "data"} and isinstance(row["data"], dict):  # verl's file logger
            row = {**row["data"], "step": row["step"]}
        yield lineno, row


def describe_run_dir(root: str | os.PathLike) -> str:
    """A few human-readable lines listing what a run directory contains."""
    layout = RunLayout(Path(root))
    lines = [f"run directory: {layout.root.resolve()}"]
    entries = [
        (layout.config, "resolved config (re-run with `stare train --config` on it)"),
        (layout.metrics, "per-step metrics, one JSON object per line"),
        (layout.model, "final policy, a Hugging Face model dir (`stare eval --model` it)"),
        (layout.eval, "held-out evaluation of the final policy"),
        (layout.root / INITIAL_EVAL_FILE, "the same evaluation of the starting policy"),
        (layout.root / "README.md", "model card: what was trained and how"),
        (layout.root / TRAIN_SUMMARY_FILE, "TRL's end-of-training summary (runtime, mean loss)"),
    ]
    for path, what in entries:
        if path.exists():
            lines.append(f"  {path.name:<18} {what}")
    ckpts = layout.checkpoints()
    if ckpts:
        lines.append(f"  checkpoint-*/      {len(ckpts)} checkpoint(s), last {ckpts[-1].name} (resume_from_checkpoint)")
    return "\n".join(lines)
