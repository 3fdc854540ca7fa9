"""TRL engine adapter: a few real GRPO steps of a tiny model per method family, on CPU.

Also pins the TRL private hooks the adapter relies on: if TRL moves them, ``test_trl_hooks_exist`` fails.
"""

from __future__ import annotations

import copy
import inspect
import math
from pathlib import Path
from typing import Any

import pytest
import torch

trl = pytest.importorskip("trl")

from stare_rl.core.types import TokenBatch  # noqa: E402
from stare_rl.engines.trl.config import StareGRPOConfig  # noqa: E402
from stare_rl.engines.trl.trainer import TRL_HOOKS, TRL_VERSION, StareGRPOTrainer  # noqa: E402
from stare_rl.methods.stare.gate import StareGate  # noqa: E402

pytestmark = pytest.mark.slow

REQUIRED_METRICS = (
    "loss", "actor/pg_loss", "actor/entropy", "actor/pg_clipfrac", "actor/ppo_kl", "actor/grad_norm",
    "critic/score/mean", "response_length/mean", "loss/mean_weight",
    "quadrant/pos_high_frac", "quadrant/pos_low_frac", "quadrant/neg_high_frac", "quadrant/neg_low_frac",
)


def digit_reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
    """Fraction of digits in the completion: varies across samples of a random model (non-zero advantages)."""
    return [sum(c.isdigit() for c in text) / max(len(text), 1) for text in completions]


def constant_reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
    return [1.0 for _ in completions]


def tiny_parts(seed: int = 0) -> tuple[Any, Any, Any]:
    """(model, tokenizer, dataset): the project's tiny Qwen2 model at a smaller size, arithmetic prompts."""
    from datasets import Dataset

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    task = get_task("arithmetic")
    tok = build_char_tokenizer(task.alphabet)
    model = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=seed)
    return model, tok, Dataset.from_list(task.make_split("train", 64, seed))


def make_trainer(
    out: Path,
    method: str = "stare",
    method_kwargs: dict[str, Any] | None = None,
    method_args: dict[str, Any] | None = None,
    reward: Any = digit_reward,
    callbacks: list | None = None,
    **grpo: Any,
) -> StareGRPOTrainer:
    model, tok, ds = tiny_parts()
    kwargs = dict(method=method, **(method_kwargs or {}), **(method_args or {}),
        output_dir=str(out), per_device_train_batch_size=16, num_generations=4, max_completion_length=5,
        learning_rate=1e-3, max_steps=2, save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
        report_to="none", lr_scheduler_type="constant",
    )
    kwargs.update(grpo)
    args = StareGRPOConfig(**kwargs)
    return StareGRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok,
                            callbacks=callbacks)


def step_logs(trainer: StareGRPOTrainer) -> list[dict[str, float]]:
    return [r for r in trainer.state.log_history if "loss" in r]


def test_trl_hooks_exist() -> None:
    """The GRPOTrainer private methods the adapter overrides/calls exist with the parameters it uses."""
    from trl import GRPOTrainer

    assert trl.__version__ == TRL_VERSION, f"built against trl=={TRL_VERSION}, found {trl.__version__}"
    for name, params in TRL_HOOKS.items():
        fn = getattr(GRPOTrainer, name, None)
        assert callable(fn), f"GRPOTrainer.{name} is gone"
        got = list(inspect.signature(fn).parameters)[1:]
        assert got[: len(params)] == list(params), f"GRPOTrainer.{name}{tuple(got)} changed"
    src = inspect.getsource(GRPOTrainer)
    for attr in ("self._metrics[", "self.num_generations", "self._buffered_inputs", "steps_per_generation"):
        assert attr in src, f"GRPOTrainer no longer uses {attr}"


@pytest.mark.parametrize(
    "method, method_kwargs, method_args",
    [
        ("vanilla", {}, {}),
        ("stare", {"weight_control": "paper"}, {}),
        ("steer", {}, {}),
        ("kl_cov", {}, {}),
        ("clip_cov", {}, {}),
        ("high_entropy", {}, {}),
        ("vanilla", {}, {"entropy_bonus": "adaptive", "advantage_estimator": "rloo"}),
    ],
)
def test_method_family_trains(
    tmp_path: Path, method: str, method_kwargs: dict[str, Any], method_args: dict[str, Any]
) -> None:
    trainer = make_trainer(tmp_path, method, method_kwargs, method_args=method_args)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    logs = step_logs(trainer)
    assert [r["step"] for r in logs] == [1, 2]
    for rec in logs:
        for key in REQUIRED_METRICS:
            if method == "kl_cov" and key == "actor/pg_clipfrac":
                continue  # KL-Cov is unclipped
            assert key in rec and rec[key] is not None and math.isfinite(rec[key]), (key, rec.get(key))
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert changed, "no parameter moved"
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2 and '"step": 1' in lines[0]
    if method_args.get("entropy_bonus") == "adaptive":
        assert "control/entropy_coef" in logs[0] and "actor/entropy_coef" not in logs[0]  # the controller's, once


@pytest.mark.parametrize("target, gate_on", [(100.0, True), (0.0, False)])
def test_stare_weights_differ_from_one_exactly_when_gate_on(tmp_path: Path, target: float, gate_on: bool) -> None:
    trainer = make_trainer(tmp_path, "stare", {"target_entropy": target, "variant": "O1"})
    trainer.train()
    for rec in step_logs(trainer):
        assert rec["control/gate_on"] == float(gate_on)
        assert (rec["control/batch_entropy"] < target) == gate_on
        if gate_on:
            assert rec["loss/l_plus_frac"] > 0 and rec["loss/mean_weight"] > 1.0  # W = 1.1 on L+
        else:
            assert rec["loss/mean_weight"] == 1.0  # all weights exactly 1 (selection still logged)
    assert trainer.controller_state()["gate"]["gate_on"] is gate_on


@pytest.mark.parametrize("spg", [1, 2])
def test_gate_uses_pre_update_entropy_once_per_generation_batch(tmp_path: Path, spg: int) -> None:
    """One gate update per generation batch (``spg`` optimizer steps each), fed with the token-mean entropy of
    the policy as it was before the first update on that batch, over all valid tokens of the batch.

    spg = 1 measures it in the first training forward (no extra pass), spg = 2 in a separate no-grad pass.
    """
    from transformers import TrainerCallback

    from stare_rl.engines.trl.batch import loss_mask

    snapshots: dict[int, Any] = {}

    class Snapshot(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):  # noqa: ANN001
            snapshots[state.global_step] = copy.deepcopy(model)

    trainer = make_trainer(tmp_path, "stare", max_steps=4, per_device_train_batch_size=16 // spg,
                           steps_per_generation=spg, learning_rate=3e-2, callbacks=[Snapshot()])
    snapshots[0] = copy.deepcopy(trainer.model)
    seen: list[float] = []
    batches: list[dict[str, Any]] = []
    gate, generate = trainer.step_control.controllers["gate"], trainer._generate_and_score_completions
    gate.update = lambda obs: (seen.append(obs.entropy), StareGate.update(gate, obs))[1]  # type: ignore[method-assign]
    trainer._generate_and_score_completions = lambda inputs: (batches.append(generate(inputs)), batches[-1])[1]
    trainer.train()
    n_batches = 4 // spg
    assert len(seen) == n_batches == len(batches)

    def entropy(policy: Any, batch: dict[str, Any]) -> float:
        with torch.no_grad():
            _, ent, _ = trainer._forward(policy, batch, compute_entropy=True)  # (B, T)
        mask = loss_mask(batch)
        return float((ent * mask).sum() / mask.sum())

    expected = [entropy(snapshots[i * spg], batches[i]) for i in range(n_batches)]
    assert seen == pytest.approx(expected, abs=1e-5)
    assert abs(entropy(snapshots[4], batches[-1]) - seen[-1]) > 1e-4  # the updates did move the entropy


@pytest.mark.parametrize("accumulation", [1, 2])
def test_global_scope_thresholds_reach_the_loss(tmp_path: Path, accumulation: int) -> None:
    trainer = make_trainer(tmp_path, "stare", {"selection_scope": "global", "target_entropy": 100.0},
                           per_device_train_batch_size=16 // accumulation, gradient_accumulation_steps=accumulation)
    trainer.train()
    assert trainer._ctx.get("surprisal_threshold_pos") is not None and trainer._ctx.get("gate_on") is True
    assert all(math.isfinite(r["loss"]) for r in step_logs(trainer))


def test_dynamic_sampling_drops_constant_groups(tmp_path: Path) -> None:
    """Every group agrees -> every row dropped: zero loss, no update, nothing NaN."""
    trainer = make_trainer(tmp_path, "vanilla", method_args={"dynamic_sampling": True, "dynamic_sampling_mode": "mask"},
                           reward=constant_reward)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    for rec in step_logs(trainer):
        assert rec["dynamic_sampling/kept"] == 0.0
        assert rec["loss"] == 0.0 and rec["actor/grad_norm"] == 0.0
    assert all(torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())

    trainer = make_trainer(tmp_path / "b", "vanilla", method_args={"dynamic_sampling": True,
                                                                   "dynamic_sampling_mode": "mask"})
    trainer.train()
    assert all(r["dynamic_sampling/kept"] > 0.5 for r in step_logs(trainer))


def zero_reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
    return [0.0 for _ in completions]


@pytest.mark.parametrize("reward, target, mode", [(constant_reward, 1e-4, 1.0), (zero_reward, 100.0, -1.0)])
def test_entrocraft_pushes_agreeing_groups_from_the_reward(tmp_path: Path, reward: Any, target: float,
                                                           mode: float) -> None:
    """Entrocraft's RAFT++ / NSR act on the raw reward (as the reference's max/min(R, 0)): with every group all
    correct (all wrong), every advantage is 0, yet RAFT++ above the band (NSR below it) keeps every token and the
    model moves; GRPO on the same batches would not."""
    trainer = make_trainer(tmp_path, "entrocraft", {"target_entropy": target}, reward=reward)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    for rec in step_logs(trainer):
        assert rec["control/entrocraft_mode"] == mode and rec["frac_reward_zero_std"] == 1.0
        assert rec["loss/kept_frac"] == 1.0
    assert any(not torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())


def half_constant_reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
    """Constant 0 for prompts whose text starts with an even digit (no spread), the digit fraction otherwise."""
    out = []
    for p, c in zip(prompts, completions, strict=True):
        text = p if isinstance(p, str) else p[-1]["content"]
        out.append(0.0 if int(text[0]) % 2 == 0 else digit_reward([p], [c])[0])
    return out


def record_batches(trainer: StareGRPOTrainer) -> tuple[list[int], list[int]]:
    """Rows of every loss micro-batch, and the reward calls (= generation rounds) per generation batch."""
    sizes: list[int] = []
    rounds: list[int] = []
    compute, rewards, generate = trainer._compute_loss, trainer._calculate_rewards, trainer._generate_and_score_completions

    def counted_rewards(*a: Any) -> Any:
        rounds[-1] += 1
        return rewards(*a)

    def counted_generate(inputs: Any) -> Any:
        rounds.append(0)
        return generate(inputs)

    trainer._compute_loss = lambda model, inputs: (sizes.append(inputs["completion_ids"].shape[0]), compute(model, inputs))[1]
    trainer._calculate_rewards = counted_rewards
    trainer._generate_and_score_completions = counted_generate
    return sizes, rounds


def test_refill_keeps_the_batch_full_of_informative_groups(tmp_path: Path) -> None:
    """DAPO refill: more rounds until every group in the batch has reward spread; the batch size never changes."""
    trainer = make_trainer(tmp_path, "vanilla", method_args={"dynamic_sampling": True}, reward=half_constant_reward,
                           max_steps=3)
    sizes, rounds = record_batches(trainer)
    trainer.train()
    assert sizes == [16] * 3  # per_device_train_batch_size rows in every update
    logs = step_logs(trainer)
    for rec, n_rounds in zip(logs, rounds, strict=True):
        assert rec["dynamic_sampling/kept"] == 1.0 and rec["dynamic_sampling/short_groups"] == 0.0
        assert rec["dynamic_sampling/gen_rounds"] == n_rounds >= 1
    assert max(rounds) >= 2  # about half the prompts give constant groups: the first round alone is short


def test_refill_stops_at_max_num_gen_batches(tmp_path: Path) -> None:
    """No group ever has spread: exactly max_num_gen_batches rounds, the batch filled with masked groups."""
    trainer = make_trainer(tmp_path, "vanilla", method_args={"dynamic_sampling": True, "max_num_gen_batches": 3},
                           reward=constant_reward)
    sizes, rounds = record_batches(trainer)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert rounds == [3, 3] and sizes == [16, 16]
    for rec in step_logs(trainer):
        assert rec["dynamic_sampling/gen_rounds"] == 3.0 and rec["dynamic_sampling/short_groups"] == 4.0
        assert rec["dynamic_sampling/kept"] == 0.0 and rec["loss"] == 0.0
    assert all(torch.equal(p, before[n]) for n, p in trainer.model.named_parameters())


def test_superseded_trl_loss_fields_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="epsilon=0.3.*clip_ratio_low"):
        make_trainer(tmp_path, "vanilla", epsilon=0.3)
    with pytest.raises(ValueError, match="top_entropy_quantile"):
        make_trainer(tmp_path, "vanilla", top_entropy_quantile=0.2)


def _raises(completion: str, answer: str) -> float:
    raise RuntimeError("broken reward")


def _hangs(completion: str, answer: str) -> float:
    import time

    time.sleep(5)
    return 1.0


def test_reward_errors_and_timeouts_score_zero_and_are_counted() -> None:
    from stare_rl.engines.trl.rewards import make_reward_func

    logged: list[tuple[str, float]] = []
    for fn, timeout in ((_raises, 5.0), (_hangs, 0.05)):
        reward = make_reward_func(fn, timeout_s=timeout)
        scores = reward(["1+1="] * 3, ["2", "3", "x"], answer=["2"] * 3, log_metric=lambda k, v: logged.append((k, v)))
        assert scores == [0.0, 0.0, 0.0]
    assert logged == [("reward/errors", 3.0), ("reward/errors", 3.0)]
    good = make_reward_func(lambda c, a: float(c.strip() == a), timeout_s=5.0)
    assert good(["p", "p"], ["2", " 3"], answer=["2", "2"]) == [1.0, 0.0]


def test_training_goes_on_when_the_reward_function_raises(tmp_path: Path) -> None:
    from stare_rl.engines.trl.rewards import make_reward_func

    trainer = make_trainer(tmp_path, "stare", reward=make_reward_func(_raises, timeout_s=5.0))
    trainer.train()
    logs = step_logs(trainer)
    assert [r["step"] for r in logs] == [1, 2]
    assert all(r["reward/errors"] == 16.0 and r["critic/score/mean"] == 0.0 for r in logs)


def test_steer_gets_the_old_policys_entropy_from_trls_old_logprob_pass(tmp_path: Path, monkeypatch) -> None:
    """STEER's H is the old policy's entropy (reference: `entropys` of the log-prob pass). With two updates per
    generation TRL runs an old log-prob pass; its entropy reaches the loss as old_entropy: equal to the current
    entropy on the first micro-batch (no update yet), different on the second (after one update)."""
    import stare_rl.engines.trl.trainer as T

    seen: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    real = T.compute_loss

    def recording(name: str, batch: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append((batch.entropy.detach().clone(), batch.old_entropy.clone(), batch.mask.clone()))
        return real(name, batch, *args, **kwargs)

    monkeypatch.setattr(T, "compute_loss", recording)
    trainer = make_trainer(tmp_path, "steer", per_device_train_batch_size=8, steps_per_generation=2, max_steps=2)
    assert trainer._computes_old_logps()
    trainer.train()
    assert len(seen) == 2  # one generation batch, two optimizer steps on it (one micro-batch each)
    for i, (now, old, mask) in enumerate(seen):
        valid = mask.bool()
        if i % 2 == 0:  # first micro-batch of a generation: the policy that generated, up to float noise
            torch.testing.assert_close(old[valid], now[valid], atol=1e-4, rtol=1e-4)
        else:  # one optimizer step later (lr 1e-3): the current entropy has moved, the old one has not
            assert float((old[valid] - now[valid]).abs().max()) > 1e-3


def test_is_ratio_weights_the_policy_term_not_the_entropy_bonus() -> None:
    """vLLM's sampler/trainer importance ratio multiplies the policy term only (TRL); the bonus is added after."""
    from stare_rl import LossContext, compute_loss
    from stare_rl.core.entropy_bonus import EntropyBonusConfig, entropy_bonus
    from stare_rl.engines.trl.batch import with_is_ratio_and_bonus

    g = torch.Generator().manual_seed(0)
    lp = -torch.rand(3, 4, generator=g) - 0.1
    mask = torch.ones(3, 4)
    mask[2, 2:] = 0
    batch = TokenBatch(lp.requires_grad_(), lp.detach() + 0.05, torch.randn(3, 1, generator=g).expand(3, 4) * mask,
                       mask, entropy=torch.rand(3, 4, generator=g).requires_grad_())
    out = compute_loss("vanilla", batch)
    ratio = 0.5 + torch.rand(3, 4, generator=g)
    got, policy = with_is_ratio_and_bonus(out, batch, ratio, EntropyBonusConfig(coef=0.1), LossContext())
    bonus = entropy_bonus(batch.entropy, batch.mask, 0.1)
    torch.testing.assert_close(policy, out.token_loss * ratio)
    torch.testing.assert_close(got.token_loss, out.token_loss * ratio + bonus)
    assert not torch.allclose(got.token_loss, (out.token_loss + bonus) * ratio)  # the old, wrong composition
    same, _ = with_is_ratio_and_bonus(out, batch, None, None, LossContext())  # no vLLM, no bonus: unchanged
    assert same.token_loss is out.token_loss


def test_moe_router_aux_loss_is_added_as_trl_does(tmp_path: Path) -> None:
    """A Mixture-of-Experts model: the loss carries router_aux_loss_coef x the load-balancing loss (TRL's rule)."""
    from transformers import MixtralConfig, MixtralForCausalLM

    _, tok, ds = tiny_parts()

    def moe_trainer(out: Path, coef: float) -> StareGRPOTrainer:
        torch.manual_seed(0)
        cfg = MixtralConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=32, num_hidden_layers=1,
                            num_attention_heads=2, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                            max_position_embeddings=64, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                            bos_token_id=tok.bos_token_id, router_aux_loss_coef=0.02)
        model = MixtralForCausalLM(cfg)
        args = StareGRPOConfig(output_dir=str(out), per_device_train_batch_size=16, num_generations=4,
                               max_completion_length=5, learning_rate=1e-3, max_steps=1, save_strategy="no",
                               use_cpu=True, seed=0, disable_tqdm=True, report_to="none", router_aux_loss_coef=coef)
        return StareGRPOTrainer(model=model, reward_funcs=digit_reward, args=args, train_dataset=ds,
                                processing_class=tok)

    with_aux, without = moe_trainer(tmp_path / "a", 0.5), moe_trainer(tmp_path / "b", 0.0)
    assert with_aux.aux_loss_enabled and not without.aux_loss_enabled
    with_aux.train()
    without.train()
    (a,), (b,) = step_logs(with_aux), step_logs(without)
    assert a["aux_loss"] > 0 and "aux_loss" not in b
    # the optimised loss = the policy term (actor/pg_loss) + coef x aux; without the coefficient, the policy term
    assert a["loss"] == pytest.approx(a["actor/pg_loss"] + 0.5 * a["aux_loss"], rel=1e-5, abs=1e-6)
    assert b["loss"] == pytest.approx(b["actor/pg_loss"], rel=1e-5, abs=1e-7)


# Different quantities that coincide in these runs, each with its reason (TRL's own names beside verl's).
COINCIDENT = {
    ("actor/pg_loss", "loss"): "TRL's total loss is the policy loss when no bonus or auxiliary loss is added",
    ("critic/score/mean", "rewards/digit_reward/mean"): "one reward function: the score is its reward",
    ("critic/score/std", "rewards/digit_reward/std"): "one reward function: the score is its reward",
    ("completions/min_terminated_length", "response_length/min"): "equal while the shortest completion ended",
    ("actor/entropy", "control/batch_entropy"): "one generation batch a step: the controller measures the entropy "
                                              "in the first training forward, which actor/entropy averages",
}


def repeated_metrics(logs: list[dict[str, Any]], min_steps: int = 3) -> list[tuple[str, str]]:
    """Pairs of metric names that carry the same value on every logged step: one value logged twice.

    Both names must be logged on every step, with equal values (to float32 rounding), and the equality must not be a coincidence:
    the common value varies over the run (two names tracking one varying value on >= ``min_steps`` steps), or
    it is a constant that is not a whole number (a resolved target 1.97: constants 0 and 1 coincide freely), or
    the names are one quantity under two namespaces (``control/gate_on`` and ``loss/gate_on``, even at 0).
    """
    assert len(logs) >= min_steps, f"{len(logs)} logged steps; the check needs >= {min_steps}"
    names = sorted(set.intersection(*(set(r) for r in logs)) - {"step", "epoch"})
    series = {n: [r[n] for r in logs] for n in names if all(isinstance(r[n], (int, float)) for r in logs)}
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if a not in series or b not in series or (a, b) in COINCIDENT:
                continue
            if not all(math.isclose(x, y, rel_tol=1e-6) for x, y in zip(series[a], series[b], strict=True)):
                continue  # rel 1e-6: one value logged once in float32 and once in float64 is still one value
            values = set(series[a])
            varies = len(values) > 1
            fractional = any(math.isfinite(v) and v != round(v) for v in values)
            same_leaf = a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]
            if varies or fractional or same_leaf:
                pairs.append((a, b))
    return pairs


def test_the_repeat_check_finds_a_repeated_value() -> None:
    logs = [{"control/gate_on": 1.0, "loss/gate_on": 1.0, "control/x": float(i), "control/x_copy": float(i),
             "control/target": 1.97, "control/auto_target": 1.97, "loss/zero_a": 0.0, "loss/zero_b": 0.0,
             "loss": 10.0 + i, "actor/pg_loss": 10.0 + i} for i in range(3)]  # the last pair: COINCIDENT
    assert repeated_metrics(logs) == [("control/auto_target", "control/target"), ("control/gate_on", "loss/gate_on"),
                                      ("control/x", "control/x_copy")]


@pytest.mark.parametrize("method, method_kwargs, method_args", [
    ("stare", {"variant": "C2", "weight_control": "auto", "target_entropy": "0.7x"}, {}),
    ("stare_sensitivity", {"weight_control": "paper", "target_entropy": 100.0}, {}),
    ("entropic", {"target_entropy": "0.7x"}, {}),
    ("vanilla", {}, {"entropy_bonus": "adaptive", "target_entropy": "0.7x"}),
])
def test_each_value_is_logged_once(tmp_path: Path, method: str, method_kwargs: dict[str, Any],
                                   method_args: dict[str, Any]) -> None:
    """A real run of each controller family: no two metric names carry the same value on every step."""
    trainer = make_trainer(tmp_path, method, method_kwargs, method_args=method_args, max_steps=3)
    trainer.train()
    logs = step_logs(trainer)
    assert repeated_metrics(logs) == []
