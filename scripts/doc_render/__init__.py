"""The renderers behind scripts/doc_numbers.py: one module per study or page, each with its ``BLOCKS`` and
``inline_checks()``."""
