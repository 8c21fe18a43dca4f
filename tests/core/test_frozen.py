"""A pydantic model's frozen twin (`negt2ibench.core.frozen`): the model's fields and rules, read-only,
slotted, with the model's error messages; thawed back to an equal model.

Every kind of rule a model can have is either kept (the twin accepts and refuses exactly what the model
does, with the same values: field constraints, `Annotated` constraints and validators, field and
model validators in each mode and inherited ones, aliases, the configuration, a discriminated union)
or refused (`TwinError`: extra="allow", private attributes, model_post_init, computed fields, v1
validators, root models, a model's own core schema)."""

from __future__ import annotations

import dataclasses
import re
import sys
import warnings
from typing import Annotated, Literal

import pytest
from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasPath,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    PydanticDeprecatedSince20,
    RootModel,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    computed_field,
    field_validator,
    model_validator,
    validator,
)

from negt2ibench.core.frozen import TwinError, frozen_twin, thaw, twin_parser


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


# -- every rule of the model, kept or refused -------------------------------------------------------------


WORDED = {"unexpected_keyword_argument": "extra_forbidden"}


def verdicts(model: type[BaseModel], line: bytes) -> tuple[object, object]:
    """(what the model makes of LINE, what its twin makes of it, thawed): a value, or the errors."""

    def outcome(parse) -> object:
        try:
            return parse(line)
        except ValidationError as refused:
            # a dataclass words an extra key its own way (twin_parser quotes the model's words instead)
            return [(WORDED.get(e["type"], e["type"]), e["loc"]) for e in refused.errors()]

    twin = outcome(TypeAdapter(frozen_twin(model)).validate_json)  # the twin alone, no second opinion
    if not isinstance(twin, list):
        twin = thaw(model, twin)
    return outcome(model.model_validate_json), twin


def assert_same_verdicts(model: type[BaseModel], lines: list[bytes]) -> None:
    accepted = 0
    for line in lines:
        by_model, by_twin = verdicts(model, line)
        assert by_twin == by_model, line
        accepted += not isinstance(by_model, list)
    assert 0 < accepted < len(lines)  # the lines try both sides of every rule


class Constrained(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=0, le=10)
    share: float = Field(gt=0.0, lt=1.0, allow_inf_nan=False)
    step: int = Field(default=2, multiple_of=2)
    name: str = Field(min_length=2, max_length=5, pattern=r"^[a-z]+$")
    tags: list[str] = Field(default_factory=list, max_length=2)
    exact: int = Field(default=0, strict=True)
    label: Annotated[str, Field(min_length=1)] = "x"
    leaf: Leaf | None = None


def test_field_constraints_are_kept():
    good = b'{"count": 3, "share": 0.5, "name": "abc"}'
    assert_same_verdicts(
        Constrained,
        [
            good,
            b'{"count": -1, "share": 0.5, "name": "abc"}',
            b'{"count": 11, "share": 0.5, "name": "abc"}',
            b'{"count": 3, "share": 1.0, "name": "abc"}',
            b'{"count": 3, "share": 0.5, "name": "abc", "step": 3}',
            b'{"count": 3, "share": 0.5, "name": "a"}',
            b'{"count": 3, "share": 0.5, "name": "abcdef"}',
            b'{"count": 3, "share": 0.5, "name": "ABC"}',
            b'{"count": 3, "share": 0.5, "name": "abc", "tags": ["a", "b", "c"]}',
            b'{"count": 3, "share": 0.5, "name": "abc", "exact": "4"}',
            b'{"count": 3, "share": 0.5, "name": "abc", "label": ""}',
            b'{"count": 3, "share": 0.5, "name": "abc", "leaf": {"name": "n", "box": ["x"]}}',
        ],
    )


class Checked(BaseModel):
    model_config = ConfigDict(extra="forbid")

    low: int
    high: int
    word: str = ""
    doubled: Annotated[int, AfterValidator(lambda v: 2 * v)] = 0
    trimmed: Annotated[str, BeforeValidator(lambda v: v.strip() if isinstance(v, str) else v)] = ""

    @field_validator("word")
    @classmethod
    def _shout(cls, value: str) -> str:
        return value.upper()

    @field_validator("low", mode="before")
    @classmethod
    def _numbers_only(cls, value: object) -> object:
        if isinstance(value, str):
            raise ValueError("a number, not text")
        return value

    @field_validator("high", mode="wrap")
    @classmethod
    def _capped(cls, value: object, handler: ValidatorFunctionWrapHandler) -> int:
        return min(handler(value), 100)

    @model_validator(mode="after")
    def _ordered(self) -> Checked:
        if self.low > self.high:
            raise ValueError("low above high")
        return self

    @model_validator(mode="before")
    @classmethod
    def _not_empty(cls, data: object) -> object:
        if data == {}:
            raise ValueError("empty")
        return data


class CheckedMore(Checked):
    """Inherits every validator, adds one."""

    @field_validator("word", mode="after")
    @classmethod
    def _short(cls, value: str) -> str:
        if len(value) > 3:
            raise ValueError("at most 3 letters")
        return value


@pytest.mark.parametrize("model", [Checked, CheckedMore])
def test_validators_are_kept_in_every_mode_and_run_once(model):
    lines = [
        b'{"low": 1, "high": 500, "word": "abc", "doubled": 4, "trimmed": "  t "}',
        b'{"low": "1", "high": 5}',
        b'{"low": 9, "high": 5}',
        b"{}",
        b'{"low": 1, "high": 5, "word": "abcd"}',
    ]
    assert_same_verdicts(model, lines)
    twin = thaw(model, TypeAdapter(frozen_twin(model)).validate_json(lines[0]))
    assert (twin.high, twin.word, twin.doubled, twin.trimmed) == (100, "ABC", 8, "t")  # thawed, not validated again


class Aliased(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=True)

    model_name: str = Field(alias="modelName")
    size: int = Field(default=0, validation_alias=AliasChoices("size", "n"))
    first: str = Field(default="", validation_alias=AliasPath("names", 0))


def test_aliases_and_the_configuration_are_kept():
    assert_same_verdicts(
        Aliased,
        [
            b'{"modelName": " m ", "n": 3, "names": ["a", "b"]}',
            b'{"model_name": "m", "size": 3}',
            b'{"size": 3}',
            b'{"modelName": "m", "other": 1}',
        ],
    )
    assert thaw(Aliased, twin_parser(Aliased)(b'{"modelName": " m ", "n": 3}')) == Aliased(modelName="m", size=3)


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(default=9, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]


class Pet(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")


def test_a_discriminated_union_of_nested_models_is_kept():
    assert_same_verdicts(
        Pet, [b'{"pet": {"kind": "cat"}}', b'{"pet": {"kind": "cow"}}', b'{"pet": {"kind": "cat", "lives": 10}}']
    )
    assert type(twin_parser(Pet)(b'{"pet": {"kind": "dog"}}').pet) is frozen_twin(Dog)


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class Private(BaseModel):
    name: str
    _cache: dict = PrivateAttr(default_factory=dict)


class PostInit(BaseModel):
    name: str

    def model_post_init(self, context: object, /) -> None:
        pass


class Computed(BaseModel):
    name: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shout(self) -> str:
        return self.name.upper()


class Root(RootModel[list[int]]):
    pass


with warnings.catch_warnings():
    warnings.simplefilter("ignore", PydanticDeprecatedSince20)

    class OldStyle(BaseModel):
        name: str

        @validator("name")
        def _checked(cls, value: str) -> str:  # noqa: N805
            return value


class OwnSchema(BaseModel):
    name: str

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return handler(source)


@pytest.mark.parametrize(
    "model, why",
    [
        (Open, "extra='allow'"),
        (Private, "private attributes"),
        (PostInit, "model_post_init"),
        (Computed, "computed fields"),
        (Root, "a root model"),
        (OldStyle, "pydantic v1 validators"),
        (OwnSchema, "its own __get_pydantic_core_schema__"),
        (Tree, None),
    ],
    ids=["extra-allow", "private", "post-init", "computed", "root", "v1-validator", "own-schema", "plain"],
)
def test_a_model_with_a_rule_the_twin_cannot_keep_is_refused(model, why):
    if why is None:
        assert frozen_twin(model)
        return
    with pytest.raises(TwinError, match=f"{model.__name__} cannot have a frozen twin .*{re.escape(why)}"):
        frozen_twin(model)
    with pytest.raises(TwinError):
        twin_parser(model)


def test_thaw_takes_its_own_models_twin_only():
    with pytest.raises(TypeError, match="is not a frozen twin of Leaf"):
        thaw(Leaf, twin_parser(Tree)(LINE))
