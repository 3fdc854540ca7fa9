"""Do the CPU kernels change the bits? 30 SFT warm-start steps of the tiny model, then a hash of the weights.
(``--steps``, ``--eval-rows``, ``--train-rows`` shrink it; the test suite's smoke run uses 2 steps on few rows.)

Run it under different kernel settings on one machine and compare the hashes (docs/train.md, Reproducibility):

    OMP_NUM_THREADS=1 python3 benchmarks/repro_kernels.py 1
    OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 python3 benchmarks/repro_kernels.py 1
    OMP_NUM_THREADS=1 MKL_CBWR=AVX2 python3 benchmarks/repro_kernels.py 1
    OMP_NUM_THREADS=2 python3 benchmarks/repro_kernels.py 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import time

import torch


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("threads", type=int, nargs="?", default=1, help="torch intra-op threads")
    ap.add_argument("--steps", type=int, default=30, help="SFT steps")
    ap.add_argument("--eval-rows", type=int, default=128, help="held-out prompts of the final evaluation")
    ap.add_argument("--train-rows", type=int, default=20000, help="SFT rows")
    args = ap.parse_args(argv)
    threads, steps = args.threads, args.steps
    torch.set_num_threads(threads)
    from safetensors.torch import load_file

    from stare_rl.train.warmstart import WarmStartConfig, warm_start

    cfg = WarmStartConfig(learning_rate=2e-3, max_steps=steps, eval_every=steps, stop_avg_at_k=1.0, stop_greedy_acc=1.0,
                          eval_rows=args.eval_rows, train_rows=args.train_rows)
    with tempfile.TemporaryDirectory() as d:
        start = time.time()
        path = warm_start("arithmetic", d, seed=0, config=cfg, progress=False)
        weights = load_file(os.path.join(path, "model.safetensors"))
        digest = hashlib.sha256(b"".join(weights[k].numpy().tobytes() for k in sorted(weights))).hexdigest()[:12]
        with open(os.path.join(path, "warmstart.json")) as f:
            final = json.load(f)["final"]
    print(f"cpu_capability={torch.backends.cpu.get_cpu_capability()} threads={threads} "
          f"MKL_CBWR={os.environ.get('MKL_CBWR')} weights={digest} entropy={final['entropy']:.9f} "
          f"wall={time.time() - start:.0f}s")


if __name__ == "__main__":
    main()
