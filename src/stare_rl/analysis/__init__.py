"""Analysis of runs: the entropy-change estimator probe, run reading, plots and the HTML report.
(The per-step quadrant diagnostics are core: :mod:`stare_rl.core.quadrants`.)"""
