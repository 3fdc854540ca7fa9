"""The studies' one cell driver (studies/cell_driver.py) on a fake finished cell in tmp dirs: the registered orders,
the export (light files only, a byte-stable metrics.jsonl.gz), the status and dry-run lines, the wait for a cell
that a foreign ``stare compare`` runs, and the finish step with the analysis run and the commit injected (no git,
no training, no ``stare`` process)."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cd():
    return _load(STUDIES / "cell_driver.py", "cell_driver")


@pytest.fixture()
def study(cd, tmp_path: Path):
    analyze = tmp_path / "analyze.py"  # writes its arguments where the test can read them
    analyze.write_text("import sys, pathlib\npathlib.Path(sys.argv[-1], 'analysis.txt').write_text(' '.join(sys.argv[1:]))\n")
    return cd.Study(tag="#0 fake", grids={"a": tmp_path / "a.yaml", "bb": tmp_path / "bb.yaml"},
                    order=(cd.Block("a", (0, 1), ("grpo", "stare")), cd.Block("bb", (0,), ("grpo",))),
                    docs=tmp_path / "docs", analyze=analyze, analyze_args=("--runs", "{run_root}", "--out", "{docs}"),
                    run_root=tmp_path / "runs", cells_noun="new cells")


def _fake_cell(cd, root: Path, c, done: bool = True, steps: int = 3) -> Path:
    d = cd.run_dir(root, c)
    (d / "checkpoint-2").mkdir(parents=True)
    (d / "checkpoint-2" / "model.safetensors").write_bytes(b"heavy")
    for name in ("cell.yaml", "config.yaml", "run_config.json", "eval.json", "train_summary.json", "eval_initial.json"):
        (d / name).write_text(f"{name} of {c}\n")
    rows = [{"step": i + 1, "step_time": 2.0 + i} for i in range(steps)]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if done:
        (d / "compare_done.json").write_text(json.dumps({"wall_s": 1234.4, "resumed": True}))
    (root / c.part / "results.md").write_text("| table |\n")
    (root / c.part / "report").mkdir(exist_ok=True)
    (root / c.part / "report" / "index.md").write_text("report\n")
    return d


def test_the_registered_orders(cd) -> None:
    real_lm = _load(STUDIES / "real_lm" / "run_cells.py", "real_lm_run_cells").STUDY
    head, at07 = ("grpo", "stare_auto_t05", "entropy_bonus_trl_t05"), ("stare_auto_t07", "entropy_bonus_trl_t07")
    expected = ([("", m, s) for s in (0, 1) for m in head] + [("", m, s) for s in (0, 1) for m in at07]
                + [("", "entrocraft_t05", s) for s in (0, 1)] + [("", m, 2) for m in (*head, "entrocraft_t05", *at07)])
    assert real_lm.cells() == expected and real_lm.parallel == 1
    assert real_lm.docs.parts[-2:] == ("results", "real_lm_grid") and real_lm.pins == cd.KERNEL_PINS
    assert "STARE_RL_CACHE" in real_lm.needs_env
    confirm10 = _load(STUDIES / "confirm10" / "run_cells.py", "confirm10_run_cells").STUDY
    assert confirm10.parallel == 2 and confirm10.analyze_args == () and len(confirm10.cells()) == 39  # 21 + 15 + the amendment's 3
    assert {p.name for p in cd.block_pages(confirm10.doc_blocks).values()} == {"compare.md", "README.md", "evidence.md"}


def test_a_bad_order_is_refused(cd, tmp_path: Path) -> None:
    kw = {"tag": "#0", "grids": {"a": tmp_path}, "docs": tmp_path, "analyze": tmp_path, "run_root": tmp_path}
    with pytest.raises(ValueError, match="not in grids"):
        cd.Study(order=(cd.Block("b", (0,), ("grpo",)),), **kw)
    with pytest.raises(ValueError, match="twice"):
        cd.Study(order=(cd.Block("a", (0,), ("grpo",)), cd.Block("a", (0, 1), ("grpo",))), **kw)


def test_export_writes_the_light_files_and_a_byte_stable_gzip(cd, study, tmp_path: Path) -> None:
    root, c = tmp_path / "runs", cd.Cell("a", "stare", 1)
    src = _fake_cell(cd, root, c)
    cd.export_cell(study, root, c)
    out = study.docs / "a" / "runs" / "stare" / "seed1"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["cell.yaml", "config.yaml", "run_config.json", "eval.json", "train_summary.json", "compare_done.json",
         "eval_initial.json", "metrics.jsonl.gz"])  # no checkpoint, no model
    assert gzip.decompress((out / "metrics.jsonl.gz").read_bytes()) == (src / "metrics.jsonl").read_bytes()
    first = (out / "metrics.jsonl.gz").read_bytes()
    assert first[4:8] == b"\0\0\0\0"  # mtime 0 in the header
    cd.export_cell(study, root, c)
    assert (out / "metrics.jsonl.gz").read_bytes() == first  # an unchanged cell stays byte-identical
    assert (study.docs / "a" / "results.md").read_text() == "| table |\n"
    assert (study.docs / "a" / "report" / "index.md").is_file()


def test_status_and_dry_run_lines(cd, study, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "runs"
    monkeypatch.setattr(cd, "in_head", lambda path: True)  # the exported cell counts as committed (no git here)
    cells = study.cells()
    assert cells == [("a", "grpo", 0), ("a", "stare", 0), ("a", "grpo", 1), ("a", "stare", 1), ("bb", "grpo", 0)]
    _fake_cell(cd, root, cells[0])
    cd.export_cell(study, root, cells[0])  # committed
    _fake_cell(cd, root, cells[1])  # finished, not committed
    _fake_cell(cd, root, cells[2], done=False)  # running in a foreign pid
    cd.run_dir(root, cells[3]).mkdir(parents=True)  # started, no step logged yet
    foreign = [cd.Foreign(77, (root / "a").resolve(), ["stare", "compare", "--out", "x", "--methods", "grpo,stare"]),
               cd.Foreign(78, (root / "bb").resolve(), ["stare", "compare", "--methods", "grpo", "--seeds", "0"])]
    lines = cd.status(study, root, procs=foreign).splitlines()[1:]
    # left: grpo/seed1 and stare/seed1 (no max_steps to go by) at the mean wall of part a's committed cell
    assert lines.pop() == (f"left: about 0.7 h of cell time (about {0.7 / study.parallel:.1f} h at --parallel "
                           f"{study.parallel}), each cell not started at the mean wall of the committed cells that start "
                           "from its model; not counted: 1 cell(s) with no such cell committed yet, 0 block(s) not "
                           "decided yet")
    assert lines == ["a grpo/seed0: committed, 1234 s wall",
                     "a stare/seed0: finished, not committed",
                     "a grpo/seed1: unfinished, 3 steps logged, last checkpoint 2, mean step_time 3.00 s, "
                     "running in pid 77",
                     "a stare/seed1: started, no step logged, running in pid 77",
                     "bb grpo/seed0: starting (no run dir yet: warm start or reference evaluation), running in pid 78"]
    assert cd.status(study, root, procs=foreign[:1]).splitlines()[-2] == "bb grpo/seed0: not started"
    (cd.run_dir(root, cells[2]) / "config.yaml").write_text("lr: 1\nmax_steps: 63\n")  # 60 steps left at 3.00 s
    after = cd.status(study, root, procs=foreign).splitlines()
    assert after[3].endswith("mean step_time 3.00 s, about 3 min of 63 steps left, running in pid 77")
    assert after[-1].startswith("left: about 0.4 h of cell time")  # 180 s + 1234.4 s
    assert cd.dry_run(study, root).splitlines() == [
        "a   grpo/seed0: committed", "a   stare/seed0: finished, not committed", "a   grpo/seed1: resume",
        "a   stare/seed1: resume", "bb  grpo/seed0: fresh"]


def test_a_foreign_run_covers_by_out_methods_and_seeds(cd, tmp_path: Path) -> None:
    out = tmp_path.resolve()
    procs = [cd.Foreign(5, out, ["stare", "compare", "--out", "o", "--seeds", "0", "--methods", "grpo,stare"])]
    assert cd.runner(tmp_path, cd.Cell("", "stare", 0), procs) == 5
    assert cd.runner(tmp_path, cd.Cell("", "stare", 1), procs) is None  # another seed
    assert cd.runner(tmp_path, cd.Cell("", "bonus", 0), procs) is None  # another method
    assert cd.runner(tmp_path, cd.Cell("x", "stare", 0), procs) is None  # another --out
    whole = [cd.Foreign(6, out, ["stare", "compare", "--out", "o"])]  # no --methods / --seeds: the whole grid
    assert cd.runner(tmp_path, cd.Cell("", "bonus", 2), whole) == 6


def test_finish_exports_analyses_and_commits_the_docs_folder(cd, study, tmp_path: Path, monkeypatch) -> None:
    root, c = tmp_path / "runs", cd.Cell("a", "grpo", 1)
    _fake_cell(cd, root, c)
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)  # no `stare compare --report-only` here
    commits: list[tuple[tuple[Path, ...], str]] = []
    msg = cd.finish(study, root, c, commit=lambda paths, m: commits.append((paths, m)) or "abc1234")
    assert msg == ("#0 fake: cell grpo/seed1 (a grid) finished in 1234 s wall (resumed from a checkpoint); "
                   "1 of 5 new cells done; analyze.py re-run")
    assert commits == [((study.docs,), msg)]  # no doc_blocks: the docs folder only
    assert (study.docs / "analysis.txt").read_text() == f"--runs {root} --out {study.docs}"
    d = cd.run_dir(root, c)  # committed: its checkpoint is removed, the finished marker and the light files stay
    assert not list(d.glob("checkpoint-*")) and (d / "compare_done.json").is_file() and (d / "eval.json").is_file()


def test_a_failed_analysis_is_said_in_the_commit_not_called_a_re_run(cd, study, tmp_path: Path,
                                                                     monkeypatch) -> None:
    """The analysis crashed after a cell (a library rename, 2026-11-27) and the commit still said "re-run": now
    the message names the failure, its exit status and its last line, and the cell is committed all the same."""
    root, c = tmp_path / "runs", cd.Cell("a", "grpo", 1)
    _fake_cell(cd, root, c)
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    study.analyze.write_text("raise KeyError('coef_max')\n")
    commits: list[tuple[tuple[Path, ...], str]] = []
    msg = cd.finish(study, root, c, commit=lambda paths, m: commits.append((paths, m)) or "abc1234")
    assert msg.endswith("1 of 5 new cells done; analyze.py FAILED (exit 1: KeyError: 'coef_max'), its outputs are "
                        "the previous cell's")
    assert commits == [((study.docs,), msg)]


def test_a_foreign_run_is_adopted_the_next_cell_starts_beside_it_and_its_end_is_committed(cd, study, tmp_path: Path,
                                                                                         monkeypatch) -> None:
    root = tmp_path / "runs"
    first, second, third = study.cells()[:3]
    _fake_cell(cd, root, first, done=False)
    foreign = cd.Foreign(9, (root / first.part).resolve(),
                         ["stare", "compare", "--out", "x", "--methods", first.method, "--seeds", str(first.seed)])
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [foreign])
    monkeypatch.setattr(cd, "pid_alive", lambda pid: True)
    launched: list = []
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or type("P", (), {"pid": 100 + len(launched),
                                                                                           "poll": lambda self: None})())
    todo, running, waiting = study.cells(), [], []
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", waiting)
    assert [c for c, _, _ in running] == [first, second] and launched == [second]  # adopted + one started beside it
    assert isinstance(running[0][1], cd.Adopted) and running[0][1].pid == 9 and todo[0] == third
    cd._reap(study, root, todo, running, lambda f, m: "")
    assert len(running) == 2  # both still running: nothing committed, nothing requeued
    # the foreign process ends with the cell done: this driver commits it
    (cd.run_dir(root, first) / "compare_done.json").write_text(json.dumps({"wall_s": 10.0}))
    monkeypatch.setattr(cd, "pid_alive", lambda pid: False)
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    commits: list[str] = []
    cd._reap(study, root, todo, running, lambda f, m: commits.append(m) or "")
    assert len(commits) == 1 and f"{first.method}/seed{first.seed} (a grid)" in commits[0]
    assert [c for c, _, _ in running] == [second] and todo[0] == third
    (root / "STOP").touch()
    cd._start_next(study, root, todo, running, 3, lambda f, m: "", waiting)
    assert todo[0] == third and launched == [second]  # STOP: nothing new starts


def test_under_stop_a_restarted_driver_still_adopts_and_commits_the_running_cell(cd, study, tmp_path: Path,
                                                                                 monkeypatch) -> None:
    root = tmp_path / "runs"
    first = study.cells()[0]
    _fake_cell(cd, root, first, done=False)
    (root / "STOP").touch()
    foreign = cd.Foreign(9, (root / first.part).resolve(),
                         ["stare", "compare", "--out", "x", "--methods", first.method, "--seeds", str(first.seed)])
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [foreign])
    monkeypatch.setattr(cd, "launch", lambda *a: pytest.fail("started a cell under STOP"))
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    ticks = iter(range(100))

    def sleep(_s):  # the foreign process finishes the cell after two polls
        if next(ticks) == 1:
            (cd.run_dir(root, first) / "compare_done.json").write_text(json.dumps({"wall_s": 10.0}))
            monkeypatch.setattr(cd, "pid_alive", lambda pid: False)

    monkeypatch.setattr(cd, "pid_alive", lambda pid: True)
    monkeypatch.setattr(cd.time, "sleep", sleep)
    commits: list[str] = []
    assert cd.run(study, root, 1, commit=lambda f, m: commits.append(m) or "") == 0
    assert len(commits) == 1 and f"{first.method}/seed{first.seed} (a grid)" in commits[0]


def test_cells_that_start_from_a_model_being_built_wait_and_the_next_other_model_starts(cd, tmp_path: Path,
                                                                                       monkeypatch, capsys) -> None:
    """start_group: while a running cell of a group has logged no step (it may be training the group's model), the
    group's next cell waits and the first cell of another group up to the next block starts in its place; once the
    first cell logs a step, the waiting one starts."""
    import dataclasses

    root = tmp_path / "runs"
    first = cd.Block("a", (0,), ("grpo_h1", "c2_h1", "grpo_h2", "c2_h2"))  # a block that reads them: never ahead
    order = (first, cd.Block("a", (0,), ("late",),
                             lambda r, x: cd.Pick(None, "") if x is None or x & set(first.cells()) else cd.Pick(("late",), "")))
    study = cd.Study(tag="#0 fake", grids={"a": tmp_path / "a.yaml"}, order=order, docs=tmp_path / "docs",
                     analyze=tmp_path / "analyze.py", run_root=root,
                     start_group=lambda c: c.method.split("_")[-1])
    launched: list = []
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [])
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or type("P", (), {"pid": 100 + len(launched),
                                                                                           "poll": lambda self: None})())
    g1, c1, g2, c2 = study.order[0].cells()
    todo, running = [*study.order[0].cells(), study.order[1]], []
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", [])
    assert launched == [g1, g2] and todo[:2] == [c1, c2]  # c2_h1 waits for grpo_h1's warm start; grpo_h2 starts
    assert "c2_h1/seed0 (a) waits" in capsys.readouterr().out
    running.pop()  # grpo_h2 ends (h2's model is built); grpo_h1 still has no step
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", [])
    assert launched == [g1, g2, c2] and todo[0] == c1  # the first cell of another model: c2_h2
    running.pop()
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", [])
    assert launched == [g1, g2, c2] and todo[0] == c1  # nothing else before the block: c1 waits, the slot stays free
    _fake_cell(cd, root, g1, done=False, steps=1)  # grpo_h1 logged its first step: its model is built
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", [])
    assert launched == [g1, g2, c2, c1]
    # a new machine (2026-11-28): a finished cell of h1 restored into the run root, but the cache lacks h1's model,
    # which Study.start_cost knows; a running h1 cell with no step yet is building it, so the next h1 cell waits
    fresh, cache = tmp_path / "fresh", {"h1": False, "h2": True}
    _fake_cell(cd, fresh, g1)  # restored: finished, as if trained on this machine
    costly = dataclasses.replace(study, start_cost=lambda c, r: 0.0 if cache[c.method.split("_")[-1]] else 600.0)
    launched.clear()
    todo, running = [c1, g2, c2], []
    proc = type("P", (), {"pid": 999, "poll": lambda self: None})()
    running.append((cd.Cell("a", "late_h1", 0), proc, 0.0))  # an h1 cell with no run dir yet: building h1's model
    assert cd._starting(study, fresh, running) == set()  # the restored cell alone says "built": the old test
    assert cd._starting(costly, fresh, running) == {"h1"}
    cd._start_next(costly, fresh, todo, running, 2, lambda f, m: "", [])
    assert launched == [g2] and todo[0] == c1  # c2_h1 waits; grpo_h2 takes the free slot
    cache["h1"] = True  # the model is in the cache now (the running cell will log its first step)
    assert cd._starting(costly, fresh, running) == {"h2"}  # h1 no more; h2: grpo_h2 may be building it
    # without start_group the order is kept as it is
    plain = dataclasses.replace(study, start_group=None)
    launched.clear()
    todo, running = study.order[0].cells(), []
    cd._start_next(plain, tmp_path / "other", todo, running, 2, lambda f, m: "", [])
    assert launched == [g1, c1]


def test_an_adopted_run_that_ends_unfinished_goes_back_to_the_head_of_the_queue(cd, study, tmp_path: Path,
                                                                              monkeypatch) -> None:
    root = tmp_path / "runs"
    first = study.cells()[0]
    _fake_cell(cd, root, first, done=False)
    monkeypatch.setattr(cd, "pid_alive", lambda pid: False)  # killed: no done marker
    todo, running = study.cells()[1:], [(first, cd.Adopted(9), 0.0)]
    cd._reap(study, root, todo, running, lambda f, m: pytest.fail("committed an unfinished cell"))
    assert not running and todo == study.cells()  # started again next, from its checkpoint


def test_sigterm_to_the_driver_passes_to_every_running_cell_and_requeues_them(cd, study, tmp_path: Path,
                                                                              monkeypatch, capsys) -> None:
    """`kill DRIVER_PID`: SIGTERM goes to each running cell's stare compare (its own and an adopted one); the driver
    waits for them, commits a cell that finished before the signal reached it, puts the others back at the head of
    the queue with their last checkpoint said, starts nothing and hands SIGTERM's handler back."""
    import os
    import signal

    root = tmp_path / "runs"
    first, second = study.cells()[:2]
    _fake_cell(cd, root, first, done=False)
    _fake_cell(cd, root, second, done=False)
    foreign = cd.Foreign(9, (root / first.part).resolve(),
                         ["stare", "compare", "--out", "x", "--methods", first.method, "--seeds", str(first.seed)])
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [foreign])
    alive = {9: True, 101: True}
    monkeypatch.setattr(cd, "pid_alive", lambda pid: alive[pid])

    class Own:  # the driver's own stare compare of `second`
        pid, returncode = 101, None

        def poll(self):  # noqa: ANN202
            if not alive[101]:
                self.returncode = 1
            return self.returncode

    launched: list = []
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or Own())
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    sent: list[tuple[int, int]] = []
    real_kill = os.kill

    def kill(pid: int, signum: int) -> None:
        if pid == os.getpid():
            return real_kill(pid, signum)
        sent.append((pid, signum))
        alive[pid] = False
        if pid == 9:  # the adopted one had just finished its cell
            (cd.run_dir(root, first) / "compare_done.json").write_text(json.dumps({"wall_s": 10.0}))

    monkeypatch.setattr(cd.os, "kill", kill)
    ticks = iter(range(1000))
    monkeypatch.setattr(cd.time, "sleep", lambda _s: next(ticks) == 0 and real_kill(os.getpid(), signal.SIGTERM))
    before = signal.getsignal(signal.SIGTERM)
    commits: list[str] = []
    assert cd.run(study, root, 2, commit=lambda f, m: commits.append(m) or "") == 0
    assert sorted(sent) == [(9, signal.SIGTERM), (101, signal.SIGTERM)] and launched == [second]
    assert len(commits) == 1 and f"{first.method}/seed{first.seed} (a grid)" in commits[0]
    out = capsys.readouterr().out
    assert "SIGTERM: stopping 2 running cell(s); each checkpoints its current step" in out
    assert f"stopped {second.method}/seed{second.seed} (a): last checkpoint None" in out  # fake: no trainer state
    assert signal.getsignal(signal.SIGTERM) is before


def test_status_ends_with_the_outlook_while_a_block_is_not_decided(cd, study, tmp_path: Path) -> None:
    """``Study.outlook`` is printed last by --status while a conditional block is undecided, and not after."""
    decided = []
    when = lambda root, running: cd.Pick(("grpo",) if decided else None, "rule X")  # noqa: E731
    s = dataclasses.replace(study, order=(*study.order, cd.Block("bb", (1,), ("grpo",), when)),
                            outlook=lambda root: f"outlook on {root.name}")
    root = tmp_path / "runs"
    lines = cd.status(s, root, procs=[]).splitlines()
    assert lines[-1] == "outlook on runs" and lines[-2].startswith("left: about")
    assert "bb 1 cells (grpo; seed 1): decided when the driver reaches it (rule X)" in lines
    decided.append(True)  # decided: the block's cells are listed, no outlook
    lines = cd.status(s, root, procs=[]).splitlines()
    assert lines[-1].startswith("left: about") and "bb grpo/seed1: not started (rule X)" in lines
    assert cd.status(study, root, procs=[]).splitlines()[-1].startswith("left: about")  # no outlook: nothing more


def test_a_cell_the_study_skips_is_not_started_and_status_says_why(cd, study, tmp_path: Path, monkeypatch,
                                                                    capsys) -> None:
    """Study.skip is asked as a cell would start (not for a cell already started): a reason leaves it out, the
    next cell starts in its slot, and --status shows the reason instead of "not started"."""
    import dataclasses

    root = tmp_path / "runs"
    skipping = dataclasses.replace(study, skip=lambda c, r: "its model did not learn" if c.method == "stare" else None)
    launched: list = []
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [])
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or type("P", (), {"pid": 1,
                                                                                           "poll": lambda self: None})())
    todo, running = skipping.cells(), []
    cd._start_next(skipping, root, todo, running, 2, lambda f, m: "", [])
    assert [c.method for c in launched] == ["grpo", "grpo"] and [c.seed for c in launched] == [0, 1]
    assert "skip stare/seed0 (a): its model did not learn" in capsys.readouterr().out
    lines = cd.status(skipping, root, procs=[]).splitlines()
    assert "a stare/seed0: not run: its model did not learn" in lines
    started = [c for c in skipping.cells() if c.method == "stare"][1]  # started before: finished, not skipped
    cd.run_dir(root, started).mkdir(parents=True)
    todo, running = [started], []
    cd._start_next(skipping, root, todo, running, 2, lambda f, m: "", [])
    assert launched[-1] == started


def test_the_doc_blocks_are_re_rendered_on_pages_nobody_is_editing(cd, study, tmp_path: Path, monkeypatch) -> None:
    """A page whose block quotes the study's results is re-rendered and committed with the cell, so no committed page
    quotes a stale count; a page with uncommitted edits (someone writing it) is left alone and the commit says so."""
    import dataclasses
    import subprocess

    pages = {"b1": cd.ROOT / "docs" / "compare.md", "b2": cd.ROOT / "README.md"}
    monkeypatch.setattr(cd, "block_pages", lambda names: {n: pages[n] for n in names})
    monkeypatch.setattr(cd, "_page_has_edits", lambda page, blocks=(): page.name == "README.md")
    calls: list[list[str]] = []
    monkeypatch.setattr(cd.subprocess, "run", lambda args, **kw: calls.append(list(args))
                        or subprocess.CompletedProcess(args, 0, "", ""))
    with_blocks = dataclasses.replace(study, doc_blocks=("b1", "b2"))
    rendered, note = cd.refresh_doc_blocks(with_blocks)
    assert rendered == (pages["b1"],)
    assert calls == [[sys.executable, str(cd.DOC_NUMBERS), "--write", "--block=b1"]]
    assert note == "; doc blocks b1 re-rendered; not re-rendered (uncommitted edits): README.md"
    assert cd.refresh_doc_blocks(study) == ((), "")  # a study without blocks renders nothing


def test_a_block_that_fails_to_render_is_said_and_its_page_not_committed(cd, study, monkeypatch) -> None:
    import dataclasses
    import subprocess

    monkeypatch.setattr(cd, "block_pages", lambda names: {"b1": cd.ROOT / "docs" / "compare.md"})
    monkeypatch.setattr(cd, "_page_has_edits", lambda page, blocks=(): False)
    monkeypatch.setattr(cd.subprocess, "run", lambda args, **kw: subprocess.CompletedProcess(args, 1, "", "boom"))
    assert cd.refresh_doc_blocks(dataclasses.replace(study, doc_blocks=("b1",))) == (
        (), "; doc blocks b1 FAILED to render (exit 1)")


def test_an_unknown_doc_block_is_refused_before_any_cell(cd, study, monkeypatch, capsys) -> None:
    import dataclasses

    with pytest.raises(ValueError, match=r"Study.doc_blocks \['nope'\]: not blocks of doc_numbers.py"):
        cd.block_pages(("nope",))
    assert set(cd.block_pages(("confirm10", "real-lm"))) == {"confirm10", "real-lm"}
    monkeypatch.setattr(cd, "run", lambda *a: pytest.fail("started cells"))
    assert cd.main(dataclasses.replace(study, doc_blocks=("nope",)), __file__, "doc", []) == 2
    assert "not blocks of doc_numbers.py" in capsys.readouterr().err


def test_an_exported_cell_is_committed_only_once_its_marker_is_in_head(cd, study, tmp_path: Path, monkeypatch) -> None:
    """A driver killed between a cell's export and its commit (2026-11-27) left the files in the docs folder: the next
    driver must still see the cell as finished, not committed, and commit it, not skip it."""
    root, c = tmp_path / "runs", study.cells()[0]
    _fake_cell(cd, root, c)
    cd.export_cell(study, root, c)
    monkeypatch.setattr(cd, "in_head", lambda path: False)
    assert cd.state(study, root, c) == "finished, not committed"
    monkeypatch.setattr(cd, "in_head", lambda path: True)
    assert cd.state(study, root, c) == "committed"


def test_in_head_reads_the_checkout(cd, tmp_path: Path) -> None:
    assert cd.in_head(cd.ROOT / "studies" / "cell_driver.py")
    assert not cd.in_head(cd.ROOT / "studies" / "no_such_file.py")
    assert not cd.in_head(tmp_path / "x")  # outside the checkout


def test_a_resumed_cells_time_is_the_sum_of_its_steps(cd, tmp_path: Path) -> None:
    """compare_done.json's wall counts only a resumed cell's last invocation; its steps' step_time counts them all."""
    d = tmp_path / "cell"
    d.mkdir()
    (d / "compare_done.json").write_text(json.dumps({"wall_s": 100.0, "resumed": True}))
    assert cd._cell_seconds(d) == 100.0  # no metrics: the wall
    with gzip.open(d / "metrics.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps({"step": i, "step_time": 50.0}) + "\n" for i in range(1, 5)))
    assert cd._cell_seconds(d) == 200.0
    (d / "compare_done.json").write_text(json.dumps({"wall_s": 250.0, "resumed": False}))
    assert cd._cell_seconds(d) == 250.0  # evaluation and start-up on top of the steps


def test_a_new_run_root_gets_the_committed_cells_so_the_grid_report_covers_them(cd, study, tmp_path: Path,
                                                                                monkeypatch) -> None:
    """A new machine starts with an empty run root (2026-11-28): before any cell, the driver copies each committed
    cell it lacks into it (light files, the metrics gzipped as committed) and refreshes that grid's report, so the
    report a new cell commits covers every finished cell, not only the new one. A run dir already there is kept."""
    old_root, root = tmp_path / "old", tmp_path / "runs"
    a0, a1, bb0 = study.cells()[0], study.cells()[1], study.cells()[-1]
    for c in (a0, bb0):
        _fake_cell(cd, old_root, c)
        cd.export_cell(study, old_root, c)
    monkeypatch.setattr(cd, "in_head", lambda path: True)  # exported and committed
    kept = _fake_cell(cd, root, bb0, done=False)  # a run dir of a committed cell already in the new root: kept
    refreshed = []
    monkeypatch.setattr(cd, "refresh_report", lambda s, r, part: refreshed.append(part))
    assert cd.restore_committed(study, root) == [a0]
    d = cd.run_dir(root, a0)
    assert (d / "compare_done.json").is_file() and gzip.decompress((d / "metrics.jsonl.gz").read_bytes()).count(b"\n") == 3
    assert not any(p.name.startswith("checkpoint") for p in d.iterdir()) and not d.with_name(d.name + ".restoring").exists()
    assert not (kept / "compare_done.json").exists() and not cd.run_dir(root, a1).exists()  # not committed: not copied
    assert cd.restore_committed(study, root) == []  # once
    monkeypatch.setattr(cd, "launch", lambda s, r, c: (_ for _ in ()).throw(AssertionError("no cell may start")))
    (root / "STOP").touch()
    shutil.rmtree(d)
    assert cd.run(study, root, 1) == 0 and refreshed == ["a"]  # the driver restores, then refreshes that grid's report
    assert (cd.run_dir(root, a0) / "compare_done.json").is_file()


def test_the_restored_grids_reports_are_refreshed_side_by_side(cd, study, tmp_path: Path, monkeypatch) -> None:
    """On a new machine each restored grid's report builds its task data and warm starts first (minutes each): the
    driver refreshes the grids ``--parallel`` at a time, not one after another. Each refresh here waits at a barrier
    that only both together pass; one at a time, the first would time out."""
    old_root, root = tmp_path / "old", tmp_path / "runs"
    a0, bb0 = study.cells()[0], study.cells()[-1]
    assert a0.part != bb0.part
    for c in (a0, bb0):
        _fake_cell(cd, old_root, c)
        cd.export_cell(study, old_root, c)
    monkeypatch.setattr(cd, "in_head", lambda path: True)
    barriers, refreshed = [threading.Barrier(2, timeout=10)], []

    def refresh(s, r, part: str) -> None:
        barriers[-1].wait()
        refreshed.append(part)

    monkeypatch.setattr(cd, "refresh_report", refresh)
    monkeypatch.setattr(cd, "launch", lambda s, r, c: (_ for _ in ()).throw(AssertionError("no cell may start")))
    root.mkdir(parents=True, exist_ok=True)
    (root / "STOP").touch()
    assert cd.run(study, root, 2) == 0 and sorted(refreshed) == sorted({a0.part, bb0.part})
    barriers.append(threading.Barrier(2, timeout=1))
    with pytest.raises(threading.BrokenBarrierError):  # one at a time, the first refresh waits for the second in vain
        cd.refresh_reports(study, root, [a0.part, bb0.part], 1)


def test_a_python_without_stare_rl_is_refused_before_any_listing(cd, study, monkeypatch, capsys) -> None:
    """Run with a Python that lacks stare_rl, the rules could not read a cell and every cell would fail to start:
    the driver says so, naming the interpreter, before any listing (2026-11-28: a dry run listed every conditional
    block as "skipped (its rule failed: ModuleNotFoundError)")."""
    assert cd.environment_problem() is None  # this test's own interpreter drives studies
    real = cd.importlib.util.find_spec
    monkeypatch.setattr(cd.importlib.util, "find_spec", lambda name: None if name == "stare_rl" else real(name))
    assert cd.main(study, str(cd.ROOT / "studies" / "cell_driver.py"), "doc", ["--dry-run"]) == 2
    assert f"{cd.sys.executable} cannot import stare_rl" in capsys.readouterr().err
    monkeypatch.setattr(cd.importlib.util, "find_spec", real)
    monkeypatch.setattr(cd, "BIN", cd.Path("/nonexistent"))
    assert "no `stare` command beside" in cd.environment_problem()


def test_a_freed_slot_takes_the_next_cell_before_the_ended_cells_commit(cd, study, tmp_path: Path,
                                                                       monkeypatch) -> None:
    """When a cell ends, its commit (the grid's report, the export, the analysis, the docs: a minute or two) comes
    after the next cell has started in its slot, not before (2026-11-28: a slot sat idle for about 1.5 min per cell,
    longer than some cells). With --parallel 1 the events are strictly ordered: start 1, start 2, commit 1, ..."""
    root = tmp_path / "runs"
    events: list[str] = []
    procs: dict = {}

    class Own:
        def __init__(self, c) -> None:  # noqa: ANN001
            self.c, self.pid, self.returncode, self.ticks = c, 100 + len(procs), None, 0

        def poll(self):  # noqa: ANN202
            self.ticks += 1
            if self.ticks >= 2:  # ends on the loop's second look, its cell done
                _fake_cell(cd, root, self.c)
                self.returncode = 0
            return self.returncode

    def launch(s, r, c):  # noqa: ANN001, ANN202
        events.append(f"start {c.method}/{c.seed}/{c.part}")
        procs[c] = Own(c)
        return procs[c]

    monkeypatch.setattr(cd, "launch", launch)
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [])
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    monkeypatch.setattr(cd.time, "sleep", lambda s: None)
    cells = study.cells()  # five
    assert cd.run(study, root, 1, commit=lambda f, m: events.append("commit " + m) or "") == 0
    assert [e.split(" ")[0] for e in events] == ["start", "start", *["commit", "start"] * 3, "commit", "commit"]
    starts = [e for e in events if e.startswith("start")]
    commits = [e for e in events if e.startswith("commit")]
    assert starts == [f"start {c.method}/{c.seed}/{c.part}" for c in cells]  # the registered order, unchanged
    assert all(f"{c.method}/seed{c.seed} ({c.part} grid)" in m for c, m in zip(cells, commits, strict=True))  # each once


def test_a_foreign_run_in_a_block_not_decided_yet_takes_a_slot(cd, study, tmp_path: Path, monkeypatch) -> None:
    """A restarted driver: a previous driver's ``stare compare`` runs a cell of a block this one has not reached
    (not adoptable yet). It still takes a --parallel slot, so one cell starts beside it, not two; once it ends, the
    slot is free. A run under another root does not count."""
    root = tmp_path / "runs"
    first, second, third = study.cells()[:3]
    later = cd.Foreign(9, (root / "bb").resolve(), ["stare", "compare", "--out", "x", "--methods", "grpo", "--seeds", "0"])
    elsewhere = cd.Foreign(10, (tmp_path / "other" / "a").resolve(), ["stare", "compare", "--out", "y"])
    alive = {9: True}
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [f for f in (later, elsewhere) if alive.get(f.pid, True)])
    launched: list = []
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or type("P", (), {"pid": 100 + len(launched),
                                                                                           "poll": lambda self: None})())
    todo, running = [first, second, third], []
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", [])
    assert launched == [first] and todo == [second, third]  # the foreign run of bb holds the other slot
    alive[9] = False
    cd._start_next(study, root, todo, running, 2, lambda f, m: "", [])
    assert launched == [first, second]


def test_a_cell_that_ends_as_its_block_is_decided_is_committed_once(cd, study, tmp_path: Path, monkeypatch) -> None:
    """A restarted driver adopted a previous driver's run of a cell in a block not reached yet. The run ends; the
    freed slot's refill reaches the block, which (the cell has left ``running`` and is not committed yet) lists it
    again. It is committed once, not by the refill and again after it (2026-11-29: two commits of one cell), and it
    is not left in the queue to be committed a third time."""
    root = tmp_path / "runs"
    block = cd.Block("a", (0, 1), ("grpo", "stare"), lambda r, running: cd.Pick(("grpo", "stare"), "both"))
    inside = cd.Cell("a", "grpo", 0)  # the block's first cell: the refill would reach it first
    foreign = cd.Foreign(9, (root / "a").resolve(), ["stare", "compare", "--out", "x", "--methods", "grpo",
                                                      "--seeds", "0"])
    alive = {9: True}
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [f for f in [foreign] if alive[f.pid] and f.pid not in exclude])
    monkeypatch.setattr(cd, "pid_alive", lambda pid: alive.get(pid, False))
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    committed: set = set()
    monkeypatch.setattr(cd, "in_head", lambda path: any(path == s.docs_dir(c) / cd.DONE for c in committed))
    launched: list = []
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or type("P", (), {"pid": 100 + len(launched),
                                                                                           "poll": lambda self: None})())
    s = dataclasses.replace(study, order=(block,))
    commits: list[str] = []

    def commit(files, msg: str) -> str:  # noqa: ANN001
        commits.append(msg)
        committed.update(c for c in block.cells() if f"{c.method}/seed{c.seed} " in msg)
        return "abc"

    todo, running = [block], []
    assert cd._adopt_running(root, todo, running) == 1 and todo == [block]
    _fake_cell(cd, root, inside)  # the adopted run ends, its cell done
    alive[9] = False
    cd._reap(s, root, todo, running, commit, lambda: cd._start_next(s, root, todo, running, 1, commit, []))
    assert [m.split(": cell ")[1].split(" ")[0] for m in commits] == ["grpo/seed0"]
    assert inside not in todo and inside not in launched and launched == [cd.Cell("a", "stare", 0)]
    cd._start_next(s, root, todo, running, 2, commit, [])
    assert len(commits) == 1


def test_stop_at_stops_the_running_cells_as_sigterm_does_and_starts_none_after(cd, study, tmp_path: Path,
                                                                              monkeypatch, capsys) -> None:
    """--stop-at HH:MM (a session's hard end): before it, cells start as usual; once it has come, each running
    cell's stare compare gets SIGTERM (it checkpoints its current step), the driver waits, puts the cell back with its
    last checkpoint said, starts nothing more and exits; its handler for SIGTERM is handed back."""
    import signal

    root = tmp_path / "runs"
    alive: dict[int, bool] = {}

    class Own:
        def __init__(self, pid: int) -> None:
            self.pid, self.returncode = pid, None
            alive[pid] = True

        def poll(self):  # noqa: ANN202
            if not alive[self.pid]:
                self.returncode = 1
            return self.returncode

    launched: list = []

    def launch(s, r, c):  # noqa: ANN001, ANN202
        launched.append(c)
        _fake_cell(cd, r, c, done=False)
        return Own(100 + len(launched))

    monkeypatch.setattr(cd, "launch", launch)
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [])
    monkeypatch.setattr(cd, "refresh_report", lambda *a: None)
    sent: list[tuple[int, int]] = []

    def kill(pid: int, signum: int) -> None:
        sent.append((pid, signum))
        alive[pid] = False

    monkeypatch.setattr(cd.os, "kill", kill)
    clock = {"now": 1_000_000.0}
    monkeypatch.setattr(cd.time, "time", lambda: clock["now"])
    monkeypatch.setattr(cd.time, "sleep", lambda s: clock.__setitem__("now", clock["now"] + s))
    before = signal.getsignal(signal.SIGTERM)
    commits: list[str] = []
    assert cd.run(study, root, 2, commit=lambda f, m: commits.append(m) or "", stop_at=clock["now"] + 25) == 0
    first, second = study.cells()[:2]
    assert launched == [first, second]  # two slots, filled at once; nothing starts after 25 s
    assert sorted(sent) == [(101, signal.SIGTERM), (102, signal.SIGTERM)] and not commits
    out = capsys.readouterr().out
    assert "--stop-at " in out and ": stopping 2 running cell(s); each checkpoints its current step" in out
    assert f"stopped {first.method}/seed{first.seed} (a): last checkpoint None" in out
    assert signal.getsignal(signal.SIGTERM) is before


def test_until_starts_only_the_cells_that_fit_before_it(cd, study, tmp_path: Path, monkeypatch, capsys) -> None:
    """--until HH:MM (a session's or a batch job's end): a cell starts only if 1.1x its estimate (the mean time of
    the committed cells of its model; else its steps left) ends before it; a cell with nothing to go by does not
    start; a later cell that fits starts instead; with nothing left that fits, the driver stops."""
    old_root, root = tmp_path / "old", tmp_path / "runs"
    a0, a1, _, _, bb0 = study.cells()  # a: grpo and stare, seed 0 then seed 1; bb: grpo
    _fake_cell(cd, old_root, a0)  # committed, 1234.4 s wall (more than its steps' 9 s)
    cd.export_cell(study, old_root, a0)
    monkeypatch.setattr(cd, "in_head", lambda path: (study.docs_dir(a0) / cd.DONE) == path)
    walls = cd._committed_walls(study)
    assert walls == {"a": [pytest.approx(1234.4)]}
    assert cd.estimate(study, root, a1, walls) == pytest.approx(1234.4) and cd.estimate(study, root, bb0, walls) is None
    now = cd.time.time()
    tight, roomy = cd.Deadline(now + 1200), cd.Deadline(now + 1400)  # 1.1 x 1234 s = 1358 s
    todo = [a1, bb0]
    assert cd._next_startable(study, root, todo, [], tight) is None
    assert cd._next_startable(study, root, todo, [], roomy) is a1
    out = capsys.readouterr().out
    assert "does not start: about 21 min, 20 min left before --until" in out and "no committed cell of its model" in out
    assert out.count("stare/seed0 (a) does not start") == 1  # said once per cell
    cd._next_startable(study, root, todo, [], tight)
    assert "stare/seed0 (a) does not start" not in capsys.readouterr().out
    # an unfinished run dir: its steps left (3 of 63 logged at 2-4 s: 60 x 3 s = 180 s), not the committed mean
    _fake_cell(cd, root, a1, done=False)
    (cd.run_dir(root, a1) / "config.yaml").write_text("max_steps: 63\n")
    assert cd.estimate(study, root, a1, walls) == pytest.approx(180.0)
    assert cd._next_startable(study, root, todo, [], cd.Deadline(now + 300)) is a1
    # the driver: nothing fits, nothing runs: it says so and stops without starting a cell
    monkeypatch.setattr(cd, "launch", lambda s, r, c: (_ for _ in ()).throw(AssertionError("no cell may start")))
    monkeypatch.setattr(cd, "refresh_report", lambda s, r, part: None)
    assert cd.run(study, tmp_path / "empty", 2, until=now + 60) == 0
    assert "none of the 4 cells left fits before it" in capsys.readouterr().out


def test_a_cell_waits_while_a_cell_that_decides_whether_it_runs_is_running(cd, study, tmp_path: Path, monkeypatch,
                                                                           capsys) -> None:
    """``Study.waits_for`` (the map's rule T: a fallback cell and its twin): while the twin runs, the cell does not
    start and the next cell takes the slot; once the twin has ended, the cell is judged (and ``skip`` may spare it)."""
    root = tmp_path / "runs"
    a0, b0, a1, b1, bb0 = study.cells()  # a: grpo and stare per seed; bb: grpo
    waiting = dataclasses.replace(study, waits_for=lambda c: (cd.Cell(c.part, "grpo", c.seed),) if c.method == "stare" else ())
    proc = type("P", (), {"pid": 999, "poll": lambda self: None})()
    running = [(a0, proc, 0.0)]
    assert cd._next_startable(waiting, root, [b0, a1, b1], running) is a1  # stare/seed0 waits for grpo/seed0
    assert "stare/seed0 (a) waits: a running cell decides whether it runs" in capsys.readouterr().out
    assert cd._next_startable(study, root, [b0, a1, b1], running) is b0  # without waits_for: the order
    assert cd._next_startable(waiting, root, [b0, a1, b1], []) is b0  # grpo/seed0 has ended: b0 is judged now
    assert cd._next_startable(waiting, root, [b0, bb0], running) is bb0
    # a cell the study will skip is handed back at once (its reason is said where it is dropped): it needs no slot
    # time, so neither a running cell nor a deadline holds it back (2026-11-28: "waits: it does not fit before --until")
    skipping = dataclasses.replace(waiting, skip=lambda c, r: "redundant" if c.method == "stare" else None)
    assert cd._next_startable(skipping, root, [b0, a1], running, cd.Deadline(cd.time.time() + 1)) is b0
    cd._start_next(skipping, root, [b0], running, 2, lambda f, m: "", [], cd.Deadline(cd.time.time() + 1))
    assert "skip stare/seed0 (a): redundant" in capsys.readouterr().out
    assert cd._next_startable(waiting, root, [b0, cd.Block("bb", (0,), ("grpo",)), bb0], running) is None  # a block ends it



def test_a_block_whose_rule_reads_none_of_the_cells_before_it_is_decided_ahead_of_its_turn(cd, study, tmp_path: Path,
                                                                                          capsys) -> None:
    """When no cell queued before a conditional block can start now (here: it waits for a running cell; with
    --until, none fits), the block is decided ahead of its turn if its rule reads none of those cells nor the
    running ones: they are passed to it as the cells that may still finish. Its cells then take the idle slot in
    place. A rule that reads one of them, or raises, leaves the block for its turn."""
    root = tmp_path / "runs"
    a0, b0, a1, _, bb0 = study.cells()  # a: grpo and stare per seed; bb: grpo
    waiting = dataclasses.replace(study, waits_for=lambda c: (cd.Cell(c.part, "grpo", c.seed),) if c.method == "stare" else ())
    proc = type("P", (), {"pid": 999, "poll": lambda self: None})()
    running = [(a0, proc, 0.0)]
    asked: list = []

    def reads(cell):  # a rule that reads one cell: it waits while that cell may still finish
        def when(r, may_finish):  # noqa: ANN001, ANN202
            asked.append(may_finish)
            return cd.Pick(None, "waits") if cell in may_finish else cd.Pick(("grpo",), f"read {cell.method}")
        return when

    for rule in (reads(a0), reads(b0)):  # the running cell; the queued one
        block = cd.Block("bb", (0,), ("grpo",), rule)
        todo = [b0, block]
        assert cd._next_startable(waiting, root, todo, running) is None and todo == [b0, block]
    assert asked[-1] == frozenset({a0, b0})  # the running cells and those queued before the block
    todo = [b0, cd.Block("bb", (0,), ("grpo",), reads(a1))]  # a1: neither running nor queued before it
    assert cd._next_startable(waiting, root, todo, running) == bb0 and todo == [b0, bb0]
    assert "block (bb): 1 cells added ahead of its turn, as none of the 1 cells before it can start now (read grpo)" \
        in capsys.readouterr().out
    broken = cd.Block("bb", (0,), ("grpo",), lambda r, m: 1 / 0)
    todo = [b0, broken]
    assert cd._next_startable(waiting, root, todo, running) is None and todo == [b0, broken]
    todo = [b0, cd.Block("bb", (0,), ("grpo",), reads(a1))]  # b0 can start (nothing runs): the block keeps its turn
    assert cd._next_startable(waiting, root, todo, []) is b0 and isinstance(todo[1], cd.Block)

def test_a_start_cost_counts_once_per_start_group(cd, study, tmp_path: Path, monkeypatch) -> None:
    """``Study.start_cost`` (e.g. a warm start the machine's cache lacks): added to a not-started cell's estimate
    (so --until holds back a cell that would also build its model), counted once per start group by --status's
    total, and never for a cell whose run dir exists (it has its steps left)."""
    old_root, root = tmp_path / "old", tmp_path / "runs"
    a0, a1, b0, b1, bb0 = study.cells()  # a: grpo and stare, seed 0 then seed 1; bb: grpo
    _fake_cell(cd, old_root, a0)  # committed: 1234.4 s
    cd.export_cell(study, old_root, a0)
    monkeypatch.setattr(cd, "in_head", lambda path: (study.docs_dir(a0) / cd.DONE) == path)
    asked = []
    costly = dataclasses.replace(study, start_cost=lambda c, r: asked.append(c) or 600.0)
    walls = cd._committed_walls(costly)
    assert cd.estimate(costly, root, a1, walls) == pytest.approx(1834.4)  # 1234.4 + the 600 s start
    charged = set()
    assert [cd.estimate(costly, root, c, walls, charged) for c in (a1, b0, b1)] == [
        pytest.approx(1834.4), pytest.approx(1234.4), pytest.approx(1234.4)]  # one group "a": charged once
    assert cd.estimate(costly, root, bb0, walls) is None  # nothing to go by: no start cost makes an estimate
    now = cd.time.time()
    assert cd._next_startable(costly, root, [a1], [], cd.Deadline(now + 1400)) is None  # 1.1 x 1834 s > 1400 s
    assert cd._next_startable(study, root, [a1], [], cd.Deadline(now + 1400)) is a1  # without the start cost it fits
    listing = [(c, "") for c in (a1, b0, b1)]
    assert cd._time_left(costly, root, listing, 1).startswith(f"left: about {(3 * 1234.4 + 600) / 3600:.1f} h")
    _fake_cell(cd, root, a1, done=False)  # a started cell: its steps left only
    (cd.run_dir(root, a1) / "config.yaml").write_text("max_steps: 63\n")
    asked.clear()
    assert cd.estimate(costly, root, a1, walls) == pytest.approx(180.0) and asked == []


def test_until_is_read_as_a_time_of_today(cd) -> None:
    now = cd.time.mktime((2026, 11, 28, 8, 0, 0, 0, 0, -1))
    assert cd.parse_until("09:30", now) - now == pytest.approx(90 * 60)
    for bad, why in (("07:59", "has passed"), ("9h30", "HH:MM"), ("25:00", "HH:MM")):
        with pytest.raises(ValueError, match=why):
            cd.parse_until(bad, now)
    with pytest.raises(ValueError, match="--stop-at '07:59': that time has passed"):
        cd.parse_until("07:59", now, flag="--stop-at")


def test_an_edit_only_inside_the_drivers_blocks_does_not_hold_a_page_back(cd) -> None:
    """A page whose only uncommitted change lies inside the blocks the driver renders (a killed driver's render) is
    rendered again; an edit outside them (someone writing the page), or in another block, holds it back."""
    head = "# Page\n\ntext\n<!-- numbers:m:start -->\nold\n<!-- numbers:m:end -->\nmore\n<!-- numbers:o:start -->\nx\n<!-- numbers:o:end -->\n"
    ours = head.replace("\nold\n", "\nnew numbers\n")
    assert cd._outside_blocks(ours, ("m",)) == cd._outside_blocks(head, ("m",))
    assert cd._outside_blocks(ours.replace("more", "more, by hand"), ("m",)) != cd._outside_blocks(head, ("m",))
    assert cd._outside_blocks(head.replace("\nx\n", "\ny\n"), ("m",)) != cd._outside_blocks(head, ("m",))
    assert cd._outside_blocks(ours, ()) != cd._outside_blocks(head, ())  # no block named: any edit counts
    readme = cd.ROOT / "README.md"  # the real page, clean or not: no edit outside its blocks counts as one inside
    text = readme.read_text()
    assert "<!-- numbers:authority-map-readme:start -->" in text
    assert cd._outside_blocks(text, ("authority-map-readme",)).count("numbers:authority-map-readme") == 2


def test_a_foreign_run_of_a_cell_in_a_block_not_reached_is_adopted_and_not_started_again(cd, study, tmp_path: Path,
                                                                                        monkeypatch) -> None:
    """A restarted driver: a previous driver had decided a conditional block and started one of its cells. The new
    driver adopts that run at once (it holds a slot, gets SIGTERM at a stop, is committed when it ends), and when it
    reaches the block, the block's cells leave the adopted one out."""
    root = tmp_path / "runs"
    decide = lambda r, running: cd.Pick(("grpo", "stare"), "both")  # noqa: E731
    block = cd.Block("a", (0, 1), ("grpo", "stare"), decide)
    inside = cd.Cell("a", "stare", 1)
    foreign = cd.Foreign(9, (root / "a").resolve(), ["stare", "compare", "--out", "x", "--methods", "stare",
                                                      "--seeds", "1"])
    monkeypatch.setattr(cd, "foreign_runs", lambda exclude: [f for f in [foreign] if f.pid not in exclude])
    monkeypatch.setattr(cd, "pid_alive", lambda pid: True)
    launched: list = []
    monkeypatch.setattr(cd, "launch", lambda s, r, c: launched.append(c) or type("P", (), {"pid": 100 + len(launched),
                                                                                           "poll": lambda self: None})())
    todo, running = [block], []
    assert cd._adopt_running(root, todo, running) == 1 and todo == [block]  # adopted; the block stays a block
    assert [(c, type(p).__name__) for c, p, _ in running] == [(inside, "Adopted")]
    cd._start_next(dataclasses.replace(study, order=(block,)), root, todo, running, 3, lambda f, m: "", [])
    assert launched == [cd.Cell("a", "grpo", 0), cd.Cell("a", "stare", 0)]  # the third slot is the adopted run's
    assert todo == [cd.Cell("a", "grpo", 1)]  # stare/seed1 is not queued again
