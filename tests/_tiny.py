"""A small random model of the project's tiny architecture, saved as a normal HF model dir (not a test module)."""

from __future__ import annotations

from pathlib import Path


def save_tiny_model(path: Path, task: str = "arithmetic") -> Path:
    """Build a 32-wide, 2-layer tiny model with ``task``'s character tokenizer and save both into ``path``."""
    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import build_char_tokenizer
    from stare_rl.tasks import get_task

    tok = build_char_tokenizer(get_task(task).alphabet)
    build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=0).save_pretrained(path)
    tok.save_pretrained(path)
    return path
