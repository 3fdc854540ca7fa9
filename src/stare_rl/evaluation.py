"""Evaluate a causal LM on rows ``{"prompt", "answer"}`` with a reward function.

Metrics (all in ``[0, 1]`` unless said otherwise):

- ``avg@k``: mean reward over ``k`` sampled completions per prompt, averaged over prompts.
- ``pass@k``: unbiased estimator ``1 - C(n-c, k) / C(n, k)`` with ``n = k`` samples (so: any sample correct);
  ``pass@j`` for every ``j`` in ``pass_ks`` from the same ``n = k`` samples (``pass@1`` = ``avg@k`` for a
  binary reward).
- ``greedy_acc``: reward of the greedy completion (pass@1 greedy).
- ``mean_response_length``: sampled completion length in tokens (end-of-sequence token included).
- ``entropy``: mean full-vocabulary entropy (nats) of the sampling distribution (logits / temperature) over
  the sampled completion tokens.
- ``reflection/<word>``: occurrences of each reflection word (case-insensitive, whole word) per sampled
  completion; ``reflection/any``: fraction of sampled completions with at least one.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

REFLECTION_WORDS: tuple[str, ...] = ("wait", "verify", "check", "recheck", "however", "alternatively")

RewardFn = Callable[[str, str], float]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct (Chen et al., 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def prompt_text(prompt: str | list[dict[str, Any]], tokenizer: Any) -> str:
    """A plain prompt as is; a chat prompt (list of messages) through the tokenizer's chat template."""
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return "\n".join(str(m["content"]) for m in prompt)


def count_reflections(texts: Sequence[str], words: Sequence[str]) -> dict[str, float]:
    """Per-completion mean count of each word (whole word, case-insensitive) and the fraction with any."""
    n = max(len(texts), 1)
    out: dict[str, float] = {}
    any_hit = [False] * len(texts)
    for word in words:
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        counts = [len(pattern.findall(t)) for t in texts]
        out[f"reflection/{word}"] = sum(counts) / n
        any_hit = [a or c > 0 for a, c in zip(any_hit, counts, strict=True)]
    out["reflection/any"] = sum(any_hit) / n
    return out


def _load(model_or_dir: Any, tokenizer: Any) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if isinstance(model_or_dir, str | Path):
        path = Path(model_or_dir)
        if not (path / "config.json").is_file():
            raise ValueError(f"model={str(path)!r} is not a Hugging Face model directory (no config.json)")
        model = AutoModelForCausalLM.from_pretrained(path)
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
    else:
        model = model_or_dir
    if tokenizer is None:
        raise ValueError("tokenizer=None: pass a tokenizer when model_or_dir is a model object")
    return model, tokenizer


def _completion_lengths(gen: torch.Tensor, eos_id: int | None, pad_id: int | None) -> torch.Tensor:
    """Tokens up to and including the first EOS (all generated tokens when there is none). gen: (N, L)."""
    n, length = gen.shape
    if eos_id is None:
        valid = gen != pad_id if pad_id is not None else torch.ones_like(gen, dtype=torch.bool)
        return valid.sum(dim=1)
    is_eos = gen == eos_id  # (N, L)
    first = torch.where(is_eos.any(dim=1), is_eos.float().argmax(dim=1) + 1,
                        torch.full((n,), length, device=gen.device))
    return first


@torch.no_grad()
def _generate(
    model: Any, tokenizer: Any, prompts: list[str], *, sample: bool, k: int, temperature: float,
    top_p: float, max_new_tokens: int,
) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """Completions (``len(prompts) * k`` texts), their lengths (N,) and per-sequence summed entropy (N,)."""
    enc = tokenizer(prompts, return_tensors="pt", padding=True, padding_side="left").to(model.device)
    kwargs: dict[str, Any] = {"do_sample": False}
    if sample:
        kwargs = {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0,
                  "num_return_sequences": k}
    out = model.generate(
        **enc, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, return_dict_in_generate=True, output_logits=sample, **kwargs,
    )
    gen = out.sequences[:, enc["input_ids"].shape[1]:]  # (N, L)
    lengths = _completion_lengths(gen, tokenizer.eos_token_id, tokenizer.pad_token_id)  # (N,)
    entropy_sum = torch.zeros(gen.shape[0])
    if sample and out.logits:
        logits = torch.stack(out.logits, dim=1).float() / temperature  # (N, L, V)
        logp = torch.log_softmax(logits, dim=-1)
        ent = -(logp.exp() * logp).sum(-1)  # (N, L)
        mask = torch.arange(gen.shape[1], device=gen.device)[None, :] < lengths[:, None]  # (N, L)
        entropy_sum = (ent * mask).sum(dim=1).cpu()
    texts = tokenizer.batch_decode(gen, skip_special_tokens=True)
    return texts, lengths.cpu(), entropy_sum


def evaluate(
    model_or_dir: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    reward_fn: RewardFn,
    *,
    k: int = 8,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 32,
    batch_size: int = 64,
    seed: int = 0,
    greedy: bool = True,
    reflection_words: Sequence[str] = REFLECTION_WORDS,
    per_row: bool = False,
    progress: bool = True,
    pass_ks: Sequence[int] = (),
) -> dict[str, Any]:
    """Sample ``k`` completions per row (seeded) and a greedy one, score them with ``reward_fn``.

    Args:
        model_or_dir: a causal LM, or a Hugging Face model directory (then ``tokenizer`` may be None).
        rows: ``{"prompt": str | chat messages, "answer": str}``.
        reward_fn: ``reward_fn(completion, answer) -> float`` in ``[0, 1]``.
        k: samples per prompt (n = k for pass@k).
        seed: sampling seed; the global torch RNG is left untouched.
        greedy: also decode greedily (``greedy_acc``); ``greedy_acc`` is None when False.
        per_row: include ``rows``: per-row prompt, answer, completions, rewards.
        pass_ks: also report ``pass@j`` for each ``j`` (each in ``[1, k]``), unbiased from the ``k`` samples.

    Returns:
        ``{"n", "k", "avg@k", "pass@k", "greedy_acc", "mean_response_length", "entropy",
        "reflection/...", "temperature", "top_p"}`` (+ ``"rows"``); the ``@k`` keys spell out ``k``.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r} must be a positive integer")
    if temperature <= 0:
        raise ValueError(f"temperature={temperature!r} must be > 0 (use greedy_acc for greedy decoding)")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p={top_p!r} must be in (0, 1]")
    if not rows:
        raise ValueError("rows is empty: nothing to evaluate")
    bad = [j for j in pass_ks if not isinstance(j, int) or not 1 <= j <= k]
    if bad:
        raise ValueError(f"pass_ks={list(pass_ks)!r}: every value must be an integer in [1, k={k}]")
    extra_ks = sorted(set(pass_ks) - {k})
    model, tokenizer = _load(model_or_dir, tokenizer)
    was_training = model.training
    model.eval()
    sums = {"reward": 0.0, "pass": 0.0, "greedy": 0.0, "length": 0.0, "entropy": 0.0, "tokens": 0.0}
    pass_sums = dict.fromkeys(extra_ks, 0.0)
    samples: list[str] = []
    details: list[dict[str, Any]] = []
    batches = range(0, len(rows), batch_size)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for start in tqdm(batches, desc="eval", disable=not progress, leave=False):
                batch = rows[start : start + batch_size]
                prompts = [prompt_text(r["prompt"], tokenizer) for r in batch]
                texts, lengths, ent = _generate(model, tokenizer, prompts, sample=True, k=k,
                                                temperature=temperature, top_p=top_p,
                                                max_new_tokens=max_new_tokens)
                greedy_texts = (
                    _generate(model, tokenizer, prompts, sample=False, k=1, temperature=1.0, top_p=1.0,
                              max_new_tokens=max_new_tokens)[0] if greedy else [None] * len(batch)
                )
                sums["length"] += float(lengths.sum())
                sums["entropy"] += float(ent.sum())
                sums["tokens"] += float(lengths.sum())
                samples += texts
                for i, row in enumerate(batch):
                    comps = texts[i * k : (i + 1) * k]
                    rewards = [float(reward_fn(c, str(row["answer"]))) for c in comps]
                    correct = sum(r >= 1.0 for r in rewards)
                    sums["reward"] += sum(rewards) / k
                    sums["pass"] += pass_at_k(k, correct, k)
                    for j in extra_ks:
                        pass_sums[j] += pass_at_k(k, correct, j)
                    g = float(reward_fn(greedy_texts[i], str(row["answer"]))) if greedy else None
                    sums["greedy"] += g or 0.0
                    if per_row:
                        details.append({"prompt": row["prompt"], "answer": row["answer"], "greedy": greedy_texts[i],
                                        "greedy_reward": g, "completions": comps, "rewards": rewards})
    finally:
        model.train(was_training)
    n = len(rows)
    result: dict[str, Any] = {
        "n": n, "k": k, "temperature": temperature, "top_p": top_p,
        f"avg@{k}": sums["reward"] / n,
        f"pass@{k}": sums["pass"] / n,
        **{f"pass@{j}": pass_sums[j] / n for j in extra_ks},
        "greedy_acc": sums["greedy"] / n if greedy else None,
        "mean_response_length": sums["length"] / (n * k),
        "entropy": sums["entropy"] / max(sums["tokens"], 1.0),
        **count_reflections(samples, reflection_words),
    }
    if per_row:
        result["rows"] = details
    return result
