"""Small models and tokenizers built from a config (no download): the tiny offline policy and its tokenizer."""
