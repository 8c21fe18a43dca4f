"""NegT2IBench space."""
