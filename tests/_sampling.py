"""The held-out evaluation's entropy as it was computed before ``heldout.sampling_entropy`` (HF's stored logits,
stacked, ``log_softmax``, masked sum): the reference the hook is tested against, on the tiny model and the real LM."""

from __future__ import annotations

from typing import Any

import torch

from stare_rl.evaluation.heldout import _completion_lengths


def reference_sampling_entropy(model: Any, tok: Any, prompts: list[str], k: int, temperature: float, top_p: float,
                               seed: int, max_new_tokens: int = 6) -> tuple[list[str], torch.Tensor]:
    """Texts and per-sequence summed entropy ``(len(prompts) * k,)`` of one sampled generation from ``seed``."""
    torch.manual_seed(seed)
    enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left")
    out = model.generate(**enc, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, do_sample=True, temperature=temperature, top_p=top_p,
                         top_k=0, num_return_sequences=k, return_dict_in_generate=True, output_logits=True)
    gen = out.sequences[:, enc["input_ids"].shape[1]:]
    lengths = _completion_lengths(gen, tok.eos_token_id, tok.pad_token_id)
    logp = torch.log_softmax(torch.stack(out.logits, dim=1).float() / temperature, dim=-1)
    ent = -(logp.exp() * logp).sum(-1)
    mask = torch.arange(gen.shape[1])[None, :] < lengths[:, None]
    return tok.batch_decode(gen, skip_special_tokens=True), (ent * mask).sum(dim=1)
