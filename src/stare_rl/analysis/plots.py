"""Report figures: one PNG per topic, runs of different methods overlaid, seeds as mean and min/max band.

matplotlib with the Agg backend only (no display needed). Each figure is a row of panels; a panel plots the
first metric name of its candidate list that a run logged (engines differ: verl's ``actor/entropy`` vs
TRL's ``entropy``), and panels or figures without any data are left out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stare_rl.analysis.runs import Run
from stare_rl.core.metrics import BATCH_ENTROPY, MEAN_WEIGHT
from stare_rl.core.registry import declared_metrics

logger = logging.getLogger(__name__)

ENTROPY_KEYS = ("actor/entropy", "entropy", BATCH_ENTROPY)
REWARD_KEYS = ("critic/score/mean", "reward", "critic/rewards/mean", "rewards/mean")


@dataclass(frozen=True)
class Panel:
    title: str
    keys: tuple[str, ...]
    ylim: tuple[float, float] | None = None


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    panels: tuple[Panel, ...]


_Q = ("pos_high", "pos_low", "neg_high", "neg_low")
FIGURES = (
    Figure("entropy", "Policy entropy (target band shaded)", (
        Panel("token-mean entropy", ENTROPY_KEYS), Panel("controllers' batch entropy", (BATCH_ENTROPY,)))),
    Figure("reward", "Reward and accuracy", (
        Panel("training reward", REWARD_KEYS),
        Panel("accuracy", ("eval/accuracy", "val/accuracy", "accuracy", "eval/avg@k", "val/avg@k")))),
    Figure("heldout", "Held-out learning curves (stare train --eval_every; step 0 = starting model)", (
        Panel("held-out pass@1 (mean reward of n samples)", ("eval/pass@1",), (-0.02, 1.02)),
        Panel("held-out pass@8 (unbiased, n samples)", ("eval/pass@8",), (-0.02, 1.02)),
        Panel("held-out pass@32 (unbiased, n samples)", ("eval/pass@32",), (-0.02, 1.02)),
        Panel("held-out greedy accuracy", ("eval/greedy_acc",), (-0.02, 1.02)),
        Panel("held-out response length (tokens)", ("eval/response_length",)),
        Panel("held-out sampling entropy", ("eval/entropy",)))),
    Figure("response_length", "Response length", (
        Panel("mean response length (tokens)", ("response_length/mean", "completions/mean_length")),)),
    Figure("weights", "Token weights", (Panel("mean token weight", (MEAN_WEIGHT,)),)),
    Figure("quadrants", "Token quadrants (advantage sign x surprisal vs entropy)", (
        *(Panel(f"{q} fraction", (f"quadrant/{q}_frac",)) for q in _Q),)),
    Figure("quadrant_dh", "Predicted entropy change per quadrant (per valid token)", (
        *(Panel(f"{q} predicted dH", (f"quadrant/{q}_dh_pred",)) for q in _Q),
        Panel("total predicted dH", ("quadrant/dh_pred",)))),
)



def method_figure() -> Figure:
    """One panel per metric that a registered method declares (``register_method(..., metrics=...)``)."""
    return Figure("method", "Method controls and token selections (declared by each method)",
                  tuple(Panel(m.label, (m.key,), m.ylim) for m in declared_metrics()))


def figures() -> tuple[Figure, ...]:
    """Every report figure: the generic ones, then the methods' declared metrics."""
    return (*FIGURES, method_figure())

def pick_key(runs: list[Run], keys: tuple[str, ...]) -> str | None:
    """The first candidate metric name that any run logged."""
    return next((k for k in keys if any(k in r.series for r in runs)), None)


def aggregate_series(runs: list[Run], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Over the runs (seeds) that logged ``key``: steps, mean, min, max on the union of steps.

    A step logged by only some seeds uses those seeds; the report warns about such mismatches once.
    """
    by_step: dict[int, list[float]] = {}
    for r in runs:
        for step, v in r.series.get(key, []):
            by_step.setdefault(step, []).append(v)
    steps = np.array(sorted(by_step), dtype=float)
    vals = [np.array(by_step[int(s)]) for s in steps]
    return (steps, np.array([v.mean() for v in vals]), np.array([v.min() for v in vals]),
            np.array([v.max() for v in vals]))


def group_by_method(runs: list[Run]) -> dict[str, list[Run]]:
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(r.method, []).append(r)
    return groups


def _target_band(ax, runs: list[Run], band_rel: float) -> None:  # noqa: ANN001  (matplotlib Axes)
    targets = sorted({r.target_entropy for r in runs if r.target_entropy is not None})
    for i, t in enumerate(targets):
        label = f"target {t:g} ±{band_rel:.0%}" if i == 0 or len(targets) > 1 else None
        ax.axhline(t, color="0.3", linestyle="--", linewidth=1.0, label=label)
        ax.axhspan(t * (1 - band_rel), t * (1 + band_rel), color="0.5", alpha=0.15)


def render_figure(fig_spec: Figure, runs: list[Run], out_dir: Path, band_rel: float = 0.25) -> Path | None:
    """Draw one figure to ``out_dir/<name>.png``; ``None`` when no run logged any of its metrics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(p, k) for p in fig_spec.panels if (k := pick_key(runs, p.keys)) is not None]
    if not panels:
        return None
    groups = group_by_method(runs)
    colors = plt.get_cmap("tab10").colors
    styles = ("-", "--", ":", "-.")  # colour repeats after 10 methods: the line style tells them apart
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(4.4 * ncols, 5.5), 3.3 * nrows + 0.4), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (panel, key) in zip(axes.flat, panels, strict=False):
        for i, (method, members) in enumerate(groups.items()):
            steps, mean, lo, hi = aggregate_series(members, key)
            if steps.size == 0:
                continue
            n = sum(key in r.series for r in members)
            color, style = colors[i % len(colors)], styles[(i // len(colors)) % len(styles)]
            label = method if n == 1 else f"{method} (mean of {n}, min/max band)"
            marker = "." if steps.size < 30 else None
            ax.plot(steps, mean, color=color, linestyle=style, linewidth=1.6, label=label, marker=marker)
            if n > 1:
                ax.fill_between(steps, lo, hi, color=color, alpha=0.2, linewidth=0)
        if fig_spec.name == "entropy":
            _target_band(ax, runs, band_rel)
        ax.set_title(f"{panel.title}\n[{key}]", fontsize=9)
        ax.set_xlabel("step")
        if panel.ylim is not None:
            ax.set_ylim(*panel.ylim)
        ax.grid(alpha=0.3)
    handles: dict[str, object] = {}
    for ax in axes.flat:  # one legend for the figure: every method that appears in any panel
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    fig.suptitle(fig_spec.title, fontsize=11)
    fig.tight_layout()
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=max(1, min(len(handles), ncols + 1)), fontsize=8, frameon=False)
    path = out_dir / f"{fig_spec.name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")  # "tight" takes in the legend below the panels
    plt.close(fig)
    return path
