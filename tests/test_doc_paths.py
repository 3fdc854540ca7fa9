"""Every repository path quoted in README.md, docs/*.md (results pages included) and the docstrings and comments of
the Python sources (src/, benchmarks/, examples/, scripts/, studies/) names a file or folder that exists (issue 43,
item 4; issue 44, item 5).

What counts as a repository path (so metric names such as ``control/gate_on`` and run folders such as
``runs/X/model`` are not taken for one):
- a markdown link target that is not a URL (resolved against the page's folder), and its ``#anchor`` when it
  points into a markdown page (GitHub's heading anchors);
- a token whose first part is a top-level folder of the repository (``src/``, ``docs/``, ``tests/``, ...), or
  ``stare_rl/``, or ``results/`` (docs/results);
- a token with a file suffix whose first part is a sub-package of ``stare_rl`` (``engines/trl/tools.py``), resolved
  against ``src/stare_rl`` and against the folder of the file that names it.
Dotted names under ``stare_rl`` (``stare_rl.control.base``, ``stare_rl.trl.StareGRPOTrainer``) name a module, or
a module and a name defined at its top level (read from the source, nothing imported); a name after a class is
not checked, nor one a module's ``__getattr__`` builds; ``stare_rl.<method>`` is also verl's name of a registered
method. Tokens with a placeholder (``<...>``, ``{...}``, ``*``, ``...``) are skipped. Paths in other projects' repositories
(the papers' code, verl) are listed in ``EXTERNAL`` with where they live. Nothing here reads outside the clone.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from stare_rl import list_methods

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "stare_rl"
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in {".git"}} - {"runs", "outputs"}
SUBPKG = {p.name for p in PKG.iterdir() if p.is_dir() and not p.name.startswith("_")}
SUFFIX = (".py", ".md", ".yaml", ".yml", ".json", ".jsonl", ".sh", ".toml", ".txt", ".png", ".csv", ".gz", ".html")
# Paths in other repositories that the docs quote on purpose: the path -> where it lives.
EXTERNAL = {
    "models/transformers/monkey_patch.py": "verl",
    "scripts/train/run_archer_qwen2.5_1.5b_code.sh": "the Archer paper's repository",
}
# Where a study writes its results once it has run (the folder may not exist yet): the path -> what writes it.
NOT_YET_WRITTEN = {
    "docs/results/real_lm_grid": "studies/real_lm/analyze.py, when issue 42's real-LM grid has run",
}
# Known stale paths in files another change is editing now, with the fix; the test fails once one is fixed, so the
# entry goes with it. file -> {stale path: what it should say}
PENDING: dict[str, dict[str, str]] = {}
TOKEN = re.compile(r"(?<![\w/.:@-])((?:\.{1,2}/)?\.?[A-Za-z_][\w.+-]*(?:/[\w.+<>{}*-]*)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOTTED = re.compile(r"(?<![\w./-])stare_rl(?:\.[A-Za-z_]\w*)+")


def _top_level_names(module: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try)):  # names bound under a guard (TYPE_CHECKING, optional imports)
            names |= {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            names |= {(a.asname or a.name).split(".")[0] for n in ast.walk(node)
                      if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
            names |= {t.id for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets
                      if isinstance(t, ast.Name)}
    return names


def dotted_exists(name: str) -> bool:
    """``stare_rl.a.b.C``: a package/module path, then at most one checked top-level name."""
    parts = name.split(".")[1:]
    if parts[0].startswith("__") or (len(parts) == 1 and parts[0] in list_methods()):
        return True
    here = PKG
    for i, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
            continue
        if (here / f"{part}.py").is_file():
            here = here / f"{part}.py"
            rest, names = parts[i + 1:], _top_level_names(here)
            return not rest or rest[0] in names or "__getattr__" in names
        init = here / "__init__.py"
        return here.is_dir() and init.is_file() and part in _top_level_names(init)
    return True


def sources() -> list[tuple[Path, str]]:
    """(file, text) for the markdown pages, and the docstrings + comments of every Python source."""
    out = [(p, p.read_text()) for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]]
    for p in sorted([*PKG.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "examples").rglob("*.py"),
                     *(ROOT / "scripts").rglob("*.py"), *(ROOT / "studies").rglob("*.py")]):
        src = p.read_text()
        parts = [ast.get_docstring(n, clean=False) or "" for n in ast.walk(ast.parse(src))
                 if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
        parts += [t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
        out.append((p, "\n".join(parts)))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The heading anchors of a markdown page (repeated headings get ``-1``, ``-2``, ... as on GitHub)."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _exists(candidates: list[Path]) -> bool:
    return any(c.exists() for c in candidates)


def unresolved(path: Path, text: str) -> list[str]:
    """The quoted repository paths in ``text`` (from ``path``) that do not exist."""
    bad: list[str] = []
    here = path.parent
    if path.suffix == ".md":
        for m in LINK.finditer(text):
            target, _, anchor = m.group(1).partition("#")
            if re.match(r"^[a-z]+:", target) or target.startswith("/"):
                continue
            page = here / target if target else path
            if target and not _exists([page]):
                bad.append(f"link {target}")
            elif anchor and page.suffix == ".md" and page.is_file() and anchor not in anchors(page):
                bad.append(f"link {m.group(1)}")
    for m in DOTTED.finditer(text):
        name = m.group(0).rstrip(".")
        if not dotted_exists(name):
            bad.append(name)
    for m in TOKEN.finditer(text):
        tok = m.group(1).rstrip(".,;:)")
        if any(c in tok for c in "<>{}*") or "..." in tok or tok in EXTERNAL or tok in NOT_YET_WRITTEN:
            continue
        first = tok.lstrip("./").split("/", 1)[0]
        rel = tok[2:] if tok.startswith("./") else tok
        if tok.startswith("../"):
            cands = [here / tok]
        elif first in TOP and first != "src" or first == "src":
            cands = [ROOT / rel]
        elif first == "stare_rl":
            cands = [ROOT / "src" / rel]
        elif first == "results":
            cands = [ROOT / "docs" / rel, here / rel]
        elif first in SUBPKG and tok.endswith(SUFFIX):
            cands = [PKG / rel, here / rel, *(d / rel for d in here.parents if PKG in (d, *d.parents))]
        else:
            continue
        if not _exists(cands):
            bad.append(tok)
    return sorted(set(bad))


@pytest.mark.parametrize("path,text", sources(), ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else "")
def test_quoted_repository_paths_exist(path: Path, text: str) -> None:
    missing = unresolved(path, text)
    pending = PENDING.get(str(path.relative_to(ROOT)), {})
    assert set(pending) <= set(missing), f"fixed, drop from PENDING: {sorted(set(pending) - set(missing))}"
    missing = [m for m in missing if m not in pending]
    assert not missing, f"{path.relative_to(ROOT)} quotes paths that do not exist: {missing}"


def test_the_checker_sees_a_missing_path() -> None:
    fake = ROOT / "docs" / "x.md"
    assert unresolved(fake, "see `docs/nope.md` and [a](nope.md), `engines/trl_tools.py`") == [
        "docs/nope.md", "engines/trl_tools.py", "link nope.md"]
    assert unresolved(fake, "`stare_rl.control.base.StareGate`, `stare_rl.nope`, `stare_rl.core.types.Nope`") == [
        "stare_rl.control.base.StareGate", "stare_rl.core.types.Nope", "stare_rl.nope"]
    assert unresolved(fake, "[t](train.md#no-such-heading)") == ["link train.md#no-such-heading"]
    assert unresolved(fake, "`docs/train.md`, [t](train.md#use-it-in-your-own-trl-script), `control/gate_on`, `runs/X/model`, `engines/trl/tools.py`, "
                      "`stare_rl.trl.StareGRPOTrainer`, `stare_rl.methods.stare.gate.StareGate.update`, `stare_rl.steer`, "
                      "`stare_rl.engines.verl.adapter.StareRLPolicyLossConfig`, `stare_rl.__file__`") == []


def test_every_results_folder_is_in_the_results_index() -> None:
    """docs/results/README.md lists every folder under docs/results (a study's folder is created with its first
    commit; the index is where a reader finds it)."""
    index = (ROOT / "docs" / "results" / "README.md").read_text()
    folders = sorted(p.name for p in (ROOT / "docs" / "results").iterdir() if p.is_dir())
    missing = [f for f in folders if f"[{f}/]({f}/" not in index]
    assert not missing, f"docs/results/README.md: no row for {missing}"
