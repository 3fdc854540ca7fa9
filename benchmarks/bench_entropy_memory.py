"""Peak extra memory of the chunked log-prob/entropy (``stare_rl.core.tokens.logprobs_and_entropy``) against a naive
full-vocabulary log-softmax, at a realistic vocabulary (Qwen2.5/3: V = 151,936).

    python3 benchmarks/bench_entropy_memory.py --tokens 2048 --vocab 151936 --dtype bfloat16

How it is measured (why not tracemalloc): torch allocates tensor memory in C++, invisible to tracemalloc, and
the CPU build keeps no allocator statistics. So every variant runs in its own fresh subprocess, which
1. builds the logits ``(N, V)`` and the sampled tokens and runs the variant once on 128 rows (one-time
   library set-up, ~30 MiB on the first call, is not counted),
2. resets the kernel's peak-RSS counter (``echo 5 > /proc/self/clear_refs`` resets ``VmHWM``, Linux >= 4.0)
   and reads the current ``VmRSS``,
3. runs the variant under ``torch.no_grad()`` (how entropy is computed for selections and metrics) or with
   gradients (``--grad``), and reads ``VmHWM``.
Peak extra = VmHWM - VmRSS before the call: all memory the call touched at its peak, outputs included. The
children run with ``MALLOC_MMAP_THRESHOLD_=65536``: glibc then serves every block above 64 KiB with mmap and
returns it on free (its default threshold adapts upwards, after which freed blocks stay in the heap and RSS
no longer follows the live tensors).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _proc import status_kib

MiB = 1024 * 1024


def _child(variant: str, n: int, v: int, dtype_name: str, chunk: int, grad: bool, temperature: float) -> dict:
    import torch

    from stare_rl.core.tokens import logprobs_and_entropy

    torch.set_num_threads(1)
    dtype = getattr(torch, dtype_name)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(n, v, generator=g).to(dtype)  # (N, V) the model's output
    tokens = torch.randint(0, v, (n,), generator=g)

    def naive(x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logp = torch.log_softmax(x.float() / temperature, dim=-1)  # (N, V) full float32 copy
        return logp.gather(-1, t.unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)

    def chunked(x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lp, ent = logprobs_and_entropy(x, t, temperature, chunk_size=chunk)
        assert ent is not None
        return lp, ent

    fn = naive if variant == "naive" else chunked
    fn(logits[:128].clone(), tokens[:128])  # warm-up: one-time library/thread-pool set-up is not counted
    if grad:
        logits.requires_grad_(True)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = status_kib("VmRSS")
    with torch.set_grad_enabled(grad):
        lp, ent = fn(logits, tokens)
        if grad:
            (lp.sum() + ent.sum()).backward()
    peak = status_kib("VmHWM")
    return {"extra_mib": (peak - before) / 1024, "checksum": float(lp.double().sum() + ent.double().sum())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=151_936)
    ap.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    ap.add_argument("--chunks", default="128,256,1024")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--grad", action="store_true", help="also backward through log-prob and entropy")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        variant, chunk = args.child.split(":")
        print(json.dumps(_child(variant, args.tokens, args.vocab, args.dtype, int(chunk), args.grad,
                                args.temperature)))
        return
    n, v = args.tokens, args.vocab
    itemsize = 2 if args.dtype == "bfloat16" else 4
    print(f"N={n} tokens, V={v}, logits {args.dtype} = {n * v * itemsize / MiB:.0f} MiB, "
          f"temperature={args.temperature}, grad={'yes' if args.grad else 'no (torch.no_grad)'}")
    print(f"{'variant':<22}{'peak extra MiB':>15}{'(chunk,V) fp32 MiB':>20}{'x chunk':>9}{'x full fp32':>13}")
    full = n * v * 4 / MiB
    runs = [("naive", 0)] + [("chunked", int(c)) for c in args.chunks.split(",")]
    sums = []
    for variant, chunk in runs:
        cmd = [sys.executable, __file__, "--child", f"{variant}:{chunk}", "--tokens", str(n), "--vocab", str(v),
               "--dtype", args.dtype, "--temperature", str(args.temperature)] + (["--grad"] if args.grad else [])
        env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
        res = json.loads(out.strip())
        sums.append(res["checksum"])
        block = min(chunk, n) * v * 4 / MiB if chunk else full
        name = "naive log_softmax" if variant == "naive" else f"chunked, chunk={chunk}"
        per_chunk = f"{res['extra_mib'] / block:>9.2f}" if chunk else f"{'-':>9}"
        print(f"{name:<22}{res['extra_mib']:>15.1f}{block:>20.1f}{per_chunk}{res['extra_mib'] / full:>13.2f}")
    spread = max(sums) - min(sums)
    print(f"same results: checksum spread {spread:.3g} over {n} log-probs + entropies")


if __name__ == "__main__":
    main()
