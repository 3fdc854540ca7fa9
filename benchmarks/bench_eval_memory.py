"""Peak memory of one held-out evaluation batch: the entropy of every sampled token from HF's stored logits
(``output_logits=True``, stacked, ``log_softmax``: how ``stare_rl.evaluation`` did it until 2026-11-27) against
the forward hook that keeps one step's logits alive at a time (``heldout.sampling_entropy``, what it does now).

    python3 benchmarks/bench_eval_memory.py --model smollm2-135m-instruct --prompts 64 --k 8 --max-new-tokens 32
    python3 benchmarks/bench_eval_memory.py --model tiny                  # a random tiny model, seconds

Each variant runs in its own fresh subprocess, which loads the model, generates once on two prompts (one-time
set-up is not counted), resets the kernel's peak-RSS counter (``/proc/self/clear_refs``, as
``bench_entropy_memory.py``) and reads ``VmRSS``, then samples ``--prompts`` x ``--k`` completions of chat
prompts of the ``chat_arithmetic`` task from the same seed and reads ``VmHWM``. Peak extra = VmHWM - VmRSS
before. Both variants must give the same samples and the same summed entropy (rel 1e-4): the table says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from _proc import status_kib

MiB = 1024 * 1024
VARIANTS = ("stored logits", "hook")


def _load(name: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM

    if name == "tiny":
        from stare_rl.models.tiny import build_tiny_model
        from stare_rl.models.tokenizer import build_char_tokenizer
        from stare_rl.tasks import get_task

        tok = build_char_tokenizer(get_task("arithmetic").alphabet)
        return build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2, seed=0).eval(), tok
    from stare_rl.io.cache import cache_dir
    from stare_rl.models.pretrained import resolve_model
    from stare_rl.models.tokenizer import load_tokenizer

    path = resolve_model(name, cache_dir())
    return AutoModelForCausalLM.from_pretrained(path).eval(), load_tokenizer(path)


def _prompts(name: str, tok: Any, n: int) -> list[str]:
    if name == "tiny":
        return [f"{a}+{b}=" for a, b in zip(range(n), range(7, 7 + n), strict=True)]
    from stare_rl.tasks import get_task

    rows = get_task("chat_arithmetic").make_split("test", n, 0)
    return [tok.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True) for r in rows]


def _child(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from stare_rl.evaluation.heldout import _completion_lengths, _generate

    torch.set_num_threads(1)
    model, tok = _load(args.model)
    prompts = _prompts(args.model, tok, args.prompts)
    sampling = dict(temperature=args.temperature, top_p=args.top_p)

    def stored_logits(batch: list[str]) -> tuple[list[str], torch.Tensor]:
        enc = tok(batch, return_tensors="pt", padding=True, padding_side="left")
        out = model.generate(**enc, max_new_tokens=args.max_new_tokens, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id, do_sample=True, top_k=0, num_return_sequences=args.k,
                             return_dict_in_generate=True, output_logits=True, **sampling)
        gen = out.sequences[:, enc["input_ids"].shape[1]:]
        lengths = _completion_lengths(gen, tok.eos_token_id, tok.pad_token_id)
        logp = torch.log_softmax(torch.stack(out.logits, dim=1).float() / args.temperature, dim=-1)  # (N, L, V)
        ent = -(logp.exp() * logp).sum(-1)
        mask = torch.arange(gen.shape[1])[None, :] < lengths[:, None]
        return tok.batch_decode(gen, skip_special_tokens=True), (ent * mask).sum(dim=1)

    def hook(batch: list[str]) -> tuple[list[str], torch.Tensor]:
        texts, _, ent = _generate(model, tok, batch, sample=True, k=args.k, max_new_tokens=args.max_new_tokens,
                                  **sampling)
        return texts, ent

    fn = stored_logits if variant == "stored logits" else hook
    with torch.no_grad():
        fn(prompts[:2])  # warm-up: one-time set-up is not counted
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        before = status_kib("VmRSS")
        torch.manual_seed(args.seed)
        texts, ent = fn(prompts)
        peak = status_kib("VmHWM")
    return {"extra_kib": peak - before, "texts": texts, "entropy": ent.tolist(),
            "logits_mib": len(texts) * args.max_new_tokens * model.config.vocab_size * 4 / MiB}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a `stare models` name, an HF dir, or tiny")
    ap.add_argument("--prompts", type=int, default=64, help="prompts in the batch (the evaluation's batch_size)")
    ap.add_argument("--k", type=int, default=8, help="samples per prompt")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print("RESULT " + json.dumps(_child(args.child, args)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536", "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    res = {}
    for variant in VARIANTS:
        proc = subprocess.run([sys.executable, __file__, "--child", variant, *(sys.argv[1:] if argv is None else argv)],
                              capture_output=True, text=True, env=env)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode or line is None:
            sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-5000:])
            raise SystemExit(f"{variant} failed (exit {proc.returncode})")
        res[variant] = json.loads(line[len("RESULT "):])
    a, b = res["stored logits"], res["hook"]
    same_texts = a["texts"] == b["texts"]
    # Both are float32 sums over V terms, each a little off a float64 entropy, either way, and a completion sums
    # up to --max-new-tokens of them; so they agree when |a - b| <= 1e-4 nats + 5e-4 |a| per completion
    def apart(xy: tuple[float, float]) -> float:
        return abs(xy[0] - xy[1]) - (1e-4 + 5e-4 * abs(xy[0]))

    pairs = list(zip(a["entropy"], b["entropy"], strict=True))
    largest = max(pairs, key=lambda xy: abs(xy[0] - xy[1]), default=(0.0, 0.0))
    agree = all(apart(xy) <= 0 for xy in pairs)
    print(f"model={args.model} prompts={args.prompts} x k={args.k} max_new_tokens={args.max_new_tokens} "
          f"T={args.temperature} top_p={args.top_p}: the stored logits would be up to {a['logits_mib']:.0f} MiB; "
          f"1 thread, fresh process each")
    print(f"{'variant':<15}{'peak extra MiB':>16}{'x stored':>10}")
    for v in VARIANTS:
        mib = res[v]["extra_kib"] / 1024
        print(f"{v:<15}{mib:>16.1f}{mib / (a['extra_kib'] / 1024):>10.3f}")
    print(f"same samples: {same_texts}; summed entropy per completion agrees within 1e-4 nats + 5e-4 relative: "
          f"{agree} (largest difference {abs(largest[0] - largest[1]):.2e} nats, on a sum of {largest[0]:.4f})"
          + ("" if same_texts and agree else "  <- MISMATCH"))


if __name__ == "__main__":
    main()
