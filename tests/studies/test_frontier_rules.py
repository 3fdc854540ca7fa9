"""The frontier's pre-registered rules (docs/compare.md, "Decision rules") on hand-made results: every verdict
below is worked out by hand from the rule's text (±20 % of the target; a mean beyond the larger seed std)."""

from __future__ import annotations

from typing import Any

import pytest

from frontier_rules import Registration, at_target, compare, decide, decisions_markdown
from stare_rl.compare.grid import spread

REG = Registration(reference="grpo", candidate="stare_auto", rivals=("entropy_bonus", "entropic", "entrocraft"),
                   holds_most="entrocraft", holds_least="entropic", unheld=("steer", "high_entropy"))  # frontier_cot's
KEYS = ("pass@1", "pass@k", "final_entropy", "final_batch_entropy", "target", "band_fraction")


def _method(family: str, spec: str | None, **per_seed: list[float]) -> dict[str, Any]:
    """A collect()-shaped entry: per-seed values of the columns given, the rest absent."""
    n = len(next(iter(per_seed.values())))
    seeds = {s: {k: (per_seed[k][s] if k in per_seed else None) for k in KEYS} for s in range(n)}
    return {"family": family, "target_spec": spec, "seeds": seeds,
            "stats": {k: spread([seeds[s][k] for s in seeds]) for k in KEYS}}


def _held(family: str, spec: str, p1: list[float], pk: list[float], h: float = 0.05, t: float = 0.05,
          band: float = 0.5) -> dict[str, Any]:
    n = len(p1)
    return _method(family, spec, **{"pass@1": p1, "pass@k": pk, "final_batch_entropy": [h] * n,
                                    "target": [t] * n, "band_fraction": [band] * n, "final_entropy": [h] * n})


def _results(**methods: dict[str, Any]) -> dict[str, Any]:
    return {"expected_seeds": [0, 1, 2], "methods": methods}


def _name(family: str, spec: str) -> str:
    return f"{family}_t{spec.replace('.', '').rstrip('x')}"


def test_at_target_is_within_20_percent_of_the_seed_mean_target() -> None:
    assert at_target(_held("f", "0.5x", [0.4] * 3, [0.6] * 3, h=0.041, t=0.05))  # 0.82 of it
    assert not at_target(_held("f", "0.5x", [0.4] * 3, [0.6] * 3, h=0.039, t=0.05))  # 0.78 of it
    assert at_target(_held("f", "0.5x", [0.4] * 3, [0.6] * 3, h=0.0595, t=0.05))  # 1.19 of it


def test_compare_uses_the_larger_of_the_two_seed_stds() -> None:
    a = _held("a", "0.5x", [0.40, 0.42, 0.44], [0.6] * 3)  # mean 0.42, std 0.02
    b = _held("b", "0.5x", [0.30, 0.35, 0.40], [0.6] * 3)  # mean 0.35, std 0.05
    assert compare(a, b, "pass@1") == "higher"  # 0.07 > 0.05
    c = _held("c", "0.5x", [0.35, 0.40, 0.45], [0.6] * 3)  # mean 0.40, std 0.05: 0.02 < 0.05
    assert compare(a, c, "pass@1") == "within" and compare(c, a, "pass@1") == "within"
    assert compare(b, a, "pass@1") == "lower"


def _h1_grid(rival_p1: list[float], rival_h: float = 0.05, stare_h: float = 0.05,
             rival_seeds: int = 3) -> dict[str, Any]:
    m = {"grpo": _method("grpo", None, **{"pass@1": [0.41] * 3, "pass@k": [0.6] * 3})}
    m["stare_auto_t05"] = _held("stare_auto", "0.5x", [0.40, 0.42, 0.44], [0.7] * 3, h=stare_h)
    m["entropy_bonus_t05"] = _held("entropy_bonus", "0.5x", rival_p1[:rival_seeds], [0.6] * rival_seeds, h=rival_h)
    m["entropic_t05"] = _held("entropic", "0.5x", [0.41] * 3, [0.6] * 3, h=0.02)  # 0.4 of the target: missed
    return _results(**m)


def test_h1_holds_when_stare_costs_less_than_every_rival_that_holds_the_target() -> None:
    d = decide(_h1_grid([0.30, 0.32, 0.34]), REG)["H1"]["0.5x"]  # STARE 0.42 vs 0.32: beyond std 0.02
    assert d["verdict"] is True and d["text"].startswith("holds:")
    assert "entropy_bonus_t05 32.0: stare_auto_t05 costs less" in d["text"]
    assert "missed the target: entropic_t05 (reached 0.40 of it)" in d["text"]  # left out of the comparison
    assert d["held"] == ["stare_auto_t05", "entropy_bonus_t05"]


def test_h1_within_the_seed_spread_is_not_separated() -> None:
    d = decide(_h1_grid([0.38, 0.41, 0.44]), REG)["H1"]["0.5x"]  # 0.42 vs 0.41, std 0.03
    assert d["verdict"] is None and "within seed spread" in d["text"] and d["text"].startswith("not separated")


def test_h1_fails_when_a_rival_costs_less_or_stare_misses() -> None:
    assert decide(_h1_grid([0.50, 0.51, 0.52]), REG)["H1"]["0.5x"]["verdict"] is False  # rival 0.51 > 0.42 + 0.02
    d = decide(_h1_grid([0.30, 0.32, 0.34], stare_h=0.03), REG)["H1"]["0.5x"]  # STARE at 0.6 of its target
    assert d["verdict"] is False and "stare_auto_t05 misses the target (reached 0.60 of it)" in d["text"]
    assert d["text"].count("stare_auto_t05") == 1  # the candidate is the reason, not also in the list of the others


def test_h1_when_every_actuator_misses_names_the_candidate_once_and_lists_the_others() -> None:
    d = decide(_h1_grid([0.30, 0.32, 0.34], stare_h=0.03, rival_h=0.02), REG)["H1"]["0.5x"]
    assert d["verdict"] is False and d["text"].count("stare_auto_t05") == 1
    assert "the others missed it too: entropy_bonus_t05 (reached 0.40 of it)" in d["text"]


def test_h1_only_stare_holds_and_undecided_with_missing_seeds() -> None:
    d = decide(_h1_grid([0.50, 0.51, 0.52], rival_h=0.02), REG)["H1"]["0.5x"]  # every rival missed
    assert d["verdict"] is True and d.get("only_candidate") and "only stare_auto_t05 holds the target" in d["text"]
    d = decide(_h1_grid([0.30, 0.32], rival_seeds=2), REG)["H1"]["0.5x"]  # a rival with 2 of 3 seeds
    assert d["verdict"] is None
    assert d["text"].startswith("undecided: entropy_bonus_t05 not finished with 3 seeds")
    assert "so far at the target: stare_auto_t05; missed it: entropic_t05 (reached 0.40 of it)" in d["text"]


def test_h2_on_the_means_with_the_issue_thresholds() -> None:
    m = {"grpo": _method("grpo", None, **{"pass@1": [0.40, 0.41, 0.42], "pass@k": [0.60] * 3})}
    m["stare_auto_t03"] = _held("stare_auto", "0.3x", [0.405] * 3, [0.66] * 3)  # -0.5 and +6 points
    m["stare_auto_t05"] = _held("stare_auto", "0.5x", [0.38] * 3, [0.70] * 3)  # -3 points: misses pass@1
    d = decide(_results(**m), REG)["H2"]
    assert d["verdict"] is True and d["points"] == ["stare_auto_t03"]
    assert "stare_auto_t03: pass@1 -0.5, pass@k +6.0 (meets both)" in d["text"]
    m["stare_auto_t03"] = _held("stare_auto", "0.3x", [0.405] * 3, [0.64] * 3)  # +4 points: misses pass@k
    assert decide(_results(**m), REG)["H2"]["verdict"] is False
    m["stare_auto_t07"] = _held("stare_auto", "0.7x", [0.405] * 2, [0.70] * 2)  # unfinished: could still hold
    assert decide(_results(**m), REG)["H2"]["verdict"] is None


def _family(family: str, p1: list[float], pk: list[float], ratios: tuple[float, ...] = (1.0, 1.0, 1.0),
            bands: tuple[float, ...] = (0.5, 0.5, 0.5)) -> dict[str, Any]:
    out = {}
    for spec, a, k, r, b in zip(("0.3x", "0.5x", "0.7x"), p1, pk, ratios, bands, strict=True):
        out[_name(family, spec)] = _held(family, spec, [a] * 3, [k] * 3, h=0.05 * r, t=0.05, band=b)
    return out


def test_h3_needs_every_point_at_its_target_and_ordered_both_ways() -> None:
    ok = _family("stare_auto", [0.42, 0.39, 0.37], [0.70, 0.75, 0.78])
    assert decide(_results(**ok), REG)["H3"]["stare_auto"]["verdict"] is True
    off = _family("stare_auto", [0.42, 0.39, 0.37], [0.70, 0.75, 0.78], ratios=(1.0, 0.83, 0.74))
    d = decide(_results(**off), REG)["H3"]["stare_auto"]
    assert d["verdict"] is False and d["text"].startswith("does not qualify: stare_auto_t07 misses its target")
    assert "ordered both ways" in d["text"]
    two_off = _family("stare_auto", [0.42, 0.39, 0.37], [0.70, 0.75, 0.78], ratios=(1.0, 0.53, 0.37))
    d = decide(_results(**two_off), REG)["H3"]["stare_auto"]  # 0.53 and 0.37 of the target: outside +-20 %
    assert d["verdict"] is False
    assert d["text"].startswith("does not qualify: stare_auto_t05, stare_auto_t07 miss their target")
    flat = _family("stare_auto", [0.42, 0.39, 0.40], [0.70, 0.75, 0.78])  # pass@1 rises again at 0.7x
    assert decide(_results(**flat), REG)["H3"]["stare_auto"]["text"].startswith("does not hold: not ordered")
    part = _family("entropic", [0.42, 0.39, 0.37], [0.70, 0.75, 0.78])
    part.pop("entropic_t07")  # the targets are the STARE family's: a rival without its 0.7x point is undecided
    h3 = decide(_results(**ok, **part), REG)["H3"]
    assert h3["entropic"] == {"verdict": None, "text": "undecided: no 0.7x point"} and "entrocraft" not in h3


def test_families_added_after_the_registration_get_h3_apart_from_the_registered_verdicts() -> None:
    registered = _family("stare_auto", [0.42, 0.39, 0.37], [0.70, 0.75, 0.78], ratios=(1.0, 0.83, 0.74))
    added = _family("stare_sens_auto", [0.42, 0.37, 0.33], [0.68, 0.77, 0.83])  # every point at target, ordered
    grpo = _method("grpo", None, **{"pass@1": [0.41] * 3, "pass@k": [0.6] * 3})
    d = decide(_results(**registered, **added, grpo=grpo), REG)
    assert set(d["exploratory"]["H3"]) == {"stare_sens_auto"}  # grpo has no target: no family to order
    assert "stare_sens_auto" not in d["H3"] and d["H3"]["stare_auto"]["verdict"] is False
    assert d["exploratory"]["H3"]["stare_sens_auto"]["verdict"] is True
    assert d["exploratory"]["H3"]["stare_sens_auto"]["text"].startswith("holds: pass@k 68.0 → 77.0 → 83.0")
    md = decisions_markdown(d)
    assert md.index("## Exploratory") > md.index("- **H5**") and "- **H3, stare_sens_auto**: holds" in md
    # without added families, no section
    assert "Exploratory" not in decisions_markdown(decide(_results(**registered), REG))


def test_h4_entrocraft_highest_and_entropic_lowest_at_every_target() -> None:
    p1, pk = [0.4] * 3, [0.6] * 3
    fams = {**_family("stare_auto", p1, pk, bands=(0.5, 0.5, 0.5)), **_family("entropy_bonus", p1, pk),
            **_family("entropic", p1, pk, bands=(0.1, 0.1, 0.1)), **_family("entrocraft", p1, pk, bands=(0.9,) * 3)}
    d = decide(_results(**fams), REG)["H4"]
    assert d["verdict"] is True and "0.5x: highest entrocraft_t05 90.0 %, lowest entropic_t05 10.0 %" in d["text"]
    fams.update(_family("entrocraft", p1, pk, bands=(0.9, 0.4, 0.9)))  # stare holds 0.5x more often
    d = decide(_results(**fams), REG)["H4"]
    assert d["verdict"] is False and "0.5x: highest stare_auto_t05 50.0 %" in d["text"]
    fams.update(_family("entrocraft", p1, pk, bands=(0.9, 0.5, 0.9)))  # tied with stare at 0.5x: not highest
    assert decide(_results(**fams), REG)["H4"]["verdict"] is False


def test_h5_unheld_methods_within_one_seed_std_of_grpo() -> None:
    m = {"grpo": _method("grpo", None, **{"final_entropy": [0.030, 0.032, 0.034]})}  # mean 0.032, std 0.002
    m["steer"] = _method("steer", None, **{"final_entropy": [0.031, 0.033, 0.035]})  # +0.001: within
    m["high_entropy"] = _method("high_entropy", None, **{"final_entropy": [0.040, 0.041, 0.042]})  # +0.009
    d = decide(_results(**m), REG)["H5"]
    assert d["verdict"] is False and "steer 0.033 vs 0.032: within one seed-std" in d["text"]
    assert "high_entropy 0.041 vs 0.032: higher than grpo" in d["text"]
    m["high_entropy"] = _method("high_entropy", None, **{"final_entropy": [0.030, 0.031]})  # 2 of 3 seeds
    assert decide(_results(**m), REG)["H5"] == {"verdict": None, "text": "undecided: high_entropy not finished"}
    del m["high_entropy"]
    assert decide(_results(**m), REG)["H5"]["text"] == "undecided: high_entropy not in the grid"


def test_the_verdicts_render_as_a_markdown_section() -> None:
    md = decisions_markdown(decide(_h1_grid([0.30, 0.32, 0.34]), REG))
    assert md.startswith("## The pre-registered rules, applied")
    assert "- **H1 at 0.5x**: holds: stare_auto_t05 pass@1 42.0 vs entropy_bonus_t05 32.0: stare_auto_t05 costs less" in md
    assert "- **H5**: undecided: steer not in the grid, high_entropy not in the grid" in md
    assert "- **H4**: undecided: 0.5x: no entrocraft point" in md  # the family H4 is about is not in this grid



def test_the_roles_come_from_the_grid_and_are_checked() -> None:
    roles = {"reference": "grpo", "candidate": "stare_auto", "rivals": ["entropic"], "holds_most": "entropic",
             "holds_least": "entropic", "unheld": ["steer"]}
    families, methods = {"stare_auto", "entropic", "grpo", "steer"}, {"grpo", "steer", "stare_auto_t05"}
    reg = Registration.from_mapping(roles, families, methods)
    assert reg.actuators == ("stare_auto", "entropic") and reg.unheld == ("steer",)
    with pytest.raises(ValueError, match=r"frontier.rivals=\['entrocraft'\]: \['entrocraft'\] is not a family"):
        Registration.from_mapping({**roles, "rivals": ["entrocraft"]}, families, methods)
    with pytest.raises(ValueError, match=r"frontier.reference='stare_auto': \['stare_auto'\] is not a method"):
        Registration.from_mapping({**roles, "reference": "stare_auto"}, families, methods)
    with pytest.raises(ValueError, match=r"frontier.candidate=\['stare_auto'\] must be one name"):
        Registration.from_mapping({**roles, "candidate": ["stare_auto"]}, families, methods)
    with pytest.raises(ValueError, match=r"frontier: unknown key 'h6'; unheld is missing"):
        Registration.from_mapping({**{k: v for k, v in roles.items() if k != "unheld"}, "h6": 1}, families, methods)
