"""calc_tool: task, calculator, reward on the final answer, tool-call tokenizer + chat template (checked with
TRL's own template checks and parser), episode metrics, and the evaluation loop's agreement with TRL."""

from __future__ import annotations

import types

import pytest

from stare_rl.evaluation.tools import tool_suffix_ids
from stare_rl.tasks import get_task, is_tool_task, list_tasks
from stare_rl.tasks.calc_tool import CalcToolTask, calculator
from stare_rl.tasks.tool_episodes import episode_stats, final_answer, summarize_episodes, tool_call


@pytest.fixture(scope="module")
def task() -> CalcToolTask:
    return get_task("calc_tool")


@pytest.fixture(scope="module")
def tok(task: CalcToolTask):  # noqa: ANN201
    return task.build_tokenizer()


def _episode(*turns: str, answer: str | None = None) -> list[dict]:
    """Messages after the prompt: one calculator call + its real result per expression, then the answer."""
    out: list[dict] = []
    for expr in turns:
        out.append({"role": "assistant", "content": "", "tool_calls": [tool_call("calculator", expression=expr)]})
        out.append({"role": "tool", "name": "calculator", "content": calculator(expr)})
    if answer is not None:
        out.append({"role": "assistant", "content": answer})
    return out


def test_registered_and_validated() -> None:
    assert "calc_tool" in list_tasks()
    assert is_tool_task(get_task("calc_tool")) and not is_tool_task(get_task("arithmetic"))
    for bad in ({"num_ops": 0}, {"max_number": 1}, {"ops": "/"}, {"ops": "++"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            get_task("calc_tool", **bad)


def test_splits_and_intended_episodes(task: CalcToolTask) -> None:
    train, test = task.make_split("train", 1000, 0), task.make_split("test", 100, 0)
    assert train == task.make_split("train", 1000, 0)
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in test}
    for row in train[:200]:
        msgs = task.sft_messages(row)
        assert len(msgs) == 2 * task.num_ops + 2
        assert msgs[-2]["content"] == row["answer"]  # the last tool result is the answer ...
        assert task.reward(msgs[1:], row["answer"]) == 1.0  # ... and reading it back scores
        assert eval(row["prompt"][:-1]) == int(row["answer"])  # noqa: S307 - the prompt means what it says
        assert int(row["answer"]) >= 0


def test_hand_made_prompt_steps(task: CalcToolTask) -> None:
    assert task.steps("(12+34)*5=") == [(12, "+", 34), (46, "*", 5)]
    assert task.steps("7*8-6=") == [(7, "*", 8), (56, "-", 6)]


def test_calculator_results_and_errors() -> None:
    assert calculator("12*34") == "408"
    assert calculator(" 5 - 9 ") == "-4"
    assert calculator("1+2+3") == "error: need x op y"
    assert calculator("") == "error: empty"
    assert calculator("1" * 13 + "+1") == "error: too long"


def test_reward_reads_only_the_final_answer(task: CalcToolTask) -> None:
    assert task.reward(_episode("12+34", "46*5", answer="230"), "230") == 1.0
    assert task.reward(_episode("12+34", "46*5", answer="231"), "230") == 0.0
    assert task.reward(_episode("12+34", "46*5"), "230") == 0.0  # ended on a tool result: no answer
    last_call = _episode("12+34")[:1]
    assert task.reward(last_call, "46") == 0.0  # ended on a call (turn limit)
    assert task.reward([{"role": "assistant", "content": "230"}], "230") == 1.0  # no tool needed
    assert task.reward([], "230") == 0.0


def test_episode_stats_and_summary() -> None:
    ok = _episode("12+34", "46*5", answer="230")
    bad = _episode("12+34+1", answer="7")  # one call, an error result
    plain = [{"role": "assistant", "content": "230"}]
    assert episode_stats(ok) == {"calls": 2.0, "errors": 0.0, "turns": 3.0, "finished": 1.0}
    assert episode_stats(bad) == {"calls": 1.0, "errors": 1.0, "turns": 2.0, "finished": 1.0}
    assert episode_stats(_episode("1+1")) == {"calls": 1.0, "errors": 0.0, "turns": 1.0, "finished": 0.0}
    assert final_answer(plain) == "230" and final_answer(_episode("1+1")) is None
    s = summarize_episodes([episode_stats(e) for e in (ok, bad, plain)], [1.0, 0.0, 1.0])
    assert s["calls_per_episode"] == 1.0 and s["errors_per_episode"] == pytest.approx(1 / 3)
    assert s["error_rate"] == pytest.approx(1 / 3) and s["turns_per_episode"] == 2.0
    assert s["used_tools"] == pytest.approx(2 / 3)
    assert s["success_with_tools"] == 0.5 and s["success_without_tools"] == 1.0
    empty = summarize_episodes([], [])
    assert empty["error_rate"] == 0.0 and empty["success_with_tools"] == 0.0  # no NaN


def test_chat_template_passes_trl_checks_and_renders_by_hand(tok) -> None:  # noqa: ANN001
    from trl.chat_template_utils import (
        has_generation_markers,
        is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained,
        supports_tool_calling,
    )

    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)
    assert has_generation_markers(tok.chat_template) and is_chat_template_stop_token_trained(tok)
    msgs = [{"role": "user", "content": "(12+34)*5="}, *_episode("12+34", "46*5", answer="230")]
    text = tok.apply_chat_template(msgs, tokenize=False)
    assert text == ("<bos><user>(12+34)*5=<asst><call>calculator expression=12+34<eos><tool>46"
                    "<asst><call>calculator expression=46*5<eos><tool>230<asst>230<eos>")
    enc = tok.apply_chat_template(msgs, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    pieces = tok.convert_ids_to_tokens(enc["input_ids"])
    assert pieces[:3] == ["<bos>", "<user>", "("] and "calculator" in pieces and "expression" in pieces
    trained = "".join(p for p, m in zip(pieces, enc["assistant_masks"], strict=True) if m)
    # only the model's own turns (with their <eos>) are trained: never the prompt, a role marker or a result
    assert trained == "<call>calculator expression=12+34<eos><call>calculator expression=46*5<eos>230<eos>"


def test_parse_response_with_trl(tok) -> None:  # noqa: ANN001
    from trl.chat_template_utils import parse_response

    def parse(text: str) -> dict:
        return parse_response(tok, tok(text, add_special_tokens=False)["input_ids"])

    assert parse("<call>calculator expression=12*34<eos>")["tool_calls"] == [tool_call("calculator", expression="12*34")]
    assert parse("230<eos>") == {"role": "assistant", "content": "230"}
    # malformed calls still reach the tool loop (and come back as error results), they do not end the episode
    assert parse("<call>calc<eos>")["tool_calls"] == [tool_call("calc")]
    assert parse("<call><eos>")["tool_calls"] == [tool_call("")]


def test_tokenizer_round_trip(tok, tmp_path) -> None:  # noqa: ANN001
    from transformers import AutoTokenizer

    tok.save_pretrained(tmp_path)
    back = AutoTokenizer.from_pretrained(tmp_path)
    msgs = [{"role": "user", "content": "7*8-6="}, *_episode("7*8", "56-6", answer="50")]
    assert back.apply_chat_template(msgs, tokenize=True, return_dict=False) == tok.apply_chat_template(
        msgs, tokenize=True, return_dict=False)
    assert back.response_schema == tok.response_schema


def test_tokenizer_reloads_exactly_next_to_its_qwen2_model(tok, tmp_path) -> None:  # noqa: ANN001
    """A warm start saves the tokenizer next to a tiny Qwen2 model; GRPO, `stare eval` and `stare probe` reload
    it. ``AutoTokenizer`` would pick ``Qwen2Tokenizer`` from config.json and drop every space; ours must not."""
    from transformers import AutoTokenizer

    from stare_rl.models.tiny import build_tiny_model
    from stare_rl.models.tokenizer import load_tokenizer

    tok.save_pretrained(tmp_path)
    build_tiny_model(tok, hidden_size=16, num_layers=1, num_heads=2, seed=0).save_pretrained(tmp_path)
    text = "what is 12 + 3: <call>calculator expression=12*34<eos>"
    back = load_tokenizer(tmp_path)
    assert back(text)["input_ids"] == tok(text)["input_ids"]
    assert back.decode(back(text, add_special_tokens=False)["input_ids"]) == text
    assert tok.convert_tokens_to_ids(" ") in back(text)["input_ids"]
    msgs = [{"role": "user", "content": "7*8-6="}, *_episode("7*8", "56-6", answer="50")]
    assert back.apply_chat_template(msgs, tokenize=True, return_dict=False) == tok.apply_chat_template(
        msgs, tokenize=True, return_dict=False)
    assert back.response_schema == tok.response_schema
    # what this guards against (transformers 5): the model type's tokenizer class rebuilds the pre-tokenizer
    assert AutoTokenizer.from_pretrained(tmp_path)(text)["input_ids"] != tok(text)["input_ids"]


def test_tool_suffix_ids_match_trl(tok) -> None:  # noqa: ANN001
    """The evaluation loop appends exactly the tokens TRL's GRPOTrainer appends after a tool call."""
    from trl import GRPOTrainer

    fake = types.SimpleNamespace(processing_class=tok, chat_template=None, chat_template_kwargs={}, _is_vlm=False,
                                 _tokenizer=tok)
    msgs = [{"role": "tool", "name": "calculator", "content": "408"}]
    ours = tool_suffix_ids(tok, msgs)
    assert ours == GRPOTrainer._get_tool_suffix_ids(fake, msgs)
    assert tok.convert_ids_to_tokens(ours) == ["<tool>", "4", "0", "8", "<asst>"]


def test_stare_train_task_defaults_and_turn_limit(tmp_path) -> None:  # noqa: ANN001
    """`stare train --task calc_tool` takes configs/calc_tool.yaml on top of the default; flags still win;
    prepare() hands TRL chat prompts and the task's turn limit and length budget."""
    from stare_rl.train.plan import plan_run
    from stare_rl.train.prepare import prepare

    plan = plan_run(["--task", "calc_tool", "--output_dir", str(tmp_path), "--max_steps", "7"])
    assert plan.task_args.task == "calc_tool" and plan.grpo.max_steps == 7  # the flag wins over the yaml
    assert plan.grpo.per_device_train_batch_size == 64 and plan.grpo.num_generations == 8
    ws = plan.warmstart.warmstart_config()
    assert (ws.batch_size, ws.eval_rows, ws.k, ws.eval_every) == (64, 64, 4, 50)
    # not the arithmetic default's mixture recipe: the tool task has no wrong completions to mix in
    assert (ws.hidden_size, ws.correct_frac, ws.stop_on_metric, ws.lr_scheduler) == (
        128, 1.0, True, "constant_with_warmup")
    prep = prepare(plan)
    task = prep.task
    assert prep.train_rows[0]["prompt"] == [{"role": "user", "content": task.make_split("train", 1, 0)[0]["prompt"]}]
    assert plan.grpo.max_tool_calling_iterations == task.max_tool_calls == 4
    assert plan.grpo.max_completion_length == task.max_completion_chars + 1
    other = plan_run(["--task", "arithmetic", "--output_dir", str(tmp_path)])
    assert other.grpo.max_steps == 800 and other.grpo.per_device_train_batch_size == 128  # untouched
