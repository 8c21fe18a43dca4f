"""The one registry: names → objects, where an object may be a lazy ``"package.module:Name"`` target.

Every registry of the project is one of these: the text-to-image models (`generation.registry`),
the VLM judges and their adapters (`judges.registry`), the sources of the evaluator's weights
(`evaluator.models.weights`) and the agreement report's probes (`validation.probes`).

    ADAPTERS = Registry("judge family", {"qwen_vl": "judges.transformers_judge:TransformersJudge"})
    ADAPTERS["qwen_vl"]            # imported now, kept for later look-ups

    PROBES = Registry("probe", kind=Probe)
    @PROBES.register("negation")   # eager, as a decorator
    def negation(...): ...

A lazy target is imported on its first look-up, so listing names or reading `--help` imports no
backend. An unknown name raises `UnknownNameError` (a `UserError` and a `KeyError`) with the
closest names ("Did you mean: ...?") and the full list, one line. `import_target` is the one
resolver of ``"module:Name"`` strings (and of dotted class paths recorded in data, such as a
generator's ``"diffusers.StableDiffusionPipeline"``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, overload

from .errors import UserError

T = TypeVar("T")


class UnknownNameError(UserError, KeyError):
    """A name a registry does not hold; the message lists the near matches and every name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown name"


def import_target(target: str) -> Any:
    """The object a target names: ``"package.module:Name"``, or a dotted path ``"package.module.Name"``
    whose last part is the name (the form recorded in data, e.g. a pipeline class)."""
    module_name, colon, attribute = target.partition(":")
    if not colon:
        module_name, _, attribute = target.rpartition(".")
    if not module_name or not attribute or ":" in attribute:
        raise ValueError(f"not an import target ('module:Name' or 'module.Name'): {target!r}")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ImportError(f"{target!r}: module {module_name!r} has no attribute {attribute!r}") from None


class Registry(Mapping[str, T], Generic[T]):
    """Names → objects, lazy ``"module:Name"`` targets imported on first use (a read-only mapping).

    Args:
        what: what a name stands for, in messages ("judge", "model key").
        entries: the first entries, name → object or target.
        hint: appended to the unknown-name message (how to use something unregistered).
        exit_code: the exit code of that message in the CLI (1, or 2 where the name is an option value).
        kind: when given, an entry must be an instance of it (checked when a lazy target is imported).
    """

    def __init__(
        self,
        what: str,
        entries: Mapping[str, T | str] | None = None,
        *,
        hint: str = "",
        exit_code: int = 1,
        kind: type | None = None,
    ):
        self.what, self.hint, self.exit_code, self.kind = what, hint, exit_code, kind
        self._entries: dict[str, T | str] = {}
        for name, entry in (entries or {}).items():
            self.register(name, entry)

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...
    @overload
    def register(self, name: str, entry: T | str) -> T | str: ...

    def register(self, name: str, entry: Any = None) -> Any:
        """Add NAME: an object or a ``"module:Name"`` target, or (without ENTRY) a decorator that adds
        what it decorates. A name registered twice is a ValueError (a silent overwrite would change
        a result behind its owner's back)."""
        if entry is None:

            def decorate(value: T) -> T:
                self.register(name, value)
                return value

            return decorate
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        if isinstance(entry, str) and ":" not in entry:
            raise ValueError(f"a lazy {self.what} must be a 'module:Name' target, got {entry!r}")
        if self.kind is not None and not isinstance(entry, (str, self.kind)):
            raise TypeError(f"{self.what} {name!r} is a {type(entry).__name__}, not a {self.kind.__name__}")
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove NAME if it is there (tests register temporary entries)."""
        self._entries.pop(name, None)

    def unknown(self, name: object) -> UnknownNameError:
        """The error for a name that is not here: near matches, every name, then the hint."""
        close = difflib.get_close_matches(str(name), list(self._entries), n=3, cutoff=0.5)
        suggestion = f" Did you mean: {', '.join(close)}?" if close else ""
        available = ", ".join(self._entries) or "none"
        message = f"unknown {self.what} {name!r}.{suggestion} Available: {available}.{self.hint}"
        return UnknownNameError(message, exit_code=self.exit_code)

    def __getitem__(self, name: str) -> T:
        try:
            entry = self._entries[name]
        except (KeyError, TypeError):
            raise self.unknown(name) from None
        if isinstance(entry, str):
            entry = import_target(entry)
            if self.kind is not None and not isinstance(entry, self.kind):
                target, found = self._entries[name], type(entry).__name__
                raise TypeError(f"{self.what} target {target!r} is a {found}, not a {self.kind.__name__}")
            self._entries[name] = entry
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def target(self, name: str) -> str:
        """Where NAME's entry comes from, as ``"module:Name"``, without importing a lazy one."""
        if name not in self._entries:
            raise self.unknown(name)
        entry = self._entries[name]
        name_of = getattr(entry, "__qualname__", type(entry).__qualname__)
        return entry if isinstance(entry, str) else f"{entry.__module__}:{name_of}"
