"""A character-level tokenizer for the embedded tasks, as a normal Hugging Face fast tokenizer.

One token per character of the task's alphabet plus ``<pad>``, ``<bos>``, ``<eos>`` and ``<unk>``. Encoding
adds ``<bos>`` in front (never ``<eos>``: a tokenized prompt must be a prefix of the tokenized prompt +
completion, which TRL's SFTTrainer relies on); the literal text ``<eos>`` is recognised as the special token
(SFTTrainer appends it to completions). Decoding concatenates characters. Padding is on the left (generation).
The result round-trips through ``save_pretrained`` / ``AutoTokenizer.from_pretrained``.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)


def build_char_tokenizer(alphabet: str) -> PreTrainedTokenizerFast:
    """A character-level tokenizer over ``alphabet`` (duplicates ignored; order fixes the ids after specials).

    Ids: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3, then the characters. Unknown characters map to
    ``<unk>``.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    if not isinstance(alphabet, str) or not alphabet:
        raise ValueError(f"alphabet={alphabet!r} must be a non-empty string")
    chars = list(dict.fromkeys(alphabet))  # unique, order kept
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *chars])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()
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
