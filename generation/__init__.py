"""NegT2IBench generation."""
