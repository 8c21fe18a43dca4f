"""The detector-based scorer: rules (pure numpy) ← perception (models) ← pipeline ← report."""

from .config import EVALUATOR_VERSION, PRESETS, EvaluatorConfig

__all__ = ["EVALUATOR_VERSION", "PRESETS", "EvaluatorConfig"]
