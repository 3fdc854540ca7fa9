"""verl engine: the verl.plugins entry point (losses), the exact-gate entry point, the install check."""
