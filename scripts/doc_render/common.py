"""Shared by every page's renderers: where the artifacts are, how they are loaded, and how numbers are written."""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file: scripts/doc_render/common.py)
RESULTS = ROOT / "docs" / "results"


def load_json(rel: str) -> dict:
    return json.loads((RESULTS / rel).read_text())


def mean_std(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    """``mean ± sample std`` of ``values`` (scaled), rounded to ``digits``."""
    m, s = statistics.mean(values) * scale, statistics.stdev(values) * scale
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def signed(x: float, digits: int = 1) -> str:
    s = f"{x:+.{digits}f}"
    return s.replace("-", "−")


def per_seed(runs: list[dict], get: Callable[[dict], float]) -> dict[int, float]:
    """One value per seed; the kernel settings of a seed must agree to 1e-6 (they are repeats, not samples)."""
    out: dict[int, list[float]] = {}
    for r in runs:
        out.setdefault(r["seed"], []).append(get(r))
    for seed, vals in out.items():
        assert max(vals) - min(vals) < 1e-6, f"seed {seed}: the kernel settings disagree: {vals}"
    return {s: v[0] for s, v in sorted(out.items())}


def grid_metrics(rel: str) -> dict[str, dict]:
    return {m["method"]: m["metrics"] for m in load_json(rel)["methods"]}


def gain_points(by: dict[str, dict], method: str, key: str, base: str = "grpo") -> float:
    """``method`` minus ``base`` in points, from the unrounded means."""
    return 100 * (by[method][key]["mean"] - by[base][key]["mean"])


def centred21(xs: list[float]) -> list[float]:
    """The centred 21-step moving mean, cut at both ends (summarise.py's and the frontier's smoothing)."""
    return [statistics.fmean(xs[max(0, i - 10):i + 11]) for i in range(len(xs))]


def load_metrics(rel: str) -> list[dict]:
    with gzip.open(RESULTS / rel, "rt") as f:
        return [json.loads(line) for line in f]


def series_of(rows: list[dict], *keys: str) -> list[tuple[int, float]]:
    key = next(k for k in keys if any(k in r for r in rows))
    return [(r["step"], r[key]) for r in rows if r.get(key) is not None]


def range_text(values: list[float], scale: float = 100, digits: int = 1) -> str:
    lo, hi = min(values) * scale, max(values) * scale
    return f"{lo:.{digits}f}" if f"{lo:.{digits}f}" == f"{hi:.{digits}f}" else f"{lo:.{digits}f}-{hi:.{digits}f}"


def rel_spread(values: list[float]) -> float:
    """(max - min) / min of a variant's repeats."""
    return (max(values) - min(values)) / min(values)


def span_text(values: list[float], fmt: str = "{:.1f}") -> str:
    """``a`` for one value, ``a to b`` for several (min to max)."""
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)} to {fmt.format(hi)}"


def half_up(x: float, digits: int) -> str:
    """``x`` as printed in its artifact (3 decimals at most), rounded half up as a reader would: 1.525 -> 1.53."""
    return str(Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def percent(x: float) -> str:
    return "100 %" if x == 1 else f"{100 * x:.1f} %"


def mean_half_up(values: list[float], scale: int = 100, digits: int = 1) -> str:
    """The mean of exact ratios (steps in a band over steps), rounded half up: (0.66 + 0.575) / 2 -> 61.8 %."""
    m = sum(Decimal(repr(v)) for v in values) / len(values) * scale
    return str(m.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def int_range_text(xs: list[float]) -> str:
    lo, hi = f"{min(xs):.0f}", f"{max(xs):.0f}"
    return lo if lo == hi else f"{lo}-{hi}"


def tiny_parameters(hidden: int, task: str = "arithmetic") -> int:
    """The tiny Qwen2's parameter count at ``hidden`` on ``task``'s character vocabulary (built on the meta device);
    the 128-wide count is checked against the committed arithmetic warm start (probe/warmstart.json)."""
    import torch

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import WARMSTART_NEWLINE, build_char_tokenizer
    from stare_rl.tasks import get_task

    tok = build_char_tokenizer(get_task(task).alphabet, newline=WARMSTART_NEWLINE)

    def count(h: int) -> int:
        with torch.device("meta"):
            return sum(p.numel() for p in build_tiny_model(tok, hidden_size=h).parameters())

    assert count(128) == load_json("probe/warmstart.json")["num_parameters"]
    return count(hidden)


def weight_control_series(name: str) -> tuple[dict[int, float], dict[int, float]]:
    """A weight_control run's batch entropy and W by step (W empty for GRPO)."""
    rows = load_metrics(f"weight_control/{name}.metrics.jsonl.gz")
    key = next(k for k in ("stare/batch_entropy", "control/batch_entropy", "actor/entropy") if any(k in r for r in rows))
    wkey = next((k for k in ("stare/reweight_w", "control/reweight_w") if any(k in r for r in rows)), None)
    return ({r["step"]: r[key] for r in rows if key in r},
            {r["step"]: r[wkey] for r in rows if wkey and wkey in r})


def sci(x: float) -> str:
    """``−2.2e-4``: one decimal, the exponent without its leading zero, a minus sign on the mantissa."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.replace('-', '−')}e{int(exponent)}"


def thousands(n: float) -> str:
    return f"{n:,.0f}".replace(",", " ")
