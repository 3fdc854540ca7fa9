"""The frontier study's pre-registered decision rules, applied mechanically.

docs/compare.md, "Frontier (pre-registered)", fixed the hypotheses H1-H5 and the rules that decide them before any
cell ran; this module applies those rules, as written, to the results of ``frontier.collect``
(studies/frontier/frontier.py), so the verdicts in ``frontier.md`` are computed, not read off the table by hand.
Nothing here is a new definition:

- a point is **at its target** when its seed-mean final batch H is within ±20 % of its seed-mean resolved target;
- **A costs less than B** when A's mean pass@1 exceeds B's by more than the larger of their two seed stds
  (otherwise "within seed spread"); the same rule for pass@k, for every comparison with GRPO and for H5's
  final held-out H;
- a method with fewer finished seeds than the grid's is shown with its count and left out: the hypothesis it is
  needed for stays **undecided** and the verdict names the missing points.

Verdicts: ``True`` (holds), ``False`` (does not), ``None`` (undecided, or decided by neither side of a rule).
Which grid families play which role is the grid file's ``frontier:`` section (:class:`Registration`), so this
module names no method.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stare_rl.control.target import parse_target

AT_TARGET = 0.2  # ±20 % of the resolved target (the band fraction's ±10 % is the controllers' own)
H2_PASS1_BELOW = 0.01  # H2: pass@1 >= GRPO - 1 point ...
H2_PASSK_ABOVE = 0.05  # ... and pass@k >= GRPO + 5 points (the thresholds, on the means)


@dataclass(frozen=True)
class Registration:
    """The roles the pre-registration gave the grid's methods and families (docs/compare.md, "Hypotheses"), as
    the grid file's ``frontier:`` section names them: ``reference`` (a grid method: H2 and H5 compare with it),
    ``candidate`` (the family H1 expects to cost least at every matched target), ``rivals`` (the other
    target-holding families), ``holds_most`` / ``holds_least`` (H4: the highest / lowest band fraction at every
    target) and ``unheld`` (grid methods H5 expects to end within one seed-std of the reference's held-out H)."""

    reference: str
    candidate: str
    rivals: tuple[str, ...]
    holds_most: str
    holds_least: str
    unheld: tuple[str, ...]

    @property
    def actuators(self) -> tuple[str, ...]:
        return (self.candidate, *self.rivals)

    @classmethod
    def from_mapping(cls, roles: Mapping[str, Any], families: Iterable[str], methods: Iterable[str],
                     where: str = "frontier") -> Registration:
        """Validate a grid's ``frontier:`` section: every role given, each name a family (or, for
        ``reference`` and ``unheld``, a method) of the grid; ValueError naming the field and the value."""
        fields = [f.name for f in dataclasses.fields(cls)]
        unknown, absent = sorted(set(roles) - set(fields)), [f for f in fields if f not in roles]
        if unknown or absent:
            raise ValueError(f"{where}: " + "; ".join([*(f"unknown key {k!r}" for k in unknown),
                                                      *(f"{k} is missing" for k in absent)])
                             + f" (the roles are {fields})")
        families, methods = set(families), set(methods)
        values: dict[str, Any] = {}
        for name in fields:
            value = roles[name]
            many = isinstance(value, list | tuple)
            names = [str(v) for v in value] if many else [str(value)]
            known = methods if name in ("reference", "unheld") else families
            if bad := [v for v in names if v not in known]:
                kind = "method" if name in ("reference", "unheld") else "family"
                raise ValueError(f"{where}.{name}={value!r}: {bad} is not a {kind} of the grid "
                                 f"(its {kind} names: {sorted(known)})")
            if many != (name in ("rivals", "unheld")):
                raise ValueError(f"{where}.{name}={value!r} must be " + ("a list of names" if not many else "one name"))
            values[name] = tuple(names) if many else names[0]
        return cls(**values)


def _mean(m: dict[str, Any], key: str) -> float | None:
    s = m["stats"].get(key)
    return None if s is None else s["mean"]


def _std(m: dict[str, Any], key: str) -> float:
    s = m["stats"].get(key)
    return 0.0 if s is None else s["std"]


def compare(a: dict[str, Any], b: dict[str, Any], key: str) -> str:
    """``"higher"``, ``"lower"`` or ``"within"``: A's mean against B's, beyond the larger of the two seed stds."""
    diff = _mean(a, key) - _mean(b, key)
    spread = max(_std(a, key), _std(b, key))
    return "higher" if diff > spread else "lower" if -diff > spread else "within"


def target_ratio(m: dict[str, Any]) -> float | None:
    """Seed-mean final batch H / seed-mean resolved target (``None`` without either)."""
    h, t = _mean(m, "final_batch_entropy"), _mean(m, "target")
    return None if h is None or t is None or t <= 0 else h / t


def at_target(m: dict[str, Any]) -> bool:
    ratio = target_ratio(m)
    return ratio is not None and abs(ratio - 1.0) <= AT_TARGET


def _points(results: dict[str, Any]) -> dict[str, dict[str, str]]:
    """family -> target spelling -> grid method (methods without a target are their own family, spelled ``-``)."""
    out: dict[str, dict[str, str]] = {}
    for name, m in results["methods"].items():
        out.setdefault(m["family"], {})[m["target_spec"] or "-"] = name
    return out


def target_order(spec: str) -> float:
    """Sort key of a target spelling: the ratio of a relative target, else the absolute value."""
    t = parse_target("target", spec)
    return t.ratio if t.relative else t.absolute


class _Rules:
    def __init__(self, results: dict[str, Any], reg: Registration) -> None:
        self.results, self.reg = results, reg
        self.methods = results["methods"]
        self.points = _points(results)
        self.n_seeds = len(results["expected_seeds"])

    def name(self, family: str, spec: str = "-") -> str | None:
        return self.points.get(family, {}).get(spec)

    def complete(self, name: str | None) -> bool:
        return name is not None and len(self.methods[name]["seeds"]) >= self.n_seeds

    def missing(self, names: list[str | None]) -> list[str]:
        return [n for n in names if n is not None and not self.complete(n)]

    def specs(self) -> list[str]:
        """Every target any registered actuator family has in the grid, low to high."""
        specs = {s for f in self.reg.actuators for s in self.points.get(f, {}) if s != "-"}
        return sorted(specs, key=target_order)

    def _pct(self, name: str, key: str) -> str:
        return f"{100 * _mean(self.methods[name], key):.1f}"

    def _reached(self, name: str) -> str:
        return f"reached {target_ratio(self.methods[name]):.2f} of it"

    def h1(self, spec: str) -> dict[str, Any]:
        names = [self.name(f, spec) for f in self.reg.actuators]
        present = [n for n in names if n is not None]
        cand = self.name(self.reg.candidate, spec)
        if cand is None:
            return {"verdict": None, "text": f"undecided: no {self.reg.candidate} point at {spec}"}
        done = [n for n in present if self.complete(n)]
        held = [n for n in done if at_target(self.methods[n])]
        missed = [f"{n} ({self._reached(n)})" for n in done if n not in held]
        if missing := self.missing(present):
            return {"verdict": None, "text": f"undecided: {', '.join(missing)} not finished with {self.n_seeds} seeds"
                    + (f"; so far at the target: {', '.join(held) or 'none'}" if done else "")
                    + (f"; missed it: {', '.join(missed)}" if missed else "")}
        miss_txt = f"; missed the target: {', '.join(missed)}" if missed else ""
        if cand not in held:
            others = [f"{n} ({self._reached(n)})" for n in done if n not in held and n != cand]
            return {"verdict": False, "held": held,
                    "text": f"does not hold: {cand} misses the target ({self._reached(cand)})"
                    + (f"; the others missed it too: {', '.join(others)}" if others else "")}
        rivals = [n for n in held if n != cand]
        if not rivals:
            return {"verdict": True, "text": f"holds trivially: only {cand} holds the target, no cost to compare{miss_txt}",
                    "held": held, "only_candidate": True}
        verdicts = {n: compare(self.methods[cand], self.methods[n], "pass@1") for n in rivals}
        parts = [f"{n} {self._pct(n, 'pass@1')}: " + {"higher": f"{cand} costs less", "lower": f"{n} costs less",
                                                     "within": "within seed spread"}[v] for n, v in verdicts.items()]
        head = f"{cand} pass@1 {self._pct(cand, 'pass@1')} vs " + "; ".join(parts) + miss_txt
        if all(v == "higher" for v in verdicts.values()):
            return {"verdict": True, "text": "holds: " + head, "held": held}
        if any(v == "lower" for v in verdicts.values()):
            return {"verdict": False, "text": "does not hold: " + head, "held": held}
        return {"verdict": None, "text": "not separated: " + head, "held": held}

    def h2(self) -> dict[str, Any]:
        ref = self.name(self.reg.reference)
        points = [n for n in (self.name(self.reg.candidate, s) for s in self.specs()) if n is not None]
        if ref is None or not self.complete(ref):
            return {"verdict": None, "text": f"undecided: {self.reg.reference} not finished with {self.n_seeds} seeds"}
        done = [n for n in points if self.complete(n)]
        lines, hit = [], []
        for n in done:
            d1 = _mean(self.methods[n], "pass@1") - _mean(self.methods[ref], "pass@1")
            dk = _mean(self.methods[n], "pass@k") - _mean(self.methods[ref], "pass@k")
            ok = d1 >= -H2_PASS1_BELOW and dk >= H2_PASSK_ABOVE
            hit += [n] if ok else []
            lines.append(f"{n}: pass@1 {100 * d1:+.1f}, pass@k {100 * dk:+.1f}" + (" (meets both)" if ok else ""))
        text = "; ".join(lines) or f"no {self.reg.candidate} point finished"
        if hit:
            return {"verdict": True, "text": f"holds at {', '.join(hit)}: {text}", "points": hit}
        if missing := self.missing(points):
            return {"verdict": None, "text": f"undecided ({', '.join(missing)} not finished): {text}"}
        return {"verdict": False, "text": f"does not hold: {text}"}

    def h3(self, family: str) -> dict[str, Any]:
        names = [self.points.get(family, {}).get(s) for s in self.specs()]
        if None in names or self.missing(names):
            gone = [s for s, n in zip(self.specs(), names, strict=True) if n is None]
            return {"verdict": None, "text": "undecided: " + ", ".join(
                [*(f"no {s} point" for s in gone), *(f"{n} not finished" for n in self.missing(names))])}
        ms = [self.methods[n] for n in names]
        pk, p1 = [_mean(m, "pass@k") for m in ms], [_mean(m, "pass@1") for m in ms]
        ordered = all(a < b for a, b in zip(pk, pk[1:], strict=False)) and all(a > b for a, b in zip(p1, p1[1:], strict=False))
        off = [n for n, m in zip(names, ms, strict=True) if not at_target(m)]
        means = ("pass@k " + " → ".join(f"{100 * v:.1f}" for v in pk) + ", pass@1 "
                 + " → ".join(f"{100 * v:.1f}" for v in p1))
        if off:
            return {"verdict": False, "text": f"does not qualify: {', '.join(off)} {'misses its' if len(off) == 1 else 'miss their'} target "
                                              f"({'ordered both ways' if ordered else 'not ordered'}: {means})"}
        return {"verdict": ordered, "text": ("holds: " if ordered else "does not hold: not ordered: ") + means}

    def h4(self) -> dict[str, Any]:
        lines, most, least, undecided = [], [], [], []
        for spec in self.specs():
            names = [n for n in (self.name(f, spec) for f in self.reg.actuators) if n is not None]
            hi, lo = self.name(self.reg.holds_most, spec), self.name(self.reg.holds_least, spec)
            if hi is None or lo is None or (missing := self.missing(names)):
                undecided.append(f"{spec}: " + (", ".join(missing) + " not finished" if hi and lo else
                                                f"no {self.reg.holds_most if hi is None else self.reg.holds_least} point"))
                continue
            band = {n: _mean(self.methods[n], "band_fraction") or 0.0 for n in names}  # never crossed: 0
            top, bottom = max(band, key=band.get), min(band, key=band.get)
            most.append(all(band[hi] > v for n, v in band.items() if n != hi))  # strictly: a tie is not "highest"
            least.append(all(band[lo] < v for n, v in band.items() if n != lo))
            lines.append(f"{spec}: highest {top} {100 * band[top]:.1f} %, lowest {bottom} {100 * band[bottom]:.1f} %")
        text = "; ".join(lines + undecided)
        if (most and not all(most)) or (least and not all(least)):
            return {"verdict": False, "text": "does not hold: " + text}
        if undecided or not most:
            return {"verdict": None, "text": "undecided: " + (text or "no target finished")}
        return {"verdict": True, "text": "holds: " + text}

    def h5(self) -> dict[str, Any]:
        ref = self.name(self.reg.reference)
        names = [self.name(f) for f in self.reg.unheld]
        if ref is None or None in names or self.missing([ref, *names]):
            gone = [f for f, n in zip((self.reg.reference, *self.reg.unheld), (ref, *names), strict=True) if n is None]
            return {"verdict": None, "text": "undecided: " + ", ".join(
                [*(f"{g} not in the grid" for g in gone), *(f"{n} not finished" for n in
                                                              self.missing([ref, *names]))])}
        rows = {n: compare(self.methods[n], self.methods[ref], "final_entropy") for n in names}
        text = "; ".join(f"{n} {_mean(self.methods[n], 'final_entropy'):.3f} vs "
                         f"{_mean(self.methods[ref], 'final_entropy'):.3f}: "
                         f"{'within one seed-std' if v == 'within' else v + ' than ' + ref}" for n, v in rows.items())
        ok = all(v == "within" for v in rows.values())
        return {"verdict": ok, "text": ("holds: " if ok else "does not hold: ") + text}


def decide(results: dict[str, Any], registration: Registration) -> dict[str, Any]:
    """H1 (per target), H2, H3 (per actuator family), H4 and H5 from ``frontier.collect``'s
    results: each ``{"verdict": True | False | None, "text": ...}``. Under ``exploratory``, H3's rule applied to
    the target-holding families the registration gives no role (added to the grid after it): reported apart,
    never part of a pre-registered verdict."""
    rules = _Rules(results, registration)
    extra = [f for f, pts in rules.points.items()
             if f not in rules.reg.actuators and any(spec != "-" for spec in pts)]
    return {
        "H1": {spec: rules.h1(spec) for spec in rules.specs()},
        "H2": rules.h2(),
        "H3": {fam: rules.h3(fam) for fam in rules.reg.actuators if fam in rules.points},
        "H4": rules.h4(),
        "H5": rules.h5(),
        "exploratory": {"H3": {fam: rules.h3(fam) for fam in sorted(extra)}},
    }


def decisions_markdown(decisions: dict[str, Any]) -> str:
    """The verdicts as a markdown section for ``frontier.md``."""
    lines = ["## The pre-registered rules, applied", "",
             "Computed by `studies/frontier/frontier_rules.py` from the table above with the rules of docs/compare.md "
             "(at target: final batch H within ±20 % of the target; \"costs less\": a mean beyond the larger seed "
             "std); methods without every seed are left out.", ""]
    for spec, d in decisions["H1"].items():
        lines.append(f"- **H1 at {spec}**: {d['text']}")
    lines.append(f"- **H2**: {decisions['H2']['text']}")
    lines += [f"- **H3, {fam}**: {d['text']}" for fam, d in decisions["H3"].items()]
    lines.append(f"- **H4**: {decisions['H4']['text']}")
    lines.append(f"- **H5**: {decisions['H5']['text']}")
    if extra := decisions.get("exploratory", {}).get("H3"):
        lines += ["", "## Exploratory: the same rules on families added after the registration", "",
                  "Not pre-registered, so no verdict above depends on them: H3's rule (every target held, pass@k up "
                  "and pass@1 down from target to target) applied to the target-holding families the grid's "
                  "`frontier:` section gives no role.", ""]
        lines += [f"- **H3, {fam}**: {d['text']}" for fam, d in extra.items()]
    return "\n".join(lines) + "\n"
