"""A pydantic model's frozen twin: the same fields, validated by the same rules, in a quarter of the memory.

A `BaseModel` instance carries a `__dict__` and a set of the fields that were given: a result record
with its objects and statements is about 6 KiB, and a reader that keeps 211,200 of them
(`negt2ibench report` over 11 complete runs) spends more time in the kernel handing it fresh pages
than pydantic spends validating. `frozen_twin(Model)` builds a frozen pydantic *dataclass* with
`__slots__` from `Model.model_fields`, each nested model replaced by its own twin. It keeps every rule
of the model that decides what is accepted and what it becomes:

- each field as the model declares it (its `FieldInfo`): default or factory, constraints (`ge`,
  `max_length`, `pattern`, `strict`, ... and those of an `Annotated` type), alias, validation alias,
  discriminator, validators given in `Annotated` (`AfterValidator` ...);
- the model's `field_validator`s and `model_validator`s (its bases' too), in every mode;
- its configuration (`extra`, `str_strip_whitespace`, `strict`, `populate_by_name`, ...).

A model with a rule a twin cannot keep is refused (`TwinError`): `extra="allow"` (a slotted twin has
nowhere to put the extra keys), private attributes or a `model_post_init` (run on a model instance
only), computed fields, validators of pydantic v1's API (`@validator`, `@root_validator`), a
`RootModel`, or a model that builds its own core schema. Serializers are not rules of what is
accepted: a twin has no `model_dump` to run them.

It is validated by pydantic-core as the model is (`twin_parser(Model)`, errors worded as the model's),
compares equal field by field, and takes ≈ 1.6 KiB a record. A twin has the model's fields and what
its bases give it (pass a mixin with `__slots__ = ()` that the model shares, for its properties), and
none of pydantic's model methods (`model_dump`, ...): it is for readers that keep many records and
only read them. `thaw` turns one back into its model, as it is (its values were validated by the
model's rules once; validators are not run again).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, RootModel, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic import dataclasses as pydantic_dataclasses

M = TypeVar("M", bound=BaseModel)

_TWINS: dict[tuple[type[BaseModel], tuple[type, ...]], type] = {}
_MODELS: dict[type, type[BaseModel]] = {}  # twin → the model it twins (`thaw`)


class TwinError(TypeError):
    """A model has a rule its frozen twin could not keep (the twin would accept what the model refuses)."""


def _refusal(model: type[BaseModel]) -> str:
    """Why MODEL cannot be twinned ("" when it can)."""
    decorators = model.__pydantic_decorators__
    kept_apart = {
        "extra='allow' (a slotted twin has nowhere to keep extra keys)": model.model_config.get("extra") == "allow",
        "private attributes or a model_post_init (run on model instances only)": bool(
            model.__private_attributes__ or model.__pydantic_post_init__
        ),
        "computed fields (give the twin a base with the property instead)": bool(decorators.computed_fields),
        "pydantic v1 validators (@validator, @root_validator: use field_validator, model_validator)": bool(
            decorators.validators or decorators.root_validators
        ),
        "a root model": issubclass(model, RootModel),
        "its own __get_pydantic_core_schema__": _own_schema(model),
    }
    return "; ".join(why for why, found in kept_apart.items() if found)


def _own_schema(model: type[BaseModel]) -> bool:
    """Whether MODEL (or a base between it and BaseModel) builds its own core schema."""
    return any(
        "__get_pydantic_core_schema__" in vars(klass) for klass in model.__mro__[: model.__mro__.index(BaseModel)]
    )


def _validators(model: type[BaseModel]) -> dict[str, Any]:
    """MODEL's field and model validators (its bases' too), each under its own name, for the twin's body."""
    decorators = model.__pydantic_decorators__
    found: dict[str, Any] = {}
    for name, field_decorator in decorators.field_validators.items():
        info = field_decorator.info
        function = getattr(field_decorator.func, "__func__", field_decorator.func)  # the function, not MODEL's method
        if info.mode == "after":  # the only mode that takes no input type
            found[name] = field_validator(*info.fields, mode="after", check_fields=info.check_fields)(function)
        else:
            found[name] = field_validator(
                *info.fields,
                mode=info.mode,
                check_fields=info.check_fields,
                json_schema_input_type=info.json_schema_input_type,
            )(function)
    for name, model_decorator in decorators.model_validators.items():
        function = getattr(model_decorator.func, "__func__", model_decorator.func)
        found[name] = model_validator(mode=model_decorator.info.mode)(function)
    return found


def frozen_twin(model: type[BaseModel], *, bases: tuple[type, ...] = ()) -> type:
    """The frozen, slotted pydantic dataclass with MODEL's fields (built once per model and bases;
    nested models get theirs, without bases). BASES must define `__slots__ = ()` (or the twin gets a
    `__dict__` again)."""
    if (model, bases) in _TWINS:
        return _TWINS[model, bases]
    for base in bases:
        if "__slots__" not in vars(base):
            raise TypeError(f"{base.__name__} has no __slots__: a twin built on it would carry a __dict__")
    refused = _refusal(model)
    if refused:
        raise TwinError(f"{model.__name__} cannot have a frozen twin that keeps its rules: it has {refused}")
    namespace: dict[str, Any] = {"__annotations__": {}, "__module__": model.__module__, "__doc__": model.__doc__}
    for name, info in model.model_fields.items():
        namespace["__annotations__"][name] = _twin_annotation(info.annotation)
        namespace[name] = copy.copy(info)  # default or factory, constraints, aliases ... as the model declares them
    namespace.update(_validators(model))
    plain = types.new_class(model.__name__, bases, {}, lambda body: body.update(namespace))
    config = ConfigDict(**model.model_config)  # extra, strictness, whitespace, aliases by name ... as the model's
    config["title"] = model.__name__
    config.pop("frozen", None)  # the twin is frozen whatever the model says
    twin = pydantic_dataclasses.dataclass(plain, frozen=True, slots=True, kw_only=True, config=config)
    twin.__qualname__ = f"{model.__qualname__}.frozen"
    _TWINS[model, bases] = twin
    _MODELS[twin] = model
    return twin


def _twin_annotation(annotation: Any) -> Any:
    """ANNOTATION with every BaseModel in it replaced by its twin (list[X], X | None, dict[str, X], ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return frozen_twin(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is None or not args or origin is typing.Literal:
        return annotation
    twinned = tuple(_twin_annotation(arg) for arg in args)
    if twinned == args:
        return annotation
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, twinned)  # X | Y | ... again
    return origin[twinned]


def twin_parser(model: type[BaseModel], *, bases: tuple[type, ...] = ()) -> Callable[[bytes | str], Any]:
    """A JSON parser into MODEL's twin (on BASES) whose errors are MODEL's own: a line the twin refuses is
    validated by MODEL again, whose `ValidationError` is raised (the twin words a few errors its own
    way, e.g. an extra key is "Unexpected keyword argument"; readers quote the model's words)."""
    adapter: TypeAdapter[Any] = TypeAdapter(frozen_twin(model, bases=bases))
    validate = adapter.validate_json

    def parse(data: bytes | str) -> Any:
        try:
            return validate(data)
        except ValidationError as refused:
            model.model_validate_json(data)  # raises in the model's words; both accept the same inputs
            raise refused from None

    return parse


def thaw(model: type[M], twin: Any) -> M:
    """The MODEL instance a twin of it came from: the same field values, its nested twins thawed too,
    built without validating again (the twin's values passed the model's rules once; a validator that
    changes a value must not change it twice)."""
    if _MODELS.get(type(twin)) is not model:
        raise TypeError(f"{type(twin).__qualname__} is not a frozen twin of {model.__name__}")
    thawed = _thawed(twin)
    assert isinstance(thawed, model)
    return thawed


def _thawed(value: Any) -> Any:
    model = _MODELS.get(type(value))
    if model is not None:
        fields = {field.name: _thawed(getattr(value, field.name)) for field in dataclasses.fields(value)}
        return model.model_construct(**fields)
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(_thawed(item) for item in value)
    if isinstance(value, dict):
        return {key: _thawed(item) for key, item in value.items()}
    return value
