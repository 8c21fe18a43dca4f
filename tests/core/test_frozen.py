"""A pydantic model's frozen twin (`negt2ibench.core.frozen`): the model's fields and rules, read-only,
slotted, with the model's error messages; thawed back to an equal model."""

from __future__ import annotations

import dataclasses
import sys

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from negt2ibench.core.frozen import frozen_twin, thaw, twin_parser


class Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    box: list[float] | None = None


class Tree(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    leaves: list[Leaf] = Field(default_factory=list)
    best: Leaf | None = None
    by_name: dict[str, Leaf] = Field(default_factory=dict)
    count: int = 0


class Twice:
    __slots__ = ()

    @property
    def twice(self) -> int:
        return 2 * self.count  # type: ignore[attr-defined]


LINE = (
    b'{"title": "t", "leaves": [{"name": "a", "box": [1, 2, 3, 4]}], "best": {"name": "b"}, '
    b'"by_name": {"c": {"name": "c"}}}'
)


def test_the_twin_has_the_fields_and_defaults_and_nested_twins():
    twin = twin_parser(Tree)(LINE)
    assert [f.name for f in dataclasses.fields(twin)] == list(Tree.model_fields)
    assert twin.title == "t" and twin.count == 0 and twin.leaves[0].box == [1.0, 2.0, 3.0, 4.0]
    assert type(twin.leaves[0]) is frozen_twin(Leaf) and type(twin.best) is frozen_twin(Leaf)
    assert type(twin.by_name["c"]) is frozen_twin(Leaf)
    assert not hasattr(twin, "__dict__") and not hasattr(twin.leaves[0], "__dict__")  # slotted
    with pytest.raises(dataclasses.FrozenInstanceError):
        twin.title = "u"  # type: ignore[misc]
    # Default factories give each twin its own list
    one, two = twin_parser(Tree)(b'{"title": "x"}'), twin_parser(Tree)(b'{"title": "y"}')
    assert one.leaves == [] and one.leaves is not two.leaves


def test_a_twin_thaws_to_the_model_it_came_from_and_compares_by_fields():
    parse = twin_parser(Tree)
    assert thaw(Tree, parse(LINE)) == Tree.model_validate_json(LINE)
    assert parse(LINE) == parse(LINE) and parse(LINE) != parse(b'{"title": "other"}')


def test_a_twin_is_built_once_and_takes_slotted_bases_only():
    assert frozen_twin(Tree) is frozen_twin(Tree)
    assert frozen_twin(Tree, bases=(Twice,)) is not frozen_twin(Tree)  # each its own bases

    class WithDict:
        pass

    class Other(BaseModel):
        count: int = 3

    with pytest.raises(TypeError, match="WithDict has no __slots__"):
        frozen_twin(Other, bases=(WithDict,))
    assert frozen_twin(Other, bases=(Twice,))(count=4).twice == 8


BAD = [
    b'{"title": 1}',  # wrong type
    b"[1, 2]",  # not an object
    b'"tree"',
    b'{"title": "t", "extra": 1}',  # extra key: the twin words it "Unexpected keyword argument"
    b'{"title": "t", "leaves": [{"name": "a", "size": 2}]}',  # extra key inside
    b'{"title": "t", "leaves": [{"name": "a", "box": ["x"]}]}',
    b'{"leaves": []}',  # missing field
    b'{"title": "t"',  # not JSON
]


@pytest.mark.parametrize("line", BAD)
def test_the_twin_refuses_what_the_model_refuses_in_the_models_words(line):
    with pytest.raises(ValidationError) as by_model:
        Tree.model_validate_json(line)
    with pytest.raises(ValidationError) as by_twin:
        twin_parser(Tree)(line)
    assert by_twin.value.errors() == by_model.value.errors()


def test_the_twin_is_smaller_than_the_model():
    model, twin = Tree.model_validate_json(LINE), twin_parser(Tree)(LINE)
    # The instances themselves: a model has a __dict__ and a fields-set set besides its slots
    model_bytes = sys.getsizeof(model) + sys.getsizeof(model.__dict__) + sys.getsizeof(model.model_fields_set)
    assert sys.getsizeof(twin) < model_bytes / 3
