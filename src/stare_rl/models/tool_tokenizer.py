"""Tool calling for the tiny model: a tokenizer, a chat template and a response schema that express it.

The character tokenizer (:func:`stare_rl.models.tokenizer.build_char_tokenizer`) is extended with four role
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

from collections.abc import Iterable
from typing import Any

from stare_rl.models.tokenizer import build_char_tokenizer

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


def build_tool_tokenizer(alphabet: str, words: Iterable[str] = (), *, newline: bool = True) -> Any:
    """The character tokenizer over ``alphabet`` plus the role markers and one token per entry of ``words``.

    Args:
        alphabet: every character prompts, tool results and answers may contain.
        words: tool names and argument names, each encoded as a single (non-special) token.
        newline: whether ``"\n"`` is a token (see :func:`~stare_rl.models.tokenizer.build_char_tokenizer`).

    Returns:
        A ``PreTrainedTokenizerFast`` with :data:`CHAT_TEMPLATE` and :data:`RESPONSE_SCHEMA` set (both saved
        by ``save_pretrained``). Ids: the char tokenizer's, then ``<user> <asst> <call> <tool>``, then ``words``.
    """
    tokenizer = build_char_tokenizer(alphabet, newline=newline)
    tokenizer.add_special_tokens({"additional_special_tokens": list(ROLE_TOKENS)})
    words = [w for w in dict.fromkeys(words) if w]
    bad = [w for w in words if not w.replace("_", "").isalnum()]
    if bad:
        raise ValueError(f"words={bad!r}: tool and argument names must be alphanumeric (or '_')")
    tokenizer.add_tokens(words)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_schema = RESPONSE_SCHEMA
    return tokenizer
