"""``stare probe``: how well do the entropy-change estimators predict a real optimiser step?"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from stare_rl.analysis.probe import CausalLMPolicy, LinearHead, LogitTable, LossSpec, run_probe
from stare_rl.analysis.probe_data import SampleSpec, sample_probe_batch
from stare_rl.io.cache import cache_dir
from stare_rl.models.pretrained import resolve_model

# The tasks, tokenizers, the tiny model and the warm start are imported when the command runs: they load
# transformers, which `stare probe --help` does not.

QUADS = ("pos_high", "pos_low", "neg_high", "neg_low")


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(",") if x.strip())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stare probe",
        description="Sample a batch, predict each response token's entropy change with the exact sensitivity "
        "S(a), its leading term and STEER's Omega, take one real optimiser step, measure the true change, and "
        "score the predictions (MSE after the best scale fit, Pearson, Spearman, sign agreement) overall and "
        "per quadrant. 'shared' is the model itself; 'head' trains only its output matrix on frozen features; "
        "'logits' is the logit-independent limit (one free logit vector per position, initialised from the "
        "model's logits on the same batch).",
    )
    p.add_argument("--model", default="tiny",
                   help="'tiny': the embedded warm-started model for --task (trained and cached on first use); "
                   "'tiny-random': the same architecture, random init (use with --advantages random); a name of "
                   "`stare models list` (a real LM, e.g. smollm2-135m-instruct, with --task chat_arithmetic); or a "
                   "local Hugging Face causal-LM directory")
    p.add_argument("--task", default="arithmetic", help="embedded task supplying prompts and rewards")
    p.add_argument("--cache-dir", default=None,
                   help="warm-start cache (for --model tiny); default: $STARE_RL_CACHE, else $XDG_CACHE_HOME/stare-rl, "
                   "else ~/.cache/stare-rl")
    p.add_argument("--prompts", type=int, default=16, help="prompts in the batch")
    p.add_argument("--group", type=int, default=8, help="responses per prompt (GRPO group)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="default: the task's longest answer + 2")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    p.add_argument("--advantages", default="grpo", help="grpo | drgrpo | rloo | random (N(0,1) per response)")
    p.add_argument("--loss", default="vanilla", help="registered method whose step is taken (default config)")
    p.add_argument("--loss-agg-mode", default="token-mean", help="aggregation of the per-token loss")
    p.add_argument("--policies", default="shared,head,logits",
                   help="comma list of shared (the model), head (only the output matrix trains, features "
                   "frozen), logits (one free logit vector per position)")
    p.add_argument("--optimizers", default="sgd,adamw", help="comma list of sgd,adamw (AdamW: weight decay 0)")
    p.add_argument("--rel-changes", type=_floats, default=(1e-4, 1e-3, 1e-2),
                   help="step sizes as mean|dH|/mean H; the lr is calibrated to each (default 1e-4,1e-3,1e-2)")
    p.add_argument("--lr", type=_floats, default=(), help="explicit learning rates instead of --rel-changes")
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"),
                   help="probe precision (float64 makes tiny steps measurable)")
    p.add_argument("--seed", type=int, default=0, help="prompt draw, sampling and random-advantage seed")
    p.add_argument("--out", type=Path, default=None, help="write the full results as JSON here")
    return p


def _load(args: argparse.Namespace, task: Any) -> tuple[Any, Any, str]:
    from transformers import AutoModelForCausalLM

    from stare_rl.models.tokenizer import load_tokenizer

    if args.model == "tiny-random":
        from stare_rl.models.tiny import build_tiny_model
        from stare_rl.models.tokenizer import WARMSTART_NEWLINE, build_char_tokenizer

        tok = build_char_tokenizer(task.alphabet, newline=WARMSTART_NEWLINE)  # the vocabulary of `--model tiny`
        return build_tiny_model(tok, seed=args.seed), tok, "tiny-random"

    path = Path(resolve_model(args.model, args.cache_dir, say=print)).expanduser()  # a stare models name: built
    if args.model == "tiny":
        from stare_rl.train.warmstart import warm_start

        path = warm_start(args.task, cache_dir(args.cache_dir))
    if not path.is_dir():
        raise ValueError(f"--model={args.model!r}: no such directory")
    tok = load_tokenizer(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    return model, tok, str(path)


def probed_policy(args: argparse.Namespace, task: Any) -> tuple[Any, Any, dict[str, Any], str]:
    """``stare probe``'s set-up from its parsed arguments: the model (``--model``), one sampled batch of
    ``--prompts`` x ``--group`` completions of ``task`` (:class:`SampleSpec`), the model cast to ``--dtype``
    and wrapped as a :class:`CausalLMPolicy` of that batch. Returns ``(policy, tokenizer, sampling info, model
    name)``;
    studies that probe further (studies/real_lm/token_probe.py) start from the same batch."""
    import torch

    spec = SampleSpec(args.prompts, args.group, args.max_new_tokens or task.max_completion_chars + 2,
                      args.temperature, args.seed, args.advantages)
    model, tok, model_name = _load(args, task)
    model.eval()
    batch, info = sample_probe_batch(model, tok, task, spec)
    model = model.to(getattr(torch, args.dtype))
    return CausalLMPolicy(model, batch), tok, info, model_name


def _num(v: float | None, width: int) -> str:
    return f"{'n/a':>{width}}" if v is None else f"{v:>{width}.3f}"


def _print_table(records: list[dict]) -> None:
    head = (f"{'policy':<7}{'opt':<6}{'lr':>9}{'dH/H':>9}  {'estimator':<8}{'pearson':>8}{'spearman':>9}"
            f"{'sign':>6}{'relMSE':>8}  " + " ".join(f"{q:>8}" for q in QUADS) + "  (pearson per quadrant)")
    print(head)
    print("-" * len(head))
    for r in records:
        for est, groups in r["scores"].items():
            a = groups["all"]
            quad = " ".join(_num(groups[q]["pearson"], 8) for q in QUADS)
            print(f"{r['policy']:<7}{r['optimizer']:<6}{r['lr']:>9.2e}{r['rel_change']:>9.1e}  {est:<8}"
                  f"{_num(a['pearson'], 8)}{_num(a['spearman'], 9)}{a['sign_agree']:>6.2f}{a['rel_mse']:>8.3f}  "
                  f"{quad}")
    print()
    n = records[0]["scores"]["exact"]
    fracs = "  ".join(f"{q} {records[0]['quadrants'][q]['frac']:.3f} ({n[q]['n']} tokens, {n[q]['n_distinct']} "
                      "distinct)" for q in (*QUADS, "zero_adv"))
    print(f"quadrant token fractions: {fracs}")
    print("summed dH per valid token by quadrant: measured / exact-predicted (fitted scale)")
    print(f"{'policy':<7}{'opt':<6}{'dH/H':>8}  " + "".join(f"{q:>22}" for q in (*QUADS, "zero_adv")))
    for r in records:
        cells = "".join(f"{r['quadrants'][q]['dh_sum']:>+11.2e}/{r['quadrants'][q]['dh_pred_exact_sum']:<+10.2e}"
                        for q in (*QUADS, "zero_adv"))
        print(f"{r['policy']:<7}{r['optimizer']:<6}{r['rel_change']:>8.1e}  {cells}")


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    import torch

    from stare_rl.tasks import get_task

    try:
        task = get_task(args.task)
        policies_wanted = [x for x in args.policies.split(",") if x]
        if not policies_wanted or set(policies_wanted) - {"shared", "head", "logits"}:
            raise ValueError(f"--policies={args.policies!r} must be a comma list of shared,head,logits")
        shared, _, info, model_name = probed_policy(args, task)
        batch = shared.batch
        policies = {}
        if "shared" in policies_wanted:
            policies["shared"] = shared
        if "head" in policies_wanted:
            policies["head"] = LinearHead.from_policy(shared)
        if "logits" in policies_wanted:
            with torch.no_grad():
                policies["logits"] = LogitTable(shared())
        loss = LossSpec(args.loss, args.loss_agg_mode)
        records = run_probe(policies, batch, loss, tuple(x for x in args.optimizers.split(",") if x),
                            args.rel_changes, args.lr)
    except ValueError as exc:
        print(f"stare probe: error: {exc}")
        return 2
    print(f"model {model_name} | task {args.task} | {info['n_sequences']} responses, "
          f"{info['n_response_tokens']} tokens, reward mean {info['reward_mean']:.3f}, groups with reward "
          f"variance {info['groups_with_variance']:.2f} | loss {args.loss} ({args.loss_agg_mode})\n")
    _print_table(records)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                   "model": model_name, "batch": info, "records": records}
        args.out.write_text(json.dumps(payload, indent=2))
        print(f"\nwrote {args.out}")
    return 0
