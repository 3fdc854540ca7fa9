"""A cache of the held-out evaluation of a run's *starting* policy (``initial_eval``).

Every cell of a ``stare compare`` grid with the same seed starts from the same weights and evaluates them on the
same held-out prompts with the same sampling seed, so each cell used to repeat the same evaluation (on the real LM
5 to 14 of a cell's 50 to 65 minutes on the 2-core CPU, 34 in the first cell, before the evaluation's memory fix;
from the cells' logs, not kept). The evaluation is deterministic given its inputs (its sampling RNG is forked and
seeded, `evaluation.heldout`), so its result is stored under ``<cache>/evals/<key>.json`` and read back when every
input is the same. The key hashes everything the result depends on:

- the model's weights (every tensor of its state dict, name, dtype, shape and bytes) and its dtype and device;
- the tokenizer (vocabulary, special tokens, padding side, chat template);
- the evaluation rows, the reward function's name and the run's ``reward:`` note, and the sampling settings (k,
  temperature, top_p, max_new_tokens, seed, tool-loop settings), and the source of the reward function;
- torch / transformers / trl versions, torch's thread count, the CPU kernel pins (``ATEN_CPU_CAPABILITY``,
  ``MKL_CBWR``), and the source of the evaluation code.

A changed input is a different key (a miss), never a stale hit. Writes are atomic. ``initial_eval_cache: false``
turns it off.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from stare_rl.io.runlog import write_json_atomic

logger = logging.getLogger(__name__)

EVALS_DIR = "evals"
KERNEL_ENV = ("ATEN_CPU_CAPABILITY", "MKL_CBWR")


def model_fingerprint(model: torch.nn.Module) -> str:
    """sha256 of every state-dict tensor (name, dtype, shape, bytes), in name order."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.numel():  # the raw bytes, any dtype (bf16 too), without a copy
            h.update(t.reshape(-1).view(torch.uint8).numpy().data)
    return h.hexdigest()


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """sha256 of what decides the tokens: the vocabulary, the special tokens, the padding side, the chat template."""
    parts = {
        "vocab": sorted(tokenizer.get_vocab().items()),
        "special": {k: str(v) for k, v in sorted(getattr(tokenizer, "special_tokens_map", {}).items())},
        "padding_side": getattr(tokenizer, "padding_side", None),
        "chat_template": getattr(tokenizer, "chat_template", None),
        "class": type(tokenizer).__name__,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _source_hash(*objects: Any) -> str:
    h = hashlib.sha256()
    for obj in objects:
        try:
            h.update(inspect.getsource(obj).encode())
        except (OSError, TypeError):
            h.update(repr(obj).encode())
    return h.hexdigest()


def eval_key(model: torch.nn.Module, tokenizer: Any, rows: list[dict[str, Any]], reward_fn: Callable[..., Any],
             settings: Mapping[str, Any], code: tuple[Any, ...]) -> str:
    """The cache key of one evaluation: a sha256 over every input (see the module docstring)."""
    import transformers
    import trl

    first = next(iter(model.parameters()), None)
    inputs = {
        "model": model_fingerprint(model),
        "model_dtype": str(first.dtype) if first is not None else None,
        "device": str(first.device.type) if first is not None else None,
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "rows": hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest(),
        "reward_fn": f"{getattr(reward_fn, '__module__', '')}.{getattr(reward_fn, '__qualname__', repr(reward_fn))}",
        "settings": dict(sorted(settings.items())),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__},
        "threads": torch.get_num_threads(),
        "kernels": {k: os.environ.get(k) for k in KERNEL_ENV},
        "code": _source_hash(*code),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:24]


def cached_evaluation(cache: Path | None, key: str, evaluate: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], Path | None]:
    """The stored result for ``key`` under ``cache``, else ``evaluate()`` stored there; (result, the file it was read
    from, None when computed). ``cache`` None: always computed, nothing stored."""
    if cache is None:
        return evaluate(), None
    path = Path(cache) / EVALS_DIR / f"{key}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text()), path
        except ValueError:  # a file not written by write_json_atomic (hand-edited, truncated): recompute
            logger.warning("eval cache: %s is not valid JSON; evaluating again", path)
    result = evaluate()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, result)
    return result, None
