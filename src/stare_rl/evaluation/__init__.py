"""Evaluation of a policy on held-out prompts: avg@k/pass@k/maj@k, the papers' protocol, tool episodes."""
