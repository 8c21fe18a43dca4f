"""The benchmark's vocabulary: categories, settings, object classes, values and predicates.

Everything here comes from the paper's Table 1 (docs/corpus.md). Other modules import these
names instead of repeating the lists.
"""

from __future__ import annotations

from typing import Literal, get_args

# The categories are spelled once, here, as types; the tuples below are derived from them, and the
# records (`records.PromptRecord.category`) use the types.
AttributeCategory = Literal["color", "material"]
RelationCategory = Literal["directional", "proximity", "comparative", "depth"]
Category = Literal[AttributeCategory, RelationCategory]
Kind = Literal["attribute", "relation"]
Polarity = Literal["positive", "negated"]

ATTRIBUTE_CATEGORIES: tuple[AttributeCategory, ...] = get_args(AttributeCategory)
RELATION_CATEGORIES: tuple[RelationCategory, ...] = get_args(RelationCategory)
CATEGORIES: tuple[Category, ...] = get_args(Category)  # attributes first, in the paper's Table 1 order

# Values of the attribute categories and predicates of the relation categories, in Table 1 order.
CATEGORY_VOCABULARY: dict[str, tuple[str, ...]] = {
    "color": ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white"),
    "material": ("wooden", "metal", "plastic", "glass"),
    "directional": ("left of", "right of", "above", "below"),
    "proximity": ("near", "far from"),
    "comparative": ("bigger than", "smaller than", "taller than", "shorter than"),
    "depth": ("in front of", "behind"),
}

# The noun of each material adjective, for text templates ("made of wood").
MATERIAL_NOUNS: dict[str, str] = {"wooden": "wood", "metal": "metal", "plastic": "plastic", "glass": "glass"}

# (num_pos, num_neg) in the paper's column order; load = P + N.
SETTINGS: tuple[tuple[int, int], ...] = ((1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (2, 1), (1, 2), (2, 2))
LOADS: tuple[int, ...] = (1, 2, 3, 4)
PROMPTS_PER_SETTING = 100
SAMPLES_PER_PROMPT = 4

# The 79 COCO classes other than "person", named as in GenEval's object_names.txt.
OBJECT_CLASSES: tuple[str, ...] = (
    "bicycle",
    "car",
    "motorcycle",
    "airplane",
    "bus",
    "train",
    "truck",
    "boat",
    "traffic light",
    "fire hydrant",
    "stop sign",
    "parking meter",
    "bench",
    "bird",
    "cat",
    "dog",
    "horse",
    "sheep",
    "cow",
    "elephant",
    "bear",
    "zebra",
    "giraffe",
    "backpack",
    "umbrella",
    "handbag",
    "tie",
    "suitcase",
    "frisbee",
    "skis",
    "snowboard",
    "sports ball",
    "kite",
    "baseball bat",
    "baseball glove",
    "skateboard",
    "surfboard",
    "tennis racket",
    "bottle",
    "wine glass",
    "cup",
    "fork",
    "knife",
    "spoon",
    "bowl",
    "banana",
    "apple",
    "sandwich",
    "orange",
    "broccoli",
    "carrot",
    "hot dog",
    "pizza",
    "donut",
    "cake",
    "chair",
    "couch",
    "potted plant",
    "bed",
    "dining table",
    "toilet",
    "tv",
    "laptop",
    "computer mouse",
    "tv remote",
    "computer keyboard",
    "cell phone",
    "microwave",
    "oven",
    "toaster",
    "sink",
    "refrigerator",
    "book",
    "clock",
    "vase",
    "scissors",
    "teddy bear",
    "hair drier",
    "toothbrush",
)

# Nouns that are plural-only in English: no article, and "are" instead of "is".
PLURAL_NOUNS: frozenset[str] = frozenset({"skis", "scissors"})


def kind_of(category: str) -> Kind:
    """`attribute` for color/material, `relation` for the four relation categories."""
    if category in ATTRIBUTE_CATEGORIES:
        return "attribute"
    if category in RELATION_CATEGORIES:
        return "relation"
    raise ValueError(f"unknown category {category!r}; expected one of {', '.join(CATEGORIES)}")


def setting_name(num_pos: int, num_neg: int) -> str:
    """`pos{P}_neg{N}`, the setting's name in ids and splits."""
    return f"pos{num_pos}_neg{num_neg}"


def setting_label(num_pos: int, num_neg: int) -> str:
    """`P:N`, the setting's label in the paper's tables."""
    return f"{num_pos}:{num_neg}"


SETTING_NAMES: tuple[str, ...] = tuple(setting_name(p, n) for p, n in SETTINGS)
