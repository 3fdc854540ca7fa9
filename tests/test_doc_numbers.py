"""The numbers that README.md and docs/ quote from committed result artifacts match those artifacts (issue 43, item 2).

Every block between ``<!-- numbers:NAME:start -->`` and ``<!-- numbers:NAME:end -->`` is rendered again by
``scripts/doc_numbers.py`` from the JSON and metrics under docs/results and compared with the page; a number edited
by hand, or an artifact changed without its page, fails here. ``python scripts/doc_numbers.py --write`` rewrites
the blocks. Nothing here holds a result: the expected text comes from the artifacts.
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("doc_numbers", ROOT / "scripts" / "doc_numbers.py")
assert _spec is not None and _spec.loader is not None
doc_numbers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(doc_numbers)


@pytest.mark.parametrize("name", sorted(doc_numbers.BLOCKS))
def test_block_matches_its_artifacts(name: str) -> None:
    page, render = doc_numbers.BLOCKS[name]
    have = doc_numbers.current((ROOT / page).read_text(), name)
    assert have is not None, f"{page}: the block {name!r} is missing (its markers were removed?)"
    assert have == render(), (
        f"{page}: the block {name!r} differs from its artifacts; run `python scripts/doc_numbers.py` for the diff "
        "and `--write` to re-render it")


@pytest.mark.parametrize("page,want", doc_numbers.inline_checks(), ids=lambda v: v[:40] if isinstance(v, str) else "")
def test_inline_number_matches_its_artifact(page: str, want: str) -> None:
    assert want in (ROOT / page).read_text(), f"{page}: expected {want!r}, rendered from its artifact"


def test_every_block_in_the_docs_is_known() -> None:
    """A ``numbers:`` block that no renderer owns would never be checked."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = {(p.relative_to(ROOT).as_posix(), m) for p in pages
             for m in re.findall(r"<!-- numbers:([\w-]+):start -->", p.read_text())}
    assert found == {(page, name) for name, (page, _) in doc_numbers.BLOCKS.items()}


def test_the_spread_is_over_seeds_not_repeats() -> None:
    """The kernel settings of the robustness runs are repeats of a seed: the ± is over the seeds, n = 3."""
    runs = doc_numbers._robustness_runs("warmstart_robustness")
    final = doc_numbers.per_seed(runs, lambda r: r["final"]["avg@8"])
    assert len(runs) > len(final) == 3
    text = doc_numbers.render_robustness()
    assert f"{statistics.mean(final.values()):.3f} ± {statistics.stdev(final.values()):.3f}" in text
    assert "n = 3 seeds" in text


@pytest.mark.parametrize("folder", ["warmstart_robustness", "warmstart_robustness/sft1600"])
def test_robustness_summary_is_over_seeds(folder: str) -> None:
    """``summary.json`` (written by scripts/warmstart_robustness.py) states its spread over the seeds."""
    summary = json.loads((doc_numbers.RESULTS / folder / "summary.json").read_text())
    runs = doc_numbers._robustness_runs(folder)
    for key, get in (("final_avg@8", lambda r: r["final"]["avg@8"]), ("start_avg@8", lambda r: r["start"]["avg@8"])):
        seeds = list(doc_numbers.per_seed(runs, get).values())
        assert summary["seeds"] == len(seeds) and summary["runs"] == len(runs)
        assert summary[key]["std"] == round(statistics.stdev(seeds), 4)
        assert summary[key]["mean"] == round(statistics.mean(seeds), 4)


def test_a_changed_number_fails() -> None:
    page, render = doc_numbers.BLOCKS["headline"]
    good = render()
    bad = good.replace("±", "+-", 1)
    text = doc_numbers.replace((ROOT / page).read_text(), "headline", bad)
    assert doc_numbers.current(text, "headline") != render()


def test_robustness_table_is_rebuilt_from_its_runs(tmp_path: Path) -> None:
    """warmstart_robustness/README.md's run table (between ``<!-- table:start/end -->``) and ``summary.json`` are what
    ``scripts/warmstart_robustness.py --table-only`` builds from the committed ``runs/*.json``: rebuilt in a copy,
    they must equal the committed ones."""
    spec = importlib.util.spec_from_file_location("warmstart_robustness", ROOT / "scripts" / "warmstart_robustness.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    folder = doc_numbers.RESULTS / "warmstart_robustness"
    (tmp_path / "runs").mkdir()
    for run in (folder / "runs").glob("*.json"):
        (tmp_path / "runs" / run.name).write_text(run.read_text())
    (tmp_path / "README.md").write_text((folder / "README.md").read_text())
    script.build_table(tmp_path)

    def table(text: str) -> str:
        return text.split(script.TABLE_START, 1)[1].split(script.TABLE_END, 1)[0]

    assert table((tmp_path / "README.md").read_text()) == table((folder / "README.md").read_text())
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads((folder / "summary.json").read_text())


def test_real_lm_analysis_numbers_are_in_its_artifacts() -> None:
    """docs/results/real_lm_analysis/README.md: every decimal number it writes equals a value of the committed JSON
    beside it (or the GRPO-20 run's evaluations and the model's build record), rounded to the digits written; the
    check is the study's own (``studies/real_lm/check_readme_numbers.py``), run here so that the test command runs it.
    A membership check: it catches a number that drifted or was typed, not one quoted under the wrong label."""
    proc = subprocess.run([sys.executable, str(ROOT / "studies" / "real_lm" / "check_readme_numbers.py")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_entrocraft_nsr_rows_are_what_its_script_prints() -> None:
    """docs/results/entrocraft_nsr/README.md's table rows are what ``summarise.py`` there prints from the two
    committed metrics files (the grid cell and the fixed resume)."""
    folder = doc_numbers.RESULTS / "entrocraft_nsr"
    proc = subprocess.run([sys.executable, "summarise.py", "advantage_sign_cell/metrics.jsonl.gz", "metrics.jsonl.gz"],
                          cwd=folder, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.strip()]
    readme = (folder / "README.md").read_text()
    assert len(rows) == 2 and all(row in readme for row in rows), rows
