"""``stare report``: one self-contained HTML page (figures embedded as base64 PNG), the PNGs and a JSON summary.

The final-numbers table has one row per run and, for methods with several seeds, one ``mean [min, max]``
row per method. "Final" values are the mean of the last :data:`FINAL_WINDOW` logged points, to damp the
step-to-step noise of a small batch.
"""

from __future__ import annotations

import base64
import html
import json
import logging
from pathlib import Path

import numpy as np

from stare_rl.analysis.plots import (
    ENTROPY_KEYS,
    REWARD_KEYS,
    figures,
    group_by_method,
    pick_key,
    render_figure,
)
from stare_rl.analysis.runs import METRICS_FILE, Run, read_run

logger = logging.getLogger(__name__)

FINAL_WINDOW = 5
LENGTH_KEYS = ("response_length/mean", "completions/mean_length")
_EVAL_SETTINGS = {"k", "n", "temperature", "top_p", "seed"}


def _values(run: Run, key: str | None) -> np.ndarray:
    return np.array([v for _, v in run.series.get(key, [])]) if key else np.zeros(0)


def shared_target(runs: list[Run]) -> float | None:
    """The target entropy when the runs that set one all agree (baselines are scored against it), else None."""
    targets = {r.target_entropy for r in runs if r.target_entropy is not None}
    return targets.pop() if len(targets) == 1 else None


def run_summary(run: Run, runs: list[Run], band_rel: float) -> dict[str, float | int | str | None]:
    """Final numbers of one run (``None`` where the run did not log the metric)."""
    ent = _values(run, pick_key(runs, ENTROPY_KEYS))
    rew = _values(run, pick_key(runs, REWARD_KEYS))
    length = _values(run, pick_key(runs, LENGTH_KEYS))
    steps = [s for series in run.series.values() for s, _ in series]
    row: dict[str, float | int | str | None] = {
        "run": run.path.name, "method": run.method, "seed": run.seed, "last_step": max(steps),
        "entropy_start": float(ent[0]) if ent.size else None,
        "entropy_final": float(ent[-FINAL_WINDOW:].mean()) if ent.size else None,
        "entropy_min": float(ent.min()) if ent.size else None,
        "reward_final": float(rew[-FINAL_WINDOW:].mean()) if rew.size else None,
        "length_final": float(length[-FINAL_WINDOW:].mean()) if length.size else None,
        "in_band_frac": None,
    }
    t = run.target_entropy if run.target_entropy is not None else shared_target(runs)
    row["target_entropy"] = t
    if t is not None and ent.size:
        row["in_band_frac"] = float((np.abs(ent - t) <= band_rel * t).mean())
    row.update({f"eval:{k}": v for k, v in sorted(run.eval.items()) if _table_eval_key(k)})
    row.update(curve_summary(run))
    row.update(authority_summary(run))
    return row


CURVE_KEYS = ("eval/pass@1", "eval/pass@8", "eval/pass@32")


def curve_summary(run: Run) -> dict[str, float]:
    """Held-out curve points (``stare train --eval_every``): first (the starting model), last and best value."""
    out: dict[str, float] = {}
    for key in CURVE_KEYS:
        series = run.series.get(key)
        if series:
            name = key.removeprefix("eval/")
            out.update({f"curve:{name} start": series[0][1], f"curve:{name} final": series[-1][1],
                        f"curve:{name} max": max(v for _, v in series)})
    return out


AUTHORITY_MIN_SHARE = 0.1  # a run whose W sits at its bound below the target on >= 10 % of its steps gets a note


def authority_summary(run: Run) -> dict[str, float]:
    """``weight_control: auto`` runs (they log ``control/auto_saturated_high``): the share of logged steps on which
    W sat at its bound ``auto_w_max`` with the batch entropy below the target (the selection out of authority), on
    which L+ was empty, on which the fallback's bonus acted (``auto_fallback: bonus``), and on which both actuators
    sat at their bounds below the target. W is at its bound where the demand is at the top of the whole range
    (``auto_saturated_high``) or in the bonus's half (``auto_actuator`` 2). Empty for other runs."""
    top = dict(run.series.get("control/auto_saturated_high", []))
    if not top:
        return {}
    actuator = dict(run.series.get("control/auto_actuator", []))
    h, target = dict(run.series.get("control/batch_entropy", [])), dict(run.series.get("control/target_entropy", []))
    lp = dict(run.series.get("loss/l_plus_frac", []))
    steps = sorted(top)
    below = {s for s in steps if s in h and s in target and h[s] < target[s]}
    pinned = {s for s in steps if top[s] >= 1.0 or actuator.get(s) == 2.0}
    bonus = {s for s in steps if actuator.get(s) == 2.0}
    out = {"auto: W at bound, H below target": len(pinned & below) / len(steps)}
    if lp:
        out["auto: L+ empty"] = sum(v == 0.0 for v in lp.values()) / len(lp)
    if bonus:
        out["auto: bonus acting"] = len(bonus) / len(steps)
        out["auto: both at bounds, H below target"] = len({s for s in bonus if top[s] >= 1.0} & below) / len(steps)
    return out


def authority_note(run: Run, row: dict) -> str | None:
    """What to try when a run's selection ran out of authority (docs/controller.md, "When W sits at its bound"), read
    from its metrics, not its method's name: L+ empty on most steps, the fallback; L+ not empty (its tokens no longer
    raise the entropy), the right-signed selection first; the bonus at its bound too, a larger bonus or a lower
    target. None when W sat at its bound below the target on under 10 % of the steps."""
    pinned = row.get("auto: W at bound, H below target")
    if pinned is None or pinned < AUTHORITY_MIN_SHARE:
        return None
    empty = row.get("auto: L+ empty")
    what = (f"W sat at its bound with the entropy below the target on {100 * pinned:.0f} % of the logged steps"
            + (f" (L+ empty on {100 * empty:.0f} %)" if empty is not None else ""))
    both = row.get("auto: both at bounds, H below target")
    if both is not None and both >= AUTHORITY_MIN_SHARE:
        tries = (f"the bonus sat at its bound too on {100 * both:.0f} %: both actuators are out of authority; "
                 "raise auto_bonus_max or lower the target")
    elif both is not None:
        tries = "the fallback's bonus took over (control/entropy_coef)"
    elif empty is not None and empty >= 0.5:  # nothing left to re-weight: the second actuator
        tries = ("its selection has run out of tokens to act on: try auto_fallback bonus, with a low auto_w_max (3); "
                 "the authority map in docs/controller.md says where each bound held the target, and its cost")
    else:  # it re-weights tokens that no longer raise the entropy: the right-signed selection first
        tries = ("up-weighting its selection no longer raises the entropy: with the top-surprisal selection, try "
                 "the right-signed one (method stare_sensitivity), then auto_fallback bonus with a low auto_w_max "
                 "(3); the authority map in docs/controller.md says where each held the target, and its cost")
    return f"{run.label}: {what}; {tries}."


def _table_eval_key(key: str) -> bool:
    """Evaluation numbers worth a column (settings such as k or temperature, and per-word counts, are not)."""
    return key not in _EVAL_SETTINGS and (not key.startswith("reflection/") or key == "reflection/any")


def _warn_step_mismatch(groups: dict[str, list[Run]]) -> None:
    for method, members in groups.items():
        ref = members[0]
        ref_steps = {s for series in ref.series.values() for s, _ in series}
        for r in members[1:]:
            steps = {s for series in r.series.values() for s, _ in series}
            if steps != ref_steps:
                logger.warning("%s: steps differ from %s (same method %r: %d vs %d steps, last %d vs %d); "
                               "seeds are averaged where present", r.path / METRICS_FILE, ref.path / METRICS_FILE,
                               method, len(steps), len(ref_steps), max(steps), max(ref_steps))


def method_summary(rows: list[dict]) -> list[dict]:
    """Per method with >1 seed: for each numeric column ``mean`` and ``[min, max]`` over its runs."""
    out = []
    for method in dict.fromkeys(r["method"] for r in rows):
        members = [r for r in rows if r["method"] == method]
        if len(members) < 2:
            continue
        agg: dict = {"method": method, "runs": len(members)}
        for k in members[0]:
            vals = [r.get(k) for r in members]
            if k in ("seed", "last_step", "run", "method") or not all(isinstance(v, int | float) for v in vals):
                continue
            agg[k] = {"mean": float(np.mean(vals)), "min": float(np.min(vals)), "max": float(np.max(vals))}
        out.append(agg)
    return out


def _fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, dict):
        return f"{v['mean']:.4g} [{v['min']:.4g}, {v['max']:.4g}]"
    return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))


def _breakable(text: str) -> str:
    """Escaped ``text`` that may wrap after ``: _ / -`` (long column and run names keep the table narrow)."""
    out = html.escape(text)
    for ch in (":", "_", "/", "-"):
        out = out.replace(ch, ch + "<wbr>")
    return out


def _table(rows: list[dict], title: str) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{_breakable(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(
        f"<td>{_breakable(v) if isinstance(v := r.get(c), str) else _fmt(v)}</td>" for c in cols) + "</tr>"
        for r in rows)
    # The wrapper scrolls sideways rather than cut columns off when a table is still wider than the page.
    return f"<h2>{html.escape(title)}</h2><div class='wide'><table><tr>{head}</tr>{body}</table></div>"


_CSS = ("body{font-family:sans-serif;margin:2em;max-width:1500px}img{max-width:100%;border:1px solid #ddd}"
        ".wide{max-width:100%;overflow-x:auto}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 5px;"
        "text-align:right}th{background:#f0f0f0;max-width:7em;vertical-align:bottom}td:first-child{max-width:14em}")


def build_report(run_dirs: list[str | Path], out_dir: str | Path, band_rel: float = 0.25) -> Path:
    """Read the runs, draw the figures, write ``report.html``, the PNGs and ``summary.json`` into ``out_dir``.

    Raises:
        ValueError: when ``run_dirs`` is empty, ``band_rel`` is negative, or no run has usable metrics.
    """
    if not run_dirs:
        raise ValueError("run_dirs is empty: give at least one run directory")
    if not band_rel >= 0:
        raise ValueError(f"band_rel={band_rel} must be >= 0")
    runs = [r for d in run_dirs if (r := read_run(d)) is not None]
    if not runs:
        raise ValueError(f"none of run_dirs={[str(d) for d in run_dirs]} has a usable {METRICS_FILE}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = group_by_method(runs)
    _warn_step_mismatch(groups)
    pngs = [p for f in figures() if (p := render_figure(f, runs, out, band_rel)) is not None]
    rows = [run_summary(r, runs, band_rel) for r in runs]
    per_method = method_summary(rows)
    notes = [n for r, row in zip(runs, rows, strict=True) if (n := authority_note(r, row))]
    (out / "summary.json").write_text(json.dumps({"runs": rows, "methods": per_method, "authority": notes},
                                                 indent=2))
    imgs = "".join(
        f'<h2>{html.escape(p.stem)}</h2><img alt="{html.escape(p.stem)}" src="data:image/png;base64,'
        f'{base64.b64encode(p.read_bytes()).decode("ascii")}"/>' for p in pngs)
    listing = "".join(f"<li>{html.escape(r.label)}: <code>{html.escape(str(r.path))}</code></li>" for r in runs)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>stare report</title><style>{_CSS}"
            f"</style></head><body><h1>stare report: {len(runs)} run(s), {len(groups)} method(s)</h1>"
            f"<ul>{listing}</ul>{_table(rows, 'Final numbers per run')}"
            f"{_table(per_method, 'Per method: mean [min, max] over seeds') if per_method else ''}"
            + (f"<h2>Out of authority</h2><ul>{''.join(f'<li>{html.escape(n)}</li>' for n in notes)}</ul>"
               if notes else "")
            + f"{imgs}</body></html>")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    logger.info("wrote %s with %d figure(s)", path, len(pngs))
    return path
