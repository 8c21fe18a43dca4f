"""A pydantic model's frozen twin: the same fields, validated by the same rules, in a quarter of the memory.

A `BaseModel` instance carries a `__dict__` and a set of the fields that were given: a result record
with its objects and statements is about 6 KiB, and a reader that keeps 211,200 of them
(`negt2ibench report` over 11 complete runs) spends more time in the kernel handing it fresh pages
than pydantic spends validating. `frozen_twin(Model)` builds a frozen pydantic *dataclass* with
`__slots__` from `Model.model_fields`: the same names, annotations, defaults and `extra="forbid"`,
each nested model replaced by its own twin. It is validated by pydantic-core as the model is
(`twin_parser(Model)`, errors worded as the model's), compares equal field by field, and takes ≈ 1.6 KiB a record.

A twin has the model's fields and what its bases give it (pass a mixin with `__slots__ = ()` that the
model shares, for its properties), and none of pydantic's model methods (`model_dump`, ...): it is for
readers that keep many records and only read them. `thaw` turns one back into its model.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic import dataclasses as pydantic_dataclasses

M = TypeVar("M", bound=BaseModel)

_TWINS: dict[tuple[type[BaseModel], tuple[type, ...]], type] = {}


def frozen_twin(model: type[BaseModel], *, bases: tuple[type, ...] = ()) -> type:
    """The frozen, slotted pydantic dataclass with MODEL's fields (built once per model and bases;
    nested models get theirs, without bases). BASES must define `__slots__ = ()` (or the twin gets a
    `__dict__` again)."""
    if (model, bases) in _TWINS:
        return _TWINS[model, bases]
    for base in bases:
        if "__slots__" not in vars(base):
            raise TypeError(f"{base.__name__} has no __slots__: a twin built on it would carry a __dict__")
    namespace: dict[str, Any] = {"__annotations__": {}, "__module__": model.__module__, "__doc__": model.__doc__}
    for name, info in model.model_fields.items():
        namespace["__annotations__"][name] = _twin_annotation(info.annotation)
        if info.default_factory is not None:
            namespace[name] = dataclasses.field(default_factory=info.default_factory)  # type: ignore[arg-type]
        elif not info.is_required():
            namespace[name] = info.default
    plain = types.new_class(model.__name__, bases, {}, lambda body: body.update(namespace))
    config = ConfigDict(extra=model.model_config.get("extra", "ignore"), title=model.__name__)
    twin = pydantic_dataclasses.dataclass(plain, frozen=True, slots=True, kw_only=True, config=config)
    twin.__qualname__ = f"{model.__qualname__}.frozen"
    _TWINS[model, bases] = twin
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
    """The MODEL instance a twin came from (the same fields, validated again)."""
    return model.model_validate(dataclasses.asdict(twin))
