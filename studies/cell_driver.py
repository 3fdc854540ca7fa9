"""The studies' one cell driver: run a pre-registered study's missing cells in its registered order and commit each.

A study declares itself in its own ``studies/<study>/run_cells.py`` (a :class:`Study`: its grids, the run order,
its results folder, its analysis, the issue tag of its commits, its environment pins) and hands it to :func:`main`,
which gives every study the same command line:

    python studies/<study>/run_cells.py [--run-root DIR] [--parallel N]   # run the missing cells (nohup it)
    python studies/<study>/run_cells.py --dry-run                         # the cells in order and their state
    python studies/<study>/run_cells.py --status                          # + steps logged, checkpoint, s per step
    touch RUN_ROOT/STOP                                  # start no new cell (running ones finish and are committed)
    python studies/<study>/run_cells.py --until 09:30     # start only cells that should finish by then, then stop
    kill DRIVER_PID                                      # stop now: each running cell checkpoints its current step
    python studies/<study>/run_cells.py --stop-at 11:55   # the same kill then, by itself (a session's hard end)
    kill -KILL DRIVER_PID                                # restart the driver alone: its cells run on, the next adopts them

Each cell is one ``stare compare --config GRID --out RUN_ROOT/<part> --methods M --seeds S --parallel 1`` under
``nice -n 19`` with the study's pins over the caller's environment, so an interrupted cell resumes from its last
checkpoint when the driver is started again on the same run root; a cell already committed under
``<docs>/<part>/runs/<method>/seed<S>`` is skipped. When a cell finishes, the next cell starts in its slot, then the driver refreshes the grid's report
(``stare compare --report-only`` over the finished seeds), copies the cell's light files (those of
docs/results/compare/export.py, plus eval_initial.json where the grid writes one; metrics gzipped with a fixed
header, so an unchanged cell stays byte-identical) and the report into ``<docs>/<part>/``, re-runs the study's
analysis, re-renders the study's numbers blocks in the docs (``Study.doc_blocks``, scripts/doc_numbers.py) on every
page that has no uncommitted edits outside those blocks, and commits exactly ``<docs>`` and those pages (``git commit -- <paths>``, never
``git add -A``), retrying while another process holds the index lock; once it is committed, the cell's
``checkpoint-*`` folders leave the run root (its final weights stay in ``model/``). A page with uncommitted edits (someone is
writing it) is left alone and the commit message says so; its block is then re-rendered by the next cell, or by hand
(``python scripts/doc_numbers.py --write --block NAME``). A part named ``""`` is a study of one grid whose ``--out``
is the run root itself.

``kill`` (SIGTERM) on the driver stops the running cells without losing their steps: it passes the signal to each
``stare compare`` it runs (adopted ones too), which passes it to its ``stare train``; that one finishes the step in
progress, checkpoints it and exits (``CheckpointOnSignal``). The driver waits for them, commits any cell that
finished meanwhile, and exits; started again, it resumes each cell from the step it stopped at. (A ``stare train``
older than that handler dies on SIGTERM and loses the steps since its last checkpoint: to restart only the driver,
say to pick up a change of the study's code, SIGKILL it, and the next driver adopts the cells still running.)
``--stop-at HH:MM`` does the same at that time: for a session or a batch job that ends at a known time and then
kills what runs (a cell killed loses the steps since its last checkpoint; stopped this way, it loses none). With it,
``--until`` is optional: a cell started late resumes where it stopped; together, no cell starts that would not end
by ``--until``, and at ``--stop-at`` the driver stops what still runs.

A cell that another ``stare compare`` (one the driver did not start: a previous driver's, after a restart) is running
is adopted, not started twice: it takes one of the ``--parallel`` slots, the next cells start beside it, and the
driver commits it when that process ends (or starts it again from its checkpoint, if it ended unfinished).

Cells that start from the same model (``Study.start_group``: e.g. a task and width's warm start) do not start side by
side while one of them has not logged its first step (it may be training that model): the driver starts the next
cell of the order that needs another model instead, up to the next conditional block, and the held cell starts in
its turn once the first one trains (the library's lock makes a cell that starts anyway wait, not train twice).

A block of the order may be conditional (``Block.when``): which of its cells run is decided when the driver reaches
it, from the cells finished by then (e.g. a phase that runs only where a reference cell reached something), or
earlier, when none of the cells queued before it can start now (``--until``, or their model is being built) and its
rule waits for none of them: it picks then what it would pick in its turn, and its cells fill the idle slots. Until
then --dry-run and --status list it as one line saying on what it waits; the commit message counts the cells
planned so far (static blocks and the cells that decided blocks picked).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# The frontier's kernel pins: the same CPU kernels in every cell and after a resume.
KERNEL_PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "OMP_NUM_THREADS": "1"}
DONE = "compare_done.json"  # stare_rl.compare.grid.DONE_FILE (not imported: the package pulls in torch)
INITIAL_EVAL = "eval_initial.json"  # stare_rl.io.runlog.INITIAL_EVAL_FILE, written where a grid sets initial_eval
REPORT_FILES = ("results.md", "results.json", "compare_run.json")
REPORT_DIRS = ("report", "reference")
# the report's self-contained page repeats its PNGs in base64: not committed (`stare report` / `stare compare
# --report-only` writes it again from the cells); it would push the tree past what travels to a GPU machine
NOT_EXPORTED = ("report.html",)


def _export_module():
    spec = importlib.util.spec_from_file_location("export", ROOT / "docs" / "results" / "compare" / "export.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXPORT = _export_module()
Commit = Callable[[tuple[Path, ...], str], str]  # (paths, message) -> what to print: a short hash or why not
DOC_NUMBERS = ROOT / "scripts" / "doc_numbers.py"  # renders the docs' numbers blocks from docs/results


class Cell(NamedTuple):
    part: str
    method: str
    seed: int


class Pick(NamedTuple):
    """A conditional block's decision: the methods it runs (of its own, in its order; ``()``: none), or ``None``
    while a cell it depends on may still finish; ``why`` says which rule decided and on what numbers."""

    methods: tuple[str, ...] | None
    why: str


# (run root, the cells this driver is running now) -> Pick. The running cells are None where nothing is known of
# them (--dry-run, --status, the commit count): then any unfinished cell may still finish.
Decide = Callable[[Path, "frozenset[Cell] | None"], Pick]


class Block(NamedTuple):
    """One stretch of the run order: for each seed in turn, each method of one part's grid.

    ``when`` (optional) makes the block conditional: called when the driver reaches the block, it picks which of
    ``methods`` run (:class:`Pick`). While it answers ``None`` the driver waits for its own running cells; with none
    running, an undecided block is skipped (said in the log). It must answer ``None`` while a cell it reads is in
    the cells that may still finish (its second argument): the driver also asks it ahead of the block's turn, with
    the cells queued before the block among those (:func:`_decide_ahead`)."""

    part: str
    seeds: tuple[int, ...]
    methods: tuple[str, ...]
    when: Decide | None = None

    def cells(self, methods: tuple[str, ...] | None = None) -> list[Cell]:
        """The block's cells in order; only those of ``methods`` where given."""
        return [Cell(self.part, m, s) for s in self.seeds for m in self.methods if methods is None or m in methods]


@dataclass(frozen=True)
class Study:
    """A pre-registered study as the driver sees it.

    Args:
        tag: what every commit message starts with, e.g. ``"#45 confirm10"``.
        grids: part name -> grid YAML; the part's cells go to ``RUN_ROOT/<part>`` and ``<docs>/<part>``.
        order: the registered run order, block after block.
        docs: the study's results folder (the only path the driver commits).
        analyze: the analysis script, re-run after each cell.
        analyze_args: its arguments; ``{run_root}`` and ``{docs}`` are filled in.
        run_root: the default ``--run-root``.
        pins: environment variables set over the caller's for every ``stare`` command.
        needs_env: variables the caller must set before cells start -> why (checked unless --dry-run/--status).
        parallel: the default ``--parallel``.
        cells_noun: the word of the commit's count, e.g. ``"new cells"``.
        doc_blocks: the numbers blocks (scripts/doc_numbers.py ``BLOCKS``) that render from this study's results,
            re-rendered and committed with each cell, so that no committed page quotes a stale cell count.
        start_group: the cell -> the model it starts from (None: every cell its own); see the module's text.
        skip: (cell, run root) -> the registered reason not to run the cell, or None; asked as the cell would
            start, so it can read what earlier cells built (e.g. its width's warm start did not learn the task).
        start_cost: (cell, run root) -> seconds a cell not started yet needs before its own run that the committed
            cells' times do not count (e.g. building its start group's warm start on a machine whose cache lacks
            it); counted once per start group by ``--until`` and ``--status``. None: nothing.
        waits_for: cell -> the cells whose run decides whether it runs at all (e.g. through ``skip``: its twin,
            whose finished run may make it redundant); while one of them is running the cell does not start, and the
            next cell that may start takes the slot. None: no cell waits for another.
        outlook: run root -> lines that ``--status`` prints last: what the blocks not decided yet would pick on the
            cells finished so far, and what that would cost (an outlook for planning, never a decision: a block
            decides only when the driver reaches it). None: nothing.
    """

    tag: str
    grids: Mapping[str, Path]
    order: tuple[Block, ...]
    docs: Path
    analyze: Path
    run_root: Path
    analyze_args: tuple[str, ...] = ()
    pins: Mapping[str, str] = field(default_factory=lambda: dict(KERNEL_PINS))
    needs_env: Mapping[str, str] = field(default_factory=dict)
    parallel: int = 2
    cells_noun: str = "cells"
    doc_blocks: tuple[str, ...] = ()
    start_group: Callable[[Cell], Hashable] | None = None
    skip: Callable[[Cell, Path], str | None] | None = None
    start_cost: Callable[[Cell, Path], float] | None = None
    waits_for: Callable[[Cell], tuple[Cell, ...]] | None = None
    outlook: Callable[[Path], str] | None = None

    def __post_init__(self) -> None:
        unknown = sorted({b.part for b in self.order} - set(self.grids))
        if unknown:
            raise ValueError(f"Study.order names parts {unknown} that are not in grids {sorted(self.grids)}")
        cells = self.cells()
        if len(set(cells)) != len(cells):
            raise ValueError(f"Study.order lists a cell twice: {sorted(c for c in cells if cells.count(c) > 1)}")

    def cells(self) -> list[Cell]:
        """Every cell the order can reach, conditional blocks' included."""
        return [c for b in self.order for c in b.cells()]

    def planned(self, root: Path) -> list[Cell]:
        """The cells planned so far: static blocks' and those that conditional blocks pick now (undecided: none)."""
        return [c for b in self.order for c in b.cells(None if b.when is None else decide(b, root, None).methods or ())]

    def docs_dir(self, c: Cell) -> Path:
        return self.docs / c.part / "runs" / c.method / f"seed{c.seed}"

    def committed(self, c: Cell) -> bool:
        """The cell's exported marker is in HEAD: exported and committed (a driver killed between the two has left
        the files but not the commit; such a cell is "finished, not committed" and the next driver commits it)."""
        done = self.docs_dir(c) / DONE
        return done.is_file() and in_head(done)

    def env(self) -> dict[str, str]:
        """The caller's environment (its STARE_RL_CACHE, if set, names the model / warm start cache) with the pins."""
        return {**os.environ, **self.pins}


def in_head(path: Path) -> bool:
    """``path`` is in the checkout's HEAD commit (``git cat-file -e HEAD:<path>``); False outside the checkout."""
    try:
        rel = path.resolve().relative_to(ROOT)
    except ValueError:
        return False
    return subprocess.run(["git", "cat-file", "-e", f"HEAD:{rel.as_posix()}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode == 0


def run_dir(root: Path, c: Cell) -> Path:
    return root / c.part / "runs" / c.method / f"seed{c.seed}"


def decide(b: Block, root: Path, running: frozenset[Cell] | None) -> Pick:
    """A conditional block's :class:`Pick`; a rule that raises picks nothing (the error is the reason)."""
    try:
        return b.when(root, running)
    except Exception as err:  # noqa: BLE001  (a rule's bug must not stop the cells already queued)
        return Pick((), f"its rule failed: {type(err).__name__}: {err}")


def state(study: Study, root: Path, c: Cell) -> str:
    if study.committed(c):
        return "committed"
    if (run_dir(root, c) / DONE).is_file():
        return "finished, not committed"
    return "resume" if run_dir(root, c).exists() else "fresh"


def _where(c: Cell, fmt: str = " ({})") -> str:
    """The part, for the messages of a study of several grids; nothing for a study of one."""
    return fmt.format(c.part) if c.part else ""


def stare(*args: str) -> list[str]:
    return ["nice", "-n", "19", str(BIN / "stare"), *args]


def launch(study: Study, root: Path, c: Cell) -> subprocess.Popen:
    log = root / "logs" / f"{c.part + '_' if c.part else ''}{c.method}_seed{c.seed}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = stare("compare", "--config", str(study.grids[c.part]), "--out", str(root / c.part), "--methods", c.method,
                 "--seeds", str(c.seed), "--parallel", "1")
    f = open(log, "a")  # noqa: SIM115  (closed by the child's exit; the driver keeps no handle of its own)
    f.write(f"$ {' '.join(argv)}\n")
    f.flush()
    return subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=study.env(), cwd=ROOT)


def gzip_stable(src: Path, dst: Path) -> None:
    """``src`` gzipped into ``dst`` with mtime 0 (the header's name is dst's, less .gz): same input, same bytes."""
    with open(src, "rb") as f, open(dst, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as g:
        shutil.copyfileobj(f, g)


def export_cell(study: Study, root: Path, c: Cell) -> None:
    """The cell's light files into ``<docs>/<part>/runs/<method>/seed<S>``, and the grid's report into ``<docs>/<part>``."""
    src, out = run_dir(root, c), study.docs_dir(c)
    out.mkdir(parents=True, exist_ok=True)
    for name in (*EXPORT.CELL_FILES, INITIAL_EVAL):
        if (src / name).is_file():
            shutil.copy2(src / name, out / name)
    gzip_stable(src / "metrics.jsonl", out / "metrics.jsonl.gz")
    grid_out, docs_out = root / c.part, study.docs / c.part
    for name in REPORT_FILES:
        if (grid_out / name).is_file():
            shutil.copy2(grid_out / name, docs_out / name)
    for sub in REPORT_DIRS:
        if (grid_out / sub).exists():
            if (docs_out / sub).exists():
                shutil.rmtree(docs_out / sub)
            shutil.copytree(grid_out / sub, docs_out / sub, ignore=shutil.ignore_patterns(*NOT_EXPORTED))


def refresh_report(study: Study, root: Path, part: str) -> None:
    seeds = sorted({c.seed for c in study.cells() if c.part == part and (run_dir(root, c) / DONE).is_file()})
    if seeds:
        subprocess.run(stare("compare", "--config", str(study.grids[part]), "--out", str(root / part), "--report-only",
                             "--seeds", ",".join(map(str, seeds))),
                       env=study.env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def refresh_reports(study: Study, root: Path, parts: list[str], parallel: int) -> None:
    """:func:`refresh_report` for each of ``parts``, ``parallel`` at a time: on a new machine each grid's report
    builds its task data and warm starts first (2026-11-29: 2, 7 and 9 minutes one after another, 18 minutes before the first cell)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        for done in [pool.submit(refresh_report, study, root, part) for part in parts]:
            done.result()


def run_analysis(study: Study, root: Path) -> str:
    """Re-run the study's analysis; what to say of it in the commit: ``re-run``, or that it failed (its outputs
    are then the previous cell's) with the exit status and its last error line, also printed."""
    args = [a.format(run_root=root, docs=study.docs) for a in study.analyze_args]
    proc = subprocess.run([sys.executable, str(study.analyze), *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    if proc.returncode == 0:
        return f"{study.analyze.name} re-run"
    last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "no output")
    print(proc.stderr[-3000:], file=sys.stderr, flush=True)
    return (f"{study.analyze.name} FAILED (exit {proc.returncode}: {last.strip()}), its outputs are the previous "
            "cell's")


def block_pages(names: tuple[str, ...]) -> dict[str, Path]:
    """Block name -> the page it sits in, from scripts/doc_numbers.py's ``BLOCKS`` (an unknown name is an error)."""
    if not names:
        return {}
    spec = importlib.util.spec_from_file_location("doc_numbers", DOC_NUMBERS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    unknown = sorted(set(names) - set(module.BLOCKS))
    if unknown:
        raise ValueError(f"Study.doc_blocks {unknown}: not blocks of {DOC_NUMBERS.name}")
    return {n: ROOT / module.BLOCKS[n][0] for n in names}


def _page_has_edits(page: Path, blocks: tuple[str, ...] = ()) -> bool:
    """Uncommitted changes to ``page`` (worktree or index) against HEAD, outside the numbers blocks ``blocks``. An
    edit only inside them is a render this driver (or a killed one) left uncommitted; rendering them again from the
    artifacts overwrites it, as intended (2026-11-28: a driver killed mid-commit left README.md's blocks edited, and
    the next driver's commits skipped the page)."""
    rel = str(page.relative_to(ROOT))
    if subprocess.run(["git", "diff", "--quiet", "HEAD", "--", rel], cwd=ROOT, check=False).returncode == 0:
        return False
    head = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=ROOT, capture_output=True, text=True, check=False)
    if head.returncode != 0 or not page.is_file():
        return True
    return _outside_blocks(page.read_text(), blocks) != _outside_blocks(head.stdout, blocks)


def _outside_blocks(text: str, blocks: tuple[str, ...]) -> str:
    """``text`` with the body of each numbers block in ``blocks`` emptied (its markers kept)."""
    for name in blocks:
        start, end = f"<!-- numbers:{name}:start -->", f"<!-- numbers:{name}:end -->"
        i = text.find(start)
        j = text.find(end, i + len(start)) if i >= 0 else -1
        if i >= 0 and j >= 0:
            text = text[:i + len(start)] + text[j:]
    return text


def refresh_doc_blocks(study: Study) -> tuple[tuple[Path, ...], str]:
    """Re-render ``study.doc_blocks`` on the pages nobody is editing; (those pages, what to say in the commit)."""
    pages = block_pages(study.doc_blocks)
    if not pages:
        return (), ""
    busy = sorted({p for p in pages.values() if _page_has_edits(p, tuple(n for n, q in pages.items() if q == p))})
    names = [n for n, p in pages.items() if p not in busy]
    note = ""
    if names:
        proc = subprocess.run([sys.executable, str(DOC_NUMBERS), "--write", *(f"--block={n}" for n in names)],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0:
            note = f"; doc blocks {', '.join(names)} FAILED to render (exit {proc.returncode})"
            print(proc.stderr[-3000:], file=sys.stderr, flush=True)
            names = []
        else:
            note = f"; doc blocks {', '.join(names)} re-rendered"
    if busy:
        note += "; not re-rendered (uncommitted edits): " + ", ".join(str(p.relative_to(ROOT)) for p in busy)
    return tuple(sorted({pages[n] for n in names})), note


def git_commit(paths: tuple[Path, ...], message: str) -> str:
    """Commit exactly ``paths`` (``git add -- paths; git commit -- paths``), retrying while index.lock is held."""
    rel = [str(p.relative_to(ROOT)) for p in paths]
    for attempt in range(30):
        add = subprocess.run(["git", "add", "--", *rel], cwd=ROOT, capture_output=True, text=True)
        if add.returncode == 0:
            c = subprocess.run(["git", "commit", "-q", "-m", message, "--", *rel], cwd=ROOT, capture_output=True,
                               text=True)
            if c.returncode == 0:
                return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                      text=True).stdout.strip()
            if "nothing to commit" in c.stdout + c.stderr:
                return "(nothing to commit)"
            err = c.stderr
        else:
            err = add.stderr
        if "index.lock" not in err:
            print(f"git failed: {err.strip()}", flush=True)
            return "(failed)"
        time.sleep(2 + attempt)
    return "(index.lock: gave up)"


def finish(study: Study, root: Path, c: Cell, commit: Commit = git_commit) -> str:
    """Report, export, analysis and commit of a finished cell; returns the commit message."""
    done = json.loads((run_dir(root, c) / DONE).read_text())
    refresh_report(study, root, c.part)
    export_cell(study, root, c)
    analysis = run_analysis(study, root)
    pages, rendered = refresh_doc_blocks(study)
    n_done = sum(x == c or study.committed(x) for x in study.cells())  # this cell is committed just below
    wall = done.get("wall_s")
    msg = (f"{study.tag}: cell {c.method}/seed{c.seed}{_where(c, ' ({} grid)')} finished in {wall:.0f} s wall"
           f"{' (resumed from a checkpoint)' if done.get('resumed') else ''}; {n_done} of {len(study.planned(root))} "
           f"{study.cells_noun} done; {analysis}{rendered}")
    print(f"{time.strftime('%H:%M:%S')} {msg}: commit {commit((study.docs, *pages), msg)}", flush=True)
    prune_checkpoints(run_dir(root, c))
    return msg


def prune_checkpoints(d: Path) -> int:
    """Remove a committed cell's ``checkpoint-*`` folders (a real-LM one is ~1.6 GB: weights and optimizer state;
    the final weights stay in ``model/``, ``compare_done.json`` keeps the cell finished); returns the bytes freed.
    Only after the commit: a cell that is not committed keeps what it needs to resume."""
    freed = 0
    for ck in sorted(d.glob("checkpoint-*")):
        freed += sum(f.stat().st_size for f in ck.rglob("*") if f.is_file())
        shutil.rmtree(ck)
    return freed


def pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


class Adopted:
    """A cell's run that a foreign ``stare compare`` is doing, held in the driver's running list like its own
    processes (``poll`` / ``returncode``): it takes one of the ``--parallel`` slots until that process ends."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        if self.returncode is None and not pid_alive(self.pid):
            self.returncode = 0  # not our child: its exit status is not ours to read; the done marker decides
        return self.returncode


class Foreign(NamedTuple):
    """A running ``stare compare`` the driver did not start: its pid, its --out (resolved) and its argv."""

    pid: int
    out: Path
    argv: list[str]


def foreign_runs(exclude: set[int]) -> list[Foreign]:
    """Every running ``stare compare`` (not --report-only) whose pid is not in ``exclude``, from /proc."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
            cwd = (proc / "cwd").resolve(strict=True)
        except OSError:
            continue
        if (int(proc.name) in exclude or "compare" not in argv or "--report-only" in argv
                or not any(Path(a).name == "stare" for a in argv) or "--out" not in argv[:-1]):
            continue
        found.append(Foreign(int(proc.name), (cwd / argv[argv.index("--out") + 1]).resolve(), argv))
    return found


def _names(argv: list[str], flag: str, value: str) -> bool:
    """True where argv has no ``flag`` (then the grid's whole list runs) or its comma list names ``value``."""
    return flag not in argv[:-1] or value in argv[argv.index(flag) + 1].split(",")


def runner(root: Path, c: Cell, procs: list[Foreign]) -> int | None:
    """The pid of the foreign ``stare compare`` whose --out, --methods and --seeds cover the cell, if any."""
    out = (root / c.part).resolve()
    return next((p.pid for p in procs if p.out == out and _names(p.argv, "--methods", c.method)
                 and _names(p.argv, "--seeds", str(c.seed))), None)


def _steps(d: Path) -> tuple[int, float] | None:
    """(last step logged, mean step_time) of a run dir's metrics.jsonl; None before its first step."""
    log = d / "metrics.jsonl"
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.is_file() else []
    times = [r["step_time"] for r in rows if isinstance(r.get("step_time"), (int, float))]
    if not times:
        return None
    return max((r.get("step", 0) for r in rows), default=0), sum(times) / len(times)


def _seconds_left(d: Path) -> float | None:
    """Training seconds left in an unfinished run dir (steps left x its mean step_time), if it can tell."""
    done, total = _steps(d), _max_steps(d)
    return None if done is None or total is None else max(total - done[0], 0) * done[1]


def _progress(d: Path) -> str:
    done = _steps(d)
    if done is None:
        return "started, no step logged"
    ckpts = sorted(int(p.name.split("-")[1]) for p in d.glob("checkpoint-*"))
    (step, mean), total = done, _max_steps(d)
    left = "" if total is None else f", about {max(total - step, 0) * mean / 60:.0f} min of {total} steps left"
    return (f"unfinished, {step} steps logged, last checkpoint {ckpts[-1] if ckpts else None}, mean step_time "
            f"{mean:.2f} s{left}")


def _cell_seconds(d: Path) -> float:
    """A committed cell's time: its wall, or the sum of its steps' step_time where that is more (a resumed cell's
    wall counts only its last invocation)."""
    wall = json.loads((d / DONE).read_text()).get("wall_s") or 0.0
    gz = d / "metrics.jsonl.gz"
    rows = [json.loads(x) for x in gzip.open(gz, "rt") if x.strip()] if gz.is_file() else []
    return max(float(wall), sum(r["step_time"] for r in rows if isinstance(r.get("step_time"), (int, float))))


def _committed_walls(study: Study) -> dict[Hashable, list[float]]:
    """The committed cells' times (:func:`_cell_seconds`) per start group (``start_group``; else the grid part)."""
    group = study.start_group or (lambda c: c.part)
    walls: dict[Hashable, list[float]] = {}
    for c in study.cells():
        if study.committed(c):
            walls.setdefault(group(c), []).append(_cell_seconds(study.docs_dir(c)))
    return walls


def estimate(study: Study, root: Path, c: Cell, walls: dict[Hashable, list[float]],
             charged: set[Hashable] | None = None) -> float | None:
    """Seconds the cell still needs: an unfinished run dir's steps left at its mean step_time; else the mean of the
    committed cells that start from its model, plus ``Study.start_cost`` (once per start group: a group already in
    ``charged`` is not charged again, and the cell's group is added); None with nothing to go by."""
    d = run_dir(root, c)
    left = _seconds_left(d) if d.exists() else None
    if left is not None:
        return left
    group = (study.start_group or (lambda x: x.part))(c)
    known = walls.get(group)
    if not known:
        return None
    extra = 0.0
    if study.start_cost is not None and not d.exists() and (charged is None or group not in charged):
        extra = float(study.start_cost(c, root))
        if charged is not None and extra:
            charged.add(group)
    return sum(known) / len(known) + extra


DEADLINE_MARGIN = 1.10  # --until: a cell starts only if 1.1x its estimate ends before the deadline


class Deadline:
    """``--until``: the time by which started cells should have finished (a session's or a batch job's end). A cell
    starts only if :func:`estimate` x DEADLINE_MARGIN ends before it; a cell with nothing to go by does not start.
    Each cell held back is said once."""

    def __init__(self, until: float) -> None:
        self.until, self.noted = until, set()

    def fits(self, study: Study, root: Path, c: Cell, walls: dict[Hashable, list[float]]) -> bool:
        est = estimate(study, root, c, walls)
        ok = est is not None and time.time() + DEADLINE_MARGIN * est <= self.until
        if not ok and c not in self.noted:
            self.noted.add(c)
            need = "no committed cell of its model to go by" if est is None else f"about {est / 60:.0f} min"
            print(f"{time.strftime('%H:%M:%S')} {c.method}/seed{c.seed}{_where(c)} does not start: {need}, "
                  f"{max(self.until - time.time(), 0) / 60:.0f} min left before --until "
                  f"{time.strftime('%H:%M', time.localtime(self.until))}", flush=True)
        return ok


def parse_until(text: str, now: float | None = None, flag: str = "--until") -> float:
    """``--until HH:MM`` (or ``flag``'s: the machine's clock, today) as a time stamp; ValueError naming the flag
    and the value when it cannot be read or has passed."""
    now = time.time() if now is None else now
    try:
        hh, mm = (int(x) for x in text.split(":"))
        day = time.localtime(now)
        until = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, hh, mm, 0, 0, 0, -1))
    except (ValueError, OverflowError) as err:
        raise ValueError(f"{flag} {text!r}: give a time of today as HH:MM ({err})") from err
    if not (0 <= hh < 24 and 0 <= mm < 60):
        raise ValueError(f"{flag} {text!r}: give a time of today as HH:MM")
    if until <= now:
        raise ValueError(f"{flag} {text!r}: that time has passed (now {time.strftime('%H:%M', time.localtime(now))})")
    return until


def _time_left(study: Study, root: Path, listing: list[tuple[Cell | None, str]], parallel: int) -> str:
    """One line: the core-hours the listed cells still need, each not-started cell at the mean wall of the
    committed cells that start from the same model (``start_group``; else the same grid part), each unfinished one
    at its steps left; cells with nothing to go by, and blocks not decided yet, are counted apart."""
    walls = _committed_walls(study)
    seconds, unknown, undecided, charged = 0.0, 0, 0, set()
    for c, note in listing:
        if c is None:  # a block's cells skipped, or not decided yet
            undecided += UNDECIDED in note
            continue
        d = run_dir(root, c)
        if study.committed(c) or (d / DONE).is_file():
            continue
        if not d.exists() and study.skip is not None and study.skip(c, root):
            continue  # will not run
        left = estimate(study, root, c, walls, charged)
        if left is None:
            unknown += 1
        else:
            seconds += left
    hours = seconds / 3600
    return (f"left: about {hours:.1f} h of cell time (about {hours / max(parallel, 1):.1f} h at --parallel {parallel}), "
            f"each cell not started at the mean wall of the committed cells that start from its model; not counted: "
            f"{unknown} cell(s) with no such cell committed yet, {undecided} block(s) not decided yet")


def _max_steps(d: Path) -> int | None:
    """The run's ``max_steps`` from its resolved config.yaml (a plain ``max_steps: N`` line), if it says."""
    cfg = d / "config.yaml"
    lines = cfg.read_text(errors="replace").splitlines() if cfg.is_file() else []
    found = [x.split(":", 1)[1].strip() for x in lines if x.startswith("max_steps:")]
    return int(found[0]) if found and found[0].isdigit() else None


def status(study: Study, root: Path, procs: list[Foreign] | None = None) -> str:
    """One line per cell: committed / finished (wall s) / running or interrupted (steps logged, last checkpoint,
    mean step_time of the logged steps; the pid of the stare compare running it) / not started; then the time
    left (:func:`_time_left`) and, while a block is not decided yet, the study's ``outlook``."""
    procs = foreign_runs(exclude=set()) if procs is None else procs
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, run root {root}, load average {load} "
             f"(1/5/15 min) on {os.cpu_count()} CPUs"]
    listing = _listing(study, root)
    for c, note in listing:
        if c is None:
            lines.append(note)
            continue
        d, head = run_dir(root, c), f"{_where(c, '{} ')}{c.method}/seed{c.seed}"
        if study.committed(c):
            wall = json.loads((study.docs_dir(c) / DONE).read_text()).get("wall_s")
            lines.append(f"{head}: committed, {wall:.0f} s wall")
        elif (d / DONE).is_file():
            lines.append(f"{head}: finished, not committed")
        elif d.exists():
            pid = runner(root, c, procs)
            lines.append(f"{head}: {_progress(d)}{f', running in pid {pid}' if pid else ''}")
        elif pid := runner(root, c, procs):  # no run dir yet: its stare compare is building the starting model
            lines.append(f"{head}: starting (no run dir yet: warm start or reference evaluation), running in pid {pid}")
        elif study.skip is not None and (why := study.skip(c, root)):
            lines.append(f"{head}: not run: {why}")
        else:
            lines.append(f"{head}: not started{note}")
    lines.append(_time_left(study, root, listing, study.parallel))
    if study.outlook is not None and any(UNDECIDED in note for c, note in listing if c is None):
        lines.append(study.outlook(root))
    return "\n".join(lines)


UNDECIDED = "decided when the driver reaches it"


def _listing(study: Study, root: Path) -> list[tuple[Cell | None, str]]:
    """The order as --dry-run and --status list it: (cell, note) for each cell of a static block and each cell a
    conditional block picks (note: why), and (None, line) for the rest of a conditional block (skipped, or decided
    later, and why), unless committed."""
    out: list[tuple[Cell | None, str]] = []
    for b in study.order:
        if b.when is None:
            out += [(c, "") for c in b.cells()]
            continue
        pick = decide(b, root, None)
        picked = b.cells(pick.methods or ())
        out += [(c, f" ({pick.why})") for c in picked]
        rest = [c for c in b.cells() if c not in picked and not study.committed(c)]
        out += [(c, "") for c in b.cells() if c not in picked and study.committed(c)]
        if rest:
            what = UNDECIDED if pick.methods is None else "skipped"
            ms, seeds = list(dict.fromkeys(c.method for c in rest)), list(dict.fromkeys(c.seed for c in rest))
            names = ", ".join(ms) if len(ms) <= 6 else f"{len(ms)} methods"
            out.append((None, f"{_where(rest[0], '{} ')}{len(rest)} cells ({names}; seed{'s' * (len(seeds) > 1)} "
                              f"{', '.join(map(str, seeds))}): {what} ({pick.why})"))
    return out


def dry_run(study: Study, root: Path) -> str:
    width = max(len(p) for p in study.grids) + 1  # a column: two spaces after the longest part's name
    return "\n".join(note if c is None else
                     f"{f'{c.part:<{width}} ' if width > 1 else ''}{c.method}/seed{c.seed}: {state(study, root, c)}{note}"
                     for c, note in _listing(study, root))


def _expand(study: Study, root: Path, todo: list, running: list, waiting: list) -> bool:
    """The conditional block at the head of ``todo`` replaced by the cells it picks (not yet committed); False
    while it waits for a cell this driver is running."""
    b = todo[0]
    pick = decide(b, root, frozenset(c for c, _, _ in running))
    if pick.methods is None and running:
        if waiting != [b]:
            waiting[:] = [b]
            print(f"{time.strftime('%H:%M:%S')} waiting: the next block{_where(b.cells()[0])} is decided once the "
                  f"running cells finish ({pick.why})", flush=True)
        return False
    todo.pop(0)
    held = {c for c, _, _ in running}  # adopted before the block was reached (_adopt_running)
    cells = [c for c in b.cells(pick.methods or ()) if not study.committed(c) and c not in held]
    todo[:0] = cells
    verdict = "not decided, skipped" if pick.methods is None else f"{len(cells)} cells added"
    print(f"{time.strftime('%H:%M:%S')} block{_where(b.cells()[0])}: {verdict} ({pick.why})", flush=True)
    return True


def _start_next(study: Study, root: Path, todo: list, running: list, parallel: int, commit: Commit,
                waiting: list, deadline: Deadline | None = None) -> None:
    """Start cells from the head of ``todo`` while there is room; finish those already done; adopt a cell that a
    foreign stare compare is running (:class:`Adopted`); decide a conditional block (:class:`Block`) when it is reached."""
    if _unadopted(root, running):  # a previous driver's run of a cell still queued or in a block: hold it first
        _adopt_running(root, todo, running)
    while todo and len(running) + _unadopted(root, running) < parallel and not (root / "STOP").exists():
        if isinstance(todo[0], Block):
            if not _expand(study, root, todo, running, waiting):
                return
            continue
        c = todo[0]
        if (run_dir(root, c) / DONE).is_file():
            finish(study, root, todo.pop(0), commit)
            continue
        if _adopt_running(root, todo, running):  # a foreign run started since the last look: it takes a slot
            continue
        c = _next_startable(study, root, todo, running, deadline)
        if c is None:
            return
        todo.remove(c)
        why = study.skip(c, root) if study.skip is not None and not run_dir(root, c).exists() else None
        if why:  # a started cell (its run dir exists) is always finished
            print(f"{time.strftime('%H:%M:%S')} skip {c.method}/seed{c.seed}{_where(c)}: {why}", flush=True)
            continue
        running.append((c, launch(study, root, c), time.time()))
        print(f"{time.strftime('%H:%M:%S')} start {c.method}/seed{c.seed}{_where(c)}", flush=True)


def _unadopted(root: Path, running: list) -> int:
    """How many foreign ``stare compare`` runs under the run root this driver holds no slot for: a cell of a block
    it has not decided yet, started by a previous driver (adopted once the block is reached). Each takes a
    ``--parallel`` slot meanwhile; else a restarted driver would start cells beside them (2026-11-28: three cells on
    two cores after a restart)."""
    own = {getattr(p, "pid", None) for _, p, _ in running}
    top = root.resolve()
    return sum(1 for f in foreign_runs(exclude=own) if f.pid not in own and (f.out == top or top in f.out.parents))


def _starting(study: Study, root: Path, running: list) -> set:
    """The start groups whose model a running cell may be building: it has logged no step yet, and either
    ``Study.start_cost`` says the model is still to be built (the cache lacks it), or no cell of the group in the
    run root has trained (one that has trained, or finished, started from the built model). The second test alone
    is wrong on a new machine: the committed cells restored into its run root have finished, its cache is empty."""
    if study.start_group is None:
        return set()
    group = study.start_group
    out = set()
    for c, _, _ in running:
        if _trained(run_dir(root, c)):
            continue
        g = group(c)
        missing = study.start_cost is not None and study.start_cost(c, root) > 0
        if missing or not any(group(x) == g and _trained(run_dir(root, x)) for x in study.cells()):
            out.add(g)
    return out


def _trained(d: Path) -> bool:
    """The cell has logged a training step (or finished): the model it starts from exists."""
    log = d / "metrics.jsonl"
    return (d / DONE).is_file() or (log.is_file() and log.stat().st_size > 0)


def _next_startable(study: Study, root: Path, todo: list, running: list,
                    deadline: Deadline | None = None) -> Cell | None:
    """The head cell, or, while a running cell may be building its model (or decides whether the head runs at all:
    ``Study.waits_for``), the first cell up to the next block that may start; None if there is none (the head then
    waits for a slot, that first step, or that cell's end). With a deadline, only a cell that fits before it
    (:class:`Deadline`): the first such cell up to the next block. A conditional block reached this way, with no
    cell before it able to start now, is decided ahead of its turn where its rule does not wait for any of those
    cells (:func:`_decide_ahead`), and the look goes on through its cells."""
    busy = _starting(study, root, running)
    walls = _committed_walls(study) if deadline is not None else {}
    now_running = {c for c, _, _ in running}
    i = 0
    while i < len(todo):
        x = todo[i]
        if isinstance(x, Block):
            if i == 0 or not _decide_ahead(study, root, todo, i, running):
                return None
            continue  # todo[i] is now the block's first cell, or what followed the block
        i += 1
        if study.skip is not None and not run_dir(root, x).exists() and study.skip(x, root):
            return x  # it will not run (the caller says why): no slot, no model, no deadline to fit
        if study.start_group is not None and study.start_group(x) in busy:
            continue  # its model is being built: judged against the deadline once it is
        if study.waits_for is not None and now_running.intersection(study.waits_for(x)):
            continue  # a running cell decides whether it runs (Study.skip, once that one has finished)
        if deadline is not None and not deadline.fits(study, root, x, walls):
            continue
        if x is not todo[0]:
            head = todo[0]
            why = ("a running cell has not logged a step of the model it starts from yet"
                   if study.start_group is not None and study.start_group(head) in busy else
                   "a running cell decides whether it runs" if study.waits_for is not None
                   and now_running.intersection(study.waits_for(head)) else "it does not fit before --until")
            print(f"{time.strftime('%H:%M:%S')} {head.method}/seed{head.seed}{_where(head)} waits: {why}", flush=True)
        return x
    return None


def _decide_ahead(study: Study, root: Path, todo: list, i: int, running: list) -> bool:
    """The conditional block ``todo[i]`` decided before the driver reaches it: its rule is asked with the running
    cells and the cells queued before it (``todo[:i]``) as the cells that may still finish, so it picks now only
    if it depends on none of them, and picks what it would pick in its turn. Then the block is replaced in place by
    its cells (those not committed and not running) and True is returned; False while the rule waits, or if it
    raises (in its turn, :func:`decide` says the error).

    Why: with ``--until`` (or while a model is being built) the cells before a block may be unable to start, e.g. a
    session's last hour holding only cells longer than that, while the next block's short cells wait behind them on
    idle cores (2026-11-28). Only which cell runs next changes, never which cells run."""
    b = todo[i]
    ahead = frozenset({c for c, _, _ in running} | {c for c in todo[:i] if isinstance(c, Cell)})
    try:
        pick = b.when(root, ahead)
    except Exception:  # noqa: BLE001  (decided in its turn, where the error is said)
        return False
    if pick.methods is None:
        return False
    held = {c for c, _, _ in running}
    cells = [c for c in b.cells(pick.methods) if not study.committed(c) and c not in held]
    todo[i:i + 1] = cells
    print(f"{time.strftime('%H:%M:%S')} block{_where(b.cells()[0])}: {len(cells)} cells added ahead of its turn, "
          f"as none of the {i} cells before it can start now ({pick.why})", flush=True)
    return True


def restore_committed(study: Study, root: Path) -> list[Cell]:
    """Copy each committed cell that the run root lacks (a new machine starts with an empty one) from ``<docs>`` into
    its run dir: its light files, metrics gzipped as committed. The grid's report (``stare compare --report-only``
    over the run root) then covers every finished cell, not only those this run root ran. A run dir that exists is
    left alone. Returns the cells restored."""
    restored = []
    for c in study.cells():
        src, dst = study.docs_dir(c), run_dir(root, c)
        if dst.exists() or not study.committed(c):
            continue
        tmp = dst.with_name(dst.name + ".restoring")
        if tmp.exists():
            shutil.rmtree(tmp)
        shutil.copytree(src, tmp)
        tmp.rename(dst)  # atomic: a cell dir is there whole or not at all
        restored.append(c)
    return restored


def run(study: Study, root: Path, parallel: int, commit: Commit = git_commit, until: float | None = None,
        stop_at: float | None = None) -> int:
    deadline = None if until is None else Deadline(until)
    restored = restore_committed(study, root)
    if restored:
        print(f"{time.strftime('%H:%M:%S')} {len(restored)} committed cells copied into {root} (the run root lacked "
              "them): the grid reports cover them", flush=True)
        refresh_reports(study, root, list(dict.fromkeys(c.part for c in restored)), parallel)
    todo: list[Cell | Block] = []
    for b in study.order:  # a conditional block stays a block until the driver reaches it
        todo += [c for c in b.cells() if not study.committed(c)] if b.when is None else [b]
    n_cells, n_blocks = sum(isinstance(x, Cell) for x in todo), sum(isinstance(x, Block) for x in todo)
    print(f"{time.strftime('%H:%M:%S')} {n_cells} of {len(study.cells())} cells to run in {root}"
          f"{f', and {n_blocks} blocks decided when reached' if n_blocks else ''}", flush=True)
    running: list[tuple[Cell, subprocess.Popen | Adopted, float]] = []
    waiting: list[Block] = []
    _adopt_running(root, todo, running)  # even under STOP: they run already, and are committed when they end
    stop = _StopOnSignal()
    try:
        while todo or running:
            if stop.signum is not None:
                _stop_running(study, root, todo, running, commit, stop.signum)
                return 0
            if stop_at is not None and time.time() >= stop_at:
                _stop_running(study, root, todo, running, commit, signal.SIGTERM,
                              f"--stop-at {time.strftime('%H:%M', time.localtime(stop_at))}")
                return 0
            _start_next(study, root, todo, running, parallel, commit, waiting, deadline)
            if deadline is not None and not running and todo and not isinstance(todo[0], Block) \
                    and _next_startable(study, root, todo, running, deadline) is None:
                print(f"{time.strftime('%H:%M:%S')} --until {time.strftime('%H:%M', time.localtime(until))}: none of "
                      f"the {sum(isinstance(x, Cell) for x in todo)} cells left fits before it; the next run starts "
                      "them", flush=True)
                break
            if (root / "STOP").exists() and not running:
                print(f"{time.strftime('%H:%M:%S')} STOP: {len(todo)} cells not started", flush=True)
                break
            stop.sleep(10)

            def refill() -> None:  # a freed slot takes the next cell before the ended cell's commit (a minute or two)
                if stop.signum is None and (stop_at is None or time.time() < stop_at):
                    _start_next(study, root, todo, running, parallel, commit, waiting, deadline)
            _reap(study, root, todo, running, commit, refill)
    finally:
        stop.restore()
    return 0


class _StopOnSignal:
    """SIGTERM to the driver: note it (the loop stops the cells at its next turn) and wake the loop's sleep."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.previous = signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.signum = signum

    def sleep(self, seconds: float) -> None:
        if self.signum is None:  # a signal mid-sleep: the sleep ends as scheduled, then the loop stops the cells
            time.sleep(seconds)

    def restore(self) -> None:
        signal.signal(signal.SIGTERM, self.previous)


def _stop_running(study: Study, root: Path, todo: list, running: list, commit: Commit, signum: int,
                  why: str | None = None) -> None:
    """Pass ``signum`` to every running cell's ``stare compare`` (its ``stare train`` checkpoints the step in
    progress and exits), wait for them all, and commit a cell that finished meanwhile. ``why``: what the log says
    stopped them (default: the signal's name)."""
    name = why or signal.Signals(signum).name
    print(f"{time.strftime('%H:%M:%S')} {name}: stopping {len(running)} running cell(s); each checkpoints its "
          f"current step", flush=True)
    for _, proc, _ in running:
        try:
            os.kill(proc.pid, signum)
        except ProcessLookupError:
            pass
    while any(proc.poll() is None for _, proc, _ in running):
        time.sleep(0.5)
    for item in list(running):
        c, proc, d = item[0], item[1], run_dir(root, item[0])
        if proc.returncode == 0 and (d / DONE).is_file():
            continue  # finished before the signal reached it: _reap commits it
        steps = [int(p.name.split("-")[1]) for p in d.glob("checkpoint-*") if (p / "trainer_state.json").is_file()]
        print(f"{time.strftime('%H:%M:%S')} stopped {c.method}/seed{c.seed}{_where(c)}: last checkpoint "
              f"{max(steps, default=None)}; the next driver resumes it from there", flush=True)
        todo.insert(0, c)
        running.remove(item)
    _reap(study, root, todo, running, commit)


def _adopt_running(root: Path, todo: list, running: list) -> int:
    """Move every queued cell that a foreign ``stare compare`` is running into ``running`` (:class:`Adopted`); a cell
    of a conditional block not reached yet (a previous driver decided it and started the cell) is adopted too and
    stays in its block, which leaves it out when it is expanded (:func:`_expand`). Returns how many."""
    procs = foreign_runs(exclude={p.pid for _, p, _ in running if not isinstance(p, Adopted)})
    held = {c for c, _, _ in running}
    queued = [x for x in todo if isinstance(x, Cell)]
    in_blocks = [c for x in todo if isinstance(x, Block) for c in x.cells()]
    adopted = 0
    for c in [*queued, *in_blocks]:
        pid = None if c in held else runner(root, c, procs)
        if pid:
            if c in todo:
                todo.remove(c)
            running.append((c, Adopted(pid), time.time()))
            held.add(c)
            print(f"{time.strftime('%H:%M:%S')} adopted: pid {pid} (a stare compare this driver did not start) is "
                  f"running {c.method}/seed{c.seed}{_where(c)}; the cell is committed here when that process ends",
                  flush=True)
            adopted += 1
    return adopted


def _reap(study: Study, root: Path, todo: list, running: list, commit: Commit,
          refill: Callable[[], None] | None = None) -> None:
    """Finish (commit) the running cells whose process has ended with the cell done; a cell whose adopted process
    ended without finishing it goes back to the head of ``todo`` (started again, it resumes from its checkpoint).
    ``refill``, if given, is called once such a cell has left ``running`` and before its commit (the grid's report,
    the export, the study's analysis and the docs take a minute or two, on the CPU the next cell would wait for):
    it starts the next cells in the freed slots. The analysis reads the finished cell's run dir either way."""
    done = []
    for item in list(running):
        c, proc, t0 = item
        if proc.poll() is None:
            continue
        running.remove(item)
        if proc.returncode == 0 and (run_dir(root, c) / DONE).is_file():
            done.append(c)
        elif isinstance(proc, Adopted):
            todo.insert(0, c)
            print(f"{time.strftime('%H:%M:%S')} pid {proc.pid} ended without finishing {c.method}/seed{c.seed}"
                  f"{_where(c)}; it is back in the queue (started again, it resumes from its last checkpoint)", flush=True)
        else:
            print(f"{time.strftime('%H:%M:%S')} FAILED {c.method}/seed{c.seed} (exit {proc.returncode}) after "
                  f"{time.time() - t0:.0f} s; log {root / 'logs'}", flush=True)
    if done and refill is not None:
        refill()
        # A block the refill decided lists an ended cell again (it has left ``running`` and is not committed yet),
        # and the refill may have committed it already (a done cell at the head of the queue): each is committed
        # once (2026-11-29: an adopted cell's end was committed twice, its grid report refreshed in between).
        todo[:] = [x for x in todo if not (isinstance(x, Cell) and x in done)]
    for c in done:
        if not study.committed(c):
            finish(study, root, c, commit)


def environment_problem() -> str | None:
    """Why this interpreter cannot drive a study (it cannot import stare_rl, or has no ``stare`` beside it: the
    cells run ``BIN/stare``), naming it; None when it can."""
    if importlib.util.find_spec("stare_rl") is None:
        return (f"{sys.executable} cannot import stare_rl: run the driver with the Python of the environment where "
                "stare-rl is installed (pip install -e '.[all]'), e.g. .venv/bin/python")
    if not (BIN / "stare").is_file():
        return f"no `stare` command beside {sys.executable} ({BIN / 'stare'}): run the driver with its environment's Python"
    return None


def main(study: Study, script: str, doc: str, argv: list[str] | None = None, commit: Commit = git_commit) -> int:
    """The command line of ``python <script>``; ``doc`` is the study's docstring (its first paragraph is --help's)."""
    p = argparse.ArgumentParser(prog=f"python {Path(script).resolve().relative_to(ROOT)}",
                                description=doc.split("\n\n")[0])
    p.add_argument("--run-root", type=Path, default=study.run_root, help="run directories (outside the repo)")
    p.add_argument("--parallel", type=int, default=study.parallel)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--status", action="store_true", help="with --dry-run's list, the progress of unfinished cells")
    p.add_argument("--until", default=None, metavar="HH:MM",
                   help="start only cells that should finish by then (the machine's clock, today; each at 1.1x the "
                        "mean time of the committed cells of its model): a session's or a batch job's end")
    p.add_argument("--stop-at", default=None, metavar="HH:MM",
                   help="at that time, stop the running cells as `kill DRIVER_PID` does (each checkpoints its current "
                        "step; the next driver resumes it) and exit: a session's or a batch job's hard end")
    args = p.parse_args(argv)
    root = args.run_root.resolve()
    missing = environment_problem()
    if missing:  # before any listing: the rules read the cells with stare_rl, and every cell runs BIN/stare
        print(missing, file=sys.stderr)
        return 2
    if args.status:
        print(status(study, root))
        return 0
    if args.dry_run:
        print(dry_run(study, root))
        return 0
    unset = {k: why for k, why in study.needs_env.items() if not os.environ.get(k)}
    if unset:
        print("; ".join(f"set {k}: {why}" for k, why in unset.items()), file=sys.stderr)
        return 2
    try:
        block_pages(study.doc_blocks)  # an unknown block name fails now, not after the first cell's hour
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    times: dict[str, float | None] = {"--until": None, "--stop-at": None}
    for flag, text in (("--until", args.until), ("--stop-at", args.stop_at)):
        if text is not None:
            try:
                times[flag] = parse_until(text, flag=flag)
            except ValueError as err:
                print(err, file=sys.stderr)
                return 2
    return run(study, root, args.parallel, commit, times["--until"], times["--stop-at"])
