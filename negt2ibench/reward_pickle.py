"""A request body read as plain values, in time and memory linear in its size: the reward server's pickles
(reward-server's protocol) and JSON.

`plain_loads` reads a pickle with an unpickler that names no callable of the sender's choosing: every
global a pickle names (`find_class`: GLOBAL, STACK_GLOBAL, INST, OBJ, the extension registry) is refused,
except the few names numpy pickles its string and number scalars and arrays under, which are answered by
this module's own constructors (never numpy's): they take validated bytes and give back `str`, `bytes`,
`int`, `float`, `bool` or lists of them, as Flow-GRPO's client sends them (`np.array_split` over its
metadata makes `numpy.str_` of every text). Before the pickle is built its opcodes are counted (a few
bytes of pickle can make a large object), and after, `plain_value` walks what was built once per object:
shared references are visited once, and the size of the tree they stand for (what any later reader walks),
the nesting depth and cycles are checked on the way, so a small pickle of many shared references is refused
in microseconds instead of being walked 2^depth times.
"""

from __future__ import annotations

import io
import math
import pickle
import pickletools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from negt2ibench.core.errors import NegT2IError

from .reward import RewardInputError

LEAF_TYPES = (str, bytes, int, float, bool, type(None))
CONTAINER_TYPES = (dict, list, tuple)
NUMPY_CORE = ("numpy._core", "numpy.core")  # numpy 2 pickles under the first, numpy 1 under the second
DTYPE_CODE = re.compile(r"(?:[biuf][1248]|[US][0-9]{1,7}|O[48])")  # bool, ints, floats, str, bytes, object


class BadRequest(RewardInputError):
    """A body refused before any model runs (400): not a pickle or JSON, a pickle that names anything but
    plain types, a batch of the wrong shape. Sending it again cannot help."""

    status = 400


class TooLarge(BadRequest):
    """A body over one of the server's bounds (413): the message names the bound."""

    status = 413


@dataclass(frozen=True)
class RequestBounds:
    """What one request may hold; docs/reward.md states the same numbers and the memory they allow.

    Attributes:
        body_bytes: the body, as received (pickle or JSON).
        images: images per request.
        image_bytes: one image, encoded.
        image_pixels: one image's width × height, read from its header before anything is decoded.
        request_pixels: the pixels of every image of a request together.
        elements: a pickle's opcodes or a JSON body's values before it is built, and the values of the
            tree it stands for after (shared references counted at each use).
        depth: how deeply lists, tuples and dicts may nest.
    """

    body_bytes: int = 64 * 2**20
    images: int = 256
    image_bytes: int = 16 * 2**20
    image_pixels: int = 2048 * 2048
    request_pixels: int = 64 * 1024 * 1024
    elements: int = 200_000
    depth: int = 32


DEFAULT_BOUNDS = RequestBounds()


def plain_loads(data: bytes, bounds: RequestBounds = DEFAULT_BOUNDS) -> Any:
    """The plain value of a pickle: dicts, lists, tuples, str, bytes, int, float, bool and None (numpy's
    string and number scalars and arrays as str, bytes, numbers and lists).

    Args:
        data: the pickle.
        bounds: its element and depth bounds.

    Returns:
        The value, built from plain types only.

    Raises:
        TooLarge: more opcodes, or a larger tree, than `bounds.elements`.
        BadRequest: not a pickle, a pickle that names anything else, nesting deeper than `bounds.depth`,
            a value that holds itself. Nothing the pickle names runs.
    """
    _count_opcodes(data, bounds.elements)
    try:
        loaded = PlainUnpickler(io.BytesIO(data), bounds).load()
    except BadRequest:
        raise
    except Exception as error:  # noqa: BLE001 - any malformed pickle is one refusal
        raise BadRequest(f"not a pickle of plain types ({type(error).__name__}: {_first_line(error)})") from None
    return plain_value(loaded, bounds)


def _count_opcodes(data: bytes, limit: int) -> None:
    """Refuse a pickle of more than LIMIT opcodes before it is built; stops counting at LIMIT + 1."""
    count = 0
    try:
        for _ in pickletools.genops(data):
            count += 1
            if count > limit:
                raise TooLarge(f"the pickle holds over {limit:,} opcodes (values); split the batch")
    except TooLarge:
        raise
    except Exception:  # noqa: BLE001, S110 - a malformed pickle: the unpickler says why, in its words
        return


def _first_line(error: BaseException) -> str:
    if isinstance(error, NegT2IError):
        return error.one_line()
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# -- after the build: one visit per object ----------------------------------------------------------


def plain_value(value: Any, bounds: RequestBounds = DEFAULT_BOUNDS) -> Any:
    """VALUE checked and copied as plain types, each object visited once (shared references included).

    Args:
        value: what an unpickler or `json.loads` built.
        bounds: the tree's element and depth bounds.

    Returns:
        A copy of plain types only (numpy's arrays, as this module's unpickler builds them, are lists).

    Raises:
        TooLarge: the tree VALUE stands for (each use of a shared reference counted) holds more than
            `bounds.elements` values.
        BadRequest: a value of another type (a set, a bytearray, a class), nesting deeper than
            `bounds.depth`, a container that holds itself.
    """
    if type(value) not in CONTAINER_TYPES and not isinstance(value, _ArrayList):
        return _leaf(value)
    done: dict[int, tuple[Any, int, int]] = {}  # id → (copy, values in its tree, its depth)
    path: set[int] = set()  # containers being visited: meeting one again is a cycle
    stack: list[tuple[Any, list[Any] | None]] = [(value, None)]  # (container, its children once listed)
    while stack:
        item, children = stack.pop()
        key = id(item)
        if children is not None:  # its children are done: copy it
            done[key] = _copied(item, children, done, bounds)
            path.discard(key)
            continue
        if key in done:
            continue
        if key in path:
            raise BadRequest("refused: the body holds a value that contains itself")
        if len(path) >= bounds.depth:
            raise BadRequest(f"refused: the body nests deeper than {bounds.depth} levels")
        path.add(key)
        children = _children(item)
        stack.append((item, children))
        stack.extend([(child, None) for child in children if _is_container(child)])
    return done[id(value)][0]


def _is_container(value: Any) -> bool:
    return type(value) in CONTAINER_TYPES or isinstance(value, _ArrayList)


def _children(item: Any) -> list[Any]:
    if type(item) is dict:
        return [*item.keys(), *item.values()]
    if isinstance(item, _ArrayList) and not item.built:
        raise BadRequest("refused: a numpy array without its data")
    return list(item)


def _leaf(value: Any) -> Any:
    if type(value) not in LEAF_TYPES:  # exact types: a set, a frozenset or a bytearray is not in the protocol
        raise BadRequest(f"refused: the body holds a {type(value).__name__}; only plain types are accepted")
    return value


def _copied(
    item: Any, children: list[Any], done: dict[int, tuple[Any, int, int]], bounds: RequestBounds
) -> tuple[Any, int, int]:
    """ITEM's plain copy, tree size and depth, from its CHILDREN's (containers: in DONE already)."""
    copies, size, deepest = [], 1, 0
    for child in children:
        if type(child) in LEAF_TYPES:
            copies.append(child)
            size += 1
            continue
        if not _is_container(child):
            _leaf(child)  # refuses it, naming its type
        copy, child_size, child_depth = done[id(child)]
        copies.append(copy)
        size, deepest = size + child_size, max(deepest, child_depth)
    if size > bounds.elements:
        raise TooLarge(f"the body stands for over {bounds.elements:,} values (shared references counted each time)")
    if deepest + 1 > bounds.depth:  # reached here through a shared reference deeper than the walk's path
        raise BadRequest(f"refused: the body nests deeper than {bounds.depth} levels")
    if type(item) is dict:
        half = len(copies) // 2
        try:
            return dict(zip(copies[:half], copies[half:], strict=True)), size, deepest + 1
        except TypeError:  # a list (or a tuple holding one) as a key
            raise BadRequest("refused: a dict key must be a plain, hashable value") from None
    return (tuple(copies) if type(item) is tuple else copies), size, deepest + 1


# -- the unpickler and numpy's names -----------------------------------------------------------------


class PlainUnpickler(pickle.Unpickler):
    """An unpickler that builds plain types only. Every global a pickle names is refused, except
    numpy's scalar and array names (`ALLOWED`), answered by this module's constructors. Persistent ids
    are refused by the base class."""

    def __init__(self, file: io.BytesIO, bounds: RequestBounds = DEFAULT_BOUNDS):
        super().__init__(file)
        self.bounds = bounds

    def find_class(self, module: str, name: str) -> Any:
        """What a global the pickle names stands for.

        Args:
            module: the global's module.
            name: its name.

        Returns:
            This module's constructor for one of numpy's scalar and array names (`ALLOWED`).

        Raises:
            BadRequest: any other name (nothing of it is imported or run).
        """
        build = ALLOWED.get((module, name))
        if build is None:
            raise BadRequest(f"refused: the pickle names {module}.{name}; only plain types are accepted")
        return _Constructor(f"{module}.{name}", partial(build, self.bounds))


class _Constructor:
    """What `find_class` gives for an allowed name: calling it runs this module's code, never the named
    callable's, and it cannot be changed (no `__dict__`; BUILD on it is refused)."""

    __slots__ = ("build", "name")

    def __init__(self, name: str, build: Callable[..., Any]):
        self.name, self.build = name, build

    def __call__(self, *args: Any) -> Any:
        try:
            return self.build(*args)
        except BadRequest:
            raise
        except Exception as error:  # noqa: BLE001 - arguments numpy would not have written
            raise BadRequest(f"refused: {self.name} with arguments it does not take ({_first_line(error)})") from None

    def __setstate__(self, state: Any) -> None:
        raise BadRequest(f"refused: the pickle changes {self.name}")


class _Dtype:
    """A numpy dtype of plain values, by its code (`U5`, `i8`, `f4`, `b1`, `O8`) and byte order."""

    __slots__ = ("code", "order")

    def __init__(self, code: str):
        self.code, self.order = code, ""

    def __setstate__(self, state: Any) -> None:
        # numpy's dtype state: (version, byte order, subarray, names, fields, item size, alignment, flags[, metadata])
        if not (isinstance(state, tuple) and len(state) in (8, 9) and state[0] in (3, 4)):
            raise BadRequest("refused: a numpy dtype of another form")
        order, subarray, names, fields = state[1:5]
        if order not in ("<", ">", "|", "=") or (subarray, names, fields) != (None, None, None):
            raise BadRequest("refused: a numpy dtype that is not of plain values")
        self.order = order

    def numpy(self) -> Any:
        import numpy as np

        if not self.order or self.code[0] == "O":
            raise BadRequest("refused: a numpy dtype without its byte order, or of objects where values are needed")
        return np.dtype(("" if self.order in "|=" else self.order) + self.code)


class _ArrayList(list):
    """`numpy._core.multiarray._reconstruct`'s array: a list that BUILD fills with the array's values."""

    __slots__ = ("bounds", "built")

    def __init__(self, bounds: RequestBounds):
        super().__init__()
        self.bounds, self.built = bounds, False

    def __setstate__(self, state: Any) -> None:
        # numpy's array state: (version, shape, dtype, Fortran order, raw bytes or a list of objects)
        if self.built or not (isinstance(state, tuple) and len(state) == 5 and state[0] == 1):
            raise BadRequest("refused: a numpy array of another form")
        _, shape, dtype, fortran, raw = state
        self.extend(_array_values(self.bounds, raw, dtype, shape, "F" if fortran is True else "C"))
        self.built = True


def _dtype(_bounds: RequestBounds, code: Any, align: Any = False, copy: Any = True) -> _Dtype:
    if not (isinstance(code, str) and DTYPE_CODE.fullmatch(code) and align is False and copy is True):
        raise BadRequest(f"refused: numpy dtype {code!r}; only strings, bytes, booleans and numbers are accepted")
    return _Dtype(code)


def _scalar(_bounds: RequestBounds, dtype: Any, data: Any) -> Any:
    if not (isinstance(dtype, _Dtype) and isinstance(data, bytes)):
        raise BadRequest("refused: a numpy scalar of another form")
    import numpy as np

    numpy_dtype = dtype.numpy()
    if len(data) != numpy_dtype.itemsize:
        raise BadRequest("refused: a numpy scalar whose bytes are not its dtype's size")
    return np.frombuffer(data, dtype=numpy_dtype)[0].item()  # str, bytes, bool, int or float


def _reconstruct(bounds: RequestBounds, array_class: Any, shape: Any, typecode: Any) -> _ArrayList:
    if not (isinstance(array_class, _Constructor) and array_class.name == "numpy.ndarray"):
        raise BadRequest("refused: numpy's _reconstruct of anything but an ndarray")
    if shape != (0,) or typecode != b"b":
        raise BadRequest("refused: numpy's _reconstruct with other arguments than numpy writes")
    return _ArrayList(bounds)


def _frombuffer(bounds: RequestBounds, buffer: Any, dtype: Any, shape: Any, order: Any) -> list[Any]:
    if not isinstance(buffer, (bytes, bytearray)) or order not in ("C", "F"):
        raise BadRequest("refused: numpy's _frombuffer of another form")
    return _array_values(bounds, bytes(buffer), dtype, shape, order)


def _ndarray(_bounds: RequestBounds, *args: Any) -> Any:
    raise BadRequest("refused: the pickle calls numpy.ndarray itself")


def _latin1(_bounds: RequestBounds, text: Any, encoding: Any) -> bytes:
    # protocol 2 writes bytes (numpy's among them) as _codecs.encode(text, "latin1")
    if not (isinstance(text, str) and encoding in ("latin1", "latin-1")):
        raise BadRequest("refused: _codecs.encode of anything but latin-1 text")
    return text.encode("latin-1")


def _array_values(bounds: RequestBounds, raw: Any, dtype: Any, shape: Any, order: str) -> list[Any]:
    """The nested lists of an array's values, checked against BOUNDS before any is built."""
    if not isinstance(dtype, _Dtype) or not (
        isinstance(shape, tuple)
        and len(shape) <= bounds.depth
        and all(type(side) is int and side >= 0 for side in shape)
    ):
        raise BadRequest("refused: a numpy array of another form")
    count = math.prod(shape)
    if not shape:
        raise BadRequest("refused: a numpy array of no dimension; send its value")
    if count > bounds.elements:
        raise TooLarge(f"a numpy array of over {bounds.elements:,} values")
    import numpy as np

    if dtype.code[0] == "O":  # an array of objects: its items are the pickle's own values, checked after
        if not (isinstance(raw, list) and len(raw) == count):
            raise BadRequest("refused: a numpy object array of another form")
        array = np.empty(count, dtype=object)
        for index, item in enumerate(raw):
            array[index] = item
    else:
        numpy_dtype = dtype.numpy()
        if not isinstance(raw, bytes) or len(raw) != count * numpy_dtype.itemsize:
            raise BadRequest("refused: a numpy array whose bytes are not its shape's")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = np.frombuffer(raw, dtype=numpy_dtype)
    layout: Literal["C", "F"] = "F" if order == "F" else "C"
    return array.reshape(shape, order=layout).tolist()


ALLOWED: dict[tuple[str, str], Callable[..., Any]] = {
    ("numpy", "dtype"): _dtype,
    ("numpy", "ndarray"): _ndarray,
    ("_codecs", "encode"): _latin1,
    **{(f"{core}.multiarray", "scalar"): _scalar for core in NUMPY_CORE},
    **{(f"{core}.multiarray", "_reconstruct"): _reconstruct for core in NUMPY_CORE},
    **{(f"{core}.numeric", "_frombuffer"): _frombuffer for core in NUMPY_CORE},
}
