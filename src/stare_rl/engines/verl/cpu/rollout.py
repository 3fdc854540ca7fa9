"""A verl rollout on transformers ``generate`` for the CPU mode (``actor_rollout_ref.rollout.name=hf``).

verl 0.9 serves rollouts from a server per replica (vLLM, SGLang, TRT-LLM); its agent loop calls the server's
``generate(request_id, prompt_ids=..., sampling_params=...) -> TokenOutput`` and the hybrid worker pushes the
actor's weights after each update through its rollout adapter's ``update_weights`` (checkpoint engine
``naive``). Here:

- :class:`HFGenerateServer` (a Ray actor, one per replica, named :func:`server_name`) holds a transformers
  model loaded from the model path, samples one sequence per request with the rollout's temperature/top-p/top-k
  and returns the sampled tokens' log-probs under that distribution (what vLLM returns with ``logprobs``);
- :class:`HFServerAdapter` (in the hybrid actor worker) sends the actor's full weights to it;
- :class:`HFReplica` starts the server.

Single-process generation, one request at a time: meant for tiny models and a few steps, not throughput.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import ray
import torch
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, TokenOutput

from stare_rl.engines.verl.cpu import ROLLOUT_NAME

logger = logging.getLogger(__name__)


def server_name(replica_rank: int) -> str:
    return f"stare_rl_hf_rollout_{replica_rank}"


def sample_next(logits: torch.Tensor, temperature: float, top_p: float, top_k: int,
                generator: torch.Generator) -> tuple[int, float]:
    """One token from ``logits`` ``(V,)`` as vLLM samples (temperature 0 = greedy), and its log-prob.

    The log-prob is of the processed distribution (after temperature, top-k, top-p), as vLLM reports by default.
    """
    logits = logits.float()
    if temperature <= 0:
        token = int(torch.argmax(logits))
        return token, float(torch.log_softmax(logits, -1)[token])
    logits = logits / temperature
    if top_k is not None and top_k > 0:
        kth = torch.topk(logits, min(top_k, logits.numel())).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        probs = torch.softmax(sorted_logits, -1)
        drop = probs.cumsum(-1) - probs > top_p  # keep the smallest prefix with mass >= top_p
        logits[order[drop]] = float("-inf")
    logp = torch.log_softmax(logits, -1)  # (V,)
    token = int(torch.multinomial(logp.exp(), 1, generator=generator))
    return token, float(logp[token])


class HFGenerateServer:
    """The rollout server of one replica: a transformers model on the CPU, token in, token out."""

    def __init__(self, model_path: str, response_length: int, max_model_len: int | None, seed: int = 0) -> None:
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(1)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, attn_implementation="sdpa",
                                                          torch_dtype=torch.float32).eval()
        self.eos = self.model.generation_config.eos_token_id
        self.eos = set(self.eos if isinstance(self.eos, list) else [self.eos])
        self.response_length = response_length
        self.max_model_len = max_model_len
        self.generator = torch.Generator().manual_seed(seed)
        self.global_steps: int | None = None

    def load_weights(self, state: dict[str, torch.Tensor], global_steps: int | None = None) -> int:
        own = self.model.state_dict()
        unknown = sorted(set(state) - set(own))
        if unknown:
            raise KeyError(f"hf rollout: weights {unknown[:5]} are not in the rollout model")
        with torch.no_grad():
            for name, value in state.items():
                own[name].copy_(value.to(own[name].dtype))
        self.global_steps = global_steps
        return len(state)

    @torch.no_grad()
    def generate(self, request_id: str = "", *, prompt_ids: list[int], sampling_params: dict[str, Any],
                 **kwargs: Any) -> TokenOutput:
        params = dict(sampling_params)
        limit = params.pop("max_tokens", params.pop("max_new_tokens", self.response_length))
        if self.max_model_len:
            limit = min(limit, self.max_model_len - len(prompt_ids))
        temperature = float(params.get("temperature", 1.0))
        top_p, top_k = float(params.get("top_p", 1.0)), int(params.get("top_k", -1))
        ids = torch.tensor([prompt_ids])  # (1, P)
        out = self.model(input_ids=ids, use_cache=True)
        tokens, logps = [], []
        for _ in range(max(limit, 0)):
            token, logp = sample_next(out.logits[0, -1], temperature, top_p, top_k, self.generator)
            tokens.append(token)
            logps.append(logp)
            if token in self.eos:
                break
            out = self.model(input_ids=torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)
        return TokenOutput(token_ids=tokens, log_probs=logps, stop_reason="completed",
                           extra_fields={"global_steps": self.global_steps})

    # the control calls verl makes on a server: nothing to free on the CPU
    def wake_up(self) -> None: ...
    def sleep(self) -> None: ...
    def clear_kv_cache(self) -> None: ...
    def release_kv_cache(self) -> None: ...
    def resume_kv_cache(self) -> None: ...
    def resume_generation(self) -> None: ...
    def abort_all_requests(self, reject_request: bool = False) -> None: ...
    def start_profile(self, **kwargs: Any) -> None: ...
    def stop_profile(self) -> None: ...


class HFReplica(RolloutReplica):
    """Starts one :class:`HFGenerateServer` per replica (hybrid: next to the actor workers, no extra CPU)."""

    def rollout_worker_use_gpu(self) -> bool:
        return False

    async def launch_servers(self) -> None:
        cfg = self.config
        model_path = self.model_config.local_path if hasattr(self.model_config, "local_path") else self.model_config.path
        max_len = (cfg.max_model_len or cfg.prompt_length + cfg.response_length)
        server = ray.remote(HFGenerateServer).options(
            name=server_name(self.replica_rank), num_cpus=0, max_concurrency=1, get_if_exists=True,
        ).remote(model_path, cfg.response_length, max_len, seed=self.replica_rank)
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"hf-cpu-replica-{self.replica_rank}"


class HFServerAdapter(BaseRollout):
    """In the hybrid actor worker: pushes the actor's weights to this replica's server."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, model_config, device_mesh)
        world = (self.config.tensor_model_parallel_size * self.config.data_parallel_size
                 * self.config.pipeline_model_parallel_size)
        rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
        self.replica_rank, self.is_leader_rank = rank // world, rank % world == 0
        self.sleep_level = 0

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(self, weights: Any, wire_format: str = "named_tensors", **kwargs: Any) -> None:
        if wire_format != "named_tensors":
            raise ValueError(f"hf rollout: wire_format={wire_format!r} is not supported (use checkpoint_engine "
                             "backend 'naive')")
        state = {}
        for name, tensor in weights:  # full tensors (FSDP2 gathers DTensors): every rank sees all of them
            full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
            state[name] = full.detach().to("cpu", copy=True)
        if not self.is_leader_rank:
            return None
        server = await asyncio.to_thread(ray.get_actor, server_name(self.replica_rank))
        await server.load_weights.remote(state, kwargs.get("global_steps"))
        return None


def register() -> None:
    """``rollout.name=hf``: verl's replica registry and its server-adapter table (idempotent)."""
    from verl.workers.rollout import base
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    RolloutReplicaRegistry.register(ROLLOUT_NAME, lambda: HFReplica)
    base._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = f"{__name__}.HFServerAdapter"
