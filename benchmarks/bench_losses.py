"""Loss + backward time of every registered method against ``vanilla``, measured side by side in one run.

    OMP_NUM_THREADS=1 python3 benchmarks/bench_losses.py --batch 64 --seq 2048 --repeats 15
    python3 benchmarks/bench_losses.py --device cuda --batch 512 --seq 2048    # on a GPU: 1M tokens

Every variant gets the same ``(B, T)`` batch (GRPO-like advantages, ragged mask, entropy, the old policy's
entropy when a registered method declares ``needs_old_entropy``, e.g. STEER, and the 0/1 rewards when one declares
``needs_rewards``, e.g. Entrocraft). One timed step is
``compute_loss(...)`` + ``aggregate(...)`` + ``backward()`` w.r.t. ``log_prob`` (the batch and its validation
are built once, outside the timing). Repeats are interleaved round-robin across variants (in a shuffled order
each round) so that drifts of a shared CPU hit all of them alike. The table reports, per variant, the median
and the min CPU time, the ratio of medians to vanilla, the ratio of mins, and the median of the per-round
ratios (each round times every variant once, so a busy moment inflates a whole round). The load average is
printed before and after: on a loaded machine trust the per-round and min ratios more than the medians.
With ``--device cuda`` the batch lives on the GPU, the clock is the wall clock read after
``torch.cuda.synchronize()`` (the kernels' time, not their launch), and a column gives each step's peak CUDA
memory above what the batch itself holds.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable

import torch

from stare_rl import (
    LossContext,
    SurrogateConfig,
    TokenBatch,
    aggregate,
    compute_loss,
    list_methods,
    make_config,
)
from stare_rl.core.entropy_bonus import EntropyBonusConfig, add_entropy_bonus
from stare_rl.core.registry import get_method


def make_batch(b: int, t: int, seed: int = 0, old_entropy: bool | None = None,
               with_rewards: bool | None = None, device: str = "cpu") -> TokenBatch:
    """One GRPO-like ``(B, T)`` batch. ``old_entropy``: also the old policy's entropy (None: when any registered
    method declares ``needs_old_entropy``), near the current one as after a few updates; ``with_rewards``: also
    the 0/1 rewards the advantages come from (None: when any registered method declares ``needs_rewards``);
    drawn on the CPU (the same numbers on every device), then moved to ``device``."""
    if old_entropy is None:
        old_entropy = any(get_method(name).needs_old_entropy for name in list_methods())
    if with_rewards is None:
        with_rewards = any(get_method(name).needs_rewards for name in list_methods())
    g = torch.Generator().manual_seed(seed)
    log_prob = -torch.empty(b, t).exponential_(1.0, generator=g)  # (B, T)
    old_log_prob = log_prob + 0.05 * torch.randn(b, t, generator=g)
    lengths = torch.randint(t // 4, t + 1, (b,), generator=g)
    mask = (torch.arange(t).unsqueeze(0) < lengths.unsqueeze(1)).float()  # (B, T) right padding
    rewards = (torch.rand(b // 8 if b >= 8 else 1, 8, generator=g) > 0.5).float()  # groups of 8
    adv = (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-6)
    adv = adv.reshape(-1)[:b].unsqueeze(1) * mask  # (B, T)
    entropy = 2.0 * torch.rand(b, t, generator=g)  # (B, T)
    old = (entropy + 0.05 * torch.randn(b, t, generator=g)).clamp(min=0.0) if old_entropy else None  # (B, T)
    per_token_rewards = rewards.reshape(-1)[:b].unsqueeze(1) * mask if with_rewards else None  # (B, T)
    def to(x: torch.Tensor | None) -> torch.Tensor | None:
        return None if x is None else x.to(device)

    return TokenBatch(log_prob.to(device).requires_grad_(True), to(old_log_prob), to(adv), to(mask), to(entropy),
                      old_entropy=to(old), rewards=to(per_token_rewards))


def variants() -> dict[str, Callable[[TokenBatch], torch.Tensor]]:
    """name -> function computing the scalar loss of one step."""
    sur = SurrogateConfig()
    gen = torch.Generator().manual_seed(0)

    def method(name: str, **cfg: object) -> Callable[[TokenBatch], torch.Tensor]:
        config = make_config(name, **cfg)

        def step(batch: TokenBatch) -> torch.Tensor:
            out = compute_loss(name, batch, config, sur, LossContext(stats={"gate_on": True}, generator=gen))
            return aggregate(out.token_loss, batch.mask, sur.loss_agg_mode)

        return step

    out = {name: method(name) for name in list_methods()}
    if "stare" in out:
        out["stare (C2)"] = method("stare", variant="C2")
    if "steer" in out:
        out["steer (linear)"] = method("steer", mapping="linear")

    def with_bonus(batch: TokenBatch) -> torch.Tensor:
        res = add_entropy_bonus(compute_loss("vanilla", batch, None, sur), batch, EntropyBonusConfig())
        return aggregate(res.token_loss, batch.mask, sur.loss_agg_mode)

    out["vanilla + entropy_bonus"] = with_bonus
    return out


def time_step(fn: Callable[[TokenBatch], torch.Tensor], batch: TokenBatch, clock: Callable[[], float],
              peaks: list[float] | None = None) -> float:
    """One timed step; on CUDA also appends the step's peak memory above the live tensors before it (MiB)."""
    batch.log_prob.grad = None
    cuda = batch.log_prob.is_cuda
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    t0 = clock()
    fn(batch).backward()
    dt = clock() - t0
    if cuda and peaks is not None:
        peaks.append((torch.cuda.max_memory_allocated() - base) / 2**20)
    return dt


def cuda_clock() -> float:
    """Wall time after the queued kernels finished."""
    torch.cuda.synchronize()
    return time.perf_counter()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument(
        "--clock", choices=("cpu", "wall"), default="cpu",
        help="cpu: time.process_time (robust on a shared CPU with --threads 1); wall: time.perf_counter",
    )
    ap.add_argument("--profile", default=None, help="print a torch.profiler per-op table of this variant and exit")
    ap.add_argument("--variants", default=None, help="comma-separated subset of the variants (vanilla always runs)")
    ap.add_argument("--compile", action="store_true",
                    help="also time each variant wrapped in torch.compile (rows 'NAME +compile'; compile time untimed)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda: wall clock after synchronize, peak memory)")
    args = ap.parse_args(argv)
    if args.device != "cpu" and not (args.device.startswith("cuda") and torch.cuda.is_available()):
        raise SystemExit(f"--device={args.device!r}: torch sees no such device (cpu, or cuda where a GPU is present)")
    torch.set_num_threads(args.threads)
    batch = make_batch(args.batch, args.seq, device=args.device)
    fns = variants()
    if args.variants is not None:
        wanted = ["vanilla", *[v for v in args.variants.split(",") if v != "vanilla"]]
        unknown = [v for v in wanted if v not in fns]
        if unknown:
            raise SystemExit(f"--variants: unknown {unknown}; known: {list(fns)}")
        fns = {v: fns[v] for v in wanted}
    if args.compile:
        for name, fn in list(fns.items()):
            compiled = torch.compile(fn)
            try:  # compiles here, untimed; a variant that cannot be compiled is named and left out
                time_step(compiled, batch, time.perf_counter)
            except Exception as e:  # noqa: BLE001  (dynamo raises many types)
                print(f"{name} +compile: not compiled ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
                continue
            fns[f"{name} +compile"] = compiled
    if args.profile is not None:
        profile_variant(fns[args.profile], batch, args.repeats)
        return
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if batch.log_prob.is_cuda:
        clock = cuda_clock
    times: dict[str, list[float]] = {name: [] for name in fns}
    peaks: dict[str, list[float]] = {name: [] for name in fns}
    order = list(fns)
    shuffle = random.Random(0).shuffle
    load_before = os.getloadavg()
    for r in range(args.warmup + args.repeats):
        shuffle(order)
        for name in order:
            dt = time_step(fns[name], batch, clock, peaks[name])
            if r >= args.warmup:
                times[name].append(dt)
    load_after = os.getloadavg()
    print_table(args, batch, times, load_before, load_after, peaks)


def profile_variant(fn: Callable[[TokenBatch], torch.Tensor], batch: TokenBatch, repeats: int) -> None:
    """Per-op self CPU time of ``repeats`` steps (the profiler reads wall time: noisy on a shared machine)."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        time_step(fn, batch, time.perf_counter)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            time_step(fn, batch, time.perf_counter)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=28))


def print_table(
    args: argparse.Namespace,
    batch: TokenBatch,
    times: dict[str, list[float]],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    peaks: dict[str, list[float]] | None = None,
) -> None:
    base, base_min = statistics.median(times["vanilla"]), min(times["vanilla"])
    cuda = batch.log_prob.is_cuda
    where = (f"device={torch.cuda.get_device_name(batch.log_prob.device)} torch {torch.__version__} "
             "clock=wall after synchronize") if cuda else f"threads={torch.get_num_threads()} clock={args.clock}"
    print(f"B={args.batch} T={args.seq} tokens={args.batch * args.seq} valid={batch.n_valid} "
          f"{where} repeats={args.repeats} (interleaved, shuffled)")
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in load_after) + f"; cpus={os.cpu_count()}")
    mem = cuda and peaks is not None
    print(f"{'method':<26}{'median ms':>10}{'min ms':>9}{'x median':>10}{'x min':>8}{'x per-round':>13}"
          + (f"{'peak MiB':>10}{'x':>7}" if mem else ""))
    for name, ts in times.items():
        med = statistics.median(ts)
        per_round = statistics.median(t / v for t, v in zip(ts, times["vanilla"], strict=True))
        row = (f"{name:<26}{med * 1e3:>10.2f}{min(ts) * 1e3:>9.2f}{med / base:>10.3f}{min(ts) / base_min:>8.3f}"
               f"{per_round:>13.3f}")
        if mem:
            row += f"{max(peaks[name]):>10.0f}{max(peaks[name]) / max(peaks['vanilla']):>7.2f}"
        print(row)


if __name__ == "__main__":
    main()
