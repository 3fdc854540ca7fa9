"""The estimator probe: scoring statistics, estimators, and real one-step measurements on tiny policies."""

from __future__ import annotations

import pytest
import torch

from stare_rl.analysis.estimators import predicted_changes, score, spearman
from stare_rl.analysis.probe import (
    CausalLMPolicy,
    LinearHead,
    LogitTable,
    LossSpec,
    ProbeBatch,
    StepSpec,
    calibrate_lr,
    loss_and_coefficient,
    measure_step,
    probe_step,
    run_probe,
)
from stare_rl.core.tokens import entropy_sensitivity, sensitivity_from_log_probs, steer_omega, steer_omega_abs
from stare_rl.core.types import LossContext


def test_score_by_hand() -> None:
    true = torch.tensor([1.0, -2.0, 3.0, 0.5])
    s = score(2.0 * true, true)
    assert s["scale"] == pytest.approx(0.5) and s["mse"] == pytest.approx(0.0, abs=1e-15)
    assert s["pearson"] == pytest.approx(1.0) and s["spearman"] == pytest.approx(1.0)
    assert s["sign_agree"] == 1.0 and s["n"] == 4
    # pred = [1, 0, 0, 1] vs true = [1, 1, -1, -1]: scale = (1 - 1) / 2 = 0 -> mse = mean(true^2) = 1
    s = score(torch.tensor([1.0, 0.0, 0.0, 1.0]), torch.tensor([1.0, 1.0, -1.0, -1.0]))
    assert s["scale"] == 0.0 and s["mse"] == pytest.approx(1.0) and s["rel_mse"] == pytest.approx(1.0)
    assert s["sign_agree"] == pytest.approx(0.5)  # nonzero predictions: +1 vs +1 (agree), +1 vs -1
    assert s["pearson"] is None  # only two distinct predictions
    empty = score(torch.zeros(0), torch.zeros(0))
    assert empty["n"] == 0 and empty["mse"] == 0.0 and empty["pearson"] is None
    # two distinct predictions (a repeated response): correlation is trivially 1, so it is not reported
    two = score(torch.tensor([1.0, 1.0, 2.0]), torch.tensor([0.5, 0.7, 3.0]))
    assert two["n_distinct"] == 2 and two["pearson"] is None and two["spearman"] is None


def test_spearman_with_ties_by_hand() -> None:
    # x ranks with ties: [0, 1.5, 1.5, 3]; y ranks [0, 1, 2, 3] -> pearson of those
    x, y = torch.tensor([1.0, 2.0, 2.0, 5.0]), torch.tensor([10.0, 20.0, 30.0, 40.0])
    rx, ry = torch.tensor([0.0, 1.5, 1.5, 3.0]), torch.tensor([0.0, 1.0, 2.0, 3.0])
    rxc, ryc = rx - rx.mean(), ry - ry.mean()
    expected = float((rxc * ryc).sum() / (rxc.norm() * ryc.norm()))
    assert spearman(x, y) == pytest.approx(expected)
    assert spearman(torch.ones(5), y.repeat(2)[:5]) == 0.0  # constant side -> 0, not NaN


def test_estimators_agree_with_core_quantities() -> None:
    torch.manual_seed(1)
    logits = torch.randn(4, 6, 9)
    tokens = torch.randint(0, 9, (4, 6))
    adv = torch.randn(4, 6)
    logp = logits.log_softmax(-1)
    s64 = sensitivity_from_log_probs(logp.double(), tokens)
    assert torch.allclose(s64.float(), entropy_sensitivity(logits, tokens), atol=1e-6)
    lp = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    old = lp - 0.1
    signed = steer_omega(lp, old, adv, ent)
    assert bool((signed < 0).any()) and bool((signed > 0).any())  # signed: both directions occur
    assert torch.equal(signed.abs(), steer_omega_abs(lp, old, adv, ent))
    preds = predicted_changes(logits.double(), tokens, adv.double())
    assert torch.allclose(preds["exact"], -adv.double() * s64)
    lead = lp.exp() * (lp + ent)
    assert torch.allclose(preds["leading"].float(), -adv * lead, atol=1e-6)


def _tiny_lm_batch(seed: int = 0) -> tuple[torch.nn.Module, ProbeBatch]:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=13, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                      tie_word_embeddings=True)
    model = Qwen2ForCausalLM(cfg).double().eval()
    b, length = 16, 10
    ids = torch.randint(0, 13, (b, length))
    attn = torch.ones(b, length, dtype=torch.long)
    attn[0, -2:] = 0  # one right-padded row
    resp = torch.zeros(b, length - 1)
    resp[:, 4:] = 1
    resp[0, -2:] = 0
    seq_adv = torch.randn(b, dtype=torch.float64)
    seq_adv[1] = 0.0
    return model, ProbeBatch(ids, attn, resp, seq_adv[:, None] * resp.double())


def test_effective_coefficient_is_a_over_n_for_vanilla_token_mean() -> None:
    model, batch = _tiny_lm_batch()
    _, _, g = loss_and_coefficient(CausalLMPolicy(model, batch), batch, LossSpec())
    n = batch.response_mask.sum()
    assert torch.allclose(g, batch.advantages / n, atol=1e-12)


def test_entrocraft_coefficient_reads_the_rewards_not_the_advantages() -> None:
    """NSR below the band: g = -1/N on the tokens of responses with R < 0.5, whatever their advantage; 0 else."""
    model, batch = _tiny_lm_batch()
    rewards = (torch.arange(16) % 2).double()[:, None] * batch.response_mask.double()  # odd rows correct
    batch = ProbeBatch(batch.input_ids, batch.attention_mask, batch.response_mask, batch.advantages, rewards)
    spec = LossSpec(method="entrocraft", context=LossContext(stats={"entrocraft_mode": -1}))
    _, _, g = loss_and_coefficient(CausalLMPolicy(model, batch), batch, spec)
    n = batch.response_mask.sum()
    wrong = (torch.arange(16) % 2 == 0).double()[:, None] * batch.response_mask.double()
    assert torch.allclose(g, -wrong / n, atol=1e-12)
    with pytest.raises(ValueError, match="needs batch.rewards"):
        no_rewards = ProbeBatch(batch.input_ids, batch.attention_mask, batch.response_mask, batch.advantages)
        loss_and_coefficient(CausalLMPolicy(model, no_rewards), no_rewards, spec)


def test_logit_independent_limit_is_exact_at_small_lr_and_shared_model_is_not() -> None:
    model, batch = _tiny_lm_batch()
    shared = CausalLMPolicy(model, batch)
    before = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        table = LogitTable(shared())
    lr = 1e-2
    rec = probe_step(table, batch, LossSpec(), StepSpec("sgd", lr))
    exact = rec["scores"]["exact"]["all"]
    assert exact["pearson"] > 0.9999 and exact["sign_agree"] == 1.0
    assert exact["scale"] == pytest.approx(lr, rel=1e-3)  # dH = -lr * g * S(a) to first order
    assert rec["scores"]["leading"]["all"]["pearson"] < exact["pearson"]
    # a shared-parameter model at a matched entropy change: first order no longer explains each position
    lr_shared = calibrate_lr(shared, batch, LossSpec(), "sgd", rec["mean_abs_dh"] / rec["mean_entropy"])
    rec_s = probe_step(shared, batch, LossSpec(), StepSpec("sgd", lr_shared))
    assert rec_s["mean_abs_dh"] > 0
    assert rec_s["scores"]["exact"]["all"]["pearson"] < 0.99
    # zero-advantage tokens move only through shared parameters
    assert rec["quadrants"]["zero_adv"]["frac"] > 0
    assert abs(rec["quadrants"]["zero_adv"]["dh_sum"]) < 1e-15
    assert abs(rec_s["quadrants"]["zero_adv"]["dh_sum"]) > 0
    for p, q in zip(model.parameters(), before, strict=True):  # the probe never moves the policy it is given
        assert torch.equal(p, q)


def test_linear_head_reproduces_the_model_logits_and_trains_only_the_head() -> None:
    model, batch = _tiny_lm_batch(seed=4)
    shared = CausalLMPolicy(model, batch)
    head = LinearHead.from_policy(shared)
    with torch.no_grad():
        assert torch.allclose(head(), shared(), atol=1e-9)
    assert [n for n, _ in head.named_parameters()] == ["weight"]
    rec = probe_step(head, batch, LossSpec(), StepSpec("sgd", 1e-2))
    assert rec["mean_abs_dh"] > 0 and abs(rec["quadrants"]["zero_adv"]["dh_sum"]) > 0  # shared through W


def test_measured_change_matches_an_independent_recomputation() -> None:
    model, batch = _tiny_lm_batch(seed=3)
    policy = CausalLMPolicy(model, batch)
    m = measure_step(policy, batch, LossSpec(), StepSpec("sgd", 0.5))
    # redo the step by hand: theta <- theta - lr * grad of the token-mean policy-gradient loss
    import copy

    work = copy.deepcopy(model)
    logits = CausalLMPolicy(work, batch)()
    logp = logits.log_softmax(-1).gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)
    mask = batch.response_mask.double()
    loss = -(batch.advantages * logp * mask).sum() / mask.sum()
    loss.backward()
    with torch.no_grad():
        for p in work.parameters():
            p -= 0.5 * p.grad

        def ent(z: torch.Tensor) -> torch.Tensor:
            lp = z.log_softmax(-1)
            return -(lp.exp() * lp).sum(-1)

        dh = ent(CausalLMPolicy(work, batch)()) - ent(logits)
    assert torch.allclose(m["dh"], dh, atol=1e-10)


def test_run_probe_calibrates_and_covers_optimizers() -> None:
    model, batch = _tiny_lm_batch(seed=2)
    recs = run_probe({"shared": CausalLMPolicy(model, batch)}, batch, LossSpec(), rel_changes=(1e-3,))
    assert [r["optimizer"] for r in recs] == ["sgd", "adamw"]
    for r in recs:
        assert r["rel_change"] == pytest.approx(1e-3, rel=0.1)  # calibrated step size
        assert set(r["scores"]) == {"exact", "leading", "omega"}
        assert set(r["scores"]["exact"]) == {"all", "pos_high", "pos_low", "neg_high", "neg_low", "zero_adv"}
    with pytest.raises(ValueError, match="optimizer"):
        StepSpec("adam", 1e-3)
    with pytest.raises(ValueError, match="advantages"):
        ProbeBatch(batch.input_ids, batch.attention_mask, batch.response_mask, batch.advantages[:, :3])


def _tiny_task_model():  # noqa: ANN202
    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    task = get_task("arithmetic")
    tok = build_char_tokenizer(task.alphabet)
    return task, tok, build_tiny_model(tok, hidden_size=32, num_layers=1, num_heads=2, seed=0).eval()


def test_sampled_batch_is_aligned_with_the_responses() -> None:
    from stare_rl.analysis.probe_data import SampleSpec, sample_probe_batch

    task, tok, model = _tiny_task_model()
    spec = SampleSpec(n_prompts=3, group_size=2, max_new_tokens=6, advantages="random", seed=1)
    batch, info = sample_probe_batch(model, tok, task, spec)
    assert info["n_sequences"] == 6 and batch.input_ids.shape[0] == 6
    rows = task.make_split("train", 3, 1)
    for i in range(6):
        real = batch.attention_mask[i].bool()
        text = tok.decode(batch.input_ids[i][real], skip_special_tokens=True)
        assert text.startswith(rows[i // 2]["prompt"])
        resp_targets = batch.targets[i][batch.response_mask[i] > 0]
        assert tok.decode(resp_targets, skip_special_tokens=True) == text[len(rows[i // 2]["prompt"]):]
        adv = batch.advantages[i][batch.response_mask[i] > 0]
        assert adv.numel() >= 1 and torch.all(adv == adv[0])  # one sequence advantage on every response token
    assert bool((batch.advantages[batch.response_mask == 0] == 0).all())
    # each response's reward at its tokens (a random model scores 0 everywhere), 0 on padding
    assert batch.rewards is not None and batch.rewards.shape == batch.advantages.shape
    assert bool((batch.rewards == 0).all())
    with pytest.raises(ValueError, match="advantages are all 0"):  # a random model never gets a reward
        sample_probe_batch(model, tok, task, SampleSpec(n_prompts=2, group_size=2, max_new_tokens=4))


def test_probe_command_end_to_end(tmp_path) -> None:  # noqa: ANN001
    import json

    from stare_rl.commands.probe import main

    task, tok, model = _tiny_task_model()
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    out = tmp_path / "probe.json"
    rc = main(["--model", str(tmp_path / "m"), "--advantages", "random", "--prompts", "3", "--group", "2",
               "--optimizers", "sgd", "--rel-changes", "1e-4", "--out", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert [(r["policy"], r["optimizer"]) for r in res["records"]] == [
        ("shared", "sgd"), ("head", "sgd"), ("logits", "sgd")]
    logit_exact = res["records"][2]["scores"]["exact"]["all"]
    assert logit_exact["pearson"] > 0.99
    assert main(["--model", str(tmp_path / "nope")]) == 2
    assert main(["--model", "tiny-random", "--policies", "both"]) == 2
