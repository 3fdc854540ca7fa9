"""Tool calling for the tiny model: a chat template, a response schema and a tokenizer that express them.

The character tokenizer (:func:`stare_rl.tasks.tokenizer.build_char_tokenizer`) is extended with four role
markers (special tokens) and one token per tool name and argument name, so a tool call costs a handful of
tokens. A conversation renders as::

    <bos><user>(12+34)*5=<asst><call>calculator expression=12+34<eos><tool>46<asst><call>calculator
    expression=46*5<eos><tool>230<asst>230<eos>

- ``<user>`` / ``<tool>`` open a user / tool message; ``<asst>`` opens an assistant turn (the generation
  prompt) and every assistant turn ends with ``<eos>``, so generation stops after each tool call and TRL's
  tool loop (``GRPOTrainer(tools=...)``) executes it, appends ``<tool>RESULT<asst>`` and generates again.
- A tool call is ``<call>NAME key=value ...``: all arguments are strings (a value runs up to the next
  `` key=`` or the end of the turn). The template renders the name, every key and every value, as TRL's
  ``supports_tool_calling`` requires.
- The template is prefix-preserving (earlier messages render the same whatever follows) and marks assistant
  turns with ``{% generation %}`` (their ``<eos>`` included), so TRL's ``SFTTrainer(assistant_only_loss=True)``
  trains on the model's own turns only, never on tool results.
- :data:`RESPONSE_SCHEMA` is the legacy ``response_schema`` (transformers < 5.13) that TRL's
  ``parse_response`` uses to turn generated ids back into ``{"role", "content", "tool_calls"}``. It never
  fails on well-delimited text: anything after ``<call>`` is a call, so a malformed call (unknown tool,
  missing or garbled arguments) reaches the tool loop and comes back as an error message in the tool result,
  as a real environment would answer, instead of silently ending the episode.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

USER, ASSISTANT, CALL, TOOL = "<user>", "<asst>", "<call>", "<tool>"
ROLE_TOKENS = (USER, ASSISTANT, CALL, TOOL)

# Jinja; ``{{- '...' -}}`` literals so that no template whitespace leaks into the rendered text.
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] in ('user', 'system') -%}"
    "{{- '<user>' ~ message['content'] -}}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '<asst>' -}}{%- generation -%}"
    "{{- message['content'] or '' -}}"
    "{%- for call in message['tool_calls'] or [] -%}"
    "{%- set fn = call['function'] if call['function'] is defined else call -%}"
    "{{- '<call>' ~ fn['name'] -}}"
    "{%- if fn['arguments'] is mapping -%}"
    "{%- for key, value in fn['arguments'].items() -%}{{- ' ' ~ key ~ '=' ~ value -}}{%- endfor -%}"
    "{%- elif fn['arguments'] -%}{{- ' ' ~ fn['arguments'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{{- eos_token -}}{%- endgeneration -%}"
    "{%- elif message['role'] == 'tool' -%}"
    "{{- '<tool>' ~ message['content'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<asst>' -}}{%- endif -%}"
)

# transformers' legacy response schema (regex + JSON-schema-like nodes), read by ``tokenizer.parse_response``.
RESPONSE_SCHEMA: dict[str, Any] = {
    # content: text before the first <call>; tool_calls: from the first <call> to <eos> (or the end).
    "x-regex": r"^(?P<content>(?:(?!<call>|<eos>)[\s\S])*)(?P<tool_calls><call>(?:(?!<eos>)[\s\S])*)?",
    "type": "object",
    "properties": {
        "role": {"const": "assistant"},
        "content": {"type": "string"},
        "tool_calls": {
            "type": "array",
            "x-regex-iterator": r"<call>((?:(?!<call>)[\s\S])*)",  # one item per <call>
            "items": {
                "type": "object",  # the item is the text "NAME key=value ..."; each child parses all of it
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "x-regex": r"^\s*([^\s=]*)"},  # may be "" (unknown tool)
                            "arguments": {
                                "type": "object",
                                "x-regex-key-value": r"\s(?P<key>[A-Za-z_]\w*)=(?P<value>(?:(?!\s[A-Za-z_]\w*=)[\s\S])*)",
                            },
                        },
                    },
                },
            },
        },
    },
}


def build_tool_tokenizer(alphabet: str, words: Iterable[str] = ()) -> Any:
    """The character tokenizer over ``alphabet`` plus the role markers and one token per entry of ``words``.

    Args:
        alphabet: every character prompts, tool results and answers may contain.
        words: tool names and argument names, each encoded as a single (non-special) token.

    Returns:
        A ``PreTrainedTokenizerFast`` with :data:`CHAT_TEMPLATE` and :data:`RESPONSE_SCHEMA` set (both saved
        by ``save_pretrained``). Ids: the char tokenizer's, then ``<user> <asst> <call> <tool>``, then ``words``.
    """
    from stare_rl.tasks.tokenizer import build_char_tokenizer

    tokenizer = build_char_tokenizer(alphabet)
    tokenizer.add_special_tokens({"additional_special_tokens": list(ROLE_TOKENS)})
    words = [w for w in dict.fromkeys(words) if w]
    bad = [w for w in words if not w.replace("_", "").isalnum()]
    if bad:
        raise ValueError(f"words={bad!r}: tool and argument names must be alphanumeric (or '_')")
    tokenizer.add_tokens(words)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_schema = RESPONSE_SCHEMA
    return tokenizer


def tool_call(name: str, **arguments: str) -> dict[str, Any]:
    """One assistant tool call in the chat-message format (``{"type": "function", "function": {...}}``)."""
    return {"type": "function", "function": {"name": name, "arguments": dict(arguments)}}


# ----- episodes: what the reward and the metrics read from a finished conversation -----

def is_error_result(content: Any) -> bool:
    """A tool result that reports a failure: the tool's own ``error: ...`` or TRL's ``{'error': ...}``."""
    text = str(content).lstrip()
    return text.startswith("error") or text.startswith("{'error'")


def final_answer(completion: Sequence[dict[str, Any]] | str) -> str | None:
    """The text of the final assistant turn, or ``None`` when the episode did not finish with one.

    A finished episode ends with an assistant message without tool calls. An episode that ends with a tool
    call or a tool result (turn limit or completion length reached) has no answer.
    """
    if isinstance(completion, str):
        return completion
    if not completion:
        return None
    last = completion[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    return str(last.get("content") or "")


def episode_stats(completion: Sequence[dict[str, Any]] | str) -> dict[str, float]:
    """``{"calls", "errors", "turns", "finished"}`` of one episode (a plain string: one turn, no call)."""
    if isinstance(completion, str):
        return {"calls": 0.0, "errors": 0.0, "turns": 1.0, "finished": 1.0}
    calls = sum(len(m.get("tool_calls") or []) for m in completion if m.get("role") == "assistant")
    errors = sum(is_error_result(m.get("content")) for m in completion if m.get("role") == "tool")
    turns = sum(m.get("role") == "assistant" for m in completion)
    return {"calls": float(calls), "errors": float(errors), "turns": float(turns),
            "finished": float(final_answer(completion) is not None)}


def summarize_episodes(stats: Sequence[dict[str, float]], rewards: Sequence[float]) -> dict[str, float]:
    """Batch metrics a tool-use user expects (names without a prefix; the engine adds ``tools/``).

    ``calls_per_episode``, ``errors_per_episode``, ``error_rate`` (errors per call), ``turns_per_episode``,
    ``finished`` (fraction ending with an answer), ``used_tools`` (fraction with >= 1 call),
    ``success_with_tools`` / ``success_without_tools`` (mean reward of the episodes with / without a call;
    NaN-free: 0 when there is no such episode, with ``used_tools`` telling how many there were).
    """
    n = max(len(stats), 1)
    calls = sum(s["calls"] for s in stats)
    with_tools = [r for s, r in zip(stats, rewards, strict=True) if s["calls"] > 0]
    without = [r for s, r in zip(stats, rewards, strict=True) if s["calls"] == 0]
    return {
        "calls_per_episode": calls / n,
        "errors_per_episode": sum(s["errors"] for s in stats) / n,
        "error_rate": sum(s["errors"] for s in stats) / calls if calls else 0.0,
        "turns_per_episode": sum(s["turns"] for s in stats) / n,
        "finished": sum(s["finished"] for s in stats) / n,
        "used_tools": len(with_tools) / n,
        "success_with_tools": sum(with_tools) / len(with_tools) if with_tools else 0.0,
        "success_without_tools": sum(without) / len(without) if without else 0.0,
    }
