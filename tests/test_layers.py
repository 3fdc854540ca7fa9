"""The architecture's contracts that a reader relies on: layers, method knowledge kept in its method's package,
one metric namespace. (The import layers themselves are checked by `lint-imports` in scripts/test.sh.)"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from stare_rl.core.metrics import current_name
from stare_rl.core.registry import declared_metrics, get_method, list_methods

SRC = Path(__file__).resolve().parents[1] / "src" / "stare_rl"
# Every layer but methods/ (where methods live) and train/ (the app, which picks the product's default method).
GENERIC = ("engines", "control", "analysis", "compare", "core", "io", "evaluation")
# The exceptions, with their reasons: the table that reads older runs names their old TRL prefix ``stare/``
# (the project's name, which is also the method's); the registry defines the baseline's name once.
ALLOWED = {"core/metrics.py", "core/registry.py"}


def _method_mentions(path: Path, names: set[str]) -> list[str]:
    """Identifiers equal to a method name, and strings equal to one or starting with ``<name>/``
    (a metric prefix); comments and prose in docstrings are not code and are left alone."""
    hits = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type == tokenize.NAME and tok.string in names:
            hits.append(f"{path.relative_to(SRC)}:{tok.start[0]}: name {tok.string}")
        elif tok.type == tokenize.STRING:
            body = tok.string.strip("rbfRBF").strip("\"'")
            if body in names or any(body.startswith(f"{n}/") for n in names):
                hits.append(f"{path.relative_to(SRC)}:{tok.start[0]}: string {tok.string}")
    return hits


@pytest.mark.parametrize("package", GENERIC)
def test_no_method_is_named_outside_its_own_package(package: str) -> None:
    names = set(list_methods())
    files = [p for p in sorted((SRC / package).rglob("*.py")) if str(p.relative_to(SRC)) not in ALLOWED]
    hits = [h for p in files for h in _method_mentions(p, names)]
    assert not hits, "method knowledge outside methods/:\n" + "\n".join(hits)


def test_the_check_finds_a_method_name(tmp_path: Path) -> None:
    bad = SRC / "engines" / "_probe_tmp.py"
    try:
        bad.write_text('KEY = "stare/gate_on"\nfrom stare_rl.methods.stare import gate\n')
        assert len(_method_mentions(bad, set(list_methods()))) == 2
    finally:
        bad.unlink()


# One spelling per setting (issue 44): the entropy target is `target_entropy` on every surface. verl's flat
# `policy_loss` block needs `<method>_<field>`, which engines/verl/adapter.py's verl_field_name builds from the
# method and the field, never spelled out; the old names are read by one reader. The owners, with their reasons:
SPELLING_OWNERS = {"core/legacy.py": "the old setting names (bonus_target_entropy), read as today's",
                   "core/metrics.py": "retired metric names of older runs (control/entropic_target_entropy)"}
PREFIXED_TARGET = re.compile(r"\S_target_entropy")  # bonus_target_entropy, stare_target_entropy, {method}_target...


def _setting_spellings(path: Path, root: Path = SRC) -> list[str]:
    """Identifiers and strings (f-strings included) that spell the entropy target with a prefix."""
    return [f"{path.relative_to(root)}:{tok.start[0]}: {tok.string}"
            for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            if tok.type in (tokenize.NAME, tokenize.STRING) and PREFIXED_TARGET.search(tok.string)]


def test_no_setting_is_spelled_outside_its_owner() -> None:
    files = [p for p in sorted(SRC.rglob("*.py")) if str(p.relative_to(SRC)) not in SPELLING_OWNERS]
    hits = [h for p in files for h in _setting_spellings(p)]
    assert not hits, "a prefixed entropy-target name outside its owners:\n" + "\n".join(hits)


def test_the_spelling_check_finds_a_prefixed_target(tmp_path: Path) -> None:
    bad = tmp_path / "probe.py"
    bad.write_text('a = cfg.get(f"{method}_target_entropy")\nbonus_target_entropy = 0.3\nb = cfg.target_entropy\n')
    assert len(_setting_spellings(bad, tmp_path)) == 2


def test_declared_metrics_live_in_the_one_namespace() -> None:
    keys = [m.key for m in declared_metrics()]
    assert keys and len(keys) == len(set(keys))
    assert all(k.split("/", 1)[0] in {"control", "loss", "quadrant", "dynamic_sampling"} for k in keys), keys
    assert "control/gate_on" in keys and get_method("stare").metrics  # declared where STARE is registered


@pytest.mark.parametrize(("old", "new"), [
    ("stare/batch_entropy", "control/batch_entropy"),      # TRL, step controller
    ("stare/gate_on", "control/gate_on"),
    ("stare/auto_strength", "control/auto_strength"),
    ("stare/auto_target", "control/target_entropy"),       # retired repeats: the name that still carries it
    ("control/auto_target", "control/target_entropy"),
    ("control/entropic_target_entropy", "control/target_entropy"),
    ("stare/entropic_alpha", "control/entropic_alpha"),
    ("stare/entropy_coef", "control/entropy_coef"),
    ("stare/mean_weight", "loss/mean_weight"),             # TRL, loss
    ("stare/l_plus_frac", "loss/l_plus_frac"),
    ("stare/k_plus", "loss/k_plus"),
    ("entropic/high_prob_frac", "loss/high_prob_frac"),    # TRL, a loss's metric under its method's name
    ("stare/dynamic_sampling_kept", "dynamic_sampling/kept"),
    ("stare/dynamic_sampling/gen_rounds", "dynamic_sampling/gen_rounds"),
    ("stare_rl/gate_on", "control/gate_on"),               # verl's exact entry point
    ("actor/stare/reweight_w", "loss/reweight_w"),         # verl's actor
    ("actor/loss/reweight_w", "loss/reweight_w"),          # verl's actor prefixes the current loss/ names
    ("actor/loss", "actor/loss"),                          # ... but its own total loss is kept
    ("actor/pg_loss", "actor/pg_loss"),                    # current names are kept
    ("control/gate_on", "control/gate_on"),
    ("quadrant/pos_high_frac", "quadrant/pos_high_frac"),
    ("eval/pass@8", "eval/pass@8"),
])
def test_older_metric_names_are_read_under_the_current_ones(old: str, new: str) -> None:
    assert current_name(old, list_methods()) == new


# Imports sit at the top of a module (issue 44) unless a cycle or an optional dependency forces them down. The
# modules that keep imports of the project's own modules inside functions, with their reasons:
INNER_IMPORTS = {
    "commands/eval.py": "the tasks, tokenizers, warm-start reader and tool evaluation load transformers, which "
                        "`stare eval --help` does not",
    "commands/probe.py": "the tasks, tokenizers, tiny model and warm start load transformers, which "
                         "`stare probe --help` does not",
    "commands/verl_dryrun.py": "engines.verl.cpu.dryrun loads transformers, which `stare verl-dryrun --help` does not",
    "engines/verl/cpu/__init__.py": "platform and rollout import verl (optional): only activate() needs them",
    "evaluation/heldout.py": "models.tokenizer loads transformers (optional): only loading a model needs it",
    "train/plan.py": "engines.trl.config imports TRL: only building the parser and checking keys need it",
    "train/run.py": "engines.trl.trainer imports TRL and datasets: only the training itself needs them",
}


def _inner_project_imports(path: Path, root: Path = SRC) -> list[str]:
    """The imports of ``stare_rl`` modules (relative ones included) inside a function of ``path``."""
    lines: set[int] = set()
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "stare_rl"):
                    lines.add(node.lineno)
                elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "stare_rl" for a in node.names):
                    lines.add(node.lineno)
    return [f"{path.relative_to(root)}:{n}" for n in sorted(lines)]


def test_project_imports_sit_at_the_top() -> None:
    found = {p: _inner_project_imports(p) for p in sorted(SRC.rglob("*.py"))}
    hits = [hit for p, inner in found.items() if str(p.relative_to(SRC)) not in INNER_IMPORTS for hit in inner]
    assert not hits, ("imports of stare_rl inside functions; move them to the top, or, where a cycle or an optional "
                      "dependency forces them down, add the module to INNER_IMPORTS with the reason:\n"
                      + "\n".join(hits))
    stale = [m for m in INNER_IMPORTS if not found.get(SRC / m)]
    assert not stale, f"no import inside a function any more, drop from INNER_IMPORTS: {stale}"


def test_the_import_check_finds_an_inner_import(tmp_path: Path) -> None:
    bad = tmp_path / "probe.py"
    bad.write_text("from stare_rl.core import types\n\n\ndef f():\n    from stare_rl.io import runlog\n"
                   "    import stare_rl.io.cache\n\n    def g():\n        from . import tiny\n"
                   "        import json\n    return runlog, stare_rl, tiny, json\n")
    assert _inner_project_imports(bad, tmp_path) == ["probe.py:5", "probe.py:6", "probe.py:9"]


def _private_imports(path: Path, root: Path = SRC) -> list[str]:
    """``from stare_rl.<other module> import _name``: a helper private to its module used from another one."""
    module = "stare_rl." + ".".join(path.relative_to(root).with_suffix("").parts)
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stare_rl"
                and node.module != module.removesuffix(".__init__")):
            hits += [f"{path.relative_to(root)}:{node.lineno}: {node.module}.{a.name}" for a in node.names
                     if a.name.startswith("_") and not a.name.startswith("__")]
    return hits


def test_no_module_imports_another_modules_private_names() -> None:
    """A name with a leading underscore is its module's own: another module that needs it gets a public name
    (ruff's PLC2701 does not look inside one package)."""
    hits = [hit for p in sorted(SRC.rglob("*.py")) for hit in _private_imports(p)]
    assert not hits, "private names imported across modules; make them public:\n" + "\n".join(hits)


def test_the_private_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    bad = tmp_path / "pkg" / "mod.py"
    bad.write_text("from stare_rl.control.base import StepObservation, _helper\nfrom stare_rl.pkg.mod import _own\n"
                   "from stare_rl import __version__\n")
    assert _private_imports(bad, tmp_path) == ["pkg/mod.py:1: stare_rl.control.base._helper"]
