"""Entrocraft NSR diagnostic: does the policy's entropy at fixed states rise while the sampled-path entropy falls?
Samples completions from checkpoint A once (fixed paths), then measures teacher-forced per-token entropy of each
checkpoint on those same paths (split by correct / wrong), plus each checkpoint's own sampled-path entropy."""
import json
import sys

import torch
from transformers import AutoModelForCausalLM

from stare_rl.models.tokenizer import load_tokenizer
from stare_rl.tasks import get_task

torch.set_num_threads(1)
task = get_task("countdown_cot")
rows = task.make_split("test", 64, 0)
ckpts = sys.argv[1:]
tok = load_tokenizer(ckpts[0])
prompts = [r["prompt"] for r in rows]


def sample(model, seed):
    torch.manual_seed(seed)
    enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left")
    out = model.generate(**enc, max_new_tokens=64, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                         num_return_sequences=8, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    return enc, out


@torch.no_grad()
def path_entropy(model, seqs, plen):
    """mean per-token entropy over the completion tokens of ``seqs`` (N, L) (up to and incl. first EOS)."""
    attn = (seqs != tok.pad_token_id).long()
    attn[:, plen:] = 1
    gen = seqs[:, plen:]
    is_eos = gen == tok.eos_token_id
    n, L = gen.shape
    lengths = torch.where(is_eos.any(1), is_eos.float().argmax(1) + 1, torch.full((n,), L))
    mask = torch.arange(L)[None] < lengths[:, None]
    logits = model(input_ids=seqs, attention_mask=attn).logits[:, plen - 1:-1].float()
    logp = torch.log_softmax(logits, -1)
    ent = -(logp.exp() * logp).sum(-1)  # (N, L)
    return ent, mask


models = {c: AutoModelForCausalLM.from_pretrained(c).eval() for c in ckpts}
enc, seqs = sample(models[ckpts[0]], 0)
plen = enc["input_ids"].shape[1]
texts = tok.batch_decode(seqs[:, plen:], skip_special_tokens=True)
correct = torch.tensor([task.reward(t, rows[i // 8]["answer"]) > 0.5 for i, t in enumerate(texts)])
res = {"n_paths": len(texts), "frac_correct_paths": float(correct.float().mean())}
for c, m in models.items():
    ent, mask = path_entropy(m, seqs, plen)
    tm = lambda sel: float((ent * mask)[sel].sum() / mask[sel].sum())
    _, own = sample(m, 1)
    e2, m2 = path_entropy(m, own, plen)
    own_texts = tok.batch_decode(own[:, plen:], skip_special_tokens=True)
    acc = sum(task.reward(t, rows[i // 8]["answer"]) > 0.5 for i, t in enumerate(own_texts)) / len(own_texts)
    res[c] = {"fixed_all": tm(slice(None)), "fixed_correct": tm(correct), "fixed_wrong": tm(~correct),
              "own_sampled": float((e2 * m2).sum() / m2.sum()), "own_acc": acc}
print(json.dumps(res, indent=1))
