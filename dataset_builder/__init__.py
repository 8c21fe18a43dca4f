"""Builds the 4,800 NegT2IBench prompts and the Hub-ready dataset folder."""

from .corpus import DEFAULT_SEED, build_corpus
from .grammar import PromptParseError, parse_prompt, statement_sentence
from .loading import load_prompts
from .records import PromptIndex, PromptRecord, Statement
from .vocabulary import CATEGORIES, CATEGORY_VOCABULARY, OBJECT_CLASSES, SETTINGS

__all__ = [
    "CATEGORIES",
    "CATEGORY_VOCABULARY",
    "OBJECT_CLASSES",
    "SETTINGS",
    "PromptIndex",
    "PromptRecord",
    "Statement",
    "load_prompts",
    "DEFAULT_SEED",
    "build_corpus",
    "PromptParseError",
    "parse_prompt",
    "statement_sentence",
]
