"""Evaluate a causal LM on rows ``{"prompt", "answer"}`` with a reward function.

Metrics (all in ``[0, 1]`` unless said otherwise):

- ``avg@n``: mean reward over the ``n`` sampled completions per prompt (``k`` argument), averaged over prompts.
- ``pass@j`` for each requested ``j <= n``: the unbiased estimator ``1 - C(n-c, j) / C(n, j)`` of Chen et al.
  (2021) from the ``n`` samples of which ``c`` are correct (reward >= 1); ``pass@n`` = any sample correct.
- ``maj@j`` for each requested ``j <= n``: majority-vote accuracy. The ``n`` samples are cut into
  ``n // j`` disjoint runs of ``j`` consecutive samples; in each run the most frequent extracted answer wins
  (ties: the one seen first; samples without an answer do not vote) and the run scores 1 when a sample with
  that answer is correct. ``maj@j`` is the mean over runs and prompts. Answers are compared as strings after
  whitespace is removed, so ``1/2`` and ``\\frac{1}{2}`` are different votes.
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from stare_rl.core.tokens import entropy_from_logits

logger = logging.getLogger(__name__)

REFLECTION_WORDS: tuple[str, ...] = ("wait", "verify", "check", "recheck", "however", "alternatively")

RewardFn = Callable[[str, str], float]
AnswerFn = Callable[[str], "str | None"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct (Chen et al., 2021)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def majority_vote_accuracy(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """maj@k of one prompt: mean over the ``len(answers) // k`` disjoint runs of ``k`` consecutive samples.

    Args:
        answers: extracted answer per sample (None: no answer, no vote).
        correct: whether each sample is correct (same order).
        k: run length, ``1 <= k <= len(answers)``.
    """
    n = len(answers)
    if len(correct) != n or not 1 <= k <= n:
        raise ValueError(f"majority_vote_accuracy needs 1 <= k <= n and one flag per answer; got n={n}, k={k}, "
                         f"len(correct)={len(correct)}")
    runs = n // k
    score = 0.0
    for r in range(runs):
        votes: dict[str, list[int]] = {}  # answer -> sample indices, insertion order = first seen
        for i in range(r * k, (r + 1) * k):
            if answers[i] is not None:
                votes.setdefault(str(answers[i]), []).append(i)
        if votes:
            winner = max(votes.values(), key=len)  # max keeps the first of equal counts: ties -> seen first
            score += float(correct[winner[0]])
    return score / runs


def normalize_answer(answer: str | None) -> str | None:
    """The vote key of an extracted answer: whitespace removed; empty -> None."""
    if answer is None:
        return None
    key = "".join(answer.split())
    return key or None


def score_rows(records: Sequence[dict[str, Any]], k: int, pass_ks: Sequence[int], maj_ks: Sequence[int]) -> dict[str, float]:
    """avg@k, pass@j and maj@j over per-prompt records ``{"rewards": [k floats], "answers": [k str|None]}``."""
    n = len(records)
    out = {f"avg@{k}": sum(sum(r["rewards"]) / k for r in records) / n}
    for j in pass_ks:
        out[f"pass@{j}"] = sum(pass_at_k(k, sum(x >= 1.0 for x in r["rewards"]), j) for r in records) / n
    for j in maj_ks:
        out[f"maj@{j}"] = sum(
            majority_vote_accuracy(r["answers"], [x >= 1.0 for x in r["rewards"]], j) for r in records) / n
    return out


def check_ks(name: str, ks: Sequence[int], n: int) -> tuple[int, ...]:
    """Sorted unique ``ks``; each must be an integer in [1, n] (``n`` = samples per prompt)."""
    bad = [j for j in ks if not isinstance(j, int) or not 1 <= j <= n]
    if bad:
        raise ValueError(f"{name}={list(ks)}: each value must be an integer in [1, {n}] (samples per prompt); "
                         f"got {bad}")
    return tuple(sorted(set(ks)))


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


def rng_devices(model: Any) -> list[torch.device]:
    """The devices whose RNG an evaluation forks: the model's CUDA device too, so that sampling on a GPU leaves the
    training's CUDA generator where it was (and a cached evaluation changes nothing that follows)."""
    first = next(iter(model.parameters()), None)
    return [first.device] if first is not None and first.device.type == "cuda" else []


def _load(model_or_dir: Any, tokenizer: Any) -> tuple[Any, Any]:
    # transformers is optional: only loading a model from a directory needs it (the scoring helpers do not)
    from transformers import AutoModelForCausalLM

    from stare_rl.models.tokenizer import load_tokenizer

    if isinstance(model_or_dir, str | Path):
        path = Path(model_or_dir)
        if not (path / "config.json").is_file():
            raise ValueError(f"model={str(path)!r} is not a Hugging Face model directory (no config.json)")
        model = AutoModelForCausalLM.from_pretrained(path)
        tokenizer = tokenizer or load_tokenizer(path)
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
@contextmanager
def sampling_entropy(model: Any, temperature: float) -> Iterator[list[torch.Tensor]]:
    """While open, each forward of ``model`` appends the full-vocabulary entropy ``(N,)`` of its last position's
    sampling distribution (logits / ``temperature``): one entry per token ``generate`` samples, read with
    :func:`step_entropy`. It replaces ``output_logits=True``, which keeps every step's ``(N, V)`` logits: on
    SmolLM2 (V = 49,152) an evaluation batch of 64 prompts x 8 samples x 32 tokens kept 3.2 GB of them, and
    stacking, scaling and ``log_softmax`` over them took the process to a 20 GB peak. Here one step's logits
    are alive at a time, and the entropy is the chunked one of ``stare_rl.core.tokens``."""
    steps: list[torch.Tensor] = []

    def hook(module: Any, args: Any, output: Any) -> None:
        logits = output.logits if hasattr(output, "logits") else output[0]
        steps.append(entropy_from_logits(logits[:, -1, :].detach().float(), temperature).cpu())

    handle = model.register_forward_hook(hook)
    try:
        yield steps
    finally:
        handle.remove()


def step_entropy(steps: list[torch.Tensor], length: int) -> torch.Tensor:
    """``(N, length)``: the entropies of the forwards that sampled the ``length`` generated tokens (the last
    ``length`` forwards: a prefill split into several forwards comes first); zeros when nothing was generated."""
    if length == 0:
        return torch.zeros(steps[0].shape[0] if steps else 0, 0)
    if len(steps) < length:
        raise RuntimeError(f"sampling_entropy saw {len(steps)} forwards for {length} generated tokens")
    return torch.stack(steps[-length:], dim=1)


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
    with sampling_entropy(model, temperature) as steps:
        out = model.generate(
            **enc, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id, return_dict_in_generate=True, **kwargs,
        )
    gen = out.sequences[:, enc["input_ids"].shape[1]:]  # (N, L)
    lengths = _completion_lengths(gen, tokenizer.eos_token_id, tokenizer.pad_token_id)  # (N,)
    entropy_sum = torch.zeros(gen.shape[0])
    if sample:
        ent = step_entropy(steps, gen.shape[1])  # (N, L)
        mask = torch.arange(gen.shape[1])[None, :] < lengths.cpu()[:, None]  # (N, L)
        entropy_sum = (ent * mask).sum(dim=1)
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
    pass_ks: Sequence[int] | None = None,
    maj_ks: Sequence[int] = (),
    answer_fn: AnswerFn | None = None,
    reflection_words: Sequence[str] = REFLECTION_WORDS,
    per_row: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Sample ``k`` completions per row (seeded) and a greedy one, score them with ``reward_fn``.

    Args:
        model_or_dir: a causal LM, or a Hugging Face model directory (then ``tokenizer`` may be None).
        rows: ``{"prompt": str | chat messages, "answer": str[, "data_source": str]}``.
        reward_fn: ``reward_fn(completion, answer) -> float`` in ``[0, 1]``; a sample is correct when >= 1.
        k: samples per prompt (the ``n`` of pass@j and maj@j).
        seed: sampling seed; the global torch RNG is left untouched.
        greedy: also decode greedily (``greedy_acc``); ``greedy_acc`` is None when False.
        pass_ks: the ``j`` of each pass@j, each in [1, k] (default: ``(k,)``).
        maj_ks: the ``j`` of each maj@j, each in [1, k] (default: none); needs ``answer_fn``.
        answer_fn: ``answer_fn(completion) -> answer string or None``, the vote of maj@j.
        per_row: include ``rows``: per-row prompt, answer, completions, rewards.

    Returns:
        ``{"n", "k", "avg@k", "pass@j"..., "maj@j"..., "greedy_acc", "mean_response_length", "entropy",
        "reflection/...", "temperature", "top_p"}`` (+ ``"rows"``); the ``@`` keys spell out ``k`` and ``j``.
        When some row has a ``data_source``: ``"by_source"``, the same accuracy metrics per source (rows
        without one count as ``"unknown"``).
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r} must be a positive integer")
    if temperature <= 0:
        raise ValueError(f"temperature={temperature!r} must be > 0 (use greedy_acc for greedy decoding)")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p={top_p!r} must be in (0, 1]")
    if not rows:
        raise ValueError("rows is empty: nothing to evaluate")
    pass_ks = check_ks("pass_ks", (k,) if pass_ks is None else pass_ks, k)
    maj_ks = check_ks("maj_ks", maj_ks, k)
    if maj_ks and answer_fn is None:
        raise ValueError(f"maj_ks={list(maj_ks)} needs answer_fn (the answer each sample votes for)")
    model, tokenizer = _load(model_or_dir, tokenizer)
    was_training = model.training
    model.eval()
    try:
        with torch.random.fork_rng(devices=rng_devices(model)):
            torch.manual_seed(seed)
            records, samples = _sample_rows(model, tokenizer, rows, reward_fn, answer_fn, k=k, greedy=greedy,
                                            temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                                            batch_size=batch_size, progress=progress)
    finally:
        model.train(was_training)
    n = len(rows)
    tokens = sum(r["length"] for r in records)
    result: dict[str, Any] = {
        "n": n, "k": k, "temperature": temperature, "top_p": top_p,
        **score_rows(records, k, pass_ks, maj_ks),
        "greedy_acc": sum(r["greedy_reward"] or 0.0 for r in records) / n if greedy else None,
        "mean_response_length": tokens / (n * k),
        "entropy": sum(r["entropy"] for r in records) / max(tokens, 1.0),
        **count_reflections(samples, reflection_words),
    }
    if any("data_source" in row for row in rows):
        by_source: dict[str, list[dict[str, Any]]] = {}
        for row, rec in zip(rows, records, strict=True):
            by_source.setdefault(str(row.get("data_source", "unknown")), []).append(rec)
        result["by_source"] = {
            src: {"n": len(recs), **score_rows(recs, k, pass_ks, maj_ks)} for src, recs in sorted(by_source.items())}
    if per_row:
        result["rows"] = [
            {"prompt": row["prompt"], "answer": row["answer"], "greedy": rec["greedy"],
             "greedy_reward": rec["greedy_reward"], "completions": rec["completions"], "rewards": rec["rewards"]}
            for row, rec in zip(rows, records, strict=True)]
    return result


def _sample_rows(
    model: Any, tokenizer: Any, rows: Sequence[dict[str, Any]], reward_fn: RewardFn, answer_fn: AnswerFn | None,
    *, k: int, greedy: bool, temperature: float, top_p: float, max_new_tokens: int, batch_size: int,
    progress: bool,
) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per row (completions, rewards, answers, token count, summed entropy, greedy result) and
    every sampled completion, generated batch by batch under the caller's RNG."""
    records: list[dict[str, Any]] = []
    samples: list[str] = []
    for start in tqdm(range(0, len(rows), batch_size), desc="eval", disable=not progress, leave=False):
        batch = rows[start : start + batch_size]
        prompts = [prompt_text(r["prompt"], tokenizer) for r in batch]
        texts, lengths, ent = _generate(model, tokenizer, prompts, sample=True, k=k, temperature=temperature,
                                        top_p=top_p, max_new_tokens=max_new_tokens)
        greedy_texts = (
            _generate(model, tokenizer, prompts, sample=False, k=1, temperature=1.0, top_p=1.0,
                      max_new_tokens=max_new_tokens)[0] if greedy else [None] * len(batch)
        )
        samples += texts
        for i, row in enumerate(batch):
            comps = texts[i * k : (i + 1) * k]
            answer = str(row["answer"])
            records.append({
                "completions": comps,
                "rewards": [float(reward_fn(c, answer)) for c in comps],
                "answers": [normalize_answer(answer_fn(c)) for c in comps] if answer_fn else [None] * k,
                "length": float(lengths[i * k : (i + 1) * k].sum()),
                "entropy": float(ent[i * k : (i + 1) * k].sum()),
                "greedy": greedy_texts[i],
                "greedy_reward": float(reward_fn(greedy_texts[i], answer)) if greedy else None,
            })
    return records, samples
