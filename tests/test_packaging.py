"""The packaging itself, in the environment the tests run in (CI: a fresh venv with ``pip install -e .[all]``,
``.ci/run``): every extra's import surface works as installed, and every third-party import of the package is
a dependency that ``pyproject.toml`` declares for the extra its module belongs to.

A dependency that only the developer's machine happens to have (``jmespath`` for TRL's tool calling once was)
fails here instead of in a user's first run."""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

packaging_requirements = pytest.importorskip("packaging.requirements")
tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "stare_rl"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Which extra a module needs (longest matching prefix wins); everything else must run on the base dependencies.
# The base is the library layers (core, control, methods, io): losses, controllers, the run-directory files.
EXTRA_OF_MODULE = {
    "stare_rl.engines.trl": "trl", "stare_rl.trl": "trl", "stare_rl.train": "trl", "stare_rl.compare": "trl",
    "stare_rl.evaluation": "trl", "stare_rl.analysis": "trl", "stare_rl.tasks": "trl", "stare_rl.models": "trl",
    "stare_rl.models.pretrained": "real",
    "stare_rl.commands": "trl", "stare_rl.cli": "trl",
    "stare_rl.engines.verl": "verl", "stare_rl.recipes.verl": "verl",
}
BASE_ONLY = ("stare_rl.core", "stare_rl.control", "stare_rl.methods", "stare_rl.io")


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", packaging_requirements.Requirement(requirement).name).lower()


def _declared() -> dict[str, set[str]]:
    """extra ('' = base) -> normalised distribution names declared in pyproject.toml (self-references expanded)."""
    project = PYPROJECT["project"]
    out = {"": {_name(r) for r in project["dependencies"]}}
    extras = project["optional-dependencies"]
    for extra, reqs in extras.items():
        names = set()
        for r in reqs:
            req = packaging_requirements.Requirement(r)
            if _name(r) == "stare-rl":  # all = stare-rl[trl,verl,dev]
                names |= {_name(x) for e in req.extras for x in extras[e]}
            else:
                names.add(_name(r))
        out[extra] = names
    return out


def _module_extra(module: str) -> str:
    best = max((p for p in EXTRA_OF_MODULE if module == p or module.startswith(p + ".")), key=len, default=None)
    return "" if best is None else EXTRA_OF_MODULE[best]


def _third_party_imports() -> dict[str, set[str]]:
    """module -> top-level names it imports (anywhere in the file, lazy imports included) outside the standard
    library and stare_rl."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        names = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        names -= {"stare_rl", "__future__", *sys.stdlib_module_names}
        if names:
            out[module] = names
    return out


def test_every_third_party_import_is_declared_for_its_modules_extra() -> None:
    declared, dists = _declared(), md.packages_distributions()
    problems = []
    imports = _third_party_imports()
    assert {"torch", "trl", "verl", "transformers"} <= set().union(*imports.values())  # the scan sees them
    for module, names in sorted(imports.items()):
        extra = _module_extra(module)
        allowed = declared[""] | declared.get(extra, set())
        for name in sorted(names):
            providers = {re.sub(r"[-_.]+", "-", d).lower() for d in dists.get(name, [])}
            if not providers:
                problems.append(f"{module}: imports {name!r}, which no installed distribution provides")
            elif not providers & allowed:
                problems.append(f"{module} (extra {extra or 'base'!r}): imports {name!r} from {sorted(providers)}, "
                                f"not declared in pyproject.toml for {'the base' if not extra else f'[{extra}]'}")
    assert not problems, "\n".join(problems)


def test_the_library_layers_import_only_base_dependencies() -> None:
    for module, names in _third_party_imports().items():
        if module.startswith(BASE_ONLY):
            assert _module_extra(module) == "", module
            assert names <= {"torch", "numpy", "yaml", "tqdm"}, (module, names)


def test_every_declared_requirement_is_installed_at_a_declared_version() -> None:
    """What pip installed for ``.[all]`` matches pyproject.toml (version specifiers included)."""
    project = PYPROJECT["project"]
    reqs = [*project["dependencies"], *(r for rs in project["optional-dependencies"].values() for r in rs)]
    problems = []
    for r in reqs:
        req = packaging_requirements.Requirement(r)
        if _name(r) == "stare-rl" or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            version = md.version(req.name)
        except md.PackageNotFoundError:
            problems.append(f"{r}: not installed")
            continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            problems.append(f"{r}: installed {version}")
    assert not problems, "\n".join(problems)


def test_the_verl_plugin_entry_point_is_installed_as_declared() -> None:
    declared = PYPROJECT["project"]["entry-points"]["verl.plugins"]
    installed = {ep.name: ep.value for ep in md.entry_points(group="verl.plugins")}
    assert installed.get("stare_rl") == declared["stare_rl"] == "stare_rl.engines.verl.plugin"
    scripts = {ep.name: ep.value for ep in md.entry_points(group="console_scripts")}
    assert scripts.get("stare") == PYPROJECT["project"]["scripts"]["stare"] == "stare_rl.cli:main"


def _env() -> dict[str, str]:
    """This checkout's code first (the editable install may point at another checkout), offline."""
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
            "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


# The configs the wheel ships: what `stare train` (the embedded default, per-task defaults, the pretrained model's)
# and `stare compare` (its shipped grid) read. A study's grid lives in studies/, next to its analysis.
USER_CONFIGS = ["calc_tool.yaml", "chat_arithmetic.yaml", "compare.yaml", "countdown_cot.yaml", "default.yaml",
                "pretrained.yaml"]


def test_the_wheel_ships_the_library_and_no_study(tmp_path: Path) -> None:
    """Build the wheel from this checkout's package (offline, no isolation): it holds the user configs and the
    recipes, and no file of studies/ (a study's analysis code or its research grid), by name or by content."""
    pytest.importorskip("setuptools")
    shutil.copytree(PACKAGE, tmp_path / "src" / "stare_rl", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tmp_path / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(tmp_path / "dist"), str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        shipped = {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
    configs = sorted(n.removeprefix("stare_rl/configs/") for n in shipped if n.startswith("stare_rl/configs/"))
    assert configs == USER_CONFIGS
    assert any(n.startswith("stare_rl/recipes/") for n in shipped)
    studies = [p for p in (ROOT / "studies").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert studies and any(p.name == "frontier.py" for p in studies)
    names = {Path(n).name for n in shipped}
    contents = set(shipped.values())
    # a study's code by its module name; any study file by its content (a grid may share a user config's file name,
    # e.g. studies/authority_map/countdown_cot.yaml, and differ from it)
    leaked = [str(p.relative_to(ROOT)) for p in studies
              if (p.suffix == ".py" and p.name in names) or p.read_bytes() in contents]
    assert not leaked, f"the wheel ships study files: {leaked}"
    assert not [n for n in shipped if "frontier" in n or "compare_cot" in n]


def test_stare_console_script_runs_train_help(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    script = Path(sys.executable).parent / "stare"
    assert script.is_file(), f"no console script {script}: is stare-rl installed in this environment?"
    proc = subprocess.run([str(script), "train", "--help"], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--target_entropy" in proc.stdout and "--cache_dir" in proc.stdout


@pytest.mark.slow
def test_bare_import_verl_registers_our_losses_and_the_exact_entry_point_imports(tmp_path: Path) -> None:
    """What verl's workers do: a bare ``import verl`` loads our plugin through the entry point; and the exact
    entry point's module (Ray, TransferQueue, Hydra) imports, in a fresh interpreter."""
    pytest.importorskip("verl")
    code = ("import verl\n"
            "from verl.trainer.ppo.core_algos import get_policy_loss_fn\n"
            "from stare_rl.core.registry import list_methods\n"
            "for m in list_methods():\n"
            "    get_policy_loss_fn('stare_rl.' + m)\n"
            "import stare_rl.engines.verl.main as main\n"
            "print('OK', len(list_methods()), main.TRAINER_MODE)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    assert re.search(r"^OK \d+ stare_rl$", proc.stdout, re.M), proc.stdout[-2000:]


def test_the_tool_task_trainer_builds_and_jmespath_is_declared(tmp_path: Path) -> None:
    """``stare train --task calc_tool`` builds TRL's GRPOTrainer with ``tools=``: with transformers < 5.13 TRL
    needs ``jmespath`` for that, which nothing but our [trl] extra installs."""
    pytest.importorskip("trl")
    import transformers
    from packaging.version import Version
    from test_tool_masking import _trainer

    if Version(transformers.__version__) < Version("5.13"):
        assert "jmespath" in _declared()["trl"]
        md.version("jmespath")  # installed
    trainer = _trainer(tmp_path, "stare", {})
    assert [t.__name__ for t in trainer.tools] == ["calculator"]
