"""Several ``stare verl-dryrun`` launches in one process on one Ray cluster (the verl end-to-end tests' driver).

``python _verl_runs.py <plan.json>``: the plan is a list of runs ``{"tag", "argv", "out", "metrics"}``, where
``argv`` is :func:`stare_rl.engines.verl.cpu.dryrun.dryrun_command`'s command line (``python -m <entry point>
<Hydra overrides>``). Each run calls that entry point's own Hydra ``main`` in this process, as ``python -m``
would, with ``sys.argv`` set to the command's arguments; verl's ``run_ppo`` then finds Ray initialised and
reuses it. Ray starts once here, with what ``run_ppo`` would give it: the first run's ``ray_kwargs.ray_init``
and verl's runtime environment variables, set in this process before ``ray.init`` so that every worker
inherits them, as it inherits the dry run's (:func:`~stare_rl.engines.verl.cpu.dryrun.dryrun_env`).

What one launch per run would pay again and this driver pays once: the interpreter importing verl and Ray's
start-up (with the driver's imports, 25-35 s of a ~135 s 2-step run on a loaded 2-core machine).

verl's file logger writes ``<VERL_FILE_LOGGER_ROOT>/<project>/<experiment>.jsonl`` when no path is given (the
workers' environment is fixed at ``ray.init``): each run gets its own experiment name, and its rows are moved
to ``run["metrics"]`` afterwards. Each run's outcome (``rc`` 0 or the error) goes to ``<out>/run_<tag>.json``.
Runs are sequential: TransferQueue's controller is a cluster-wide named actor, so the driver waits until the
previous run's named actors are gone and its resources free before the next starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from stare_rl.engines.verl.cpu.dryrun import dryrun_env

PROJECT = "stare_rl_e2e"
# Named actors that must be gone before the next run: TransferQueue's (cluster-wide) and the hf rollout's.
NAMED = (("TransferQueueController", "transfer_queue"), ("stare_rl_hf_rollout_0", None))


def override(argv: list[str], key: str) -> str | None:
    for a in argv:
        if a.startswith(f"{key}="):
            return a.split("=", 1)[1]
    return None


def start_ray(first_argv: list[str]) -> None:
    """``ray.init`` as verl's ``run_ppo`` would for the first run (its ``ray_init`` and runtime env vars)."""
    import ray
    from omegaconf import OmegaConf
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    from stare_rl.engines.verl.cpu.dryrun import compose_config

    i = first_argv.index("-m")
    config_dir = override(first_argv, "--config-path")
    name = override(first_argv, "--config-name")
    cfg = compose_config(config_dir, name, first_argv[i + 4:])
    env = get_ppo_ray_runtime_env(cfg)["env_vars"]
    env["TRANSFER_QUEUE_ENABLE"] = "1"  # run_ppo adds it when transfer_queue.enable (the V1 trainer sets it)
    os.environ.update({k: str(v) for k, v in env.items()})
    kwargs = OmegaConf.to_container(cfg.ray_kwargs.ray_init, resolve=True)
    kwargs.pop("runtime_env", None)  # its env vars are in os.environ now: the workers inherit it
    kwargs["include_dashboard"] = False  # nothing reads it; one process less to start
    for attempt in (1, 2, 3):  # Ray gives its raylet 30 s to register, which a loaded 2-core machine can miss
        before = children()
        try:
            ray.init(**kwargs)
            return
        except Exception as err:  # noqa: BLE001 - retried twice, then raised
            print(f"===== ray.init attempt {attempt} failed: {err}", flush=True)
            ray.shutdown()
            for pid in children() - before:  # the failed start's GCS, monitor, dashboard: ray.shutdown leaves
                with contextlib.suppress(OSError):  # them, and Ray's monitor ignores SIGTERM (this process would
                    os.kill(pid, signal.SIGKILL)  # then wait for it at exit instead of failing)
            if attempt == 3:
                raise


def children() -> set[int]:
    """This process's child processes (from /proc)."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                if stat[stat.rindex(")") + 2:].split()[1] == me:
                    found.add(int(entry))
    return found


def wait_previous_run_gone(timeout: float = 120.0) -> None:
    """Remove the last run's placement groups (a job's live until its driver exits, and verl's resource pool
    holds the logical GPU in one), then wait until its named actors are gone and the GPU is free again."""
    import ray
    from ray.util.placement_group import PlacementGroup, placement_group_table, remove_placement_group

    for pg_id, info in placement_group_table().items():
        if info["state"] != "REMOVED":
            remove_placement_group(PlacementGroup(ray.PlacementGroupID(bytes.fromhex(pg_id))))
    deadline = time.monotonic() + timeout
    total = ray.cluster_resources()
    for name, namespace in NAMED:
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name, namespace=namespace)
            except ValueError:
                break
            time.sleep(0.2)
    while time.monotonic() < deadline and ray.available_resources().get("GPU", 0) < total.get("GPU", 0):
        time.sleep(0.2)


def launch(argv: list[str]) -> None:
    """``python -m <module> <args>`` in this process (``argv[0]`` is the interpreter)."""
    i = argv.index("-m")
    module, args = argv[i + 1], argv[i + 2:]
    sys.argv = [module, *args]
    if module == "stare_rl.engines.verl.main":
        from stare_rl.engines.verl.main import main  # what its `python -m` runs (see that module's __main__)
    elif module == "verl.trainer.main_ppo":
        from verl.trainer.main_ppo import main  # Hydra's main: parses sys.argv as `python -m` would
    else:
        raise ValueError(f"entry point {module!r}: not one of the dry run's two")
    main()


def run_one(run: dict, log_root: Path) -> dict:
    out = Path(run["out"])
    argv = [*run["argv"], f"trainer.project_name={PROJECT}", f"trainer.experiment_name={run['tag']}"]
    started = time.monotonic()
    result: dict = {"tag": run["tag"], "rc": 0}
    cwd = os.getcwd()
    try:
        os.chdir(out)
        print(f"===== stare_rl e2e run {run['tag']}: {' '.join(argv[1:4])}", flush=True)
        launch(argv)
    except SystemExit as err:  # Hydra exits 1 on an error it has printed
        result = {"tag": run["tag"], "rc": err.code if isinstance(err.code, int) else 1, "error": repr(err)}
    except Exception as err:  # noqa: BLE001 - reported to the test, which fails with it
        result = {"tag": run["tag"], "rc": 1, "error": "".join(traceback.format_exception(err))[-4000:]}
    finally:
        os.chdir(cwd)
    rows = log_root / PROJECT / f"{run['tag']}.jsonl"
    if rows.is_file():
        os.replace(rows, run["metrics"])
    result["wall_s"] = round(time.monotonic() - started, 1)
    (out / f"run_{run['tag']}.json").write_text(json.dumps(result))
    wait_previous_run_gone()
    return result


def main(plan_path: str) -> int:
    plan = json.loads(Path(plan_path).read_text())
    log_root = Path(plan_path).resolve().parent / "file_logger"
    env = dryrun_env()  # the CPU platform etc., before verl is imported (its plugin reads it)
    env.pop("VERL_FILE_LOGGER_PATH", None)
    env["VERL_FILE_LOGGER_ROOT"] = str(log_root)
    os.environ.clear()
    os.environ.update(env)
    started = time.monotonic()
    start_ray(plan[0]["argv"])
    print(f"===== ray up in {time.monotonic() - started:.1f} s", flush=True)
    import ray

    try:
        for run in plan:
            print(f"===== {run_one(run, log_root)}", flush=True)
    finally:  # also on the fixture's SIGINT (KeyboardInterrupt) at its timeout
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
