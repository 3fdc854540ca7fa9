"""STARE in your own TRL script: examples/trl_grpo.py with the import, the two class names and `method="stare"`
changed (tests/engines/trl/test_trl_api.py checks that nothing else differs, and runs this script).

    python examples/trl_stare.py                                    # a few steps on CPU, offline, in seconds
    python examples/trl_stare.py --variant C2 --target_entropy 0.5  # any StareGRPOConfig field is a flag
    python examples/trl_stare.py --config my_run.yaml               # or a YAML key (TrlParser)
    accelerate launch --multi_gpu --num_processes 2 examples/trl_stare.py  # 2 processes (on CPU: gloo)

Every StareGRPOConfig field (the method's own, the step options, the surrogate): docs/train.md. Model and data:
stare-rl's embedded tiny model (random init, built from a config, no download) and single-digit sums; in your
own script these are your model and dataset. metrics.jsonl in output_dir has every logged step (control/gate_on,
control/batch_entropy, loss/*, quadrant/*, next to TRL's own metrics).
"""

from datasets import Dataset
from trl import TrlParser

from stare_rl.models.tiny import build_tiny_model
from stare_rl.models.tokenizer import build_char_tokenizer
from stare_rl.trl import StareGRPOConfig, StareGRPOTrainer


def correct(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """1 when the completion is the row's answer, else 0."""
    return [float(text.strip() == a) for text, a in zip(completions, answer, strict=True)]


def digits_only(completions: list[str], **kwargs) -> list[float]:
    """Share of the completion's characters that are digits (a format reward)."""
    return [sum(ch.isdigit() for ch in text) / max(len(text), 1) for text in completions]


def main() -> None:
    parser = TrlParser((StareGRPOConfig,))
    parser.set_defaults(
        method="stare",
        output_dir="runs/trl_example", max_steps=3, per_device_train_batch_size=16, num_generations=4,
        max_completion_length=3, learning_rate=1e-3, reward_weights=[1.0, 0.5], logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=True, seed=0,
    )
    (args,) = parser.parse_args_and_config()
    tokenizer = build_char_tokenizer("0123456789+=")
    model = build_tiny_model(tokenizer, hidden_size=32, num_layers=2, num_heads=2, seed=args.seed)
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(10) for b in range(10 - a)]
    trainer = StareGRPOTrainer(
        model=model,
        reward_funcs=[correct, digits_only],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.train()


if __name__ == "__main__":
    main()
