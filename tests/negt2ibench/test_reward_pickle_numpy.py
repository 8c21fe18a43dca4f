"""`negt2ibench.reward_pickle`'s numpy constructors: the dtype, array, scalar, `_reconstruct`,
`_frombuffer` and `_codecs.encode` forms numpy's own pickles write are read as plain values, and any
other form of their arguments or states is refused in the unpickler's words (split from
test_reward_pickle.py, which holds the pickles, globals and bounds)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import negt2ibench.reward_pickle as reward_pickle
from negt2ibench.reward_pickle import BadRequest, plain_loads


@pytest.mark.parametrize(
    "state",
    [
        (5, "<", None, None, None, -1, -1, 0),  # another version
        (3, "<", None, None, None, -1, -1),  # another length
        [3, "<", None, None, None, -1, -1, 0],  # not a tuple
        (3, "!", None, None, None, -1, -1, 0),  # another byte order
        (3, "<", ("i8", (2,)), None, None, -1, -1, 0),  # a subarray
        (3, "<", None, ("a",), {"a": None}, -1, -1, 0),  # fields
    ],
)
def test_a_numpy_dtype_of_another_form_is_refused(state):
    """The only dtype states read are numpy's own for plain values: version 3 or 4, 8 or 9 items,
    a byte order, no subarray, names or fields."""
    with pytest.raises(BadRequest, match="numpy dtype"):
        reward_pickle._Dtype("i8").__setstate__(state)
    plain = reward_pickle._Dtype("i8")
    plain.__setstate__((3, "<", None, None, None, -1, -1, 0))
    assert plain.numpy() == np.dtype("<i8")


def test_numpy_dtype_states_of_versions_3_and_4_with_or_without_metadata_are_read():
    """numpy writes a dtype's state as version 3 (4 for some) with 8 items, or 9 with its metadata;
    each is read."""
    for state in [(3, "<", None, None, None, -1, -1, 0), (4, "|", None, None, None, -1, -1, 0)]:
        for items in (state, (*state, {"unit": "s"})):
            read = reward_pickle._Dtype("i8")
            read.__setstate__(items)
            assert read.order == state[1]


def test_a_numpy_dtype_without_its_byte_order_or_of_objects_gives_no_numpy_dtype():
    """An array's values are read with a dtype whose byte order its state gave, never of objects."""
    with pytest.raises(BadRequest, match="without its byte order"):
        reward_pickle._Dtype("i8").numpy()  # no state: no byte order
    objects = reward_pickle._Dtype("O8")
    objects.__setstate__((3, "|", None, None, None, -1, -1, 63))
    with pytest.raises(BadRequest, match="of objects"):
        objects.numpy()


@pytest.mark.parametrize("protocol", [2, 5])
def test_big_endian_numbers_are_read_in_their_own_byte_order(protocol):
    """A big-endian array (a client on another machine, or `>i4` by choice) reads as the same
    numbers: the dtype's byte order is the state's, not this machine's."""
    for value in (np.array([1, 258, -3], dtype=">i4"), np.array([0.5, 2.0], dtype=">f8")):
        assert plain_loads(pickle.dumps(value, protocol=protocol)) == value.tolist()


def test_numpy_dtype_takes_numpys_own_signature():
    """`numpy.dtype(code, align=False, copy=True)`: a pickle that names the code only is read as
    numpy reads it; align or a copy refused."""
    assert reward_pickle._dtype(reward_pickle.DEFAULT_BOUNDS, "i8").code == "i8"
    with pytest.raises(BadRequest, match="numpy dtype"):
        reward_pickle._dtype(reward_pickle.DEFAULT_BOUNDS, "i8", True)
    with pytest.raises(BadRequest, match="numpy dtype"):
        reward_pickle._dtype(reward_pickle.DEFAULT_BOUNDS, "i8", False, False)


def little_endian_int64() -> reward_pickle._Dtype:
    dtype = reward_pickle._Dtype("i8")
    dtype.__setstate__((3, "<", None, None, None, -1, -1, 0))
    return dtype


def test_a_numpy_array_is_built_once_from_numpys_own_state():
    """An array's state is numpy's version 1, five items; another version is refused, and a second
    BUILD of the same array (which would append its values again) is refused."""
    raw = np.array([1, 2], dtype="<i8").tobytes()
    array = reward_pickle._ArrayList(reward_pickle.DEFAULT_BOUNDS)
    with pytest.raises(BadRequest, match="numpy array of another form"):
        array.__setstate__((2, (2,), little_endian_int64(), False, raw))
    array.__setstate__((1, (2,), little_endian_int64(), False, raw))
    assert array == [1, 2] and array.built
    with pytest.raises(BadRequest, match="numpy array of another form"):
        array.__setstate__((1, (2,), little_endian_int64(), False, raw))
    assert array == [1, 2]


def test_numpys_scalar_and_reconstruct_take_only_the_arguments_numpy_writes():
    """`scalar(dtype, bytes)` and `_reconstruct(ndarray, (0,), b"b")` are the only calls read; any
    other argument is refused by the constructor itself, in its words (not by a numpy error)."""
    bounds = reward_pickle.DEFAULT_BOUNDS
    for dtype, data in [(little_endian_int64(), "8 chars!"), ("i8", b"8 bytes!"), (None, None)]:
        with pytest.raises(BadRequest, match="numpy scalar of another form"):
            reward_pickle._scalar(bounds, dtype, data)
    assert reward_pickle._scalar(bounds, little_endian_int64(), np.int64(7).tobytes()) == 7
    ndarray = reward_pickle._Constructor("numpy.ndarray", reward_pickle._ndarray)
    dtype = reward_pickle._Constructor("numpy.dtype", reward_pickle._dtype)
    for array_class in (dtype, "numpy.ndarray"):
        with pytest.raises(BadRequest, match="_reconstruct of anything but an ndarray"):
            reward_pickle._reconstruct(bounds, array_class, (0,), b"b")
    for shape, typecode in [((1,), b"b"), ((0,), b"B"), ((2,), b"c")]:
        with pytest.raises(BadRequest, match="_reconstruct with other arguments"):
            reward_pickle._reconstruct(bounds, ndarray, shape, typecode)
    assert reward_pickle._reconstruct(bounds, ndarray, (0,), b"b") == []


def test_frombuffer_and_codecs_encode_take_only_the_arguments_pickles_write():
    """`_frombuffer(bytes, dtype, shape, "C" or "F")` and `_codecs.encode(text, "latin1")`: a buffer
    of another type, another order or another encoding is refused."""
    bounds = reward_pickle.DEFAULT_BOUNDS
    raw = np.array([1, 2], dtype="<i8").tobytes()
    assert reward_pickle._frombuffer(bounds, raw, little_endian_int64(), (2,), "F") == [1, 2]
    for buffer, order in [(raw, "K"), (list(raw), "C"), (memoryview(raw), "C")]:
        with pytest.raises(BadRequest, match="_frombuffer of another form"):
            reward_pickle._frombuffer(bounds, buffer, little_endian_int64(), (2,), order)
    assert reward_pickle._latin1(bounds, "\xe9t\xe9", "latin1") == b"\xe9t\xe9"
    for text, encoding in [("\xe9t\xe9", "utf-8"), (b"\xe9", "latin1")]:
        with pytest.raises(BadRequest, match="latin-1 text"):
            reward_pickle._latin1(bounds, text, encoding)


def test_an_arrays_shape_is_a_tuple_of_sizes_within_the_nesting_bound():
    """An array's shape is a tuple of integers ≥ 0 (an empty array is read), of at most `depth`
    dimensions (its values nest that deep); its dtype one of numpy's plain dtypes. Anything else is
    refused as another form before its bytes are looked at."""
    bounds = reward_pickle.RequestBounds(depth=3)
    assert plain_loads(pickle.dumps(np.array([], dtype=np.int64))) == []
    assert reward_pickle._array_values(bounds, b"", little_endian_int64(), (0, 2), "C") == []
    one = np.int64(5).tobytes()
    assert reward_pickle._array_values(bounds, one, little_endian_int64(), (1, 1, 1), "C") == [[[5]]]
    for dtype, shape in [
        (little_endian_int64(), (1, 1, 1, 1)),  # deeper than the bound
        (little_endian_int64(), [1]),  # not a tuple
        (little_endian_int64(), (1, -1)),  # a negative size
        (little_endian_int64(), (1, 1.0)),  # not an integer
        ("<i8", (1,)),  # not a dtype this unpickler made
    ]:
        with pytest.raises(BadRequest, match="numpy array of another form"):
            reward_pickle._array_values(bounds, one, dtype, shape, "C")


def test_an_array_of_exactly_the_values_bound_is_read_and_one_more_is_refused():
    """The values bound counts an array's values before any is built: at the bound it is read."""
    raw = np.array([1, 2], dtype="<i8").tobytes()
    assert reward_pickle._array_values(
        reward_pickle.RequestBounds(elements=2), raw, little_endian_int64(), (2,), "C"
    ) == [1, 2]
    with pytest.raises(reward_pickle.TooLarge, match="numpy array of over 1 values"):
        reward_pickle._array_values(reward_pickle.RequestBounds(elements=1), raw, little_endian_int64(), (2,), "C")


def test_an_arrays_data_must_be_exactly_its_shapes_values():
    """An array's data is bytes of exactly its shape's size, or (an object array) a list of exactly its
    count of values: anything else is refused in the unpickler's words, never left to numpy."""
    bounds, raw = reward_pickle.DEFAULT_BOUNDS, np.array([1, 2], dtype="<i8").tobytes()
    for data in (raw[:-1], raw + b"\0", bytearray(raw), memoryview(raw)):
        with pytest.raises(BadRequest, match="bytes are not its shape's"):
            reward_pickle._array_values(bounds, data, little_endian_int64(), (2,), "C")
    objects = reward_pickle._Dtype("O8")
    objects.__setstate__((3, "|", None, None, None, -1, -1, 63))
    assert reward_pickle._array_values(bounds, ["a", "b"], objects, (2,), "C") == ["a", "b"]
    for items in (["a"], ["a", "b", "c"], ("a", "b")):
        with pytest.raises(BadRequest, match="numpy object array of another form"):
            reward_pickle._array_values(bounds, items, objects, (2,), "C")
