"""`negt2ibench.reward_pickle`: the reward server's pickles and JSON read as plain values. Hostile pickles are
written opcode by opcode (GLOBAL for protocols 0-3, STACK_GLOBAL for 4-5), naming every callable of the
modules a pickle would reach for; numpy's own pickles of what Flow-GRPO's client sends are read as values;
the bounds are docs/reward.md's numbers (`documented_bound`), not the code's constants."""

from __future__ import annotations

import base64
import builtins
import dataclasses
import functools
import importlib
import json
import operator
import pickle
import pickletools
import subprocess
import time

import numpy as np
import pytest
import torch

import negt2ibench.reward_pickle as reward_pickle
from negt2ibench.reward_body import compute_batch, json_value
from negt2ibench.reward_pickle import BadRequest, RequestBounds, TooLarge, plain_loads
from tests.helpers.reward_helpers import documented_bound

PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


def _text(value: str, protocol: int) -> bytes:
    """A str opcode: UNICODE (protocol 0-1, raw-unicode-escape, one line) or BINUNICODE."""
    if protocol < 2:
        return b"V" + value.encode("raw-unicode-escape") + b"\n"
    encoded = value.encode("utf-8")
    return b"X" + len(encoded).to_bytes(4, "little") + encoded


def named(module: str, name: str, protocol: int, argument: str | None = None) -> bytes:
    """A pickle of MODULE.NAME itself, or, with ARGUMENT, of MODULE.NAME(ARGUMENT) (REDUCE)."""
    header = b"\x80" + bytes([protocol]) if protocol >= 2 else b""
    if protocol < 4:
        lookup = b"c" + module.encode() + b"\n" + name.encode() + b"\n"  # GLOBAL
    else:
        lookup = _text(module, protocol) + _text(name, protocol) + b"\x93"  # STACK_GLOBAL
    call = b"" if argument is None else b"(" + _text(argument, protocol) + b"tR"  # MARK arg TUPLE REDUCE
    return header + lookup + call + b"."


def callables(module) -> list[str]:
    return sorted(name for name in dir(module) if callable(getattr(module, name, None)))


HOSTILE_MODULES = [builtins, operator, functools, importlib, subprocess, np, torch]


@pytest.mark.parametrize("module", HOSTILE_MODULES, ids=lambda module: module.__name__)
def test_a_pickle_of_any_callable_of_these_modules_is_refused_and_runs_nothing(module, tmp_path):
    # Defends the unpickler's refusal of every global: a mutant that lets `builtins` through would build
    # `builtins.exec(...)` (which returns None, a plain value) and run it; the marker shows it ran.
    marker = tmp_path / "ran"
    python = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    shell = f"touch {marker}"
    names = callables(module)
    assert len(names) > 5
    accepted = []
    for name in names:
        for protocol in PROTOCOLS:
            for argument in (None, python, shell):
                try:
                    plain_loads(named(module.__name__, name, protocol, argument))
                except BadRequest:
                    continue
                accepted.append(f"{module.__name__}.{name} protocol {protocol} {argument!r}")
    assert accepted == []
    assert not marker.exists()


def test_the_exec_pickle_is_refused_by_name():
    with pytest.raises(BadRequest, match=r"refused: the pickle names builtins\.exec"):
        plain_loads(named("builtins", "exec", 4, "print('ran')"))


@pytest.mark.parametrize("protocol", [4, 5])
def test_sets_are_refused_as_dict_keys_and_as_values(protocol):
    # FROZENSET and EMPTY_SET/ADDITEMS build sets without find_class (protocol >= 4): the walk refuses them,
    # keys included. Defends the key check: a walk that skipped keys would let the frozenset key through.
    with pytest.raises(BadRequest, match="holds a frozenset"):
        plain_loads(pickle.dumps({"images": [], "meta_datas": [{frozenset({1, 2}): "x"}]}, protocol=protocol))
    with pytest.raises(BadRequest, match="holds a frozenset"):
        plain_loads(pickle.dumps({frozenset({("tag", "colors")}): 1}, protocol=protocol))
    with pytest.raises(BadRequest, match="holds a set"):
        plain_loads(pickle.dumps({"meta_datas": [{"include": {1, 2}}]}, protocol=protocol))
    with pytest.raises(BadRequest, match="bytearray"):  # BYTEARRAY8 at protocol 5, builtins.bytearray before
        plain_loads(pickle.dumps({"images": [bytearray(b"x")]}, protocol=protocol))


def test_plain_values_of_every_protocol_come_back_equal():
    body = {
        "images": [b"\xff\xd8", b""],
        "meta_datas": [{"tag": "colors", "include": [{"class": "cup", "count": 1}], "n": (1, 2.5, None, True)}],
        "only_strict": False,
        (1, "a"): -3,
    }
    for protocol in PROTOCOLS[3:]:  # bytes need protocol 3 (before it they are _codecs.encode, read as well)
        assert plain_loads(pickle.dumps(body, protocol=protocol)) == body
    assert plain_loads(pickle.dumps([b"\x00\xff"], protocol=2)) == [b"\x00\xff"]
    with pytest.raises(BadRequest, match="not a pickle of plain types"):
        plain_loads(b"\x80\x05garbage")


# -- numpy, as Flow-GRPO's client sends it ----------------------------------------------------------------


NUMPY_VALUES = [
    np.str_("color_pos1_neg1_000"),
    np.str_("a photo of a red cup and a non-blue bowl"),
    np.int64(-3),
    np.float32(0.5),
    np.float64(2.25),
    np.bool_(True),
    np.bytes_(b"ab"),
    np.array(["a", "bc"]),
    np.array([[1, 2], [3, 4]], dtype=np.int16),
    np.asfortranarray(np.arange(6, dtype=np.uint8).reshape(2, 3)),
    np.array([1.5, 2.5, 3.5])[::2],
    np.array([{"tag": "colors", "include": []}, "x"], dtype=object),
    np.array([True, False]),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_numpy_strings_numbers_and_arrays_are_read_as_plain_values(protocol):
    for value in NUMPY_VALUES:
        read = plain_loads(pickle.dumps(value, protocol=protocol))
        assert read == value.tolist() and type(read) is type(value.tolist()), (value, read)


def test_flow_grpos_array_split_of_string_metadata_reads_as_strings():
    # flow_grpo/rewards.py:183: np.array_split over the metadata; list() of a chunk gives numpy.str_.
    metadatas = ["color_pos1_neg1_000", "a photo of a red cup", "depth_pos0_neg1_004"]
    chunk = np.array_split(metadatas, np.ceil(len(metadatas) / 64))[0]
    body = pickle.dumps({"images": [b"x"] * 3, "meta_datas": list(chunk), "only_strict": False})
    read = plain_loads(body)["meta_datas"]
    assert read == metadatas and {type(item) for item in read} == {str}


def test_numpy_1s_module_names_read_alike():
    for value in (np.str_("abc"), np.array(["a", "bc"]), np.int32(7)):
        numpy_1 = pickle.dumps(value, protocol=2).replace(b"numpy._core.", b"numpy.core.")
        assert b"numpy.core.multiarray" in numpy_1
        assert plain_loads(numpy_1) == value.tolist()


@pytest.mark.parametrize(
    "value",
    [
        np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),  # a structured dtype
        np.array(["2024-01-01"], dtype="datetime64[D]"),
        np.array([1 + 2j]),
        np.array(5),  # no dimension
        np.complex64(1j),
    ],
    ids=["structured", "datetime", "complex", "0-d", "complex scalar"],
)
def test_numpy_values_of_other_kinds_are_refused(value):
    for protocol in (2, 4, 5):
        with pytest.raises(BadRequest, match="refused"):
            plain_loads(pickle.dumps(value, protocol=protocol))


def test_numpys_names_given_other_arguments_are_refused(tmp_path):
    marker = tmp_path / "ran"
    for module, name in reward_pickle.ALLOWED:
        for protocol in (2, 4):
            for argument in (None, f"touch {marker}", "U5"):
                with pytest.raises(BadRequest, match="refused"):
                    plain_loads(named(module, name, protocol, argument))
    assert not marker.exists()


# -- bounds: linear in the pickle's size, the documented limits -------------------------------------------


def shared_nest(depth: int) -> list:
    """A list of depth DEPTH whose two items are the same list: DEPTH + 1 objects, 2**(DEPTH+1) - 1 uses."""
    nest: list = []
    for _ in range(depth):
        nest = [nest, nest]
    return nest


def test_a_depth_30_pickle_of_shared_references_is_refused_in_a_walk_linear_in_its_size(monkeypatch):
    # The pickle: ~200 bytes, 2**31 uses of 31 lists. A walk without memory visits each use (20
    # minutes at depth 30); this one visits each list once. Counted (each visit calls `_children`), and
    # timed in this thread's CPU time (not wall time: a loaded machine cannot fail it) against the issue's
    # 100 ms; it takes well under a millisecond.
    body = pickle.dumps({"images": [], "meta_datas": shared_nest(30)})
    assert len(body) < 400
    visits = []
    original = reward_pickle._children
    monkeypatch.setattr(reward_pickle, "_children", lambda item: visits.append(1) or original(item))
    started = time.thread_time()
    with pytest.raises(TooLarge, match="stands for over"):
        plain_loads(body)
    assert time.thread_time() - started < 0.1
    assert len(visits) <= 2 * (30 + 3)  # each of the ~33 containers: once to push, once to copy


def test_the_documented_values_and_depth_bounds():
    values, values_status = documented_bound("values")
    depth, depth_status = documented_bound("nesting")
    assert (values_status, depth_status) == (413, 400)
    below = shared_nest(int(np.log2(values + 1)) - 1)  # 2**k - 1 <= values uses, and nesting under depth
    assert plain_loads(pickle.dumps(below)) == below
    with pytest.raises(TooLarge):
        plain_loads(pickle.dumps(shared_nest(int(np.log2(values + 1)))))
    with pytest.raises(TooLarge, match="opcodes"):  # before the build: a flat list of that many values
        plain_loads(pickle.dumps(list(range(values + 1))))

    def nested(levels: int) -> list:
        value: list = []
        for _ in range(levels - 1):
            value = [value]
        return value

    assert plain_loads(pickle.dumps(nested(depth))) == nested(depth)
    assert json_value(str(nested(depth)).encode()) == nested(depth)
    for reader in (lambda v: plain_loads(pickle.dumps(v)), lambda v: json_value(str(v).encode())):
        with pytest.raises(BadRequest, match=f"nests deeper than {depth}"):
            reader(nested(depth + 1))
    deep_in_a_dag = nested(depth)
    with pytest.raises(BadRequest, match="nests deeper"):  # met shallow first, deep after: the depth of its uses
        plain_loads(pickle.dumps([deep_in_a_dag, [deep_in_a_dag]]))


def test_a_value_that_holds_itself_is_refused():
    loop: list = []
    loop.append(loop)
    for protocol in (2, 5):
        with pytest.raises(BadRequest, match="contains itself"):
            plain_loads(pickle.dumps({"meta_datas": loop}, protocol=protocol))


def test_json_over_the_documented_values_is_refused_before_it_is_parsed(monkeypatch):
    values, _ = documented_bound("values")
    parsed = []
    monkeypatch.setattr(reward_pickle, "plain_value", lambda *args: parsed.append(1))
    import negt2ibench.reward_body as reward_body

    monkeypatch.setattr(reward_body.json, "loads", lambda body: parsed.append(1))
    with pytest.raises(TooLarge, match="JSON body holds over"):
        json_value(b"[" + b"0," * values + b"0]")
    assert parsed == []


def test_the_default_bounds_are_the_documented_ones_and_cannot_be_changed():
    """Every bound a request is held to by default is docs/reward.md's number, each refusal answers
    the documented status, and the shared default bounds are frozen (no caller can loosen them for
    the next request)."""
    bounds = reward_pickle.DEFAULT_BOUNDS
    rows = {
        "body_bytes": "body",
        "images": "images",
        "image_bytes": "one image, encoded",
        "image_pixels": "one image, pixels",
        "request_pixels": "all images",
        "elements": "values",
        "depth": "nesting",
    }
    for field, row in rows.items():
        value, status = documented_bound(row)
        assert getattr(bounds, field) == value, field
        assert (TooLarge if status == 413 else BadRequest).status == status, field
    assert reward_pickle.RequestBounds() == bounds
    with pytest.raises(dataclasses.FrozenInstanceError):
        bounds.elements = 10**9  # type: ignore[misc]


def test_a_pickle_of_exactly_the_bound_s_opcodes_is_read_and_one_more_is_refused():
    """`values` bounds a pickle's opcodes before it is built: as many as the bound is allowed, one
    more is refused (counted exactly, not roughly)."""
    body = pickle.dumps([1, 2, 3], protocol=2)
    opcodes = sum(1 for _ in pickletools.genops(body))
    assert plain_loads(body, reward_pickle.RequestBounds(elements=opcodes)) == [1, 2, 3]
    with pytest.raises(TooLarge, match=f"over {opcodes - 1} opcodes"):
        plain_loads(body, reward_pickle.RequestBounds(elements=opcodes - 1))


def test_every_value_of_the_tree_counts_toward_the_values_bound():
    """The values a body stands for are its containers and its plain values, each counted once: a
    list of n numbers is n + 1 values, allowed at a bound of n + 1 and refused at n."""
    body = [0] * 50
    assert reward_pickle.plain_value(body, reward_pickle.RequestBounds(elements=51)) == body
    with pytest.raises(TooLarge, match="stands for over 50 values"):
        reward_pickle.plain_value(body, reward_pickle.RequestBounds(elements=50))


def test_a_body_nesting_deeper_than_the_bound_is_refused_on_the_way_down(monkeypatch):
    """Nesting is refused while the walk goes down, at the first level past the bound, before any
    copy is made (the walk does not build what it will refuse)."""
    copied = []
    real = reward_pickle._copied
    monkeypatch.setattr(reward_pickle, "_copied", lambda *args: copied.append(1) or real(*args))
    value: list = []
    for _ in range(5):  # six levels
        value = [value]
    with pytest.raises(BadRequest, match="nests deeper than 5 levels"):
        reward_pickle.plain_value(value, reward_pickle.RequestBounds(depth=5))
    assert copied == []
    assert reward_pickle.plain_value(value, reward_pickle.RequestBounds(depth=6)) == value


@pytest.mark.parametrize(
    "wrap",
    [lambda inner: [inner], lambda inner: (inner,), lambda inner: {"k": inner}],
    ids=["list", "tuple", "dict"],
)
def test_the_depth_of_a_shared_reference_is_its_deepest_use(wrap):
    """A container met first at a shallow place and used again deeper counts at its deepest use,
    through lists, tuples and dicts alike: [[x, [d]], d] with d of `depth - 1` levels nests
    `depth + 2` deep through its second use, beside a shallow sibling, and is refused; one level
    less of d is read."""
    depth = 6

    def body(levels: int):
        deep = wrap([])
        for _ in range(levels - 2):
            deep = wrap(deep)
        return [[[], wrap(deep)], deep]  # `deep` comes last: the walk meets it first, shallow

    bounds = reward_pickle.RequestBounds(depth=depth)
    with pytest.raises(BadRequest, match=f"nests deeper than {depth} levels"):
        reward_pickle.plain_value(body(depth - 1), bounds)
    assert reward_pickle.plain_value(body(depth - 3), bounds) == body(depth - 3)


def test_a_malformed_pickle_is_refused_with_the_first_line_of_its_error_or_the_errors_name():
    # the refusal is one line of a 400 body: a many-line error keeps its first, an empty one its type
    assert reward_pickle._first_line(ValueError("the first line\nthe second")) == "the first line"
    assert reward_pickle._first_line(KeyError()) == "KeyError"
    truncated = r"^not a pickle of plain types \(UnpicklingError: pickle data was truncated\)$"
    with pytest.raises(BadRequest, match=truncated):
        plain_loads(pickle.dumps([1, 2, 3])[:-3])


@pytest.mark.parametrize("size, refused", [(2_999, False), (3_000, False), (3_001, True), (3_003, True)])
def test_a_base64_image_is_refused_from_its_length_exactly_past_the_bound(size, refused):
    # base64 writes each 3 bytes as 4 characters, the last group padded: an image of the bound, 3,000
    # bytes, is 4,000 characters; 3,001 bytes are 4,004, refused before anything is decoded
    bounds = RequestBounds(image_bytes=3_000)
    text = base64.b64encode(b"\0" * size).decode()
    body = json.dumps({"prompt": ["color_pos1_neg0_000"], "image": [text]}).encode()
    if refused:
        with pytest.raises(TooLarge, match=r"image\[0\] is over"):
            compute_batch(body, ("negation",), bounds)
    else:
        assert compute_batch(body, ("negation",), bounds).images == [b"\0" * size]
