"""Checks ``stare train`` makes before any compute: numbers that TRL accepts but cannot train with, the output
directory, and the data against the model and the reward (plus the held-out split of a dataset). Reading the
command line and the config values is :mod:`stare_rl.train.argv`.

Every check raises one ``ValueError`` whose message names the field (or the row) and the value; the command
turns it into ``stare train: error: ...`` and exit status 2, before a run directory or a warm start exists.
Checks that cannot be decided up front (a reward that is always 0, NaN rewards) live in
:mod:`stare_rl.engines.trl.watch` and warn during training.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stare_rl.tasks.rewards import parse_gold, parse_number

MAX_LISTED = 5  # rows / characters named in one message


# ----- numbers TRL accepts but cannot train with -----
def check_numbers(grpo: Any, others: Sequence[Any]) -> None:
    """NaN anywhere; inf in stare-rl's own fields; and the engine fields that need a sign or a range."""
    for obj in (grpo, *others):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if isinstance(value, float) and math.isnan(value):
                raise ValueError(f"{f.name}=nan is not a number")
            if isinstance(value, float) and math.isinf(value) and obj is not grpo:
                raise ValueError(f"{f.name}={value} must be a finite number")
    for name, ok, allowed in _ENGINE_RULES:
        value = getattr(grpo, name, None)
        if value is not None and not ok(value):
            raise ValueError(f"{name}={value!r} {allowed}")


def _finite(v: float) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)


_ENGINE_RULES: tuple[tuple[str, Any, str], ...] = (
    ("learning_rate", lambda v: _finite(v) and v > 0, "must be a finite number > 0"),
    ("weight_decay", lambda v: _finite(v) and v >= 0, "must be a finite number >= 0"),
    ("max_grad_norm", lambda v: v >= 0, "must be >= 0 (0 = no clipping)"),
    ("warmup_ratio", lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    ("warmup_steps", lambda v: v >= 0, "must be >= 0"),
    ("max_steps", lambda v: v >= 1 or v == -1, "must be >= 1 (or -1: train num_train_epochs epochs)"),
    ("num_train_epochs", lambda v: _finite(v) and v > 0, "must be a finite number > 0"),
    ("save_steps", lambda v: _finite(v) and v > 0, "must be > 0 (steps, or a fraction of max_steps if < 1)"),
    ("logging_steps", lambda v: _finite(v) and v > 0, "must be > 0 (steps, or a fraction of max_steps if < 1)"),
    ("save_total_limit", lambda v: v >= 1, "must be >= 1 (or null: keep every checkpoint)"),
    ("temperature", lambda v: _finite(v) and v > 0, "must be a finite number > 0 (sampling needs randomness)"),
    ("top_p", lambda v: 0 < v <= 1, "must be in (0, 1]"),
    ("top_k", lambda v: v >= 0, "must be >= 0 (0 = off)"),
    ("min_p", lambda v: 0 <= v <= 1, "must be in [0, 1]"),
    ("repetition_penalty", lambda v: _finite(v) and v > 0, "must be a finite number > 0"),
    ("max_completion_length", lambda v: v >= 1, "must be >= 1"),
    ("per_device_train_batch_size", lambda v: v >= 1, "must be >= 1"),
    ("gradient_accumulation_steps", lambda v: v >= 1, "must be >= 1"),
    ("steps_per_generation", lambda v: v >= 1, "must be >= 1"),
    ("num_iterations", lambda v: v >= 1, "must be >= 1"),
    ("seed", lambda v: 0 <= v < 2**32, "must be in [0, 2**32)"),
)


# ----- the output directory -----
RUN_MARKERS = ("config.yaml", "metrics.jsonl", "model", "eval.json", "train_summary.json")


def check_output_dir(output_dir: str, resuming: bool) -> None:
    """Refuse an output dir that holds another run (unless resuming it) or that cannot be written."""
    path = Path(output_dir).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"output_dir={output_dir!r} is a file, not a directory")
    if path.is_dir() and not resuming:
        found = sorted(p.name for p in path.iterdir() if p.name in RUN_MARKERS or p.name.startswith("checkpoint-"))
        if found:
            raise ValueError(
                f"output_dir={output_dir!r} already holds a run ({', '.join(found[:MAX_LISTED])}); pass "
                "--resume_from_checkpoint last to continue it, or choose another output_dir (nothing is overwritten)"
            )
    anchor = path
    while not anchor.exists():
        anchor = anchor.parent
    if not anchor.is_dir():
        raise ValueError(f"output_dir={output_dir!r}: {str(anchor)!r} is a file, not a directory")
    try:  # a real write: os.access says yes to root on a read-only mount
        fd, probe = tempfile.mkstemp(dir=anchor, prefix=".stare-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise ValueError(f"output_dir={output_dir!r} is not writable ({anchor}: {err.strerror})") from err


# ----- data against the model, the tokenizer and the reward -----
# ``where[i]`` says where row i sits in its file ("line 3" of a jsonl, "row 3" otherwise), 1-based.
def _prompt_text(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else "\n".join(str(m.get("content", "")) for m in prompt)


def _named(indices: Sequence[int], where: Sequence[str]) -> str:
    shown = ", ".join(where[i] for i in indices[:MAX_LISTED])
    return shown + (f" (+{len(indices) - MAX_LISTED} more)" if len(indices) > MAX_LISTED else "")


def check_chat_template(rows: Sequence[dict[str, Any]], where: Sequence[str], tokenizer: Any, model: str,
                        what: str) -> None:
    """Chat-format rows (prompt = list of messages) need a tokenizer with a chat template."""
    chat = [i for i, r in enumerate(rows) if not isinstance(r["prompt"], str)]
    if chat and not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"{what}: {_named(chat, where)}: the prompt is a list of chat messages but the tokenizer of "
            f"model={model!r} has no chat template; give plain-text prompts ({{\"prompt\": str, \"answer\": ...}}) "
            "or a model whose tokenizer has a chat_template"
        )


def check_characters(rows: Sequence[dict[str, Any]], where: Sequence[str], tokenizer: Any, model: str,
                     what: str) -> None:
    """Refuse text the tokenizer maps to its unknown token (the model could neither read nor write it)."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return
    bad_chars: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        text = _prompt_text(row["prompt"]) + row["answer"]
        if unk not in tokenizer(text, add_special_tokens=False)["input_ids"]:
            continue
        for ch in dict.fromkeys(text):
            if unk in tokenizer(ch, add_special_tokens=False)["input_ids"]:
                bad_chars.setdefault(ch, []).append(i)
    if bad_chars:
        hit = sorted({i for idx in bad_chars.values() for i in idx})
        chars = "".join(sorted(bad_chars))
        raise ValueError(
            f"{what}: characters {chars!r} are not in the vocabulary of model={model!r} (they would become "
            f"{tokenizer.unk_token!r}): {_named(hit, where)}; rewrite those rows or use a model whose tokenizer "
            "covers them"
        )


def check_lengths(rows: Sequence[dict[str, Any]], where: Sequence[str], tokenizer: Any,
                  max_positions: int | None, max_completion_length: int, model: str, what: str) -> str | None:
    """A prompt longer than the model's position embeddings is refused; one that leaves less than
    ``max_completion_length`` positions for the completion is a warning (returned)."""
    if not max_positions:
        return None
    plain = [i for i, r in enumerate(rows) if isinstance(r["prompt"], str)]
    lengths = [0] * len(rows)
    if plain:
        for i, ids in zip(plain, tokenizer([rows[i]["prompt"] for i in plain])["input_ids"], strict=True):
            lengths[i] = len(ids)
    for i, r in enumerate(rows):
        if not isinstance(r["prompt"], str):
            lengths[i] = len(tokenizer.apply_chat_template(r["prompt"], tokenize=True, add_generation_prompt=True))
    worst = max(range(len(rows)), key=lambda i: lengths[i])
    too_long = [i for i, n in enumerate(lengths) if n >= max_positions]
    if too_long:
        raise ValueError(
            f"{what}: {_named(too_long, where)}: prompt longer than model={model!r} can read ({where[worst]}: "
            f"{lengths[worst]} tokens, max_position_embeddings={max_positions}); shorten those prompts"
        )
    if lengths[worst] + max_completion_length > max_positions:
        return (f"{what}: the longest prompt ({where[worst]}, {lengths[worst]} tokens) + max_completion_length="
                f"{max_completion_length} exceeds max_position_embeddings={max_positions} of model={model!r}; "
                "completions past it run beyond the positions the model was trained on")
    return None


def math_reward_warning(tokenizer: Any, model: str) -> str | None:
    """reward=math scores the last ``\\boxed{...}``: warn when the model's tokenizer cannot even write one."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is not None and unk in tokenizer("\\boxed{1}", add_special_tokens=False)["input_ids"]:
        return (f"reward=math scores only a final \\boxed{{...}} answer, which model={model!r} cannot write (its "
                "vocabulary lacks '\\', '{' or '}'): every reward will be 0; use --reward task or a model that can")
    return None


def check_duplicates(rows: Sequence[dict[str, Any]], where: Sequence[str], what: str) -> str | None:
    """Same prompt with different answers: refused (the reward would contradict itself). Same prompt and
    answer repeated: allowed, returned as a warning (those prompts are trained on more often)."""
    first: dict[str, int] = {}
    repeats, conflicts = [], []
    for i, row in enumerate(rows):
        key = repr(row["prompt"])
        if key in first:
            (repeats if rows[first[key]]["answer"] == row["answer"] else conflicts).append(i)
        else:
            first[key] = i
    if conflicts:
        i = conflicts[0]
        j = first[repr(rows[i]["prompt"])]
        raise ValueError(
            f"{what}: {_named(conflicts, where)}: same prompt as an earlier row with a different answer "
            f"({where[i]}: {rows[i]['answer']!r}, {where[j]}: {rows[j]['answer']!r}); keep one answer per prompt"
        )
    if repeats:
        return (f"{what}: {len(repeats)} row(s) repeat an earlier prompt and answer ({_named(repeats, where)}); "
                "kept: they are trained on as often as they appear")
    return None


def check_math_answers(rows: Sequence[dict[str, Any]], where: Sequence[str], what: str) -> None:
    """reward=math: every answer must parse with math-verify, or that row can never be scored."""
    # math-verify returns [expression, text] when it reads an answer, [text] or [] when it cannot
    bad = [i for i, r in enumerate(rows) if all(isinstance(x, str) for x in parse_gold(r["answer"]))]
    if bad:
        raise ValueError(
            f"{what}: math-verify cannot parse the answer of {_named(bad, where)} ({where[bad[0]]}: "
            f"{rows[bad[0]]['answer']!r}), so reward=math could never score it; fix the answers or use reward=task"
        )


def check_number_answers(rows: Sequence[dict[str, Any]], where: Sequence[str], what: str) -> None:
    """reward=number: every answer must be one number, or that row can never be scored."""
    bad = [i for i, r in enumerate(rows) if parse_number(str(r["answer"])) is None]
    if bad:
        raise ValueError(
            f"{what}: the answer of {_named(bad, where)} ({where[bad[0]]}: {rows[bad[0]]['answer']!r}) is not a "
            "number, so reward=number could never score it; fix the answers or use reward=math"
        )


GB = 2**30


def checkpoint_bytes(model: Any) -> tuple[int, int]:
    """What one checkpoint of ``model`` holds, roughly: (weights as saved, weights + Adam's two moments of every
    trainable parameter). A PEFT model saves its adapter only."""
    params = list(model.parameters())
    trainable = sum(p.numel() * p.element_size() for p in params if p.requires_grad)
    weights = trainable if hasattr(model, "peft_config") else sum(p.numel() * p.element_size() for p in params)
    return weights, weights + 2 * trainable


def free_bytes(path: Path) -> int:
    return shutil.disk_usage(path).free


def disk_warning(model: Any, grpo: Any, output_dir: str) -> str | None:
    """Warn, before training, when ``output_dir``'s disk has less free space than the run will write: the
    checkpoints kept at once (``save_total_limit``, plus the one written before an older one is rotated away) and
    the final model. Not an error: the estimate is rough, and a run stopped by a full disk resumes from its last
    complete checkpoint."""
    weights, per_checkpoint = checkpoint_bytes(model)
    strategy = str(getattr(grpo.save_strategy, "value", grpo.save_strategy))
    n_saves = 0
    if strategy == "steps":
        steps = grpo.save_steps if grpo.save_steps >= 1 else grpo.save_steps * max(grpo.max_steps, 1)
        n_saves = max(grpo.max_steps, 1) // max(int(steps), 1) if grpo.max_steps > 0 else 1
    elif strategy in ("epoch", "best"):
        n_saves = max(int(math.ceil(grpo.num_train_epochs)), 1)
    kept = n_saves if grpo.save_total_limit is None else min(n_saves, grpo.save_total_limit + 1)
    need = kept * per_checkpoint + weights
    anchor = Path(output_dir).expanduser()
    while not anchor.exists():
        anchor = anchor.parent
    free = free_bytes(anchor)
    if free >= need:
        return None
    return (f"output_dir={output_dir!r}: {free / GB:.1f} GB free on its disk, and this run writes about "
            f"{need / GB:.1f} GB ({kept} checkpoint(s) of ~{per_checkpoint / GB:.2f} GB, weights and optimizer "
            f"state, at once, and the final model of ~{weights / GB:.2f} GB); free space, or lower save_total_limit "
            "or raise save_steps. A run stopped by a full disk resumes from its last complete checkpoint "
            "(--resume_from_checkpoint last)")


def held_out_split(rows: list[dict[str, Any]], eval_size: int, seed: int) -> tuple[list, list]:
    """``(train, held_out)``: ``min(eval_size, len(rows) // 5)`` rows drawn with ``seed``, removed from training.

    Raises:
        ValueError: fewer than 5 rows (nothing can be held out).
    """
    n = min(eval_size, len(rows) // 5)
    if n < 1:
        raise ValueError(f"dataset has {len(rows)} row(s): too few to hold out an evaluation split (5 needed); "
                         "pass --eval_dataset or --final_eval false")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    held = set(order[:n])
    return [r for i, r in enumerate(rows) if i not in held], [rows[i] for i in sorted(held)]
