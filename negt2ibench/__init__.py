"""NegT2IBench: a polarity benchmark for text-to-image models."""

__version__ = "0.1.0"
