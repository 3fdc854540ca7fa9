"""``stare train`` as a library: config dataclasses, the plan/prepare/run pipeline, data checks, the warm start
and the model card."""
