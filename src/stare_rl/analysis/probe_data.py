"""Building the probe's batch: sample responses from a model on a task, score them, GRPO advantages.

Sequences are re-assembled right-padded (prompt without padding, then the response up to and including the
end-of-sequence token), so the probe's forward uses the plain positions ``0..L-1`` of every real token.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch

from stare_rl.analysis.probe import ProbeBatch
from stare_rl.core.advantages import broadcast_to_tokens, compute_advantages

logger = logging.getLogger(__name__)

ADVANTAGE_SOURCES = ("grpo", "drgrpo", "rloo", "random")


@dataclass(frozen=True)
class SampleSpec:
    """How to draw the probe batch.

    Args:
        n_prompts: prompts drawn from the task's ``split``.
        group_size: responses sampled per prompt (the GRPO group).
        max_new_tokens: response length cap.
        temperature: sampling temperature (full vocabulary, no top-k / top-p).
        seed: seeds the prompt draw, the sampling and the random advantages.
        advantages: a registered estimator of :mod:`stare_rl.core.advantages` on the task's rewards, or
            ``"random"`` (N(0, 1) per response: probes the estimators independently of the reward).
        split: task split the prompts come from.
    """

    n_prompts: int = 16
    group_size: int = 8
    max_new_tokens: int = 16
    temperature: float = 1.0
    seed: int = 0
    advantages: str = "grpo"
    split: str = "train"

    def __post_init__(self) -> None:
        for name in ("n_prompts", "group_size", "max_new_tokens"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        if not self.temperature > 0:
            raise ValueError(f"temperature={self.temperature} must be > 0")
        if self.advantages not in ADVANTAGE_SOURCES:
            raise ValueError(f"advantages={self.advantages!r} must be one of {list(ADVANTAGE_SOURCES)}")


def _render(prompts: list[Any], tokenizer: Any) -> tuple[list[str], bool]:
    """``(texts, chat)``: chat prompts (lists of messages) through the tokenizer's chat template, which already holds
    the special tokens; plain prompts as they are."""
    if not any(isinstance(p, list) for p in prompts):
        return list(prompts), False
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("the task's prompts are chat messages but the model's tokenizer has no chat template")
    return [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts], True


def _generate(model: Any, tokenizer: Any, prompts: list[Any], spec: SampleSpec) -> tuple[list, list]:
    texts, chat = _render(prompts, tokenizer)
    padding_side, tokenizer.padding_side = tokenizer.padding_side, "left"  # generation continues the prompt
    try:
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not chat)  # left-padded
    finally:
        tokenizer.padding_side = padding_side
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(spec.seed)
        out = model.generate(
            input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], do_sample=True,
            temperature=spec.temperature, top_k=0, top_p=1.0, max_new_tokens=spec.max_new_tokens,
            num_return_sequences=spec.group_size, pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )  # (n * G, P + new), prompt-major
    width = enc["input_ids"].shape[1]
    prompt_ids, responses = [], []
    for i in range(out.shape[0]):
        j = i // spec.group_size
        prompt_ids.append(enc["input_ids"][j][enc["attention_mask"][j] > 0].tolist())
        resp = out[i, width:].tolist()
        if tokenizer.eos_token_id in resp:
            resp = resp[: resp.index(tokenizer.eos_token_id) + 1]  # keep the eos: its choice is a token too
        else:
            resp = [t for t in resp if t != tokenizer.pad_token_id]
        responses.append(resp)
    return prompt_ids, responses


def sample_probe_batch(model: Any, tokenizer: Any, task: Any, spec: SampleSpec) -> tuple[ProbeBatch, dict]:
    """Sample ``spec.group_size`` responses for each of ``spec.n_prompts`` task prompts and build the batch.

    Returns:
        ``(batch, info)``; info has the reward mean, the share of groups with reward variance, response
        lengths and a few decoded examples.

    Raises:
        ValueError: when every advantage is 0 (no group has reward variance): nothing would be learned.
    """
    rows = task.make_split(spec.split, spec.n_prompts, spec.seed)
    prompt_ids, responses = _generate(model, tokenizer, [r["prompt"] for r in rows], spec)
    texts = [tokenizer.decode(r, skip_special_tokens=True) for r in responses]
    answers = [rows[i // spec.group_size]["answer"] for i in range(len(responses))]
    rewards = torch.tensor([float(task.reward(t, a)) for t, a in zip(texts, answers, strict=True)],
                           dtype=torch.float64)  # (N,)
    if spec.advantages == "random":
        gen = torch.Generator().manual_seed(spec.seed)
        seq_adv = torch.randn(len(responses), generator=gen, dtype=torch.float64)
    else:
        seq_adv = compute_advantages(spec.advantages, rewards, group_size=spec.group_size)
    if not bool((seq_adv != 0).any()):
        raise ValueError(
            f"advantages are all 0: no group of {spec.group_size} responses had reward variance "
            f"(reward mean {float(rewards.mean()):.3f}); use a warm-started model, more prompts, or "
            "advantages='random'")
    length = max(len(p) + len(r) for p, r in zip(prompt_ids, responses, strict=True))
    n = len(responses)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.full((n, length), pad, dtype=torch.long)
    attn = torch.zeros(n, length, dtype=torch.long)
    resp_mask = torch.zeros(n, length - 1)
    for i, (p, r) in enumerate(zip(prompt_ids, responses, strict=True)):
        ids[i, : len(p) + len(r)] = torch.tensor(p + r)
        attn[i, : len(p) + len(r)] = 1
        resp_mask[i, len(p) - 1 : len(p) + len(r) - 1] = 1  # position t predicts token t+1
    batch = ProbeBatch(ids, attn, resp_mask, broadcast_to_tokens(seq_adv, resp_mask).double(),
                       rewards=broadcast_to_tokens(rewards, resp_mask).double())
    groups = rewards.view(-1, spec.group_size)
    info = {
        "n_sequences": n, "n_response_tokens": int(resp_mask.sum()), "reward_mean": float(rewards.mean()),
        "groups_with_variance": float((groups.max(1).values != groups.min(1).values).double().mean()),
        "mean_response_length": float(resp_mask.sum(1).mean()),
        "examples": [{"prompt": rows[i // spec.group_size]["prompt"], "response": texts[i],
                      "reward": float(rewards[i])} for i in range(min(4, n))],
    }
    logger.info("probe batch: %d sequences, %d response tokens, reward mean %.3f", n, info["n_response_tokens"],
                info["reward_mean"])
    return batch, info
