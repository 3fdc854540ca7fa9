"""The verl plugin: registry presence after ``import verl``, the registered losses against the core and the
parity vectors, verl's aggregation (global batch info, rollout IS weights), the plugin-only STARE gate, the
exact-path loss wrapper and config validation. CPU only."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("verl")

from verl.trainer.ppo.core_algos import get_policy_loss_fn  # noqa: E402
from verl.workers.config import FSDPActorConfig, PolicyLossConfig  # noqa: E402

from stare_rl import aggregate, compute_loss, list_methods  # noqa: E402
from stare_rl.control.base import StepObservation  # noqa: E402
from stare_rl.control.step import StepController  # noqa: E402
from stare_rl.core.types import LossContext, TokenBatch  # noqa: E402
from stare_rl.engines.verl import adapter as V  # noqa: E402
from stare_rl.methods.stare.gate import GATE, StareGate, StareWeightSchedule  # noqa: E402

PARITY = Path(os.environ.get("PARITY_VECTORS", Path(__file__).resolve().parents[2] / "parity_vectors"))
VERL_BUILTINS = {"vanilla", "clip_cov", "kl_cov"}


def actor_config(policy_loss: Any = None, **kw: Any) -> FSDPActorConfig:
    """A real verl actor config (what verl hands the policy loss)."""
    base = dict(rollout_n=8, ppo_micro_batch_size_per_gpu=2, clip_ratio_low=0.2, clip_ratio_high=0.28)
    base.update(kw)
    return FSDPActorConfig(policy_loss=policy_loss or V.StareRLPolicyLossConfig(), **base)


def make_batch(seed: int = 0, b: int = 6, t: int = 9) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(b, t, generator=g) * 3 - 0.01
    lp = old + 0.3 * torch.randn(b, t, generator=g)
    adv = torch.randn(b, 1, generator=g).expand(b, t).clone()
    mask = torch.ones(b, t, dtype=torch.bool)
    mask[1, 5:] = False
    mask[3, 2:] = False
    ent = torch.rand(b, t, generator=g) * 2
    old_ent = torch.rand(b, t, generator=g) * 2  # the old policy's entropy (what verl's log-prob pass stores)
    return {"old_log_prob": old, "log_prob": lp.requires_grad_(), "advantages": adv * mask, "response_mask": mask,
            "entropy": ent, "old_entropy": old_ent}


def call(name: str, data: dict[str, torch.Tensor], cfg: FSDPActorConfig, mode: str = "token-mean",
         weights: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, Any]]:
    fn = get_policy_loss_fn(name)
    args = {k: data[k] for k in ("old_log_prob", "log_prob", "advantages", "response_mask")}
    return fn(**args, loss_agg_mode=mode, config=cfg, rollout_is_weights=weights)


@pytest.mark.slow  # a fresh Python process: seconds
def test_registry_after_bare_import_verl_in_fresh_process() -> None:
    code = ("import verl\nfrom verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY as R\n"
            "import json\nprint(json.dumps({k: getattr(v, '_stare_rl_method', None) for k, v in R.items()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    registry = json.loads(out.stdout.strip().splitlines()[-1])
    for name in list_methods():
        assert registry[f"stare_rl.{name}"] == name
        # verl's own losses of the same name are left alone; every other method also gets its bare name
        assert registry[name] == (None if name in VERL_BUILTINS else name)
    assert {"stare", "steer", "high_entropy"} <= set(registry)


def driver_state(gate_on: bool | None, method: str = "stare", **schedule: float) -> dict | None:
    """What the entry point's trainer of ``method`` (default config) sends: its StepController's state_dict with
    the gate set and, given ``reweight_w`` / ``reweight_m``, the §4.4 schedule's current W/M (moved from the
    config's start). A method without controllers sends ``{}``: the workers refuse the state of other
    controllers or settings (one resume rule, tests/control/test_resume_rule.py)."""
    if gate_on is None:
        return None
    if method != "stare":
        return {}
    gate = StareGate()
    gate.gate_on = gate_on
    state = {"gate": gate.state_dict()}
    if schedule:
        sch = StareWeightSchedule()
        sch.w, sch.m = schedule["reweight_w"], schedule["reweight_m"]  # the current W and M
        state["schedule"] = sch.state_dict()
    return state


@pytest.mark.parametrize("name", ["vanilla", "stare", "steer", "kl_cov", "high_entropy", "clip_cov"])
def test_registered_loss_equals_core(name: str) -> None:
    data = make_batch(seed=1)
    pl = V.StareRLPolicyLossConfig(**{f"{m}_selection_scope": "batch" for m in ("stare", "steer", "kl_cov")})
    cfg = actor_config(pl)
    state = V.StepState(controllers=driver_state(True, name), entropy=data["entropy"], old_entropy=data["old_entropy"])
    torch.manual_seed(0)
    with V.step_state(state):
        loss, metrics = call(f"stare_rl.{name}", data, cfg)
    mcfg = V.method_config(name, pl)
    batch = TokenBatch(data["log_prob"], data["old_log_prob"], data["advantages"], data["response_mask"],
                       entropy=data["entropy"], old_entropy=data["old_entropy"])
    torch.manual_seed(0)
    out = compute_loss(name, batch, mcfg, V.surrogate_config(cfg, "token-mean"), LossContext(stats={"gate_on": True}))
    ref = aggregate(out.token_loss, batch.mask, "token-mean")
    torch.testing.assert_close(loss, ref, rtol=1e-6, atol=1e-7)
    (g1,) = torch.autograd.grad(loss, data["log_prob"])
    (g2,) = torch.autograd.grad(ref, data["log_prob"])
    torch.testing.assert_close(g1, g2)
    assert metrics == {V._metric_name(name, k): pytest.approx(float(v)) for k, v in out.metrics.items()}
    assert name == "kl_cov" or "actor/pg_clipfrac" in metrics  # verl's own metric names are kept


def _parity_cases() -> list[Path]:
    return sorted(p for p in PARITY.glob("*.json") if json.loads(p.read_text())["method"] in
                  {"stare", "steer", "kl_cov", "vanilla"}) if PARITY.is_dir() else []


@pytest.mark.parametrize("scope", ["batch", "global"])
@pytest.mark.parametrize("path", _parity_cases(), ids=lambda p: p.stem)
def test_parity_vectors_through_verl(path: Path, scope: str) -> None:
    case = json.loads(path.read_text())
    p, inp, o = case["params"], case["inputs"], case["outputs"]
    method = case["method"]
    f32 = {k: torch.tensor(v, dtype=torch.float32) for k, v in inp.items() if k != "response_mask"}
    mask = torch.tensor(inp["response_mask"]) > 0
    fields: dict[str, Any] = {}
    if method == "stare":
        fields = {f"stare_{k}": p[k] for k in ("variant", "top_p_ratio", "reweight_w", "reweight_m", "target_entropy")}
        fields["stare_selection_scope"] = scope
    elif method == "steer":
        fields = {"steer_mapping": "linear" if p["linear"] else "exp", "steer_token_weight_min": p["token_weight_min"],
                  "steer_token_weight_max": p["token_weight_max"] if p["linear"] else 1.0,
                  "steer_selection_scope": scope}
    elif method == "kl_cov":
        fields = {"kl_cov_ratio": p["kl_cov_ratio"], "ppo_kl_coef": p["ppo_kl_coef"], "kl_cov_selection_scope": scope}
    clip = {k: p[k] for k in ("clip_ratio_low", "clip_ratio_high", "clip_ratio_c") if k in p}
    cfg = actor_config(V.StareRLPolicyLossConfig(**fields), **clip)
    log_prob = f32["log_prob"].clone().requires_grad_()
    data = {"old_log_prob": f32["old_log_prob"], "log_prob": log_prob, "advantages": f32["advantages"],
            "response_mask": mask}
    with V.step_state(V.StepState(controllers=driver_state(p.get("gate_on")), entropy=f32.get("entropy"),
                                  old_entropy=f32.get("entropy"))):  # the reference's `entropys`: the old pass
        loss, _ = call(f"stare_rl.{method}", data, cfg, mode=p.get("loss_agg_mode", "token-mean"))
    (grad,) = torch.autograd.grad(loss, log_prob)
    ref = torch.tensor(o["pg_loss"])
    assert abs(float(loss.detach()) - float(ref)) <= 1e-5 + 1e-4 * abs(float(ref)), (float(loss.detach()), float(ref))
    ref_grad = torch.tensor(o["grad_log_prob"])
    assert torch.all((grad - ref_grad).abs() <= 1e-5 + 1e-4 * ref_grad.abs())


def test_global_batch_info_split_invariance_and_is_weights() -> None:
    data = make_batch(seed=2, b=8)
    cfg = actor_config()
    full, _ = call("stare_rl.vanilla", data, cfg)
    n = int(data["response_mask"].sum())
    cfg.global_batch_info.update(dp_size=1, batch_num_tokens=n, global_batch_size=8, loss_scale_factor=None)
    halves = [call("stare_rl.vanilla", {k: v[s] for k, v in data.items()}, cfg)[0]
              for s in (slice(0, 4), slice(4, 8))]
    torch.testing.assert_close(halves[0] + halves[1], full)  # verl's agg_loss with the global token count
    cfg.global_batch_info.clear()
    w = torch.rand(8, 9, generator=torch.Generator().manual_seed(3))
    weighted, _ = call("stare_rl.vanilla", data, cfg, weights=w)
    batch = TokenBatch(data["log_prob"], data["old_log_prob"], data["advantages"], data["response_mask"])
    out = compute_loss("vanilla", batch, None, V.surrogate_config(cfg, "token-mean"))
    torch.testing.assert_close(weighted, aggregate(out.token_loss * w, batch.mask, "token-mean"))


@pytest.mark.parametrize("shift,gate_on", [(0.0, True), (10.0, False)])
def test_plugin_only_gate_from_old_surprisal(shift: float, gate_on: bool) -> None:
    data = make_batch(seed=4)
    data["old_log_prob"] = data["old_log_prob"] * 0.05 - shift  # mean surprisal ~0.08 (< 0.3) or ~10
    pl = V.StareRLPolicyLossConfig(stare_top_p_ratio=0.5)
    loss, metrics = call("stare", data, actor_config(pl))
    assert metrics["loss/gate_on"] == float(gate_on)
    batch = TokenBatch(data["log_prob"], data["old_log_prob"], data["advantages"], data["response_mask"])
    out = compute_loss("stare", batch, V.method_config("stare", pl), V.surrogate_config(actor_config(pl), "token-mean"),
                       LossContext(stats={"gate_on": gate_on}))
    torch.testing.assert_close(loss, aggregate(out.token_loss, batch.mask, "token-mean"))


def test_step_state_gate_unless_surprisal_is_asked_and_schedule_weights() -> None:
    data = make_batch(seed=7)
    data["old_log_prob"] = data["old_log_prob"] - 10.0  # mean surprisal ~11 nats: the estimate says "off"
    batch = TokenBatch(data["log_prob"], data["old_log_prob"], data["advantages"], data["response_mask"])
    for gate, control, expected in [("auto", "paper", True), ("exact", "fixed", True), ("surprisal", "paper", False)]:
        wm_state = {"reweight_w": 1.3, "reweight_m": 0.7} if control == "paper" else {}  # fixed: no schedule
        state = V.StepState(controllers=driver_state(True, **wm_state))
        pl = V.StareRLPolicyLossConfig(gate_entropy=gate, stare_weight_control=control, stare_top_p_ratio=0.5)
        with V.step_state(state):
            loss, metrics = call("stare", data, actor_config(pl))
        # the loss logs the gate it re-set itself (surprisal) and the config's W/M (fixed); the driver logs the rest
        assert metrics.get("loss/gate_on") == (float(expected) if gate == "surprisal" else None), gate
        wm = (1.3, 0.7) if control == "paper" else (1.1, 0.9)  # the schedule's W/M, or the config's
        logged_wm = (metrics.get("loss/reweight_w"), metrics.get("loss/reweight_m"))
        assert logged_wm == ((None, None) if control == "paper" else pytest.approx(wm))
        out = compute_loss("stare", batch, V.method_config("stare", pl), V.surrogate_config(actor_config(pl), "token-mean"),
                           LossContext(stats={"gate_on": expected, "reweight_w": wm[0], "reweight_m": wm[1]}))
        torch.testing.assert_close(loss, aggregate(out.token_loss, batch.mask, "token-mean"))


def test_auto_weight_control_uses_the_driver_state_and_needs_the_entry_point() -> None:
    """weight_control='auto': the loss takes W, M and gate_on from the entry point's controller state; plugin-only
    (no state) and gate_entropy='surprisal' (no hard gate to re-set) fail with a message saying what to do."""
    from stare_rl.control.base import StepObservation
    from stare_rl.methods.stare.auto import AutoWeightController

    data = make_batch(seed=8)
    auto = AutoWeightController(0.3)
    for step in range(4):
        auto.update(StepObservation(entropy=0.1, step=step))
    w, m = auto.reweight_w, auto.reweight_m
    assert w > 1.0 and m == pytest.approx(1.0 / w)
    batch = TokenBatch(data["log_prob"], data["old_log_prob"], data["advantages"], data["response_mask"])
    pl = V.StareRLPolicyLossConfig(stare_weight_control="auto", stare_variant="C2", stare_top_p_ratio=0.5)
    with V.step_state(V.StepState(controllers={"auto": auto.state_dict()})):
        loss, metrics = call("stare", data, actor_config(pl))
    assert not {"loss/gate_on", "loss/reweight_w", "loss/reweight_m"} & set(metrics)  # the driver logs them
    out = compute_loss("stare", batch, V.method_config("stare", pl), V.surrogate_config(actor_config(pl), "token-mean"),
                       LossContext(stats={"gate_on": True, "reweight_w": w, "reweight_m": m}))
    torch.testing.assert_close(loss, aggregate(out.token_loss, batch.mask, "token-mean"))
    with pytest.raises(ValueError, match="stare_rl.engines.verl.main"):
        call("stare", data, actor_config(pl))
    pl = V.StareRLPolicyLossConfig(stare_weight_control="auto", gate_entropy="surprisal")
    with V.step_state(V.StepState(controllers={"auto": auto.state_dict()})), pytest.raises(ValueError, match="has none"):
        call("stare", data, actor_config(pl))


def test_exact_gate_required_and_entropy_error_are_clear() -> None:
    data = make_batch(seed=5)
    with pytest.raises(ValueError, match="stare_rl.engines.verl.main"):
        call("stare", data, actor_config(V.StareRLPolicyLossConfig(gate_entropy="exact")))
    with pytest.raises(ValueError, match="calculate_entropy=True"):
        call("high_entropy", data, actor_config())
    with pytest.raises(ValueError, match=r"old_entropy.*stores.*stare_rl\.engines\.verl\.main"):
        call("steer", data, actor_config())  # plugin-only: verl hands a policy loss no old entropy


def exact_inputs(data: dict[str, torch.Tensor], state: dict | None, prompt_len: int = 2) -> tuple[Any, Any]:
    """(verl's update batch as a TensorDict of nested tensors with the step state, and a function that lays a
    ``(B, T)`` tensor out as verl's model output: unpadded full sequences shifted by one)."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu

    lengths = data["response_mask"].sum(-1)
    b = len(lengths)

    def nested(x: torch.Tensor) -> torch.Tensor:
        return torch.nested.as_nested_tensor([x[i, : int(n)] for i, n in enumerate(lengths)], layout=torch.jagged)

    td = TensorDict({"response_mask": nested(data["response_mask"].long()), "old_log_probs": nested(data["old_log_prob"]),
                     "advantages": nested(data["advantages"]), "responses": nested(data["response_mask"].long()),
                     "entropy": nested(data["old_entropy"]),  # stored by verl's _compute_old_log_prob
                     "prompts": torch.nested.as_nested_tensor([torch.ones(prompt_len, dtype=torch.long)] * b,
                                                             layout=torch.jagged)},
                    batch_size=[b])
    tu.assign_non_tensor(td, dp_size=1, batch_num_tokens=None, global_batch_size=None, **{V.STATE_KEY: state})

    def model_layout(x: torch.Tensor) -> torch.Tensor:
        rows = [torch.cat([x.new_zeros(prompt_len - 1), x[i, : int(n)], x.new_zeros(1)]) for i, n in enumerate(lengths)]
        return torch.nested.as_nested_tensor(rows, layout=torch.jagged)

    return td, model_layout


def test_exact_ppo_loss_wrapper_feeds_state_and_entropy() -> None:
    from verl.utils import tensordict_utils as tu

    data = make_batch(seed=6, b=4, t=5)
    td, model_layout = exact_inputs(data, driver_state(False, "steer"))
    cfg = actor_config(V.StareRLPolicyLossConfig(loss_mode="steer"))
    log_prob = data["log_prob"].detach().clone().requires_grad_()
    out = {"log_probs": model_layout(log_prob), "entropy": model_layout(data["entropy"])}
    loss, metrics = V.exact_ppo_loss(cfg, out, td)
    batch = TokenBatch(log_prob, data["old_log_prob"], data["advantages"], data["response_mask"],
                       entropy=data["entropy"], old_entropy=data["old_entropy"])  # STEER reads the old one
    steer = compute_loss("steer", batch, V.method_config("steer", cfg.policy_loss), V.surrogate_config(cfg, "token-mean"))
    entropy_term = aggregate(data["entropy"], batch.mask, "token-mean") * cfg.entropy_coeff
    torch.testing.assert_close(loss, aggregate(steer.token_loss, batch.mask, "token-mean") - entropy_term)
    # the step state's gate wins over the plugin-only estimate (which would be on with a target of 10 nats)
    cfg = actor_config(V.StareRLPolicyLossConfig(loss_mode="stare", stare_target_entropy=10.0, stare_top_p_ratio=0.5))
    gate = StareGate(10.0)  # the driver of this config: same target, its gate measured off
    gate.gate_on = False
    tu.assign_non_tensor(td, **{V.STATE_KEY: {"gate": gate.state_dict()}})
    loss, metrics = V.exact_ppo_loss(cfg, out, td)
    assert "loss/gate_on" not in metrics  # the driver's gate, logged by the driver (control/gate_on)
    stare = compute_loss("stare", batch, V.method_config("stare", cfg.policy_loss), V.surrogate_config(cfg, "token-mean"),
                         LossContext(stats={"gate_on": False}))
    torch.testing.assert_close(loss, aggregate(stare.token_loss, batch.mask, "token-mean") - entropy_term)



def test_exact_ppo_loss_keeps_the_entropy_gradient_for_the_fallback_bonus() -> None:
    """auto_fallback: bonus under the entry point: the loss adds -c H with verl's own entropy, gradient and all
    (d loss / d H = -c / N on each valid token under token-mean), and W's part is the core's."""
    pl = V.StareRLPolicyLossConfig(loss_mode="stare", stare_variant="C2", stare_weight_control="auto",
                                   stare_auto_fallback="bonus", stare_selection_scope="batch", stare_target_entropy=1.0)
    cfg = actor_config(pl, entropy_coeff=0.0)
    assert V.bonus_in_loss(cfg) and not V.bonus_in_loss(actor_config(V.StareRLPolicyLossConfig(loss_mode="stare")))
    ctrl = StepController("stare", V.method_config("stare", cfg.policy_loss))
    for t in range(20):  # far below the target: the demand climbs 0.25 per step into the bonus's half
        ctrl.controllers["auto"].update(StepObservation(entropy=0.1, step=t))
    c = ctrl.controllers["auto"].entropy_coef
    assert 0.0 < c < V.method_config("stare", cfg.policy_loss).auto_bonus_max
    data = make_batch(seed=8, b=4, t=5)
    td, model_layout = exact_inputs(data, ctrl.state_dict())
    entropy = data["entropy"].detach().clone().requires_grad_()
    out = {"log_probs": model_layout(data["log_prob"].detach().clone().requires_grad_()), "entropy": model_layout(entropy)}
    loss, _ = V.exact_ppo_loss(cfg, out, td)
    loss.backward()
    mask = data["response_mask"]
    torch.testing.assert_close(entropy.grad, torch.where(mask, -c / mask.sum(), 0.0))

def test_an_unset_w_bound_follows_the_fallback_under_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    """stare_auto_w_max unset (null in verl's config): the core's rule, 50 alone and the hand-off bound with the
    bonus; a value given is kept and a bad one is named as verl spells it."""
    from stare_rl.methods.stare import auto

    monkeypatch.setattr(auto, "HAND_OFF_W", 3.0)
    pl = V.StareRLPolicyLossConfig(loss_mode="stare", stare_weight_control="auto", stare_auto_fallback="bonus")
    assert pl.stare_auto_w_max is None and V.method_config("stare", pl).auto_w_max == 3.0
    alone = V.StareRLPolicyLossConfig(loss_mode="stare", stare_weight_control="auto")
    assert V.method_config("stare", alone).auto_w_max == 50.0
    given = V.StareRLPolicyLossConfig(loss_mode="stare", stare_auto_fallback="bonus", stare_auto_w_max=10.0)
    assert V.method_config("stare", given).auto_w_max == 10.0
    with pytest.raises(ValueError, match=r"policy_loss\.stare_auto_w_max=1\.0: auto_w_max=1\.0 must be"):
        V.StareRLPolicyLossConfig(stare_auto_w_max=1.0)
    # the bonus's span: unset, log of the bound in use; given, kept; bad, named as verl spells it
    assert V.method_config("stare", pl).auto_bonus_span == pytest.approx(math.log(3.0))
    spanned = V.StareRLPolicyLossConfig(loss_mode="stare", stare_auto_fallback="bonus", stare_auto_w_max=3.0,
                                        stare_auto_bonus_span=3.9)
    assert V.method_config("stare", spanned).auto_bonus_span == 3.9
    with pytest.raises(ValueError, match=r"policy_loss\.stare_auto_bonus_span=0\.0: auto_bonus_span=0\.0 must be"):
        V.StareRLPolicyLossConfig(stare_auto_bonus_span=0.0)


def test_the_old_name_of_gate_entropy_is_read_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """``stare_gate`` (before issue 44) still sets the mode, through core.legacy's one reader; given beside a
    different ``gate_entropy`` it is refused, naming both."""
    with caplog.at_level("WARNING"):
        assert V.gate_entropy(V.StareRLPolicyLossConfig(stare_gate="exact")) == "exact"
    assert "stare_gate is the old name of gate_entropy" in caplog.text
    assert V.gate_entropy({"stare_gate": "surprisal"}) == "surprisal" and V.gate_entropy({}) == "auto"
    with pytest.raises(ValueError, match=r"stare_gate='exact' and gate_entropy='surprisal' are one setting"):
        V.StareRLPolicyLossConfig(stare_gate="exact", gate_entropy="surprisal")
    with pytest.raises(ValueError, match=r"policy_loss\.gate_entropy='sometimes'"):
        V.StareRLPolicyLossConfig(stare_gate="sometimes")


def test_bad_hyperparameters_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"policy_loss\.stare_reweight_w=0\.5: reweight_w=0\.5 must be >= 1"):
        V.StareRLPolicyLossConfig(stare_reweight_w=0.5)
    with pytest.raises(ValueError, match=r"policy_loss\.steer_mapping='cubic'"):
        V.StareRLPolicyLossConfig(steer_mapping="cubic")
    with pytest.raises(ValueError, match=r"policy_loss\.gate_entropy='sometimes'"):
        V.StareRLPolicyLossConfig(gate_entropy="sometimes")
    with pytest.raises(ValueError, match=r"stare_top_p_ratio='high' must be a float"):
        V.StareRLPolicyLossConfig(stare_top_p_ratio="high")
    # verl's plain PolicyLossConfig works too (paper defaults, global scope) and is validated at call time
    assert V.method_config("stare", PolicyLossConfig()).selection_scope == "global"
    assert issubclass(V.StareRLPolicyLossConfig, PolicyLossConfig)


@pytest.mark.parametrize("gate_on", [False, True])
def test_stare_sensitivity_takes_the_step_gate(gate_on: bool) -> None:
    """The extension gets STARE's gate under verl: gate off == vanilla, gate on == the core with the gate on."""
    data = make_batch(seed=3)
    pl = V.StareRLPolicyLossConfig(stare_sensitivity_reweight_w=3.0, stare_sensitivity_reweight_m=0.2)
    cfg = actor_config(pl)
    with V.step_state(V.StepState(controllers=driver_state(gate_on), entropy=data["entropy"])):
        loss, _ = call("stare_rl.stare_sensitivity", data, cfg)
    batch = TokenBatch(data["log_prob"], data["old_log_prob"], data["advantages"], data["response_mask"],
                       entropy=data["entropy"])
    name = "stare_sensitivity" if gate_on else "vanilla"
    mcfg = V.method_config(name, pl)
    out = compute_loss(name, batch, mcfg, V.surrogate_config(cfg, "token-mean"), LossContext(stats={"gate_on": gate_on}))
    torch.testing.assert_close(loss, aggregate(out.token_loss, batch.mask, "token-mean"), rtol=1e-6, atol=1e-7)
    plain = compute_loss("vanilla", batch, None, V.surrogate_config(cfg, "token-mean"))
    differs = not torch.allclose(loss, aggregate(plain.token_loss, batch.mask, "token-mean"))
    assert differs == gate_on


def test_plugin_only_refuses_methods_whose_controllers_need_the_driver() -> None:
    """Through verl.trainer.main_ppo (no per-step state) a method owning a controller other than the STARE gate
    (EntroPIC's PI, STARE's W/M control) must refuse with a pointer to the exact entry point instead of silently
    running with a fresh controller (alpha 0 = vanilla)."""
    from stare_rl.core.registry import get_method

    b = make_batch()
    owning = []
    for name in list_methods():
        spec = get_method(name)
        if set(spec.make_controllers(spec.config_cls())) - {GATE}:
            owning.append(name)
            with V.step_state(V.StepState(entropy=b["entropy"])):  # the actor's entropy, no driver state
                with pytest.raises(ValueError, match="stare_rl.engines.verl.main"):
                    call(f"{V.NAME_PREFIX}{name}", b, actor_config())
    assert "entropic" in owning


@pytest.mark.parametrize("name", ["stare", "steer", "kl_cov", "high_entropy"])
def test_driver_step_stats_make_every_micro_batch_select_as_the_whole_step_batch(name: str) -> None:
    """selection_scope='global' under the entry point: the driver's statistics of the whole step batch (sent as
    StepState.step_stats) replace the per-micro-batch gather, so two micro-batches select as one batch does."""
    from stare_rl.control.step import StepController

    d = make_batch(seed=7)
    fields = (d["old_log_prob"], d["old_log_prob"], d["advantages"], d["response_mask"].float())
    whole = TokenBatch(*fields, entropy=d["entropy"], old_entropy=d["old_entropy"])  # before the update
    pl = V.StareRLPolicyLossConfig()  # verl's default scope: global
    cfg = V.method_config(name, pl)
    stats = StepController(name, cfg).global_stats(whole)
    gate = {"gate_on": True} if name == "stare" else {}
    ref = compute_loss(name, whole, cfg, context=LossContext(stats={**gate, **stats}))
    parts = []
    for rows in (slice(0, 2), slice(2, None)):
        mb = TokenBatch(*(t[rows] for t in fields), entropy=d["entropy"][rows], old_entropy=d["old_entropy"][rows])
        state = V.StepState(controllers=driver_state(True) if name == "stare" else {}, step_stats=stats)
        ctx, _ = V.loss_context(name, mb, cfg, pl, state)  # no process group: the gather must not be needed
        assert {k: ctx.get(k) for k in stats} == stats
        parts.append(compute_loss(name, mb, cfg, context=ctx).token_weights)
    assert torch.equal(torch.cat(parts), ref.token_weights)
