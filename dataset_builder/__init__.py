"""Builds the 4,800 NegT2IBench prompts and the Hub-ready dataset folder."""
from .records import PromptIndex, PromptRecord, Statement, load_prompts
from .vocabulary import CATEGORIES, CATEGORY_VOCABULARY, OBJECT_CLASSES, SETTINGS

__all__ = [
    "CATEGORIES", "CATEGORY_VOCABULARY", "OBJECT_CLASSES", "SETTINGS",
    "PromptIndex", "PromptRecord", "Statement", "load_prompts",
]
