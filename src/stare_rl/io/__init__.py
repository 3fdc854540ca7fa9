"""Files a run writes and reads (atomic writes, the run layout, metrics.jsonl) and process plumbing.
Imports nothing else of stare_rl."""
