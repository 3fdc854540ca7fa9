"""Held-out evaluation of a tool task: episodes played the way TRL's GRPOTrainer tool loop plays them.

Training never uses this module: ``stare train`` hands the tools to TRL (``GRPOTrainer(tools=...)``) and TRL
runs the episodes. The warm start's stop metric and the final held-out evaluation need episodes outside a
trainer, so this module replays TRL 1.16's semantics (``_generate`` + ``_tool_call_loop``) in a few lines:

1. render the chat prompt with the tokenizer's template (generation prompt on), generate until ``<eos>``;
2. parse the new tokens with TRL's ``parse_response`` (the tokenizer's response schema);
3. if the turn has tool calls and fewer than ``max_tool_calls`` rounds ran: call each tool (an exception or
   an unknown tool gives ``{'error': ...}`` as TRL does), append the tool-result tokens rendered by the chat
   template (the suffix of a dummy conversation, as TRL's ``_get_tool_suffix_ids``) and generate again;
   a result that would overflow ``max_completion_length`` ends the episode as it is (TRL rolls it back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from stare_rl.evaluation.heldout import pass_at_k, rng_devices, sampling_entropy, step_entropy
from stare_rl.tasks.tool_episodes import episode_stats, summarize_episodes


def tool_suffix_ids(tokenizer: Any, tool_messages: list[dict[str, Any]]) -> list[int]:
    """Token ids that TRL appends after a tool-calling turn: the tool results and the next generation prompt."""
    dummy = [{"role": "user", "content": "dummy"},
             {"role": "assistant", "content": "",
              "tool_calls": [{"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}]}]
    prefix = tokenizer.apply_chat_template(dummy, tokenize=True, return_dict=False)
    full = tokenizer.apply_chat_template(dummy + tool_messages, tokenize=True, return_dict=False,
                                         add_generation_prompt=True)
    return list(full[len(prefix):])


def _call(tools: dict[str, Callable[..., Any]], call: dict[str, Any]) -> tuple[str, str]:
    fn = call.get("function", call)
    name = str(fn.get("name", "unknown"))
    try:
        if name not in tools:
            raise ValueError(f"Tool {name} not found.")
        result: Any = tools[name](**(fn.get("arguments") or {}))
    except Exception as err:  # noqa: BLE001 - any tool failure is an error result, as in TRL
        result = {"error": str(err)}
    return name, str(result)


@torch.no_grad()
def play_episodes(
    model: Any, tokenizer: Any, prompts: Sequence[list[dict[str, Any]]], tools: Sequence[Callable[..., Any]], *,
    max_completion_length: int, max_tool_calls: int, sample: bool, temperature: float = 1.0,
) -> tuple[list[list[dict[str, Any]]], list[int], list[float]]:
    """Play one episode per prompt. Returns (messages after the prompt, model tokens, summed entropy) each."""
    from trl.chat_template_utils import parse_response

    by_name = {t.__name__: t for t in tools}
    n = len(prompts)
    prompt_ids = [list(tokenizer.apply_chat_template(p, tokenize=True, return_dict=False, add_generation_prompt=True))
                  for p in prompts]
    completion_ids: list[list[int]] = [[] for _ in range(n)]
    messages: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    model_tokens, entropy = [0] * n, [0.0] * n
    active, rounds = list(range(n)), 0
    while active:
        budget = max(max_completion_length - min(len(completion_ids[i]) for i in active), 1)
        seqs = [torch.tensor(prompt_ids[i] + completion_ids[i]) for i in active]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
        attn = torch.zeros_like(ids)
        for row, s in enumerate(seqs):  # left padding
            ids[row, width - len(s):], attn[row, width - len(s):] = s, 1
        kwargs: dict[str, Any] = {"do_sample": sample}
        if sample:
            kwargs.update(temperature=temperature, top_k=0, top_p=1.0)
        with sampling_entropy(model, temperature) as steps:
            out = model.generate(input_ids=ids.to(model.device), attention_mask=attn.to(model.device),
                                 max_new_tokens=budget, pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=tokenizer.eos_token_id, return_dict_in_generate=True, **kwargs)
        gen = out.sequences[:, width:].cpu()  # (A, L)
        ent = step_entropy(steps, gen.shape[1]) if sample else None  # (A, L)
        still = []
        for row, i in enumerate(active):
            new = gen[row].tolist()
            if tokenizer.eos_token_id in new:
                new = new[: new.index(tokenizer.eos_token_id) + 1]
            new = new[: max_completion_length - len(completion_ids[i])]
            completion_ids[i] += new
            model_tokens[i] += len(new)
            if ent is not None:
                entropy[i] += float(ent[row, : len(new)].sum())
            turn = parse_response(tokenizer, new) if new else {}
            if turn:
                messages[i].append(turn)
            calls = turn.get("tool_calls") if turn else None
            if not calls or rounds >= max_tool_calls:
                continue
            results = [_call(by_name, c) for c in calls]
            tool_msgs = [{"role": "tool", "name": name, "content": content} for name, content in results]
            suffix = tool_suffix_ids(tokenizer, tool_msgs)
            if len(completion_ids[i]) + len(suffix) > max_completion_length:
                continue  # TRL drops the overlong tool result and ends the episode
            messages[i] += tool_msgs
            completion_ids[i] += suffix
            still.append(i)
        active, rounds = still, rounds + 1
    return messages, model_tokens, entropy


def evaluate_tool_task(
    model: Any, tokenizer: Any, task: Any, rows: Sequence[dict[str, Any]], *, k: int = 8, temperature: float = 1.0,
    max_completion_length: int | None = None, max_tool_calls: int | None = None, batch_size: int = 64,
    seed: int = 0, greedy: bool = True, reward_fn: Callable[[Any, str], float] | None = None,
) -> dict[str, Any]:
    """avg@k, pass@k, greedy accuracy, response length (model tokens), entropy and ``tools/*`` episode metrics.

    ``rows`` are the task's ``{"prompt", "answer"}`` rows; ``reward_fn(messages, answer)`` defaults to the
    task's reward. Sampling is seeded; the global torch RNG is left untouched.
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k={k!r} must be a positive integer")
    if not rows:
        raise ValueError("rows is empty: nothing to evaluate")
    reward_fn = reward_fn or task.reward
    max_len = max_completion_length or task.max_completion_chars
    calls = task.max_tool_calls if max_tool_calls is None else max_tool_calls
    was_training = model.training
    model.eval()
    rewards: list[float] = []
    stats: list[dict[str, float]] = []
    sums = {"pass": 0.0, "greedy": 0.0, "tokens": 0.0, "entropy": 0.0}
    try:
        with torch.random.fork_rng(devices=rng_devices(model)):
            torch.manual_seed(seed)
            for start in range(0, len(rows), batch_size):
                batch = rows[start : start + batch_size]
                prompts = [task.chat_prompt(r) for r in batch for _ in range(k)]
                msgs, toks, ent = play_episodes(model, tokenizer, prompts, task.tools, max_completion_length=max_len,
                                                max_tool_calls=calls, sample=True, temperature=temperature)
                sums["tokens"] += sum(toks)
                sums["entropy"] += sum(ent)
                for j, row in enumerate(batch):
                    r = [float(reward_fn(m, str(row["answer"]))) for m in msgs[j * k : (j + 1) * k]]
                    rewards += r
                    stats += [episode_stats(m) for m in msgs[j * k : (j + 1) * k]]
                    sums["pass"] += pass_at_k(k, sum(x >= 1.0 for x in r), k)
                if greedy:
                    g_msgs, _, _ = play_episodes(model, tokenizer, [task.chat_prompt(r) for r in batch], task.tools,
                                                 max_completion_length=max_len, max_tool_calls=calls, sample=False)
                    sums["greedy"] += sum(float(reward_fn(m, str(r["answer"]))) for m, r in zip(g_msgs, batch,
                                                                                                   strict=True))
    finally:
        model.train(was_training)
    n = len(rows)
    result: dict[str, Any] = {
        "n": n, "k": k, "temperature": temperature, "top_p": 1.0,
        f"avg@{k}": sum(rewards) / (n * k),
        f"pass@{k}": sums["pass"] / n,
        "greedy_acc": sums["greedy"] / n if greedy else None,
        "mean_response_length": sums["tokens"] / (n * k),
        "entropy": sums["entropy"] / max(sums["tokens"], 1.0),
    }
    result.update({f"tools/{key}": value for key, value in summarize_episodes(stats, rewards).items()})
    return result
