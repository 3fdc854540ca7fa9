"""Entropy-dynamics analysis: per-step quadrant diagnostics, the estimator probe, run reports, compare grids."""

from stare_rl.analysis.quadrants import QUADRANTS, predicted_entropy_change, quadrant_masks, quadrant_stats

__all__ = ["QUADRANTS", "predicted_entropy_change", "quadrant_masks", "quadrant_stats"]
