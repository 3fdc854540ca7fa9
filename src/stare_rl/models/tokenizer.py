"""A character-level tokenizer for the embedded tasks, as a normal Hugging Face fast tokenizer.

One token per character of the task's alphabet plus ``<pad>``, ``<bos>``, ``<eos>`` and ``<unk>`` and, unless
``newline=False``, the newline ``"\n"`` (last, so the alphabet's ids do not depend on it; chat templates and
verl's agent loop for Qwen-family models need it as one real token). Encoding
adds ``<bos>`` in front (never ``<eos>``: a tokenized prompt must be a prefix of the tokenized prompt +
completion, which TRL's SFTTrainer relies on); the literal text ``<eos>`` is recognised as the special token
(SFTTrainer appends it to completions). Decoding concatenates characters. Padding is on the left (generation).
The result round-trips through ``save_pretrained`` / :func:`load_tokenizer` (not ``AutoTokenizer`` once a
Qwen2 model is saved next to it: see there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
# The vocabulary of the warm-started tiny models: their cache key (train/warmstart.py) covers the task, the
# model shape and the SFT settings, not the vocabulary, and models cached before the newline token existed have
# none. A newline token adds one output class, so a fresh warm start would differ from a cached one under the
# same key; every path that warm-starts, or must match a warm-started model's tokenizer, passes this. No task
# prompt or answer contains a newline, so nothing they encode changes.
WARMSTART_NEWLINE = False


def build_char_tokenizer(alphabet: str, *, newline: bool = True) -> PreTrainedTokenizerFast:
    """A character-level tokenizer over ``alphabet`` (duplicates ignored; order fixes the ids after specials).

    Ids: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3, then the characters, then ``"\n"`` when
    ``newline`` (and not already in ``alphabet``). Every character, newlines included, is one pre-token, so
    an unknown character is one ``<unk>``.

    Args:
        alphabet: the characters of the task.
        newline: add ``"\n"`` as a token, so ``decode(encode("1\n2")) == "1\n2"``. ``False`` gives the
            vocabulary of tokenizers built before the newline was added (the cached warm starts, whose key does
            not cover the vocabulary; no task prompt or answer contains a newline).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    if not isinstance(alphabet, str) or not alphabet:
        raise ValueError(f"alphabet={alphabet!r} must be a non-empty string")
    chars = list(dict.fromkeys(alphabet + ("\n" if newline else "")))  # unique, order kept
    each_char = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # '.' would skip newlines
    if newline:
        # Byte-level token strings ("\n" is "Ċ", " " is "Ġ"), as the Qwen2 tokenizer class that
        # AutoTokenizer picks for a Qwen2 model directory rebuilds them: the same ids in memory and reloaded.
        byte_char = byte_level_chars()
        names = ["".join(byte_char[b] for b in c.encode()) for c in chars]
        pre = pre_tokenizers.Sequence([each_char, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        decoder = decoders.ByteLevel()
    else:  # the cached warm starts' tokenizer, unchanged
        names, pre, decoder = chars, each_char, decoders.Fuse()
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *names])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    backend.pre_tokenizer = pre
    backend.decoder = decoder
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, vocab[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        padding_side="left",
        model_max_length=512,
    )


def byte_level_chars() -> dict[int, str]:
    """The byte -> printable character map of byte-level BPE tokenizers (GPT-2's; Qwen2's ``ByteLevel``).

    Printable Latin-1 bytes map to themselves; the others (control characters, space, ...) to 256 + n in order.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out, extra = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + extra)
            extra += 1
    return out


# What ``save_pretrained`` records for a tokenizer built here (a plain fast tokenizer: tokenizer.json is all of it)
GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(path: str | Path, **kwargs: Any) -> Any:
    """The tokenizer saved in ``path``, exactly as saved: ``AutoTokenizer.from_pretrained`` except when its
    ``tokenizer_config.json`` names a generic fast tokenizer (the ones built here, or any model whose tokenizer is
    just its tokenizer.json), which loads as that.

    Why: with transformers 5, ``AutoTokenizer`` picks the tokenizer class of the model type in ``config.json``
    (``Qwen2Tokenizer`` for the tiny models) over the saved generic class, and that class rebuilds the
    pre-tokenizer its own way (Qwen2's regex + byte level), replacing the saved one: a character tokenizer with a
    literal space then drops every space and newline (``"what is 12 + 3"`` -> ``"whatis12+3"``). The embedded
    tasks whose alphabet has only digits and ``+-*/=,:;()`` encode the same either way.
    """
    from transformers import AutoTokenizer

    config = Path(path) / "tokenizer_config.json"
    if config.is_file():
        try:
            saved = json.loads(config.read_text()).get("tokenizer_class")
        except (OSError, ValueError):
            saved = None
        if saved in GENERIC_TOKENIZER_CLASSES:
            return PreTrainedTokenizerFast.from_pretrained(path, **kwargs)
    return AutoTokenizer.from_pretrained(path, **kwargs)
