"""``stare compare``: a grid of methods x seeds with identical budgets (the grid model and the runner)."""
