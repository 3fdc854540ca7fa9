"""Reading run directories for the report: ``metrics.jsonl``, the run's config and ``eval.json``.

Tolerant by design: a run killed mid-write, a line that is not JSON, a repeated or out-of-order step, or a
missing file produces a ``logging`` warning naming the file and line, and everything else is still read.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stare_rl.core.metrics import current_name
from stare_rl.core.registry import list_methods
from stare_rl.io.runlog import METRICS_FILE, iter_metrics, metrics_path

logger = logging.getLogger(__name__)

CONFIG_FILES = ("run_config.json", "config.json", "config.yaml", "config.yml")
EVAL_FILES = ("eval.json", "eval/eval.json")
_METHOD_KEYS = ("method", "loss", "loss_type", "policy_loss")
_TARGET_KEYS = ("target_entropy", "entropy_target", "h_target")


@dataclass
class Run:
    """One run: per-metric series, its label (method, seed), target entropy and final evaluation.

    ``series[name]`` is a list of ``(step, value)`` sorted by step, one value per step (the last one logged).
    """

    path: Path
    method: str
    seed: int | None
    target_entropy: float | None
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    eval: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.method if self.seed is None else f"{self.method} (seed {self.seed})"

    def last(self, name: str) -> float | None:
        s = self.series.get(name)
        return s[-1][1] if s else None


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float) and math.isfinite(float(v)):
        return float(v)
    return None


def read_series(path: Path) -> dict[str, list[tuple[int, float]]]:
    """``metrics.jsonl`` (read by :func:`stare_rl.io.runlog.iter_metrics`) as ``{metric: [(step, value), ...]}``.

    Lines without a numeric step are warned about and skipped; a repeated step keeps its last value.
    """
    by_step: dict[str, dict[int, float]] = {}
    methods = list_methods()
    last_step: int | None = None
    for lineno, row in iter_metrics(path):
        step = row.get("step")
        if not isinstance(step, int | float) or isinstance(step, bool):
            logger.warning("%s:%d: no numeric 'step' field; line skipped", path, lineno)
            continue
        step = int(step)
        if last_step is not None and step <= last_step:
            logger.warning("%s:%d: step %d after step %d (resumed run?); the later value wins", path, lineno,
                           step, last_step)
        last_step = step
        for key, value in row.items():
            num = _number(value)
            if key != "step" and num is not None:  # runs of older versions: read under the current names
                by_step.setdefault(current_name(key, methods), {})[step] = num
    return {k: sorted(v.items()) for k, v in by_step.items()}


def _load_mapping(path: Path) -> dict[str, Any]:
    """A JSON or YAML file's top-level mapping; ``{}`` with a warning when unreadable."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        logger.warning("%s: cannot be read (%s); ignored", path, exc)
        return {}
    if not isinstance(data, dict):
        logger.warning("%s: expected a mapping, got %s; ignored", path, type(data).__name__)
        return {}
    return data


def _find(data: Any, keys: tuple[str, ...]) -> Any:
    """First value under any of ``keys``, searching nested mappings breadth-first."""
    queue = [data]
    while queue:
        d = queue.pop(0)
        if not isinstance(d, dict):
            continue
        for k in keys:
            if k in d and not isinstance(d[k], dict | list):
                return d[k]
        queue.extend(v for v in d.values() if isinstance(v, dict))
    return None


def _flatten_numbers(data: Any, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(_flatten_numbers(v, f"{prefix}{k}/" if isinstance(v, dict) else f"{prefix}{k}"))
    else:
        num = _number(data)
        if num is not None and prefix:
            out[prefix] = num
    return out


def read_run(run_dir: str | Path) -> Run | None:
    """Read one run directory; ``None`` (with a warning) when it has no metrics file or no usable line."""
    path = Path(run_dir)
    metrics = metrics_path(path)  # metrics.jsonl, or the committed metrics.jsonl.gz
    if not metrics.is_file():
        logger.warning("%s: no %s; run skipped", path, METRICS_FILE)
        return None
    series = read_series(metrics)
    if not series:
        logger.warning("%s: no usable metric line; run skipped", metrics)
        return None
    config: dict[str, Any] = {}
    for name in CONFIG_FILES:
        if (path / name).is_file():
            config = _load_mapping(path / name)
            break
    method = _find(config, _METHOD_KEYS)
    seed = _find(config, ("seed",))
    target = _number(_find(config, _TARGET_KEYS))
    evals: dict[str, float] = {}
    for name in EVAL_FILES:
        if (path / name).is_file():
            evals = _flatten_numbers(_load_mapping(path / name))
            break
    return Run(
        path=path,
        method=str(method) if method is not None else path.name,
        seed=int(seed) if isinstance(seed, int | float) and not isinstance(seed, bool) else None,
        target_entropy=target,
        series=series,
        eval=evals,
        config=config,
    )
