"""A tiny randomly initialised decoder-only model (Qwen2 architecture) for the embedded tasks."""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedModel, PreTrainedTokenizerBase

TINY_MAX_POSITIONS = 128  # longest prompt + completion of the tiny model, in tokens


def build_tiny_model(
    tokenizer: PreTrainedTokenizerBase,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    max_position_embeddings: int = TINY_MAX_POSITIONS,
    seed: int = 0,
    **config_overrides: Any,
) -> PreTrainedModel:
    """A Qwen2 causal LM built from a config via ``AutoModelForCausalLM.from_config`` (random init, tied
    embeddings), sized to ``tokenizer``'s vocabulary. Defaults give ~1M parameters.

    Args:
        tokenizer: supplies the vocabulary size and the pad/bos/eos ids.
        hidden_size, num_layers, num_heads: transformer shape; ``hidden_size % num_heads == 0``.
        intermediate_size: MLP width (default ``4 * hidden_size``).
        max_position_embeddings: longest prompt + completion in tokens.
        seed: initialisation seed (the global torch RNG is restored afterwards).
        config_overrides: any other ``Qwen2Config`` field.
    """
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    for field, value in (("hidden_size", hidden_size), ("num_layers", num_layers), ("num_heads", num_heads)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{field}={value!r} must be a positive integer")
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}")
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **{"tie_word_embeddings": True, **config_overrides},
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model
