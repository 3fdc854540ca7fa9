"""Does Adam's preconditioning flip the entropy effect of an NSR step? At a checkpoint (its saved AdamW state),
for a few NSR batches sampled from the policy: the first-order entropy change of one step along the raw gradient
(SGD) and along Adam's step, both predicted (grad H . delta) and measured (entropy on the same tokens after the
step), plus the tabular per-token prediction the quadrant diagnostics use. Same for RAFT++ and GRPO batches."""
import json
import sys

import torch
from transformers import AutoModelForCausalLM
from transformers import Trainer

from stare_rl.models.tokenizer import load_tokenizer
from stare_rl.tasks import get_task

torch.set_num_threads(1)
ckpt = sys.argv[1]
n_batches = int(sys.argv[2]) if len(sys.argv) > 2 else 3
task = get_task("countdown_cot")
tok = load_tokenizer(ckpt)
model = AutoModelForCausalLM.from_pretrained(ckpt).float()
opt = torch.load(f"{ckpt}/optimizer.pt", map_location="cpu", weights_only=False)
# the Trainer's two groups: decay params (not bias / norm) then the rest, each in named_parameters order
decay = set(Trainer.get_decay_parameter_names(None, model))
named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
order = [n for n, _ in named if n in decay] + [n for n, _ in named if n not in decay]
assert [len(g["params"]) for g in opt["param_groups"]] == [sum(n in decay for n, _ in named), sum(n not in decay for n, _ in named)]
idx = {n: i for i, n in enumerate(order)}
params = dict(named)
for n in order:
    assert opt["state"][idx[n]]["exp_avg"].shape == params[n].shape, n
lr, (b1, b2), eps = 1e-4, (0.9, 0.999), 1e-8


def batch(seed):
    rows = task.make_split("train", 16, 1000 + seed)
    torch.manual_seed(seed)
    enc = tok([r["prompt"] for r in rows], return_tensors="pt", padding=True, padding_side="left")
    with torch.no_grad():
        seqs = model.generate(**enc, max_new_tokens=64, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                              num_return_sequences=8, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    plen = enc["input_ids"].shape[1]
    gen = seqs[:, plen:]
    is_eos = gen == tok.eos_token_id
    n, L = gen.shape
    lengths = torch.where(is_eos.any(1), is_eos.float().argmax(1) + 1, torch.full((n,), L))
    mask = (torch.arange(L)[None] < lengths[:, None]).float()
    attn = (seqs != tok.pad_token_id).long()
    attn[:, plen:] = 1
    texts = tok.batch_decode(gen, skip_special_tokens=True)
    r = torch.tensor([task.reward(t, rows[i // 8]["answer"]) for i, t in enumerate(texts)])
    g = r.view(-1, 8)
    adv = ((g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-4)).view(-1)
    return seqs, attn, plen, gen, mask, r, adv


def forward(seqs, attn, plen, gen):
    logits = model(input_ids=seqs, attention_mask=attn).logits[:, plen - 1:-1].float()
    logp = torch.log_softmax(logits, -1)
    lp = logp.gather(-1, gen.unsqueeze(-1)).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    return logp, lp, ent


def flat(ts):
    return torch.cat([t.reshape(-1) for t in ts])


def entropy_grad(b):
    seqs, attn, plen, gen, mask = b[:5]
    _, _, ent = forward(seqs, attn, plen, gen)
    H = (ent * mask).sum() / mask.sum()
    return torch.autograd.grad(H, [params[n] for n in order])


held = entropy_grad(batch(100))  # the entropy gradient on other states (another batch's tokens)
out = []
for seed in range(n_batches):
    seqs, attn, plen, gen, mask, r, adv = batch(seed)
    ntok = mask.sum()
    for mode, a in (("NSR", -(r < 0.5).float()), ("RAFT++", (r > 0.5).float()), ("GRPO", adv)):
        A = a[:, None] * mask
        if float(A.abs().sum()) == 0:
            continue
        logp, lp, ent = forward(seqs, attn, plen, gen)
        loss = -(A * lp).sum() / ntok  # on-policy clipped surrogate = -A log pi (+ const), token-mean
        H = (ent * mask).sum() / ntok
        ps = [params[n] for n in order]
        g = torch.autograd.grad(loss, ps, retain_graph=True)
        gH = torch.autograd.grad(H, ps)
        # tabular (per-position logits) first-order prediction: dH = -eta * sum A S(a) / ntok^2-free form
        with torch.no_grad():
            p = logp.exp()
            Hpos = ent
            S = lp.exp() * (lp + Hpos) - (p * p * (logp + Hpos[..., None])).sum(-1)
            tab = float(-(A * S * mask).sum() / ntok)  # sign of the tabular prediction (scale-free)
        steps = {}
        for kind in ("sgd", "adam"):
            deltas = []
            for n, gi in zip(order, g):
                if kind == "sgd":
                    deltas.append(-lr * gi)
                else:
                    st = opt["state"][idx[n]]
                    t = float(st["step"]) + 1
                    m = b1 * st["exp_avg"] + (1 - b1) * gi
                    v = b2 * st["exp_avg_sq"] + (1 - b2) * gi * gi
                    deltas.append(-lr * (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps))
            pred = float(flat(gH) @ flat(deltas))
            pred_other = float(flat(held) @ flat(deltas))
            with torch.no_grad():
                for pi, d in zip(ps, deltas):
                    pi.add_(d)
                _, _, ent2 = forward(seqs, attn, plen, gen)
                meas = float((ent2 * mask).sum() / ntok) - float(H)
                for pi, d in zip(ps, deltas):
                    pi.sub_(d)
            steps[kind] = {"pred": pred, "measured": meas, "pred_other_states": pred_other,
                           "step_norm": float(flat(deltas).norm())}
        # Adam with the momentum of earlier steps removed (fresh m, the saved v): preconditioning alone
        deltas = []
        for n, gi in zip(order, g):
            st = opt["state"][idx[n]]
            t = float(st["step"]) + 1
            v = b2 * st["exp_avg_sq"] + (1 - b2) * gi * gi
            deltas.append(-lr * gi / ((v / (1 - b2 ** t)).sqrt() + eps))
        steps["precond_only_pred"] = float(flat(gH) @ flat(deltas))
        steps["precond_only_pred_other"] = float(flat(held) @ flat(deltas))
        cos = float(flat(g) @ flat([opt["state"][idx[n]]["exp_avg"] for n in order]) /
                    (flat(g).norm() * flat([opt["state"][idx[n]]["exp_avg"] for n in order]).norm()))
        out.append({"batch": seed, "mode": mode, "H": float(H.detach()), "kept": float((A != 0).float().sum() / ntok),
                    "tabular_sign": tab, "cos_grad_momentum": cos, **steps})
        print(json.dumps(out[-1]), flush=True)
