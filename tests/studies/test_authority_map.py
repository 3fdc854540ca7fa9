"""The authority map (studies/authority_map): its rules R, H, F, D, S on constructed numbers, its analysis on
hand-made fake cells in tmp dirs (metrics.jsonl, config.yaml, eval.json, compare_done.json; no training), and its
driver's conditional blocks: phase C is queued only once the width's GRPO cell finished and rule R holds."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import yaml

STUDY = Path(__file__).resolve().parents[2] / "studies" / "authority_map"
sys.path.insert(0, str(STUDY))  # its modules import each other by name, as when run as scripts
import authority_rules as rules  # noqa: E402


def _load(name: str):
    key = f"authority_map_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, STUDY / f"{name}.py")
        sys.modules[key] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[key])
    return sys.modules[key]


# ------------------------------------------------------------------------------------------- rules, on numbers
def test_h_holds_from_90_percent() -> None:
    assert rules.rule_h(0.92) == "holds"
    assert rules.rule_h(0.90) == "holds"
    assert rules.rule_h(342 / 380) == "holds"  # 0.9 from a count
    assert rules.rule_h(0.899) == "does not hold"
    assert rules.rule_h(None) == "not run yet"


def _r(rolling: float, p1: float = 0.5, pk: float = 0.9) -> dict:
    return {"rolling": rolling, "pass@1": p1, "pass@k": pk}


def test_f_rescue_and_cost() -> None:
    f = rules.rule_f(_r(0.40), _r(0.95))
    assert f["verdict"] == "rescues" and f["d_points"] == pytest.approx(55.0)
    assert rules.rule_f(_r(0.40), _r(0.60))["verdict"] == "rescues"  # d = +20 points (0.6 - 0.4 in floats)
    assert rules.rule_f(_r(0.40), _r(0.59))["verdict"] == "does not rescue"  # +19, and 0.59 misses
    assert rules.rule_f(_r(0.85), _r(0.90))["verdict"] == "rescues"  # +5 points, but now it holds
    cost = rules.rule_f(_r(0.95, p1=0.80), _r(0.94, p1=0.77))  # holds both, pass@1 -3 points
    assert cost["verdict"] == "costs" and cost["cost_pass@1"] and not cost["cost_band"]
    assert cost["d_pass@1_points"] == pytest.approx(-3.0)
    assert rules.rule_f(_r(0.95, p1=0.80), _r(0.94, p1=0.785))["verdict"] == "costs nothing"  # -1.5 points
    band = rules.rule_f(_r(0.97), _r(0.91))  # the rolling band falls by 6 points
    assert band["verdict"] == "costs" and band["cost_band"]
    assert rules.rule_f(_r(0.97), _r(0.92))["verdict"] == "costs nothing"  # by 5: not more than 5
    assert rules.rule_f(None, _r(0.9))["verdict"] == "not run yet"


def _pairs(*fs: dict) -> dict:
    return {f"p{i}": f for i, f in enumerate(fs)}


def test_d_thresholds() -> None:
    miss_rescued, miss_not = rules.rule_f(_r(0.4), _r(0.95)), rules.rule_f(_r(0.4), _r(0.45))
    hold_free, hold_cost = rules.rule_f(_r(0.95), _r(0.95)), rules.rule_f(_r(0.95, p1=0.8), _r(0.95, p1=0.7))
    d = rules.rule_d(_pairs(miss_rescued, miss_rescued, miss_not, hold_free))  # 2 of 3 misses, no cost
    assert d["verdict"] == "bonus" and len(d["misses"]) == 3 and len(d["rescued"]) == 2 and not d["provisional"]
    assert rules.rule_d(_pairs(miss_rescued, miss_not, miss_not))["verdict"] == "none"  # 1 of 3
    assert rules.rule_d(_pairs(miss_rescued, miss_rescued))["verdict"] == "none"  # fewer than 3 misses
    d = rules.rule_d(_pairs(miss_rescued, miss_rescued, miss_rescued, hold_cost))  # all rescued, one cost
    assert d["verdict"] == "none" and d["costs"] == ["p3"] and d["turn_it_on_in"] == ["p0", "p1", "p2"]
    d = rules.rule_d(_pairs(miss_rescued, miss_rescued, miss_rescued, {"verdict": "not run yet"}))
    assert d["verdict"] == "bonus" and d["provisional"] and d["pairs_measured"] == 3


def test_d_amended_chooses_the_hand_off_bound() -> None:
    """D as amended (phases B3 and B3s): D's criterion on F (W <= 50), F3 (W <= 3) and F3s (W <= 3, span log 50);
    one met: that hand-off; several: more rescued pairs holding H wins, a tie keeps the first of 50, 3, 3s; none:
    none."""
    held, rescued_only, miss_not = rules.rule_f(_r(0.4), _r(0.95)), rules.rule_f(_r(0.4), _r(0.65)), rules.rule_f(_r(0.4), _r(0.45))
    assert held["with_fallback_holds"] and not rescued_only["with_fallback_holds"] and rescued_only["rescue"]
    f50, f3 = _pairs(rescued_only, rescued_only, miss_not), _pairs(held, held, held)
    fnot = _pairs(miss_not, miss_not, miss_not)
    d50, d3, dnot = rules.rule_d(f50), rules.rule_d(f3), rules.rule_d(fnot)
    assert d50["verdict"] == "bonus" and d3["verdict"] == "bonus" and dnot["verdict"] == "none"

    def amended(o50, o3, o3s):
        return rules.rule_d_amended({"50": o50, "3": o3, "3s": o3s})

    a = amended((d50, f50), (d3, f3), (dnot, fnot))
    assert a["verdict"] == "bonus" and a["hand_off_w"] == 3 and a["bonus_span"] is None and a["meets"] == ["50", "3"]
    assert a["rescued_pairs_holding_h"] == {"50": 0, "3": 3, "3s": 0} and a["choice"] == "3"
    assert amended((d50, f50), (d50, f50), (dnot, fnot))["hand_off_w"] == 50  # a tie: 50 stays
    assert amended((d50, f50), (dnot, fnot), (dnot, fnot))["hand_off_w"] == 50
    assert amended((dnot, fnot), (d3, f3), (dnot, fnot))["hand_off_w"] == 3
    s = amended((d50, f50), (dnot, fnot), (d3, f3))  # B3s alone holds H where it rescues
    assert (s["choice"], s["hand_off_w"], s["bonus_span"]) == ("3s", 3, "log 50") and s["meets"] == ["50", "3s"]
    assert amended((dnot, fnot), (d3, f3), (d3, f3))["choice"] == "3"  # a tie between 3 and 3s keeps 3
    neither = amended((dnot, fnot), (dnot, fnot), (dnot, fnot))
    assert neither["verdict"] == "none" and neither["hand_off_w"] is None and not neither["provisional"]
    assert amended((dnot, fnot), (dnot, fnot), (rules.rule_d({"p": {"verdict": "not run yet"}}), {}))["provisional"]


def test_r_on_a_constructed_grpo_entropy_series() -> None:
    falls = [1.0 - 0.55 * i / 199 for i in range(200)]  # 1.0 -> 0.45
    r = rules.rule_r(falls, 21)
    assert r["verdict"] == "holds" and r["min_mean_over_start"] < 0.5
    assert 0.5 >= rules.centred_mean(falls, 21)[r["first_step"] - 1]
    assert rules.rule_r([1.0 - 0.45 * i / 199 for i in range(200)], 21)["verdict"] == "does not hold"  # to 0.55
    spike = [1.0] + [0.6] * 100 + [0.2] + [0.6] * 100  # one step at 0.2x: its 21-step mean stays above 0.5x
    assert rules.rule_r(spike, 21)["verdict"] == "does not hold"
    assert rules.rule_r([], 21)["verdict"] == "not run yet"


def test_s_selects_the_80_to_90_window_and_close_pairs() -> None:
    picks = rules.rule_s({"a": 0.85, "b": 0.80, "c": 0.90, "d": 0.79, "e": None},
                         {"p": ("x", "y", 100 * (0.95 - 0.80)), "q": ("u", "v", 25.0), "r": ("s", "t", 24.9)})
    assert sorted(picks) == ["a", "b", "s", "t", "x", "y"]  # 0.95 - 0.80 is 14.99999... points: still 15


# ------------------------------------------------------------------------------------- fake cells, analysis
def _cell(root: Path, task: str, method: str, entropy: list[float], seed: int = 0, target: float | None = None,
          fallback: str = "none", w: float = 10.0, lp: float = 0.01, coef: float = 0.0, p1: float = 0.5,
          done: bool = True, width: int = 64, u: float | None = None) -> Path:
    d = root / task / "runs" / method / f"seed{seed}"
    d.mkdir(parents=True)
    rows = []
    for i, h in enumerate(entropy):
        row = {"step": i + 1, "control/batch_entropy" if target else "actor/entropy": h}
        if target:
            row.update({"control/target_entropy": target, "control/reweight_w": w, "loss/l_plus_frac": lp,
                        "loss/l_minus_frac": 0.02, "control/entropy_coef": coef})
        if u is not None:  # the controller's demand and integral (rule T reads them): u, and u / 2
            row.update({"control/auto_strength": u * min(1.0, (i + 1) / 10), "control/auto_integral": u / 2})
        rows.append(row)
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "config.yaml").write_text(yaml.safe_dump({"auto_w_max": 50.0, "auto_bonus_max": 0.1, "seed": seed,
                                                   "auto_fallback": fallback, "tiny_hidden_size": width}))
    (d / "eval.json").write_text(json.dumps({"avg@8": p1, "pass@8": 0.9, "k": 8}))
    if done:
        (d / "compare_done.json").write_text(json.dumps({"wall_s": 1.0}))
    return d


HELD = [1.0] + [0.7] * 99  # crosses at step 2 and stays on the target: band 100 %
LOST = [1.0] + [0.7] * 20 + [0.3] * 79  # crosses, then falls far below: band ~ 0.3


def test_analysis_on_fake_cells(tmp_path: Path) -> None:
    an = _load("analyze")
    _cell(tmp_path, "arithmetic", "grpo_h64", [1.0 - 0.6 * i / 99 for i in range(100)])  # reaches 0.4x: R holds
    _cell(tmp_path, "arithmetic", "grpo_h128", [1.0] * 100, width=128)  # flat: R does not hold
    _cell(tmp_path, "arithmetic", "sens_t07_h64", LOST, target=0.7, w=50.0, lp=0.0)
    _cell(tmp_path, "arithmetic", "sens_t07_fb_h64", HELD, target=0.7, fallback="bonus", coef=0.1, p1=0.47)
    _cell(tmp_path, "arithmetic", "c2_t07_h64", HELD, target=0.7, p1=0.50)
    _cell(tmp_path, "arithmetic", "c2_t07_fb_h64", HELD, target=0.7, fallback="bonus", p1=0.47)
    _cell(tmp_path, "arithmetic", "sens_t07_fb3_h64", HELD, target=0.7, fallback="bonus", coef=0.1, p1=0.52)
    _cell(tmp_path, "arithmetic", "sens_t07_fb3s_h64", LOST, target=0.7, fallback="bonus", coef=0.1, p1=0.55)
    _cell(tmp_path, "arithmetic", "c2_t07_h128", HELD, target=0.7, done=False, width=128)  # running: not run yet
    (tmp_path / "arithmetic" / "runs" / "c2_t07_fb_h128" / "seed0").mkdir(parents=True)  # done, unreadable
    (tmp_path / "arithmetic" / "runs" / "c2_t07_fb_h128" / "seed0" / "compare_done.json").write_text("{}")
    res = an.evaluate(tmp_path, None)
    cells, r = res["tasks"]["arithmetic"]["cells"], res["rules"]
    assert r["R"]["arithmetic"][64]["verdict"] == "holds" and r["R"]["arithmetic"][128]["verdict"] == "does not hold"
    assert cells["c2_t05_h128"]["state"].startswith("skipped (rule R")
    assert cells["c2_t05_h64"]["state"] == "not run yet" and cells["c2_t07_h128"]["state"] == "not run yet (started)"
    assert cells["c2_t07_fb_h128"]["state"].startswith("unreadable")
    lost = cells["sens_t07_h64"]["seeds"][0]
    assert lost["w_at_bound_steps"] == 100 and lost["l_plus_empty_share"] == 1.0 and lost["steps"] == 100
    bonus = cells["sens_t07_fb_h64"]["seeds"][0]
    assert bonus["bonus_at_bound_steps"] == 100 and bonus["band_fraction_smoothed"] == 1.0
    assert bonus["bonus_coef_max"] == pytest.approx(0.1) and bonus["peak_over_target"] == pytest.approx(1.0)
    assert lost["peak_over_target"] == pytest.approx(1.0) and lost["bonus_coef_max"] is None  # from the crossing on
    assert r["H"]["arithmetic/sens_t07_h64"]["verdict"] == "does not hold"
    assert r["H"]["arithmetic/sens_t07_fb_h64"]["verdict"] == "holds"
    assert r["F"]["arithmetic h64 sensitivity 0.7x"]["verdict"] == "rescues"
    cost = r["F"]["arithmetic h64 C2 0.7x"]  # both hold, pass@1 -3 points
    assert cost["verdict"] == "costs" and cost["d_pass@1_points"] == pytest.approx(-3.0)
    assert r["F"]["arithmetic h128 C2 0.5x"]["verdict"].startswith("skipped")
    assert r["D"]["verdict"] == "none" and r["D"]["provisional"]  # one miss measured, and one cost
    f3 = r["F3"]["arithmetic h64 sensitivity 0.7x"]  # phase B3 against the selection alone, and against B
    assert f3["verdict"] == "rescues" and f3["with"] == "arithmetic/sens_t07_fb3_h64"
    assert f3["against_b"]["b"] == "arithmetic/sens_t07_fb_h64" and f3["against_b"]["d_rolling_points"] == 0.0
    assert f3["against_b"]["d_pass@1_points"] == pytest.approx(5.0)
    assert r["D3"]["rescued"] == ["arithmetic h64 sensitivity 0.7x"] and r["D_amended"]["verdict"] == "none"
    f3s = r["F3s"]["arithmetic h64 sensitivity 0.7x"]  # phase B3s against the selection alone, and against B3
    assert f3s["verdict"] == "does not rescue" and f3s["with"] == "arithmetic/sens_t07_fb3s_h64"
    assert f3s["against_b"]["b"] == "arithmetic/sens_t07_fb3_h64" and f3s["against_b"]["d_pass@1_points"] == pytest.approx(3.0)
    assert r["D3s"]["misses"] == ["arithmetic h64 sensitivity 0.7x"] and r["D3s"]["rescued"] == []
    assert r["H"]["arithmetic/sens_t07_fb3s_h64"]["verdict"] == "does not hold"
    out = tmp_path / "out"
    assert an.main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    md = (out / "authority_map.md").read_text()
    assert "| 64 | sensitivity | 0.7x | bonus | B | finished | 1 |" in md and (out / "authority_map.png").is_file()
    saved = json.loads((out / "authority_map.json").read_text())
    assert saved["n_seed0_finished"] == 9  # the unreadable too
    # hidden 128's phase C (rule R does not hold there): planned, not in the map, and not counted as to run
    assert sorted(saved["seed0_skipped"]) == ["arithmetic/c2_t05_fb_h128", "arithmetic/c2_t05_h128",
                                              "arithmetic/sens_t05_fb_h128", "arithmetic/sens_t05_h128"]
    assert (f"Seed-0 cells finished: 9 of {saved['n_seed0_cells'] - 4} (4 more planned are not in the map: rule R "
            "does not hold at their width)") in md
    assert "| 64 | sensitivity | 0.7x | bonus (W ≤ 3) | B3 | finished | 1 |" in md
    assert "| 64 | sensitivity | 0.7x | bonus (W ≤ 3, span log 50) | B3s | finished | 1 |" in md
    assert md.index("| bonus (W ≤ 3) | B3 |") < md.index("| bonus (W ≤ 3, span log 50) | B3s |")  # rows: B3s last
    assert "**F3s (what the fallback with `auto_w_max: 3` and `auto_bonus_span` log 50 adds" in md
    assert "| arithmetic h64 sensitivity 0.7x | 13.1 % | 13.1 % | +0.0 | +5.0 | +0.0 | does not rescue | -86.9, +3.0, +0.0 |" in md
    assert "**D's criterion on F3s (W ≤ 3, the bonus's span log 50)**: **none**" in md
    assert "| arithmetic h64 sensitivity 0.7x | 13.1 % | 100.0 % | +86.9 | +2.0 | +0.0 | rescues | +0.0, +5.0, +0.0 |" in md  # F3 row
    assert ("- hidden 64, sensitivity 0.7x, fallback none: below the band on average (mean 0.54x the target): out of "
            "authority, W at its bound on 100 % of steps, L+ empty on 100 %.") in md  # LOST: (20 x 0.7 + 79 x 0.3) / 99 / 0.7
    assert "hidden 64, C2 0.7x, fallback none:" not in md  # it holds: no "why"


def test_rule_t_reads_a_fallback_cell_from_its_twin_where_the_demand_never_reached_the_hand_off(
        tmp_path: Path, monkeypatch) -> None:
    """HYPOTHESES.md, rule T: a fallback cell whose twin (the same fields but the fallback's, the same seed) kept its
    demand and integral below log of the cell's hand-off bound on every step is read as the twin's run (and the
    driver does not run it); at or above the bound, or with the twin unfinished, it is a cell like any other."""
    an, rc = _load("analyze"), _load("run_cells")
    _cell(tmp_path, "arithmetic", "c2_t07_h64", HELD, target=0.7, u=2.0, p1=0.61)  # below log 50, above log 3
    _cell(tmp_path, "arithmetic", "c2_t07_h64", HELD, seed=1, target=0.7, u=1.0, p1=0.63)  # below log 3 too
    _cell(tmp_path, "arithmetic", "sens_t07_h64", LOST, target=0.7, u=math.log(50.0), lp=0.0)  # at W's bound
    _cell(tmp_path, "arithmetic", "c2_t07_h128", HELD, target=0.7, u=1.0, width=128, done=False)  # running
    res = an.evaluate(tmp_path, None)
    cells, r = res["tasks"]["arithmetic"]["cells"], res["rules"]
    fb = cells["c2_t07_fb_h64"]
    assert fb["state"] == "finished" and fb["twin"] == "arithmetic/c2_t07_h64" and fb["twin_seeds"] == [0, 1]
    twin0, rec0 = cells["c2_t07_h64"]["seeds"][0], fb["seeds"][0]
    assert rec0["pass@1"] == twin0["pass@1"] == pytest.approx(0.61) and rec0["band_fraction"] == twin0["band_fraction"]
    assert rec0["bonus_acted_steps"] == 0 and rec0["bonus_coef_max"] == 0.0 and rec0["w_at_bound_steps"] == 0
    assert rec0["rule_t"]["u_max"] == pytest.approx(2.0) and rec0["rule_t"]["bound"] == pytest.approx(math.log(50.0))
    assert fb["reading"]["n"] == 2 and fb["reading"]["pass@1"] == pytest.approx(0.62)
    b3 = cells["c2_t07_fb3_h64"]  # W <= 3: seed 0's demand 2.0 passed log 3; seed 1's (1.0) did not
    assert b3["twin_seeds"] == [1] and b3["state"] == "not run yet" and 0 not in b3["seeds"]
    assert "twin_seeds" not in cells["sens_t07_fb_h64"] and cells["sens_t07_fb_h64"]["state"] == "not run yet"
    assert "twin_seeds" not in cells["c2_t07_fb_h128"]  # its twin has not finished
    f = r["F"]["arithmetic h64 C2 0.7x"]
    assert f["verdict"] == "costs nothing" and f["d_points"] == 0.0 and f["d_pass@1_points"] == 0.0
    out = tmp_path / "out"
    assert an.main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    assert "| 64 | C2 | 0.7x | bonus | B | finished (rule T: = c2_t07_h64, seed 0, 1) | 2 |" in (out / "authority_map.md").read_text()
    # the driver: the same test decides which cells it does not start
    monkeypatch.setattr(rc, "DOCS", tmp_path / "nothing committed")
    why = rc.skip_cell(rc.Cell("arithmetic", "c2_t07_fb_h64", 0), tmp_path)
    assert why == ("identical to its twin c2_t07_h64/seed0 (rule T, HYPOTHESES.md: the twin's demand and integral "
                   "stayed below log 50 = 3.912 on every step, at most 2.000 and 1.000): the map reads the twin's run "
                   "for it")
    assert rc.skip_cell(rc.Cell("arithmetic", "c2_t07_fb3_h64", 0), tmp_path) is None
    assert rc.skip_cell(rc.Cell("arithmetic", "c2_t07_fb3_h64", 1), tmp_path).startswith("identical to its twin")
    assert rc.skip_cell(rc.Cell("arithmetic", "sens_t07_fb_h64", 0), tmp_path) is None
    assert rc.skip_cell(rc.Cell("arithmetic", "c2_t07_fb_h128", 0), tmp_path) is None
    assert rc.STUDY.skip is rc.skip_cell
    # the blocks' rules (phase C's R, rule S) count such a cell as finished: its twin's run
    assert rc._finished(tmp_path, rc.Cell("arithmetic", "c2_t07_fb_h64", 0)) == tmp_path / "arithmetic" / "runs" / "c2_t07_h64" / "seed0"
    assert rc._finished(tmp_path, rc.Cell("arithmetic", "sens_t07_fb_h64", 0)) is None
    assert rc.STUDY.waits_for is rc.twin_cell  # while the twin runs, the fallback cell waits for rule T's answer
    assert rc.twin_cell(rc.Cell("arithmetic", "c2_t07_fb3s_h64", 2)) == (rc.Cell("arithmetic", "c2_t07_h64", 2),)
    assert rc.twin_cell(rc.Cell("arithmetic", "c2_t07_h64", 2)) == ()


def test_every_fallback_cell_has_a_twin_and_rule_t_matches_the_committed_runs() -> None:
    """Each grid's fallback methods have a twin (the same fields but the fallback's); and each committed fallback
    cell that rule T calls identical to its twin was run and is: every logged value but the timings, and
    eval.json, equal the twin's (the premise of the deviation, checked on the real runs)."""
    import gzip

    grids, values = _load("authority_grids"), _load("authority_values")
    docs = STUDY.parents[1] / "docs" / "results" / "authority_map"
    checked = 0
    for task in grids.TASKS:
        for m, slot in grids.slots(task).items():
            t = grids.twin(task, m)
            if slot.fallback == "none":
                assert t is None
                continue
            assert t is not None and grids.slots(task)[t][:4] == slot[:4] and grids.slots(task)[t].fallback == "none"
            twin_dir, own = docs / task / "runs" / t / "seed0", docs / task / "runs" / m / "seed0"
            if not (own / "compare_done.json").is_file() or values.twin_record(twin_dir, slot) is None:
                continue
            rows = [[{k: v for k, v in json.loads(x).items() if "time" not in k} for x in gzip.open(d / "metrics.jsonl.gz", "rt")
                     if x.strip()] for d in (twin_dir, own)]
            # the fallback's own two series: the bonus's coefficient 0 on every step, the actuator 0 or 1 (never 2)
            extra = [{k: row.pop(k) for k in ("control/entropy_coef", "control/auto_actuator")} for row in rows[1]]
            assert all(x["control/entropy_coef"] == 0.0 and x["control/auto_actuator"] in (0.0, 1.0) for x in extra)
            assert rows[0] == rows[1], (task, m)
            assert json.loads((twin_dir / "eval.json").read_text()) == json.loads((own / "eval.json").read_text())
            checked += 1
    assert checked >= 5  # countdown h128 C2 and sensitivity, h256 sensitivity; countdown_cot h64 both


def test_why_a_cell_misses_on_hand_made_values() -> None:
    """The descriptive "why" of a cell that does not hold: the entropy's mean against the target (band 10 %), the
    actuators at their bound on >= 10 % of steps, L+ empty on >= half."""
    why = _load("authority_report").why_missed
    assert why({"never_crossed": True}).startswith("never reached the target")
    assert why({"mean_over_target": 0.5, "w_at_bound_share": 0.8, "l_plus_empty_share": 0.49}) == (
        "below the band on average (mean 0.50x the target): out of authority, W at its bound on 80 % of steps")
    assert why({"mean_over_target": 0.89, "w_at_bound_share": 0.05}) == (
        "below the band on average (mean 0.89x the target): no actuator at its bound")
    assert why({"mean_over_target": 1.2}) == "above the band on average (mean 1.20x the target)"
    # W at its floor 1 (the selection off) from the first crossing: nothing raised the entropy there
    assert why({"mean_over_target": 1.11, "w_at_floor_share": 0.70}) == (
        "above the band on average (mean 1.11x the target): W at its floor 1 (the selection off) on 70 % of the steps "
        "from the first crossing: there the entropy was above the target with no actuator raising it, and neither "
        "can lower it")
    assert why({"mean_over_target": 1.2, "w_at_floor_share": 0.09}) == "above the band on average (mean 1.20x the target)"
    assert why({"mean_over_target": 1.02, "noise_pct_of_target": 8.1, "w_at_floor_share": 0.4}) == (
        "inside the band on average (mean 1.02x the target), the 21-step mean leaves it with no actuator at its bound "
        "(step noise 8.1 % of the target); W at its floor 1 (the selection off) on 40 % of the steps from the first "
        "crossing: there the entropy was above the target with no actuator raising it, and neither can lower it: "
        "the controller's tracking, not its authority")
    assert why({"mean_over_target": 1.53, "peak_over_target": 4.87, "bonus_at_bound_share": 0.01}) == (
        "above the band on average (mean 1.53x the target; the step entropy up to 4.87x it)")
    assert why({"mean_over_target": 0.8, "peak_over_target": 1.99}) == (
        "below the band on average (mean 0.80x the target): no actuator at its bound")  # below 2x: not named
    # inside the band on average, the fallback never at its bound: what is left is tracking
    assert why({"mean_over_target": 0.98, "w_at_bound_share": 0.65, "l_plus_empty_share": 0.94,
                "bonus_at_bound_share": 0.0}) == (
        "inside the band on average (mean 0.98x the target), the 21-step mean leaves it: W at its bound on 65 % of "
        "steps, L+ empty on 94 %, the bonus below its bound carries the rest: the controller's tracking, not its "
        "authority")
    assert why({"mean_over_target": 0.92, "w_at_bound_share": 0.8, "bonus_at_bound_share": 0.34}).endswith(
        "W at its bound on 80 % of steps, the bonus at its bound on 34 %: both actuators out of authority on part "
        "of the run")
    assert why({"mean_over_target": 1.0, "w_at_bound_share": 0.01, "noise_pct_of_target": 14.2}) == (
        "inside the band on average (mean 1.00x the target), the 21-step mean leaves it with no actuator at its "
        "bound (step noise 14.2 % of the target): the controller's tracking, not its authority")


def test_analysis_on_an_empty_run_root(tmp_path: Path) -> None:
    an = _load("analyze")
    assert an.main(["--runs", str(tmp_path / "none"), "--out", str(tmp_path / "out")]) == 0
    res = json.loads((tmp_path / "out" / "authority_map.json").read_text())
    assert res["n_seed0_finished"] == 0 and res["n_seed0_cells"] == 117  # 81 registered + 18 of B3 + 18 of B3s
    assert {c["state"] for t in res["tasks"].values() for c in t["cells"].values()} == {"not run yet"}
    assert {p["verdict"] for p in res["rules"]["F"].values()} == {"not run yet"}
    assert len(res["rules"]["F3"]) == 18 and {p["verdict"] for p in res["rules"]["F3"].values()} == {"not run yet"}
    assert len(res["rules"]["F3s"]) == 18 and {p["verdict"] for p in res["rules"]["F3s"].values()} == {"not run yet"}
    assert res["rules"]["D_amended"] == {"verdict": "none", "choice": None, "hand_off_w": None, "bonus_span": None,
                                         "meets": [], "provisional": True,
                                         "rescued_pairs_holding_h": {"50": 0, "3": 0, "3s": 0}}


def test_a_fresh_run_root_reads_the_committed_cells(tmp_path: Path) -> None:
    """On a new machine the run root starts empty: with --committed, a cell not finished under --runs is read from
    its committed copy (and a width's warm start from the committed record); a cell finished under --runs wins."""
    an = _load("analyze")
    runs, committed = tmp_path / "runs", tmp_path / "committed"
    _cell(committed, "arithmetic", "grpo_h64", [1.0 - 0.6 * i / 99 for i in range(100)])
    _cell(committed, "arithmetic", "c2_t07_h64", LOST, target=0.7, p1=0.40)
    _cell(runs, "arithmetic", "c2_t07_h64", HELD, target=0.7, p1=0.60)  # finished here too: this one is read
    _cell(runs, "arithmetic", "sens_t07_h64", HELD, target=0.7, done=False)  # running here: not run yet
    (committed / "arithmetic" / "warmstart_h128.json").write_text(json.dumps({"final": {"greedy_acc": 0.9}}))
    alone = an.evaluate(runs, None)
    assert alone["n_seed0_finished"] == 1  # without --committed: the run root alone
    res = an.evaluate(runs, None, committed)
    cells = res["tasks"]["arithmetic"]["cells"]
    assert res["n_seed0_finished"] == 2 and cells["grpo_h64"]["state"] == "finished"
    assert res["rules"]["R"]["arithmetic"][64]["verdict"] == "holds"
    assert cells["c2_t07_h64"]["seeds"][0]["pass@1"] == pytest.approx(0.60)
    assert cells["sens_t07_h64"]["state"] == "not run yet (started)"
    ws = res["tasks"]["arithmetic"]["warmstart"][128]
    assert ws["via"] == "committed copy" and ws["greedy_acc"] == 0.9
    out = tmp_path / "out"
    assert an.main(["--runs", str(runs), "--out", str(out), "--committed", str(committed)]) == 0
    assert "Seed-0 cells finished: 2 of 117" in (out / "authority_map.md").read_text()


def test_s_on_fake_cells_and_the_warm_start_check(tmp_path: Path) -> None:
    an = _load("analyze")
    close = [1.0] + [0.7] * 90 + [0.3] * 9  # crosses at step 2: 83 of 99 smoothed steps in the band
    d = _cell(tmp_path, "arithmetic", "c2_t07_h64", close, target=0.7)
    cache = tmp_path / "cache"
    for name, acc in (("arithmetic-aaa", 1.0), ("arithmetic-bbb", 0.4)):
        (cache / name).mkdir(parents=True)
        (cache / name / "warmstart.json").write_text(json.dumps({"final": {"greedy_acc": acc, "step": 9}}))
    (d / "train.log").write_text(f"warm start: tiny model on arithmetic\nwarm start: {cache / 'arithmetic-aaa'}\n")
    wide = _cell(tmp_path, "arithmetic", "c2_t07_h128", HELD, target=0.7, width=128)
    (wide / "warmstart.json").write_text(json.dumps({"final": {"greedy_acc": 0.4}}))
    res = an.evaluate(tmp_path, None)
    rolling = res["tasks"]["arithmetic"]["cells"]["c2_t07_h64"]["reading"]["rolling"]
    assert 0.8 <= rolling < 0.9 and list(res["rules"]["S"]["arithmetic"]) == ["c2_t07_h64"]
    ws = res["tasks"]["arithmetic"]["warmstart"]
    assert ws[64]["via"] == "train.log" and ws[64]["path"] == str(cache / "arithmetic-aaa" / "warmstart.json")
    assert ws[128]["via"] == "run dir" and ws[128]["ratio_to_default"] == pytest.approx(0.4)
    assert ws[128]["learns"] is False and ws[256]["learns"] is None
    assert res["rules"]["H"]["arithmetic/c2_t07_h128"]["verdict"].startswith("not scored")
    an.main(["--runs", str(tmp_path), "--out", str(tmp_path / "out")])
    assert "- arithmetic: c2_t07_h64 (rolling band 83.8 % in [80, 90); seeds finished: [0]" in (
        tmp_path / "out" / "authority_map.md").read_text()


def test_a_warm_start_found_in_the_cache_by_its_settings(tmp_path: Path) -> None:
    from stare_rl.train.config import WarmStartArgs

    an = _load("analyze")
    _cell(tmp_path, "arithmetic", "grpo_h256", [1.0] * 30, width=256)  # no warmstart.json, no train.log
    for name, width, acc in (("arithmetic-a", 128, 0.9), ("arithmetic-b", 256, 0.7)):
        (tmp_path / "cache" / name).mkdir(parents=True)
        info = {"task": "arithmetic", "seed": 0, "final": {"greedy_acc": acc},
                "config": dataclasses.asdict(WarmStartArgs(tiny_hidden_size=width).warmstart_config())}
        (tmp_path / "cache" / name / "warmstart.json").write_text(json.dumps(info))
    ws = an.evaluate(tmp_path, tmp_path / "cache")["tasks"]["arithmetic"]["warmstart"][256]
    assert ws["via"].startswith("cache") and ws["path"].endswith("arithmetic-b/warmstart.json")
    assert ws["greedy_acc"] == 0.7 and ws["learns"] is None  # the default width's warm start is not known here


# ------------------------------------------------------------------------------------ the driver's phase C
def test_the_order_and_phase_c_only_where_r_holds(tmp_path: Path, monkeypatch) -> None:
    rc = _load("run_cells")
    cd = rc.cell_driver  # the driver module run_cells' blocks were built with
    study = rc.STUDY
    static = [c for b in study.order if b.when is None for c in b.cells()]
    assert len(static) == 81 and all(c.seed == 0 for c in static)  # per task: phase A (9), B (6), B3 (6), B3s (6)
    assert [c.method for c in static[:3]] == ["grpo_h64", "c2_t07_h64", "sens_t07_h64"]
    assert [(c.part, c.method) for c in (static[8], static[9], static[15], static[21], static[27])] == [
        ("arithmetic", "sens_t07_h256"), ("arithmetic", "c2_t07_fb_h64"), ("arithmetic", "c2_t07_fb3_h64"),
        ("arithmetic", "c2_t07_fb3s_h64"), ("countdown", "grpo_h128")]
    assert {rc.slots(c.part)[c.method].phase for c in static[15:21]} == {"B3"}
    assert all(rc.slots(c.part)[c.method].w_max == 3.0 for c in static[15:21])
    b3s = [c for c in static if rc.slots(c.part)[c.method].phase == "B3s"]
    assert [static.index(c) for c in b3s] == [*range(21, 27), *range(48, 54), *range(75, 81)]  # each task's last six
    assert all(rc.slots(c.part)[c.method].span == pytest.approx(math.log(50.0)) for c in b3s)
    assert study.parallel == 2 and "STARE_RL_CACHE" in study.needs_env
    assert study.pins == cd.KERNEL_PINS
    # the driver's analysis reads the committed cells only: a cell finished beside the one being committed is not
    # in it until its own commit (2026-11-28: one commit's authority_map.md had a seed whose files it lacked);
    # test_the_committed_report_is_the_analysis_of_the_committed_cells shows that reading gives the committed report
    assert study.analyze_args == ("--runs", "{docs}", "--out", "{docs}")
    block = next(b for b in study.order if b.when is not None and b.part == "arithmetic" and "c2_t05_h64" in b.methods)
    root = tmp_path / "runs"
    monkeypatch.setattr(rc, "DOCS", tmp_path / "docs")  # not the committed cells of the running study
    study = dataclasses.replace(study, docs=rc.DOCS)  # nor their committed markers (Study.committed reads docs)
    assert block.when(root, None).methods is None  # GRPO not finished: decided later
    monkeypatch.setattr(cd, "launch", lambda s, r, c: type("P", (), {"pid": 1})())
    grpo = cd.Cell("arithmetic", "grpo_h64", 0)
    todo, running = [block], [(grpo, None, 0.0)]
    cd._start_next(study, root, todo, running, 3, lambda f, m: "", [])
    assert todo == [block]  # waits while its GRPO cell runs
    cd._start_next(study, root, todo, [], 3, lambda f, m: "", [])
    assert todo == []  # GRPO ended unfinished: skipped
    _cell(root, "arithmetic", "grpo_h64", [1.0] * 60)  # flat: R does not hold
    todo, running = [block], []
    cd._start_next(study, root, todo, running, 3, lambda f, m: "", [])
    assert todo == [] and running == []
    (root / "arithmetic" / "runs" / "grpo_h64").rename(root / "flat")
    _cell(root, "arithmetic", "grpo_h64", [1.0 - 0.6 * i / 59 for i in range(60)])  # reaches 0.4x: R holds
    todo, running = [block], []
    cd._start_next(study, root, todo, running, 3, lambda f, m: "", [])
    # three slots, but each fallback cell waits for its running twin (rule T decides once the twin has finished)
    assert [c.method for c, _, _ in running] == ["c2_t05_h64", "sens_t05_h64"]
    assert [c.method for c in todo] == ["c2_t05_fb_h64", "sens_t05_fb_h64"]
    assert "c2_t05_h64/seed0: fresh (rule R holds" in cd.dry_run(study, root)


def test_a_conditional_block_in_the_generic_driver(tmp_path: Path) -> None:
    cd = _load("run_cells").cell_driver

    def when(root: Path, running) -> object:
        return cd.Pick(("b",) if (root / "go").exists() else None if running is None else (), "rule X")
    study = cd.Study(tag="#0", grids={"p": tmp_path / "p.yaml"}, docs=tmp_path / "docs", analyze=tmp_path / "a.py",
                     run_root=tmp_path, order=(cd.Block("p", (0,), ("a",)), cd.Block("p", (0, 1), ("b", "c"), when)))
    assert study.cells() == [("p", "a", 0), ("p", "b", 0), ("p", "c", 0), ("p", "b", 1), ("p", "c", 1)]
    assert study.planned(tmp_path) == [("p", "a", 0)]  # undecided: nothing of the block counted yet
    assert cd.dry_run(study, tmp_path).splitlines() == [
        "p  a/seed0: fresh", "p 4 cells (b, c; seeds 0, 1): decided when the driver reaches it (rule X)"]
    assert cd.status(study, tmp_path, procs=[]).splitlines()[-1].endswith(
        "not counted: 1 cell(s) with no such cell committed yet, 1 block(s) not decided yet")
    (tmp_path / "go").touch()
    assert study.planned(tmp_path) == [("p", "a", 0), ("p", "b", 0), ("p", "b", 1)]
    assert cd.dry_run(study, tmp_path).splitlines() == [
        "p  a/seed0: fresh", "p  b/seed0: fresh (rule X)", "p  b/seed1: fresh (rule X)",
        "p 2 cells (c; seeds 0, 1): skipped (rule X)"]
    assert cd.status(study, tmp_path, procs=[]).splitlines()[1:-1] == [
        "p a/seed0: not started", "p b/seed0: not started (rule X)", "p b/seed1: not started (rule X)",
        "p 2 cells (c; seeds 0, 1): skipped (rule X)"]
    assert cd.status(study, tmp_path, procs=[]).splitlines()[-1].endswith(
        "not counted: 3 cell(s) with no such cell committed yet, 0 block(s) not decided yet")  # skipped: not a wait
    boom = cd.Study(tag="#0", grids={"p": tmp_path}, docs=tmp_path, analyze=tmp_path, run_root=tmp_path,
                    order=(cd.Block("p", (0,), ("a",), lambda root, running: 1 / 0),))
    assert cd.decide(boom.order[0], tmp_path, None) == cd.Pick((), "its rule failed: ZeroDivisionError: division by zero")


def test_the_driver_adds_seeds_1_2_where_rule_s_selects(tmp_path: Path, monkeypatch) -> None:
    rc = _load("run_cells")
    monkeypatch.setattr(rc, "DOCS", tmp_path / "docs")  # not the committed cells of the running study
    block = next(b for b in rc.STUDY.order if b.when is not None and b.part == "arithmetic" and b.seeds == (1, 2))
    grids = sys.modules["authority_grids"]
    for m in grids.methods("arithmetic", "A") + grids.methods("arithmetic", "B"):
        slot = grids.slots("arithmetic")[m]
        if slot.actuator == "grpo":
            _cell(tmp_path, "arithmetic", m, [1.0] * 40, width=slot.width)  # flat: R fails, no phase C
        elif m != "sens_t07_h128":
            _cell(tmp_path, "arithmetic", m, HELD, target=0.7, width=slot.width, fallback=slot.fallback)
    running = frozenset({rc.Cell("arithmetic", "sens_t07_h128", 0)})
    assert block.when(tmp_path, running).methods is None  # a seed-0 cell it reads is still running
    assert block.when(tmp_path, None).methods is None
    _cell(tmp_path, "arithmetic", "sens_t07_h128", [1.0] + [0.7] * 90 + [0.3] * 9, target=0.7, width=128)
    pick = block.when(tmp_path, frozenset())
    # the cell at 83.8 %, and its pair with the fallback (100 %): d = +16.2 points, within 5 of +20
    assert pick.methods == ("sens_t07_h128", "sens_t07_fb_h128") and pick.why.startswith("rule S selects 2 cells")
    assert [(c.method, c.seed) for c in block.cells(pick.methods)] == [
        ("sens_t07_h128", 1), ("sens_t07_fb_h128", 1), ("sens_t07_h128", 2), ("sens_t07_fb_h128", 2)]
    # --status's outlook: the same two cells on the finished seed-0 cells, each seed 1-2 run at its seed-0 wall
    for m in ("sens_t07_h128", "sens_t07_fb_h128"):  # seed-0 walls of 1 800 s (_cell writes 1 s)
        (tmp_path / "arithmetic" / "runs" / m / "seed0" / "compare_done.json").write_text(json.dumps({"wall_s": 1800.0}))
    _cell(tmp_path, "arithmetic", "sens_t07_h128", HELD, target=0.7, width=128, seed=1)  # one of the four finished
    assert ("it would select arithmetic 2, countdown 0, countdown_cot 0 cells; 3 runs of seeds 1-2 not finished, about "
            "1.5 h of cell time at their seed-0 walls (0.8 h at --parallel 2") in rc.s_outlook(tmp_path)


def test_the_warm_start_is_committed_beside_the_cells_and_read_back(tmp_path: Path) -> None:
    """The cache is not committed: the analysis copies each width's warmstart.json into the results folder, names that
    copy in the report, and reads it back when it is given the results folder as its run root (no cache)."""
    an = _load("analyze")
    cache = tmp_path / "cache" / "arithmetic-abc"
    cache.mkdir(parents=True)
    (cache / "warmstart.json").write_text(json.dumps({"final": {"greedy_acc": 0.9, "avg@8": 0.8, "step": 300}}))
    cell = _cell(tmp_path / "runs", "arithmetic", "grpo_h64", [1.0 - 0.6 * i / 99 for i in range(100)])
    (cell / "train.log").write_text(f"warm start: {cache}\n")
    out = tmp_path / "docs"
    assert an.main(["--runs", str(tmp_path / "runs"), "--out", str(out)]) == 0
    copy = out / "arithmetic" / "warmstart_h64.json"
    assert json.loads(copy.read_text())["final"]["greedy_acc"] == 0.9
    md = (out / "authority_map.md").read_text()
    assert "| 64 | 0.900 | 1.00 | yes | arithmetic/warmstart_h64.json |" in md and str(tmp_path) not in md
    # the committed folder as the run root: the same cells (copied as the driver exports them), no cache
    import shutil
    shutil.copytree(tmp_path / "runs" / "arithmetic" / "runs", out / "arithmetic" / "runs")
    again = tmp_path / "again"
    assert an.main(["--runs", str(out), "--out", str(again), "--cache", str(tmp_path / "none")]) == 0
    assert (again / "authority_map.md").read_text() == md
    # the cache rebuilt on a new machine: the same warm start, other timings: the committed copy is kept as it is
    (cache / "warmstart.json").write_text(json.dumps({"final": {"greedy_acc": 0.9, "avg@8": 0.8, "step": 300},
                                                      "wall_time_s": 12.0, "cpu_time_s": 11.0}))
    before = copy.read_bytes()
    assert an.main(["--runs", str(tmp_path / "runs"), "--out", str(out)]) == 0 and copy.read_bytes() == before
    (cache / "warmstart.json").write_text(json.dumps({"final": {"greedy_acc": 0.8, "avg@8": 0.8, "step": 300}}))
    assert an.main(["--runs", str(tmp_path / "runs"), "--out", str(out)]) == 0  # another warm start: copied
    assert json.loads(copy.read_text())["final"]["greedy_acc"] == 0.8


def test_the_committed_report_is_the_analysis_of_the_committed_cells(tmp_path: Path) -> None:
    an = _load("analyze")
    committed = STUDY.parents[1] / "docs" / "results" / "authority_map"
    assert an.main(["--runs", str(committed), "--out", str(tmp_path), "--cache", str(tmp_path / "none")]) == 0
    assert (tmp_path / "authority_map.md").read_text() == (committed / "authority_map.md").read_text()


def test_the_library_default_follows_rule_d_once_the_map_is_complete() -> None:
    """`auto_fallback`'s default, the hand-off bound (auto_w_max unset with the bonus) and the bonus's span
    (auto_bonus_span unset) are what the committed map's rule D (as amended) decides, once it is no longer provisional; until then the fallback stays `none` and
    the hand-off bound 50, as the README's block says (HYPOTHESES.md, rule D). W alone keeps 50 either way."""
    from stare_rl.methods.stare.auto import BONUS_SPAN, HAND_OFF_W, AutoWeightConfig

    committed = json.loads((STUDY.parents[1] / "docs" / "results" / "authority_map" / "authority_map.json").read_text())
    d = committed["rules"]["D_amended"]
    default = AutoWeightConfig()
    assert AutoWeightConfig(auto_fallback="none").auto_w_max == 50.0
    if d["provisional"]:
        assert default.auto_fallback == "none" and HAND_OFF_W == 50.0 and BONUS_SPAN is None
    else:
        assert default.auto_fallback == d["verdict"]
        if d["verdict"] == "bonus":
            assert AutoWeightConfig(auto_fallback="bonus").auto_w_max == d["hand_off_w"] == HAND_OFF_W
            # phase B3s's choice: the bonus's own span, log 50, is the default too (unset: log of W's bound)
            assert BONUS_SPAN == (math.log(50.0) if d.get("bonus_span") == "log 50" else None)


def test_the_cells_of_a_width_whose_warm_start_did_not_learn_are_not_run(monkeypatch, tmp_path: Path) -> None:
    """HYPOTHESES.md, "Warm starts": a wider width's cells are not scored when its warm start's greedy accuracy is
    below half the default width's, so the driver skips them once the warm start is known; the default width
    and a width not built yet run."""
    rc = _load("run_cells")
    an = rc._analysis()
    records = {64: {"learns": True}, 128: {"learns": None}, 256: {"learns": False, "greedy_acc": 0.1,
                                                                   "ratio_to_default": 0.2}}
    monkeypatch.setattr(an, "warmstarts", lambda root, task, cache, committed=None: records)
    cell = rc.Cell
    assert rc.unlearned_width(cell("countdown_cot", "c2_t07_h64", 0), tmp_path) is None
    assert rc.unlearned_width(cell("countdown_cot", "c2_t07_h128", 0), tmp_path) is None
    why = rc.unlearned_width(cell("countdown_cot", "sens_t07_fb3_h256", 0), tmp_path)
    assert why == ("the hidden-256 warm start did not learn countdown_cot (greedy accuracy 0.100, 0.20x the default "
                   "width's, below 0.5): its cells are not scored (HYPOTHESES.md, \"Warm starts\")")


def test_a_warm_start_missing_from_the_cache_is_charged_its_committed_build_time(monkeypatch, tmp_path: Path) -> None:
    """--until on a machine whose cache lacks a width's warm start (2026-11-28: countdown_cot h128's was not in the
    cache): the first cell of the width also builds it, for about the committed record's ``wall_time_s``; once
    the cache holds a warm start of the same task, seed and settings, nothing; nothing without a committed record."""
    rc = _load("run_cells")
    docs, cache = tmp_path / "docs", tmp_path / "cache"
    monkeypatch.setattr(rc, "DOCS", docs)
    rec = {"task": "countdown_cot", "seed": 0, "config": {"hidden_size": 128, "learning_rate": 0.001},
           "task_kwargs": {"num_count": 4}, "final": {"greedy_acc": 0.3}, "wall_time_s": 1121.3}
    (docs / "countdown_cot").mkdir(parents=True)
    (docs / "countdown_cot" / "warmstart_h128.json").write_text(json.dumps(rec))
    h128, h64 = rc.Cell("countdown_cot", "c2_t07_fb_h128", 0), rc.Cell("countdown_cot", "c2_t07_h64", 0)
    monkeypatch.setenv("STARE_RL_CACHE", str(cache))
    assert rc.warm_start_cost(h128, tmp_path) == pytest.approx(1121.3)  # no cache dir yet
    assert rc.warm_start_cost(h64, tmp_path) == 0.0  # no committed record of h64 here: nothing to go by
    other = cache / "countdown_cot-aaaa"  # another width's warm start, and one being written
    other.mkdir(parents=True)
    (other / "warmstart.json").write_text(json.dumps({**rec, "config": {"hidden_size": 64, "learning_rate": 0.001}}))
    (cache / "countdown_cot-cccc").mkdir()
    (cache / "countdown_cot-cccc" / "warmstart.json").write_text("{")
    assert rc.warm_start_cost(h128, tmp_path) == pytest.approx(1121.3)
    (cache / "countdown_cot-bbbb").mkdir()
    (cache / "countdown_cot-bbbb" / "warmstart.json").write_text(json.dumps({**rec, "wall_time_s": 999.0}))
    assert rc.warm_start_cost(h128, tmp_path) == 0.0  # built: the same task, seed and settings (timings differ)
    assert rc.STUDY.start_cost is rc.warm_start_cost


def test_the_blocks_rendered_from_the_map_are_re_rendered_with_each_cell() -> None:
    """Every numbers block that reads authority_map.json is in the driver's doc_blocks (else a cell's commit would
    leave it stale): the README's summary, controller.md's tables and methods.md's B3 / B3s pairs."""
    rc = _load("run_cells")
    pages = rc.cell_driver.block_pages(rc.STUDY.doc_blocks)
    assert {n: p.relative_to(rc.cell_driver.ROOT).as_posix() for n, p in pages.items()} == {
        "authority-map": "docs/controller.md", "authority-map-readme": "README.md",
        "fallback-bounds-readme": "README.md", "bonus-span": "docs/methods.md"}
    import inspect

    spec = importlib.util.spec_from_file_location("doc_numbers", rc.cell_driver.DOC_NUMBERS)
    doc_numbers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(doc_numbers)
    readers = {name for m in doc_numbers.MODULES  # every block renderer, in any module, that reads the map
               for name, f in inspect.getmembers(m, inspect.isfunction)
               if name.startswith("render_") and f.__module__ == m.__name__
               and 'load_json("authority_map/authority_map.json")' in inspect.getsource(f)}
    rendered = {doc_numbers.BLOCKS[name][1].__name__ for name in pages}
    assert readers == rendered == {"render_authority_map", "render_authority_map_readme",
                                   "render_fallback_bounds_readme", "render_bonus_span"}


def test_an_overshoot_is_read_from_the_first_crossing_on(tmp_path: Path) -> None:
    """The descriptive overshoot values: the step entropy's highest point from the first crossing over the target
    (the start above it does not count) and the largest bonus coefficient; the table shows both."""
    an = _load("analyze")
    swing = [1.0, 0.9, 0.7, 0.5, 1.4, 2.1, 0.8, 0.7] + [0.7] * 40  # crosses at step 3, overshoots to 3x at step 6
    d = _cell(tmp_path, "arithmetic", "sens_t07_fb3_h64", swing, target=0.7, fallback="bonus", coef=0.0)
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    for r, c in zip(rows, [0.0, 0.0, 0.0, 0.6, 1.0, 0.3] + [0.0] * 42, strict=True):
        r["control/entropy_coef"] = c
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rec = an.evaluate(tmp_path, None)["tasks"]["arithmetic"]["cells"]["sens_t07_fb3_h64"]["seeds"][0]
    assert rec["first_crossing_step"] == 2 and rec["peak_over_target"] == pytest.approx(3.0)
    assert rec["bonus_coef_max"] == pytest.approx(1.0)
    out = tmp_path / "out"
    assert an.main(["--runs", str(tmp_path), "--out", str(out)]) == 0
    row = next(x for x in (out / "authority_map.md").read_text().splitlines() if "| bonus (W ≤ 3) | B3 | finished" in x)
    assert "| 3.00 |" in row and "| 1.00 |" in row


def test_w_at_its_floor_is_counted_from_the_first_crossing(tmp_path: Path) -> None:
    """``w_at_floor_share``: the steps from the first crossing with W at 1 (the selection off), read to say why an
    entropy sat above its target; steps before the crossing (W is 1 there by design) do not count."""
    values, grids = _load("authority_values"), _load("authority_grids")
    slot = grids.slots("arithmetic")["c2_t05_h64"]
    entropy = [1.0] * 10 + [0.5] + [0.6] * 89  # target 0.5: crosses at step 11, then sits 1.2x above it
    d = _cell(tmp_path, "arithmetic", "c2_t05_h64", entropy, target=0.5, w=1.0)
    rec = values.cell_record(d, slot)
    assert rec["first_crossing_step"] == 10 and rec["w_at_floor_share"] == 1.0
    d2 = _cell(tmp_path, "arithmetic", "sens_t05_h64", entropy, target=0.5, w=1.5)
    rows = [json.loads(x) for x in (d2 / "metrics.jsonl").read_text().splitlines()]
    for r in rows[:10]:  # W at 1 before the crossing only
        r["control/reweight_w"] = 1.0
    (d2 / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert values.cell_record(d2, grids.slots("arithmetic")["sens_t05_h64"])["w_at_floor_share"] == 0.0


def test_rule_d_stays_provisional_until_rule_s_seeds_are_in(tmp_path: Path) -> None:
    """Rule S: a close cell's H and F are read on its seed mean (n = 3), so D (and D3, D3s) stays provisional while a
    cell S selects lacks seeds 1 or 2, even with every pair measured on seed 0 (2026-11-28: the README had dropped its
    "so far" once the last seed-0 cell was in, with 49 of rule S's 64 runs still to come)."""
    an = _load("analyze")
    close = [1.0] + [0.7] * 88 + [0.3] * 11  # crosses at once; the 21-step mean leaves the band for the last ~15 %
    _cell(tmp_path, "arithmetic", "c2_t07_h64", close, target=0.7)
    res = an.evaluate(tmp_path, None)
    band = res["tasks"]["arithmetic"]["cells"]["c2_t07_h64"]["reading"]["rolling"]
    assert 0.8 <= band < 0.9, band  # close: rule S selects it
    r = res["rules"]
    assert "c2_t07_h64" in r["S"]["arithmetic"] and r["D"]["seeds_open"] == ["arithmetic/c2_t07_h64"]
    assert r["D"]["provisional"] and r["D3"]["provisional"] and r["D_amended"]["provisional"]
    for seed in (1, 2):
        _cell(tmp_path, "arithmetic", "c2_t07_h64", close, seed=seed, target=0.7)
    r = an.evaluate(tmp_path, None)["rules"]
    assert r["D"]["seeds_open"] == [] and r["D3s"]["seeds_open"] == []  # its three seeds are in
    md = _load("authority_report").markdown(an.evaluate(tmp_path, None))
    assert "rule S's seeds 1-2 not all finished" not in md
    _cell(tmp_path, "arithmetic", "sens_t07_h64", close, target=0.7)
    md = _load("authority_report").markdown(an.evaluate(tmp_path, None))
    assert "(provisional: " in md and "rule S's seeds 1-2 not all finished in 1 close cells" in md
