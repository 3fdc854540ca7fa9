"""Training-step cost at LLM vocabulary size: plain TRL GRPOTrainer vs the stare-rl adapter and its methods.

    OMP_NUM_THREADS=1 python3 benchmarks/bench_step_vocab.py [--vocab 151936 | --vocab 128256] [--repeats 2]
    python3 benchmarks/bench_step_vocab.py --device cuda --hidden 256 --batch 32 --generations 8 --completion 32
    python3 benchmarks/bench_step_vocab.py --model smollm2-135m-instruct --variants plain,vanilla,stare,steer

``--model``: a real pretrained chat model (a name of ``stare models list``, built on first use, or an HF dir)
instead of the random one, on the chat questions of the ``chat_arithmetic`` task, and the step split into where
its time goes: generation (``model.generate``), the training forwards (every other forward of the model: the
old/reference log-probabilities and the loss's forward) and the rest (backward, optimizer, rewards, the
method's own work).

What runs: a Qwen2 model built from a config (random init, no download; small hidden size, so the vocabulary
projection and the per-token softmax statistics dominate, which is the worst case for any per-vocabulary
extra work) with V = 151,936 (Qwen2.5) or 128,256 (Llama 3), and a word-level tokenizer of exactly V entries
built offline (the arithmetic alphabet, four specials, then filler words). Real ``GRPOTrainer`` steps on
CPU: generation, rewards, the training forward through TRL's fused LM head, loss, backward, optimizer.

Variants (each in its own fresh subprocess, run round-robin ``--repeats`` times so that the drifts of a shared
CPU hit every variant alike): ``plain`` TRL (``loss_type="dapo"``, the same clip range as the surrogate),
``vanilla`` (StareGRPOTrainer + the registered vanilla loss: the adapter itself), ``stare`` (gate held on by
a high target entropy), ``steer``, ``80/20`` (``high_entropy``, rho = 0.2). Adapter defaults otherwise
(quadrant diagnostics on).

Measured per optimizer step (after ``--warmup`` untimed steps): CPU seconds of the process
(``time.process_time``, one torch thread: what a shared machine does not inflate) and wall seconds; the
reported figure per variant is the mean over its timed steps (with ``--iterations N`` one generation batch serves N
optimizer steps: take ``--steps`` a multiple of N), of its least
disturbed repeat (``x plain``) and the median over repeats (``x (median)``). Memory: before every step the
kernel's peak-RSS counter is reset (``echo 5 > /proc/self/clear_refs``) and ``VmRSS`` read; after it,
``VmHWM``. Step peak = the largest ``VmHWM - VmRSS(before)`` over the timed steps: everything the step
allocated at its peak (activations, logits tiles, gradients, optimizer temporaries), independent of the
model and optimizer state that every variant holds alike. glibc returns freed large blocks to the OS
(``MALLOC_MMAP_THRESHOLD_=65536``) so that RSS follows the live tensors. Ratios are to ``plain``.

``--device cuda``: the model on the GPU in bf16 mixed precision (what TRL does there), wall time per step read
after ``torch.cuda.synchronize()`` (the primary figure), and the step's peak CUDA memory above what was allocated
when it began (``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``) instead of RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from _proc import status_kib

VARIANTS = ("plain", "vanilla", "stare", "steer", "80/20")
_METHOD = {"vanilla": "vanilla", "stare": "stare", "steer": "steer", "80/20": "high_entropy"}


def build_vocab_tokenizer(vocab_size: int) -> Any:
    """A word-level fast tokenizer with exactly ``vocab_size`` entries, built offline.

    Ids 0-3 are ``<pad> <bos> <eos> <unk>``, then the arithmetic alphabet (one token per character), then
    filler words ``<w4> ...`` up to ``vocab_size`` (what a random model mostly samples).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    words = [*specials, *"0123456789+="]
    words += [f"<w{i}>" for i in range(len(words), vocab_size)]
    vocab = {w: i for i, w in enumerate(words)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")  # prompts: one char a token
    backend.decoder = decoders.Fuse()
    backend.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>",
                                  pad_token="<pad>", unk_token="<unk>", padding_side="left", model_max_length=512)
    if len(tok) != vocab_size:
        raise RuntimeError(f"tokenizer has {len(tok)} entries, wanted {vocab_size}")
    return tok


def _reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
    """A deterministic reward that varies between completions (so advantages are non-zero)."""
    return [float(len(c) % 7) / 6.0 for c in completions]


class _StepProbe:
    """CPU/wall time and peak RSS of every optimizer step (a TrainerCallback factory)."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.peak_kib: list[int] = []
        self.gen: list[float] = []  # wall seconds in model.generate per step
        self.fwd: list[float] = []  # wall seconds in the model's other forwards per step
        self._gen = self._fwd = 0.0
        self._t0 = (0.0, 0.0)
        self._rss0 = 0
        self.cuda = False

    def callback(self) -> Any:
        from transformers import TrainerCallback

        probe = self

        class Probe(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
                if probe.cuda:
                    import torch

                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                    probe._rss0 = torch.cuda.memory_allocated() // 1024
                else:
                    with open("/proc/self/clear_refs", "w") as f:
                        f.write("5")  # VmHWM <- VmRSS
                    probe._rss0 = status_kib("VmRSS")
                probe._t0 = (time.process_time(), time.perf_counter())
                probe._gen = probe._fwd = 0.0

            def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
                if probe.cuda:
                    import torch

                    torch.cuda.synchronize()
                    peak = torch.cuda.max_memory_allocated() // 1024
                else:
                    peak = status_kib("VmHWM")
                probe.cpu.append(time.process_time() - probe._t0[0])
                probe.wall.append(time.perf_counter() - probe._t0[1])
                probe.peak_kib.append(peak - probe._rss0)
                probe.gen.append(probe._gen)
                probe.fwd.append(probe._fwd)

        return Probe()

    def time_phases(self, model: Any) -> None:
        """Accumulate the wall time of ``model.generate`` and of the model's forwards outside it."""
        generate, inside = model.generate, [False]

        def timed_generate(*a: Any, **k: Any) -> Any:
            t0, inside[0] = time.perf_counter(), True
            try:
                return generate(*a, **k)
            finally:
                inside[0] = False
                self._gen += time.perf_counter() - t0

        model.generate = timed_generate
        started: list[float] = []
        body = getattr(model, "model", model)  # the decoder: TRL's fused LM head calls it, not model.forward
        body.register_forward_pre_hook(lambda *_: started.append(time.perf_counter()))

        def done(*_: Any) -> None:
            t0 = started.pop()
            if not inside[0]:
                self._fwd += time.perf_counter() - t0

        body.register_forward_hook(done)


def run_child(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    """One training run of ``variant``; returns its per-step measurements."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, Qwen2Config
    from transformers.trainer_callback import PrinterCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    from stare_rl.tasks import get_task
    from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer

    hf_logging.set_verbosity_error()
    torch.set_num_threads(1)
    cuda = args.device == "cuda"
    torch.manual_seed(0)
    if args.model:  # a real pretrained chat model on chat questions
        from stare_rl.models.pretrained import resolve_model
        from stare_rl.models.tokenizer import load_tokenizer

        path = resolve_model(args.model)
        tok, model = load_tokenizer(path), AutoModelForCausalLM.from_pretrained(path)
        ds = Dataset.from_list(get_task("chat_arithmetic").make_split("train", 126, 0))
    else:
        tok = build_vocab_tokenizer(args.vocab)
        config = Qwen2Config(
            vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64, tie_word_embeddings=True,
            pad_token_id=0, bos_token_id=1, eos_token_id=2,
        )
        model = AutoModelForCausalLM.from_config(config)
        model.generation_config.pad_token_id, model.generation_config.eos_token_id = 0, 2
        ds = Dataset.from_list(get_task("arithmetic").make_split("train", 256, 0))
    probe = _StepProbe()
    probe.cuda = cuda
    probe.time_phases(model)
    common = dict(
        output_dir=tempfile.mkdtemp(prefix="bench-vocab-"), per_device_train_batch_size=args.batch,
        num_generations=args.generations, max_completion_length=args.completion, learning_rate=1e-5,
        lr_scheduler_type="constant", max_steps=args.warmup + args.steps, save_strategy="no", use_cpu=not cuda, seed=0,
        disable_tqdm=True, report_to="none", logging_steps=1, bf16=cuda, dataloader_pin_memory=False,
        gradient_accumulation_steps=args.grad_accum, num_iterations=args.iterations,
    )
    if variant == "plain":  # TRL's own loss: token-mean, clip-higher, as the surrogate's defaults
        trainer = GRPOTrainer(model=model, reward_funcs=_reward, processing_class=tok, train_dataset=ds,
                              args=GRPOConfig(**common, loss_type="dapo", epsilon=0.2, epsilon_high=0.28),
                              callbacks=[probe.callback()])
        trainer.remove_callback(PrinterCallback)  # the adapter does not print every log either
    else:
        method = _METHOD[variant]
        overrides = {"target_entropy": 100.0} if method == "stare" else {}  # gate held on (any model's H < 100)
        stare_args = StareGRPOConfig(**common, method=method, quadrant_metrics=not args.no_quadrants, **overrides)
        trainer = StareGRPOTrainer(model=model, reward_funcs=_reward, processing_class=tok, train_dataset=ds,
                                   args=stare_args, callbacks=[probe.callback()])
    trainer.train()
    gate = [log["control/gate_on"] for log in trainer.state.log_history if "control/gate_on" in log]
    w = args.warmup
    return {"cpu": probe.cpu[w:], "wall": probe.wall[w:], "peak_kib": probe.peak_kib[w:],
            "gen": probe.gen[w:], "fwd": probe.fwd[w:], "gate_on": gate[-1] if gate else None}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=151_936, help="151936 (Qwen2.5) or 128256 (Llama 3)")
    ap.add_argument("--hidden", type=int, default=64, help="model hidden size (small: the vocabulary dominates)")
    ap.add_argument("--batch", type=int, default=8, help="per-device train batch (completions per micro-batch)")
    ap.add_argument("--generations", type=int, default=4, help="completions per prompt")
    ap.add_argument("--completion", type=int, default=16, help="max completion tokens")
    ap.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation (= steps per generation)")
    ap.add_argument("--iterations", type=int, default=1, help="num_iterations (> 1: TRL computes old log-probs)")
    ap.add_argument("--steps", type=int, default=4, help="timed optimizer steps per run")
    ap.add_argument("--warmup", type=int, default=1, help="untimed first steps per run")
    ap.add_argument("--repeats", type=int, default=2, help="round-robin repeats of every variant")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds: start no repeat that the slowest repeat so far says would not finish in time, and "
                    "print the table over the repeats that finished (a lent GPU's time limit then keeps a table)")
    ap.add_argument("--no-quadrants", action="store_true", help="adapter without the quadrant diagnostics")
    ap.add_argument("--model", default=None, help="a real chat model (stare models name or HF dir) instead of the "
                    "random one; --vocab and --hidden then do not apply")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: the model on the GPU in bf16; wall time after synchronize, peak CUDA memory")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("--device=cuda: torch sees no CUDA device")
    if args.child is not None:
        print("RESULT " + json.dumps(run_child(args.child, args)))
        return
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536", "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    passthrough = _drop_values(sys.argv[1:] if argv is None else argv, ("--repeats", "--variants"))
    load_before = os.getloadavg()

    def run_variant(rep: int, variant: str) -> dict[str, Any]:
        cmd = [sys.executable, __file__, "--child", variant, *passthrough]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode or line is None:
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-5000:])
            raise SystemExit(f"{variant} failed (exit {proc.returncode})")
        res = json.loads(line[len("RESULT "):])
        print(f"repeat {rep + 1} {variant:<8} cpu {statistics.fmean(res['cpu']):.3f} s/step  "
              f"wall {statistics.fmean(res['wall']):.3f} s/step  peak {max(res['peak_kib']) / 1024:.0f} MiB"
              + (" (CUDA)" if args.device == "cuda" else "")
              + ("" if res["gate_on"] is None else f"  gate_on {res['gate_on']:.0f}"), flush=True)
        return res

    results = round_robin(variants, args.repeats, run_variant, args.time_budget)
    done = len(next(iter(results.values())))
    if done < args.repeats:
        print(f"time budget {args.time_budget:g} s: {done} of {args.repeats} repeats run; the table is over those")
        args.repeats = done
    print_table(args, results, load_before, os.getloadavg())


def round_robin(variants: list[str], repeats: int, run: Callable[[int, str], dict[str, Any]],
                budget: float | None = None, clock: Callable[[], float] = time.monotonic) -> dict[str, list[dict[str, Any]]]:
    """``run(rep, variant)`` for every variant, ``repeats`` times round-robin. With a ``budget`` (seconds), a
    repeat starts only if the slowest whole repeat so far fits in what is left, so every variant has the same
    number of repeats; the results are those of the repeats that ran."""
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    start, slowest = clock(), 0.0
    for rep in range(repeats):
        began = clock()
        if budget is not None and rep > 0 and began - start + slowest > budget:
            break
        for variant in variants:
            results[variant].append(run(rep, variant))
        slowest = max(slowest, clock() - began)
    return results


def _drop_values(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """argv without ``--name value`` pairs of the given names."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in names:
            skip = True
            continue
        if any(a.startswith(n + "=") for n in names):
            continue
        out.append(a)
    return out


def print_table(args: argparse.Namespace, results: dict[str, list[dict[str, Any]]],
                load_before: tuple[float, ...], load_after: tuple[float, ...]) -> None:
    import torch

    def best(variant: str, key: str) -> float:  # the least disturbed run: min over repeats of its mean step
        return min(statistics.fmean(r[key]) for r in results[variant])

    def typical(variant: str, key: str) -> float:  # median over repeats of the mean step
        return statistics.median(statistics.fmean(r[key]) for r in results[variant])

    def peak(variant: str) -> float:
        return min(max(r["peak_kib"]) for r in results[variant]) / 1024

    base = "plain" if "plain" in results else next(iter(results))
    chunk_mib = min(args.batch, 4096) * (args.completion + 9) * 32768 * 4 / 2**20  # TRL's (tokens, 32768) fp32 tile
    where = (f"{torch.cuda.get_device_name()}, bf16, wall after synchronize, peak = CUDA memory"
             if args.device == "cuda" else "1 thread")
    n_params = args.vocab * args.hidden + 2 * (4 * args.hidden**2 + 3 * args.hidden * 2 * args.hidden)
    shape = (f"model={args.model} (chat_arithmetic)" if args.model else
             f"V={args.vocab} hidden={args.hidden} (~{n_params / 1e6:.1f}M parameters)")
    print(f"\n{shape} batch={args.batch} "
          f"(x{args.generations} generations) completion<={args.completion} grad_accum={args.grad_accum} "
          f"num_iterations={args.iterations} quadrants={'off' if args.no_quadrants else 'on'}; "
          f"torch {torch.__version__}, {where}, "
          f"{args.steps} timed steps x {args.repeats} repeats (interleaved, fresh process each)")
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in load_after) + f"; cpus={os.cpu_count()}")
    print(f"{'variant':<9}{'cpu s/step':>11}{'x plain':>9}{'x (median)':>11}{'wall s/step':>12}{'x plain':>9}"
          f"{'step peak MiB':>15}{'x plain':>9}{'- plain MiB':>12}")
    for v in results:
        c, w, p = best(v, "cpu"), best(v, "wall"), peak(v)
        print(f"{v:<9}{c:>11.3f}{c / best(base, 'cpu'):>9.3f}{typical(v, 'cpu') / typical(base, 'cpu'):>11.3f}"
              f"{w:>12.3f}{w / best(base, 'wall'):>9.3f}{p:>15.1f}{p / peak(base):>9.3f}{p - peak(base):>12.1f}")
    print(f"(one TRL logits tile (tokens x 32768 fp32) here is about {chunk_mib:.0f} MiB)")
    print("where the wall time of a step goes (median over repeats of the mean step, seconds): generation | "
          "training forwards | the rest (backward, optimizer, rewards, method)")
    for v in results:
        gen, fwd, wall = typical(v, "gen"), typical(v, "fwd"), typical(v, "wall")
        print(f"{v:<9}{gen:>9.3f} ({gen / wall:>4.0%}) {fwd:>9.3f} ({fwd / wall:>4.0%}) "
              f"{wall - gen - fwd:>9.3f} ({(wall - gen - fwd) / wall:>4.0%})")


if __name__ == "__main__":
    main()
