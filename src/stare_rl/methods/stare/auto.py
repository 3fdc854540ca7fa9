"""``weight_control: auto``: STARE's re-weighting strength set every step by a PI controller on entropy.

STARE (§4.2-4.4) multiplies the clipped loss of the entropy-critical tokens by W > 1 (L+) and M < 1 (L-),
and a hard gate (§4.3) switches the re-weighting on below the target entropy. The strength that holds the
target depends on the model: W 1.1 / M 0.9 at 7B, 1.05 / 0.95 at 14B-32B, W 3 / M 0.2 on our 1M-parameter
model (docs/compare.md). This controller finds it: one strength ``u = log W >= 0`` (and ``log M = -u``) set
by a PI law on the relative entropy error, with bounds, a rate limit and anti-windup.

Control law (per generation batch t, before the updates on it; docs/methods.md states the derivation)::

    e_raw = clip((H_tgt - H_t) / H_tgt, -1, 1)                  relative error, > 0 below the target
    e_t   = beta e_{t-1} + (1 - beta) e_raw   (e_0 = e_raw)     EMA: the batch entropy is noisy
    I_t   = clip(I_{t-1} + k_i e_t, 0, u_max)                   integral (in units of log W)
            unless u_{t-1} = u_max and e_t > 0                  (anti-windup: conditional integration)
    v_t   = k_p e_t + I_t                                       PI demand
    u_t   = clip(v_t, u_{t-1} - r, u_{t-1} + r) clipped to [0, u_max]      rate limit, then bounds
    W_t   = exp(u_t) <= w_max,  M_t = max(exp(-u_t), m_min)     (M used by variant C2 only)

With ``auto_fallback: bonus`` the same law drives a second actuator in split range (docs/methods.md, "When the
selection runs out of authority"): the demand's range is extended to [0, u_max + s] and split in two halves::

    W_t = exp(min(u_t, u_max))                                  the selection: the first half
    c_t = auto_bonus_max * clip((u_t - u_max) / s, 0, 1)        an entropy bonus -c_t H per token: the second half

where ``s = auto_bonus_span`` is the width of the bonus's half (unset: ``u_max``, so the range is [0, 2 u_max];
set on its own, the bonus keeps its gain dc/du = auto_bonus_max / s whatever W's bound).

The bonus acts only on the demand that W at its bound cannot meet, with one integrator and one anti-windup bound
(the top of the whole range): the two never push against each other, and as the error turns negative the demand
falls through the bonus's half first, so the bonus is handed back before W is lowered.

It replaces the hard gate by a continuous strength: above the target the P term pulls u down and the
integral drains (also at u = 0), so W = M = 1 (exactly vanilla, ``gate_on`` False) once the entropy stays
above the target; below it the strength grows until the entropy stops falling. The papers' hard gate and
§4.4 schedule stay available unchanged (``weight_control: fixed | paper``).

Imports only the standard library (:mod:`math`, :mod:`logging`) and :mod:`stare_rl.control.base` /
:mod:`stare_rl.control.target` (no torch maths needed).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from stare_rl.control.base import StepObservation, require_same_settings
from stare_rl.control.target import EntropyTarget, start_entropy_of

logger = logging.getLogger(__name__)

FALLBACKS = ("none", "bonus")  # auto_fallback: what acts once W is at its bound
W_MAX_ALONE = 50.0  # auto_w_max unset, without a fallback: W is the only actuator
# auto_w_max unset, with auto_fallback bonus: W's bound is where the bonus takes over. The authority map's rule D (as
# amended; studies/authority_map/HYPOTHESES.md) chose from 50 and 3; on the complete map it read none (the fallback
# stays off by default), so no bound was chosen and it stays 50.
HAND_OFF_W = 50.0
# auto_bonus_span unset: None = log auto_w_max (the bonus's half as wide as W's). The map's phase B3s (a deviation of
# 2026-11-28) measured log 50 with W's bound 3; rule D, reading none, did not make it the default.
BONUS_SPAN: float | None = None
SATURATION_WARN_STEPS = 50  # consecutive steps at W = auto_w_max with H below the target before the one warning
AUTO = "auto"  # name of the controller among a STARE-style method's controllers (keys its saved state)
_NEG_TOL = 1e-6  # entropies this far below 0 are rounding, not bugs
_BONUS_SETTINGS = ("auto_bonus_max", "auto_bonus_span")  # inert (and not state) without the fallback
_EPS = 1e-12  # floor on H_tgt in the relative error: target 0 gives e = -1 above 0 and e = 0 at 0 (no NaN)


@dataclass(frozen=True)
class AutoWeightConfig:
    """Settings of the ``auto`` weight controller (ours, not the papers'; chosen once, see docs/methods.md).

    The gains are in units of log W per unit relative entropy error. They were derived from a linear model of
    the tiny arithmetic model's entropy (relative drift ~0.3 % of the target per step, ~0.3 % per step per unit
    log W): a critically damped loop there, and more damped (and stable) on any model where W acts faster.
    """

    auto_kp: float = field(
        default=16.0,
        metadata={"help": "auto: proportional gain k_p, log W per unit relative entropy error "
                          "(e = (H_tgt - H) / H_tgt); default 16."},
    )
    auto_ki: float = field(
        default=0.5,
        metadata={"help": "auto: integral gain k_i, log W added per step per unit relative error (sets the held "
                          "strength); default 0.5."},
    )
    auto_w_max: float | None = field(
        default=None,
        metadata={"help": "auto: upper bound of W (> 1); u = log W is in [0, log auto_w_max]. Unset: 50 with "
                          "auto_fallback none (W_MAX_ALONE); with auto_fallback bonus, the hand-off bound where the "
                          "bonus takes over (HAND_OFF_W, 50; the authority map's rule D could have chosen 3 and kept it, docs/controller.md). "
                          "The run's config.yaml logs the value used."},
    )
    auto_m_min: float = field(
        default=0.02,
        metadata={"help": "auto: lower bound of M in (0, 1]; M = max(1 / W, auto_m_min) (variant C2 only); "
                          "default 0.02."},
    )
    auto_smoothing: float = field(
        default=0.5,
        metadata={"help": "auto: EMA factor beta in [0, 1) on the relative error (0 = none): the batch entropy is "
                          "noisy; default 0.5."},
    )
    auto_rate_limit: float = field(
        default=0.25,
        metadata={"help": "auto: largest change of log W per step (> 0): W moves by at most x e^rate; default 0.25."},
    )

    auto_fallback: str = field(
        default="none",
        metadata={"help": "auto: the second actuator, for the demand W at its bound auto_w_max cannot meet. none: "
                          "W alone. bonus: an entropy bonus -c H per token, c in [0, auto_bonus_max], driven by the "
                          "same PI law in split range (docs/methods.md); it needs the per-token entropy with its "
                          "gradient. Where it held a target, with which auto_w_max, and what it cost: docs/controller.md, "
                          "'The authority map'. default none."},
    )
    auto_bonus_max: float = field(
        default=1.0,
        metadata={"help": "auto_fallback bonus: upper bound of the bonus coefficient c (> 0); c rises linearly "
                          "from 0 as the demand passes log auto_w_max and reaches it auto_bonus_span later; "
                          "default 1.0, the bound of TRL's own adaptive entropy coefficient (0.1 bound on the "
                          "measured case, docs/methods.md)."},
    )

    auto_bonus_span: float | None = field(
        default=None,
        metadata={"help": "auto_fallback bonus: the width of the bonus's half of the demand, in units of log W (> 0): "
                          "c rises linearly from 0 at log auto_w_max to auto_bonus_max at log auto_w_max + "
                          "auto_bonus_span, a gain of auto_bonus_max / auto_bonus_span per unit of demand. Unset: log "
                          "auto_w_max (both halves on one scale; with a low auto_w_max the bonus then swings fast, "
                          "docs/methods.md). The run's config.yaml logs the value used."},
    )

    def __post_init__(self) -> None:
        for name in ("auto_kp", "auto_ki"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name}={value!r} must be a finite number >= 0")
        if self.auto_fallback not in FALLBACKS:
            raise ValueError(f"auto_fallback={self.auto_fallback!r} is not one of {list(FALLBACKS)}")
        if self.auto_w_max is None:  # resolved once, here: the config (and the run's config.yaml) holds the value used
            object.__setattr__(self, "auto_w_max", HAND_OFF_W if self.auto_fallback == "bonus" else W_MAX_ALONE)
        w_max, m_min, rate, beta = self.auto_w_max, self.auto_m_min, self.auto_rate_limit, self.auto_smoothing
        if not (isinstance(w_max, (int, float)) and not isinstance(w_max, bool) and math.isfinite(w_max)
                and w_max > 1.0):
            raise ValueError(f"auto_w_max={w_max!r} must be a finite number > 1")
        if not (isinstance(m_min, (int, float)) and 0.0 < m_min <= 1.0):
            raise ValueError(f"auto_m_min={m_min!r} must be in (0, 1]")
        if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
            raise ValueError(f"auto_rate_limit={rate!r} must be a finite number > 0")
        if not (isinstance(beta, (int, float)) and 0.0 <= beta < 1.0):
            raise ValueError(f"auto_smoothing={beta!r} must be in [0, 1)")
        bonus_max = self.auto_bonus_max
        if not (isinstance(bonus_max, (int, float)) and math.isfinite(bonus_max) and bonus_max > 0.0):
            raise ValueError(f"auto_bonus_max={bonus_max!r} must be a finite number > 0")
        if self.auto_bonus_span is None:  # resolved once, here, like auto_w_max
            object.__setattr__(self, "auto_bonus_span", BONUS_SPAN if BONUS_SPAN is not None else math.log(w_max))
        span = self.auto_bonus_span
        if not (isinstance(span, (int, float)) and not isinstance(span, bool) and math.isfinite(span) and span > 0.0):
            raise ValueError(f"auto_bonus_span={span!r} must be a finite number > 0 (units of log W)")
        if self.auto_kp == 0.0 and self.auto_ki == 0.0:
            raise ValueError("auto_kp=0 and auto_ki=0: the controller would never re-weight; give one of them > 0")

    @property
    def u_max(self) -> float:
        """The top of W's range, log auto_w_max."""
        return math.log(self.auto_w_max)

    @property
    def demand_max(self) -> float:
        """The top of the whole range: u_max, or u_max + auto_bonus_span with the bonus in its second half."""
        return self.u_max + self.auto_bonus_span if self.auto_fallback == "bonus" else self.u_max


def _current_field(name: str) -> str:
    """Checkpoints written before the fields took their user-facing names (``kp`` -> ``auto_kp``) still load."""
    return name if name.startswith("auto_") else f"auto_{name}"


class AutoWeightController:
    """PI controller of STARE's strength ``u = log W`` (and ``log M = -u``) on the batch entropy.

    Implements the :class:`~stare_rl.control.base.Controller` protocol. Context keys (read by ``stare`` and
    ``stare_sensitivity``): ``reweight_w``, ``reweight_m``, ``gate_on`` (``u > 0``; at ``u = 0`` the method is
    exactly vanilla either way) and, with ``auto_fallback='bonus'``, ``entropy_coef`` (the bonus coefficient c).
    ``strength`` is the demand u in [0, demand_max]: above u_max (only with the bonus) W stays at its bound.

    Args:
        target_entropy: H_tgt >= 0 (the method config's ``target_entropy``), absolute or relative to the start
            entropy (``"0.5x"``, :mod:`stare_rl.control.target`).
        config: gains and bounds (:class:`AutoWeightConfig`).
    """

    ALL_SETTINGS: ClassVar[tuple[str, ...]] = ("target_entropy", *(f.name for f in dataclasses.fields(AutoWeightConfig)))
    _DYNAMIC = ("strength", "integral", "error", "p_term", "entropy", "steps", "saturated_high",
                "saturated_low", "rate_limited")

    def __init__(self, target_entropy: float | str = 0.3, config: AutoWeightConfig | None = None) -> None:
        self.target = EntropyTarget(target_entropy)
        self.config = config or AutoWeightConfig()
        # the state-defining settings (each a STARE config field of that name): the bonus's bound and span define
        # the state only when the bonus can act, so a run without the fallback resumes whatever they say
        self.settings = tuple(n for n in self.ALL_SETTINGS
                              if n not in _BONUS_SETTINGS or self.config.auto_fallback == "bonus")
        self.strength = 0.0  # u in [0, demand_max] (log W up to u_max); starts at W = M = 1 (vanilla)
        self.integral = 0.0  # I in [0, demand_max], units of u
        self.error = 0.0
        self.p_term = 0.0
        self.entropy: float | None = None
        self.steps = 0
        self.saturated_high = self.saturated_low = self.rate_limited = False
        self._pinned = 0  # consecutive steps at the top bound (for the one warning; not state: warning only)
        self._warned = False

    @property
    def target_entropy(self) -> float:
        """The absolute target (NaN until a relative target is resolved at the first update)."""
        return self.target.value_or_nan()

    # ----- the control law -----
    def relative_error(self, entropy: float) -> float:
        """``clip((H_tgt - H) / H_tgt, -1, 1)``; 0 when both are 0, -1 for any H > 0 at target 0."""
        target = self.target_entropy
        return min(max((target - entropy) / max(target, _EPS), -1.0), 1.0)

    def update(self, obs: StepObservation) -> None:
        h = float(obs.entropy)
        if not math.isfinite(h) or h < -_NEG_TOL:
            raise ValueError(f"entropy={obs.entropy!r} must be a finite value >= 0 (step {obs.step})")
        h = max(h, 0.0)  # a token-mean of float entropies of near-deterministic states can round below 0
        self.target.resolve(start_entropy_of(obs))  # a relative target is fixed once, from the start entropy
        cfg, u_prev = self.config, self.strength
        u_max = cfg.demand_max  # the top of the whole range (W's alone without a fallback)
        raw = self.relative_error(h)
        # EMA of the error (the first step takes the raw error: no bias towards 0)
        e = raw if self.steps == 0 else cfg.auto_smoothing * self.error + (1.0 - cfg.auto_smoothing) * raw
        # anti-windup (conditional integration): while held at the top bound, a positive error adds nothing
        if not (u_prev >= u_max and e > 0.0):
            self.integral = min(max(self.integral + cfg.auto_ki * e, 0.0), u_max)
        p = cfg.auto_kp * e
        demand = p + self.integral  # v_t
        lo, hi = u_prev - cfg.auto_rate_limit, u_prev + cfg.auto_rate_limit
        u = min(max(demand, lo), hi)
        self.rate_limited = u != demand
        u = min(max(u, 0.0), u_max)
        self.strength, self.error, self.p_term, self.entropy = u, e, p, h
        self.saturated_high, self.saturated_low = u >= u_max, u <= 0.0
        self.steps += 1
        self._pinned = self._pinned + 1 if (self.saturated_high and raw > 0.0) else 0
        if self._pinned >= SATURATION_WARN_STEPS and not self._warned and cfg.auto_fallback == "bonus":
            self._warned = True
            logger.warning(
                "weight_control='auto': W at auto_w_max=%s and the entropy bonus at auto_bonus_max=%s for %d steps "
                "(step %d) with the entropy still below the target (%.4g < %.4g): both actuators have run out of "
                "authority; raise auto_bonus_max or lower the target", cfg.auto_w_max, cfg.auto_bonus_max,
                self._pinned, obs.step, h, self.target_entropy)
        elif self._pinned >= SATURATION_WARN_STEPS and not self._warned:
            self._warned = True
            logger.warning(
                "weight_control='auto': W has been at its bound auto_w_max=%s for %d steps (step %d) with the entropy "
                "still below the target (%.4g < %.4g): re-weighting the selected tokens has run out of authority. "
                "With method 'stare', the top-surprisal L+/L- are mostly tokens whose up-weighting lowers the entropy "
                "once it is low; method 'stare_sensitivity' selects only tokens predicted to raise it (docs/methods.md, "
                "'weight_control: auto', when W saturates), or auto_fallback 'bonus' hands the rest of the demand to an "
                "entropy bonus (with a low auto_w_max, e.g. 3, it takes over sooner). Where each bound held the target "
                "across tasks and widths, and its pass@1 cost: docs/controller.md, 'The authority map'",
                cfg.auto_w_max, self._pinned, obs.step, h, self.target_entropy)

    # ----- outputs -----
    @property
    def reweight_w(self) -> float:
        return min(math.exp(min(self.strength, self.config.u_max)), self.config.auto_w_max)

    @property
    def reweight_m(self) -> float:
        return max(math.exp(-min(self.strength, self.config.u_max)), self.config.auto_m_min)

    @property
    def entropy_coef(self) -> float:
        """The bonus coefficient c: 0 below u_max, linear up to auto_bonus_max at u_max + auto_bonus_span (0 without
        the bonus)."""
        cfg = self.config
        if cfg.auto_fallback != "bonus":
            return 0.0
        share = min(max((self.strength - cfg.u_max) / cfg.auto_bonus_span, 0.0), 1.0)
        return cfg.auto_bonus_max * share

    @property
    def actuator(self) -> int:
        """Which actuators act: 0 none (W = M = 1, vanilla), 1 the selection (W > 1), 2 the selection and the bonus."""
        return 0 if self.strength <= 0.0 else (2 if self.entropy_coef > 0.0 else 1)

    def context(self) -> dict[str, Any]:
        ctx = {"reweight_w": self.reweight_w, "reweight_m": self.reweight_m, "gate_on": self.strength > 0.0}
        if self.config.auto_fallback == "bonus":
            ctx["entropy_coef"] = self.entropy_coef
        return ctx

    def metrics(self) -> dict[str, float]:
        return {
            "reweight_w": self.reweight_w,
            "reweight_m": self.reweight_m,
            "gate_on": float(self.strength > 0.0),
            "auto_strength": self.strength,
            "auto_error": self.error,
            "auto_integral": self.integral,
            "auto_p_term": self.p_term,
            "target_entropy": self.target_entropy,
            "auto_saturated_high": float(self.saturated_high),
            "auto_saturated_low": float(self.saturated_low),
            "auto_rate_limited": float(self.rate_limited),
            **({"entropy_coef": self.entropy_coef, "auto_actuator": float(self.actuator)}
               if self.config.auto_fallback == "bonus" else {}),
        }

    # ----- state (JSON-able, exact) -----
    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"target_entropy": self.target.state_dict(), **dataclasses.asdict(self.config)}
        return {**state, **{k: getattr(self, k) for k in self._DYNAMIC}}

    @staticmethod
    def upgrade_state(state: dict[str, Any]) -> dict[str, Any]:
        """A state saved with the settings nested under ``config`` (older checkpoints) in today's flat layout."""
        flat = {k: v for k, v in state.items() if k != "config"}
        state = {**flat, **{_current_field(k): v for k, v in (state.get("config") or {}).items()}}
        if "auto_bonus_span" not in state and state.get("auto_w_max") is not None:  # saved before the span existed:
            state["auto_bonus_span"] = math.log(state["auto_w_max"])  # the bonus's half was as wide as W's
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        require_same_settings(self, state)
        self.target.load_state_dict(state["target_entropy"])  # same spelling (checked); the resolved value
        self.strength, self.integral = float(state["strength"]), float(state["integral"])
        self.error, self.p_term = float(state["error"]), float(state["p_term"])
        self.entropy = None if state["entropy"] is None else float(state["entropy"])
        self.steps = int(state["steps"])
        for k in ("saturated_high", "saturated_low", "rate_limited"):
            setattr(self, k, bool(state[k]))
