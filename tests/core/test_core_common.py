"""Shared core: aggregation modes, clipped surrogate, TokenBatch validation, registry, token quantities."""

from __future__ import annotations

import math

import pytest
import torch

from _core_batches import EDGE_CASES, assert_finite_on_edge_case, assert_verl_loss_equals_core, random_batch
from stare_rl import (
    AGG_MODES,
    LossContext,
    SurrogateConfig,
    TokenBatch,
    aggregate,
    clipped_surrogate,
    compute_loss,
    make_config,
)
from stare_rl.core.registry import get_method, list_methods, register_method
from stare_rl.core.tokens import (
    entropy_from_logits,
    entropy_sensitivity,
    entropy_sensitivity_leading,
    logprobs_and_entropy,
    steer_omega_abs,
    surprisal,
)

# ---------------------------------------------------------------- aggregation

LOSS = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 9.0, 9.0, 9.0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", (1 + 2 + 3 + 5) / 4),
        ("token-sum", 1 + 2 + 3 + 5),
        ("seq-mean-token-mean", ((1 + 2 + 3) / 3 + 5 / 1) / 2),  # the empty third row is not a sequence
        ("seq-mean-token-sum", ((1 + 2 + 3) + 5) / 2),
        ("seq-mean-token-sum-norm", (1 + 2 + 3 + 5) / (2 * 4)),  # Dr.GRPO: / (n_seq * T)
    ],
)
def test_aggregation_modes_by_hand(mode: str, expected: float) -> None:
    assert float(aggregate(LOSS, MASK, mode)) == pytest.approx(expected)


def test_aggregation_global_denominators_and_norm_length() -> None:
    assert float(aggregate(LOSS, MASK, "token-mean", global_tokens=11)) == pytest.approx(11 / 11)
    assert float(aggregate(LOSS, MASK, "seq-mean-token-sum", global_seqs=4)) == pytest.approx(11 / 4)
    assert float(aggregate(LOSS, MASK, "seq-mean-token-sum-norm", norm_length=10)) == pytest.approx(11 / 20)


@pytest.mark.parametrize("mode", AGG_MODES)
def test_empty_mask_gives_zero_and_zero_gradient(mode: str) -> None:
    loss = LOSS.clone().requires_grad_(True)
    out = aggregate(loss, torch.zeros(3, 4), mode)
    (g,) = torch.autograd.grad(out, loss)
    assert float(out.detach()) == 0.0 and float(g.abs().max()) == 0.0


def test_unknown_mode_is_named() -> None:
    with pytest.raises(ValueError, match="loss_agg_mode='seq-sum'"):
        aggregate(LOSS, MASK, "seq-sum")
    with pytest.raises(ValueError, match="loss_agg_mode='bogus'"):
        SurrogateConfig(loss_agg_mode="bogus")


@pytest.mark.parametrize("mode", AGG_MODES)
@pytest.mark.parametrize("splits", [[1, 7], [3, 3, 2], [1] * 8])
def test_micro_batch_split_invariance(mode: str, splits: list[int]) -> None:
    """Sum of micro-batch losses with global denominators == loss of the whole batch, gradients too."""
    batch = random_batch(21, 8, 6, mask_p=0.6)
    batch.mask[2] = 0  # a fully masked row inside one micro-batch
    full = aggregate(compute_loss("vanilla", batch).token_loss, batch.mask, mode)
    (g_full,) = torch.autograd.grad(full, batch.log_prob)
    n_tok = batch.n_valid
    n_seq = int((batch.mask.sum(-1) > 0).sum())
    total, start = torch.zeros(()), 0
    for size in splits:
        rows = slice(start, start + size)
        start += size
        sub = TokenBatch(batch.log_prob[rows], batch.old_log_prob[rows], batch.advantages[rows], batch.mask[rows])
        part = compute_loss("vanilla", sub).token_loss
        total = total + aggregate(part, sub.mask, mode, global_tokens=n_tok, global_seqs=n_seq)
    (g_split,) = torch.autograd.grad(total, batch.log_prob)
    torch.testing.assert_close(total, full)
    torch.testing.assert_close(g_split, g_full)


# ---------------------------------------------------------------- surrogate


def _surrogate_case(log_ratio: float, adv: float, cfg: SurrogateConfig | None = None) -> tuple[float, float]:
    lp = torch.tensor([[log_ratio]], requires_grad=True)
    loss, _ = clipped_surrogate(lp, torch.zeros(1, 1), torch.tensor([[adv]]), torch.ones(1, 1), cfg or SurrogateConfig())
    (g,) = torch.autograd.grad(loss.sum(), lp)
    return float(loss.detach()), float(g)


@pytest.mark.parametrize(
    ("log_ratio", "adv", "loss", "grad"),
    [
        # A > 0, r inside [0.8, 1.28]: -A r, d/dlogp = -A r
        (math.log(1.1), 2.0, -2.2, -2.2),
        # A > 0, r = 1.5 > 1 + eps_high: clipped at -A * 1.28, no gradient
        (math.log(1.5), 2.0, -2.56, 0.0),
        # A > 0, r = 0.5 < 1 - eps_low: the unclipped -A r is larger, gradient flows
        (math.log(0.5), 2.0, -1.0, -1.0),
        # A < 0, r = 0.5 < 0.8: clipped at -A * 0.8, no gradient
        (math.log(0.5), -1.0, 0.8, 0.0),
        # A < 0, r = 2 in (1.28, c=3): unclipped -A r, gradient -A r
        (math.log(2.0), -1.0, 2.0, 2.0),
        # A < 0, r = 5 > c = 3: dual clip caps at -A c, no gradient
        (math.log(5.0), -1.0, 3.0, 0.0),
        # A < 0, log-ratio 50 is clamped to 20 and dual-clipped: finite
        (50.0, -1.0, 3.0, 0.0),
        # A > 0, log-ratio -50 clamped to -20: -A e^-20
        (-50.0, 1.0, -math.exp(-20.0), 0.0),
    ],
)
def test_surrogate_hand_derived(log_ratio: float, adv: float, loss: float, grad: float) -> None:
    got_loss, got_grad = _surrogate_case(log_ratio, adv)
    assert got_loss == pytest.approx(loss, rel=1e-5, abs=1e-12)
    assert got_grad == pytest.approx(grad, rel=1e-5, abs=1e-12)


def test_surrogate_symmetric_clip_and_metrics() -> None:
    cfg = SurrogateConfig(clip_ratio_low=0.2, clip_ratio_high=0.2)
    assert _surrogate_case(math.log(1.25), 1.0, cfg) == pytest.approx((-1.2, 0.0))
    lp = torch.log(torch.tensor([[1.5, 1.0, 5.0, 1.0]]))
    adv = torch.tensor([[1.0, 1.0, -1.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    _, m = clipped_surrogate(lp, torch.zeros(1, 4), adv, mask, SurrogateConfig())
    assert float(m["pg_clipfrac"]) == pytest.approx(1 / 3)  # token 0 (ratio above 1.28)
    assert float(m["pg_clipfrac_lower"]) == pytest.approx(1 / 3)  # token 2 (dual clip)
    assert float(m["ppo_kl"]) == pytest.approx(-(math.log(1.5) + math.log(5.0)) / 3)
    # float32 whatever the compute dtype: under bf16 a clip fraction of 1/3 is not logged as 0.333984
    _, bf = clipped_surrogate(lp.bfloat16(), torch.zeros(1, 4, dtype=torch.bfloat16), adv.bfloat16(), mask,
                              SurrogateConfig())
    assert {k: v.dtype for k, v in bf.items()} == dict.fromkeys(m, torch.float32)
    assert float(bf["pg_clipfrac"]) == float(torch.tensor(1 / 3, dtype=torch.float32))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"clip_ratio_low": 1.0}, "clip_ratio_low=1.0"),
        ({"clip_ratio_low": -0.1}, "clip_ratio_low=-0.1"),
        ({"clip_ratio_high": -0.5}, "clip_ratio_high=-0.5"),
        ({"clip_ratio_c": 1.0}, "clip_ratio_c=1.0"),
    ],
)
def test_surrogate_config_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SurrogateConfig(**kwargs)


# ---------------------------------------------------------------- TokenBatch


def _tb(**over: object) -> TokenBatch:
    fields = {"log_prob": torch.zeros(2, 3), "old_log_prob": torch.zeros(2, 3), "advantages": torch.zeros(2, 3),
              "mask": torch.ones(2, 3)}
    fields.update(over)
    return TokenBatch(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"log_prob": torch.zeros(6)}, r"log_prob must be a \(B, T\) tensor, got shape \(6,\)"),
        ({"log_prob": torch.zeros(2, 3, dtype=torch.long)}, "log_prob must be a floating tensor"),
        ({"advantages": torch.zeros(3, 2)}, r"advantages has shape \(3, 2\), expected \(2, 3\)"),
        ({"mask": [[1, 1, 1], [1, 1, 1]]}, "mask must be a torch.Tensor, got list"),
        ({"old_log_prob": torch.zeros(2, 3, dtype=torch.float64)}, "old_log_prob has dtype torch.float64"),
        ({"entropy": torch.zeros(2, 3, device="meta")}, "entropy is on device meta"),
        ({"advantages": torch.tensor([[0.0, math.nan, 0.0], [0.0] * 3])}, "advantages contains NaN or inf"),
        ({"log_prob": torch.tensor([[0.0, -math.inf, 0.0], [0.0] * 3])}, "log_prob contains NaN or inf"),
    ],
)
def test_token_batch_validation(over: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _tb(**over)


@pytest.mark.parametrize("name", list_methods())
def test_non_finite_padding_never_reaches_loss_or_gradient(name: str) -> None:
    """Padding may hold -inf log-probs and NaN advantages/entropies/rewards: TokenBatch accepts it, no method sees
    it."""
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    lp = torch.tensor([[-0.5, -1.0, -math.inf], [-0.1, -1.0, -2.0]], requires_grad=True)
    b = _tb(log_prob=lp, old_log_prob=torch.tensor([[-0.4, -1.0, math.nan], [-0.1, -1.1, -2.0]]), mask=mask,
            advantages=torch.tensor([[1.0, 1.0, math.nan], [-1.0] * 3]),
            entropy=torch.tensor([[1.0, 2.0, math.inf], [0.5, 0.2, 0.1]]),
            old_entropy=torch.tensor([[0.9, 2.1, math.nan], [0.4, 0.3, 0.1]]),
            rewards=torch.tensor([[1.0, 1.0, math.nan], [0.0] * 3]))
    assert b.n_valid == 5 and b.mask_f.dtype == torch.float32
    out = compute_loss(name, b, context=LossContext(generator=torch.Generator().manual_seed(0)))
    for mode in AGG_MODES:
        loss = aggregate(out.token_loss, b.mask, mode)
        (g,) = torch.autograd.grad(loss, lp, retain_graph=True)
        assert torch.isfinite(loss) and bool(torch.isfinite(g).all()), mode
        assert float(g[0, 2]) == 0.0


# ---------------------------------------------------------------- registry


def test_registry_lists_methods_and_rejects_unknown_names() -> None:
    names = list_methods()
    assert {"vanilla", "clip_cov", "high_entropy"} <= set(names) and names == sorted(names)
    with pytest.raises(ValueError, match=r"method='grpo\+\+' is not registered; known methods: \[.*'vanilla'"):
        compute_loss("grpo++", _tb())
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['rh0'\] for method 'high_entropy'"):
        make_config("high_entropy", rh0=0.3)
    assert make_config("high_entropy", rho=0.3).rho == 0.3
    with pytest.raises(ValueError, match="config for method 'vanilla' must be VanillaConfig"):
        compute_loss("vanilla", _tb(), config=make_config("high_entropy"))
    with pytest.raises(ValueError, match="'vanilla' is already registered"):
        register_method("vanilla", get_method("vanilla").config_cls)(lambda b, c, s, x: None)  # type: ignore


# ---------------------------------------------------------------- token quantities


def _naive(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    x = logits if logits.dtype == torch.float64 else logits.float()
    logp = torch.log_softmax(x / temperature, dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1), -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
@pytest.mark.parametrize("temperature", [0.6, 1.0, 1.7])
def test_chunked_logprob_entropy_equal_naive(chunk: int, temperature: float) -> None:
    g = torch.Generator().manual_seed(chunk)
    logits = 3 * torch.randn(3, 7, 50, generator=g)
    tokens = torch.randint(0, 50, (3, 7), generator=g)
    lp, ent = logprobs_and_entropy(logits, tokens, temperature, chunk_size=chunk)
    lp_ref, ent_ref = _naive(logits, tokens, temperature)
    torch.testing.assert_close(lp, lp_ref)
    torch.testing.assert_close(ent, ent_ref)
    torch.testing.assert_close(entropy_from_logits(logits, temperature, chunk), ent_ref)
    assert logprobs_and_entropy(logits, tokens, temperature, chunk, with_entropy=False)[1] is None
    # bf16 logits (what models emit) are upcast per chunk
    lp16, ent16 = logprobs_and_entropy(logits.bfloat16(), tokens, temperature, chunk)
    lp16_ref, ent16_ref = _naive(logits.bfloat16(), tokens, temperature)
    assert lp16.dtype == torch.float32
    torch.testing.assert_close(lp16, lp16_ref)
    torch.testing.assert_close(ent16, ent16_ref)


@pytest.mark.parametrize("temperature", [0.7, 1.0])
def test_chunked_gradients_match_naive_and_closed_form(temperature: float) -> None:
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 5, 13, generator=g, requires_grad=True)
    tokens = torch.randint(0, 13, (2, 5), generator=g)
    w1, w2 = torch.randn(2, 5, generator=g), torch.randn(2, 5, generator=g)
    lp, ent = logprobs_and_entropy(logits, tokens, temperature, chunk_size=3)
    (g_chunk,) = torch.autograd.grad((w1 * lp + w2 * ent).sum(), logits)
    lp_ref, ent_ref = _naive(logits, tokens, temperature)
    (g_ref,) = torch.autograd.grad((w1 * lp_ref + w2 * ent_ref).sum(), logits)
    torch.testing.assert_close(g_chunk, g_ref)
    # closed form: d log p_a / dz = (e_a - p) / tau;  dH/dz = -p (log p + H) / tau
    logp = torch.log_softmax(logits.detach() / temperature, -1)
    p = logp.exp()
    h = -(p * logp).sum(-1, keepdim=True)
    onehot = torch.nn.functional.one_hot(tokens, 13).float()
    closed = (w1.unsqueeze(-1) * (onehot - p) - w2.unsqueeze(-1) * p * (logp + h)) / temperature
    torch.testing.assert_close(g_chunk, closed)


@pytest.mark.parametrize("temperature", [0.5, 1.0, 1.3])
def test_no_grad_and_autograd_paths_agree(temperature: float) -> None:
    g = torch.Generator().manual_seed(5)
    logits = (4 * torch.randn(37, 301, generator=g)).requires_grad_(True)
    tokens = torch.randint(0, 301, (37,), generator=g)
    lp_grad, ent_grad = logprobs_and_entropy(logits, tokens, temperature, chunk_size=8)
    assert lp_grad.requires_grad and ent_grad.requires_grad
    with torch.no_grad():
        lp, ent = logprobs_and_entropy(logits, tokens, temperature, chunk_size=8)
    lp64, ent64 = _naive(logits.detach().double(), tokens, temperature)
    torch.testing.assert_close(lp.double(), lp64.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent.double(), ent64.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lp, lp_grad.detach())
    torch.testing.assert_close(ent, ent_grad.detach())


def test_token_quantity_input_errors() -> None:
    logits, tokens = torch.zeros(2, 4, 5), torch.zeros(2, 4, dtype=torch.long)
    with pytest.raises(ValueError, match="temperature=0"):
        logprobs_and_entropy(logits, tokens, temperature=0)
    with pytest.raises(ValueError, match="chunk_size=0"):
        logprobs_and_entropy(logits, tokens, chunk_size=0)
    with pytest.raises(ValueError, match=r"tokens shape \(4, 2\)"):
        logprobs_and_entropy(logits, tokens.T)
    lp, ent = logprobs_and_entropy(torch.zeros(0, 5), torch.zeros(0, dtype=torch.long))
    assert lp.shape == (0,) and ent.shape == (0,)


def _entropy64(z: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(z.double(), -1)
    return -(logp.exp() * logp).sum(-1)


@pytest.mark.parametrize("seed", range(4))
def test_entropy_sensitivity_matches_finite_difference(seed: int) -> None:
    """A logit step eta * A * d(log pi_a)/dz changes H by -eta * A * S(a) to first order."""
    g = torch.Generator().manual_seed(seed)
    v, n = 17, 6
    logits = (1 + seed) * torch.randn(n, v, generator=g, dtype=torch.float64)
    tokens = torch.randint(0, v, (n,), generator=g)
    adv = torch.tensor([1.0, -1.0, 0.5, -2.0, 1.5, 1.0], dtype=torch.float64)
    s = entropy_sensitivity(logits, tokens)
    p = torch.softmax(logits, -1)
    step = adv.unsqueeze(-1) * (torch.nn.functional.one_hot(tokens, v).double() - p)  # A * d log pi_a / dz
    eta = 1e-5
    dh = (_entropy64(logits + eta * step) - _entropy64(logits - eta * step)) / (2 * eta)  # (n,)
    torch.testing.assert_close(s.double(), -dh / adv, rtol=2e-4, atol=2e-6)
    # the leading term drops the policy-average baseline sum_j p_j^2 (log p_j + H)
    lp, ent = logprobs_and_entropy(logits, tokens)
    logp = torch.log_softmax(logits, -1)
    baseline = (p * p * (logp + _entropy64(logits).unsqueeze(-1))).sum(-1)
    lead = entropy_sensitivity_leading(lp, ent)
    torch.testing.assert_close(lead.double(), s.double() + baseline, rtol=1e-4, atol=1e-6)
    assert entropy_sensitivity(logits, tokens, chunk_size=2).tolist() == pytest.approx(s.tolist(), rel=1e-5, abs=1e-7)


def test_entropy_sensitivity_with_temperature_and_sign() -> None:
    # A near-deterministic policy sampling its argmax: raising it lowers the entropy (S > 0).
    logits = torch.tensor([[5.0, 0.0, 0.0, 0.0]])
    assert float(entropy_sensitivity(logits, torch.tensor([0]))) > 0
    # ... and sampling a rare token then reinforcing it raises the entropy (S < 0).
    assert float(entropy_sensitivity(logits, torch.tensor([3]))) < 0
    tau = 2.0
    assert float(entropy_sensitivity(logits, torch.tensor([0]), temperature=tau)) == pytest.approx(
        float(entropy_sensitivity(logits / tau, torch.tensor([0]))), rel=1e-6
    )


def test_surprisal_and_steer_omega_by_hand() -> None:
    lp = torch.tensor([[math.log(0.5), math.log(0.25), -100.0]], requires_grad=True)
    s = surprisal(lp)
    assert not s.requires_grad and s[0].tolist() == pytest.approx([math.log(2), math.log(4), 100.0])
    old = torch.tensor([[math.log(0.4), math.log(0.25), 0.0]])
    adv = torch.tensor([[2.0, -1.0, 1.0]])
    ent = torch.tensor([[1.0, 0.5, 0.3]])
    omega = steer_omega_abs(lp, old, adv, ent)
    expected0 = abs(2.0 / 0.4 * 0.5 * 0.5 * (math.log(0.5) + 1.0))
    expected1 = abs(-1.0 / 0.25 * 0.25 * 0.75 * (math.log(0.25) + 0.5))
    x = max(math.exp(-100.0), 1e-8)  # pi clamped to 1e-8
    expected2 = abs(1.0 * x * (1 - x) * (math.log(x) + 0.3))
    assert omega.tolist()[0] == pytest.approx([expected0, expected1, expected2], rel=1e-5)
    inf_adv = torch.tensor([[math.inf, 0.0, 0.0]])
    assert float(steer_omega_abs(lp, old, inf_adv, ent)[0, 0]) == 0.0  # non-finite -> 0


def test_docs_core_example_runs() -> None:
    """The example at the top of docs/core.md runs as written."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[2] / "docs" / "core.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    namespace: dict = {}
    exec(compile(code.group(1), "docs/core.md", "exec"), namespace)  # noqa: S102
    a = 0.5 / (0.5**0.5 + 1e-6)  # group [1, 0]: mean 0.5, unbiased std sqrt(0.5)
    assert namespace["seq_adv"].tolist() == pytest.approx([a, -a, 0.0, 0.0], rel=1e-6)
    assert namespace["keep"].tolist() == [True, True, False, False]
    assert namespace["logits"].grad is not None and bool(torch.isfinite(namespace["logits"].grad).all())


# Methods whose loss has a term that does not vanish with the advantage, and why (A = 0 need not give 0).
ADVANTAGE_FREE_TERM = {"kl_cov": "the KL penalty on the selected tokens (KL-Cov §4.3)"}


@pytest.mark.parametrize("case", EDGE_CASES)
@pytest.mark.parametrize("name", list_methods())
def test_every_method_is_finite_on_edge_cases(name: str, case: str) -> None:
    """Every registered method, default config: finite loss, gradient and metrics; nothing valid gives 0 (and
    A = 0 too, but for the methods listed in ADVANTAGE_FREE_TERM)."""
    assert_finite_on_edge_case(name, case, seed=sorted(list_methods()).index(name),
                               zero_without_advantage=name not in ADVANTAGE_FREE_TERM)


def _plugin_only(name: str) -> bool:
    """verl's plug-in path alone serves it: no per-step controller state and no old-policy entropy needed."""
    spec = get_method(name)
    return spec.controllers is None and not spec.needs_old_entropy


@pytest.mark.parametrize("name", [m for m in list_methods() if _plugin_only(m)])
def test_every_stateless_method_is_registered_in_verl_and_equal_to_the_core(name: str) -> None:
    pytest.importorskip("verl")
    assert_verl_loss_equals_core(name)
