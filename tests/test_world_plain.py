"""Plain data stored without pickle: whatever a notebook holds of it comes back exactly, of the same types, from anyone.

Random values (hypothesis) of the plain kinds, nested, go through the real store (written,
read back with another user's key, which loads no pickle) and must come back equal and of
exactly the same types, with the same ref for equal values however they were built. A body
that no writer made is an error, never a value.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import pathlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pi_jupyter.world import Store, trust
from pi_jupyter.world.values import serialize

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**100), max_value=2**100),
    st.floats(allow_nan=False),
    st.complex_numbers(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.dates(),
    st.datetimes(timezones=st.sampled_from([None, dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30))])),
    st.timedeltas(),
    st.builds(pathlib.PurePosixPath, st.text(alphabet="abc/", max_size=8)),
)
hashable = st.one_of(scalars, st.tuples(scalars, scalars), st.frozensets(st.integers(), max_size=3))
arrays = hnp.arrays(
    dtype=st.one_of(hnp.integer_dtypes(), hnp.floating_dtypes(), hnp.boolean_dtypes(), hnp.unicode_string_dtypes(max_len=4)),
    shape=hnp.array_shapes(max_dims=3, max_side=4),
)
values = st.recursive(
    st.one_of(scalars, arrays),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=5), inner, max_size=4),
        st.dictionaries(hashable, inner, max_size=3),
        st.sets(hashable, max_size=4),
        st.builds(bytearray, st.binary(max_size=8)),
    ),
    max_leaves=12,
)


def same(a, b) -> bool:
    """Equal, and of exactly the same types all the way down (NaN equal to NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dt.datetime):
        return a == b and a.tzinfo == b.tzinfo and a.fold == b.fold
    return a == b


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The writer's and a stranger's key files; the writer's is the one in use."""
    folder = tmp_path_factory.mktemp("keys")
    mp = pytest.MonkeyPatch()
    mp.setenv(trust.ENV_KEY, str(folder / "owner"))
    yield mp, str(folder / "owner"), str(folder / "stranger")
    mp.undo()


@pytest.fixture(scope="module")
def store(tmp_path_factory, keys):
    return Store(tmp_path_factory.mktemp("plain") / ".pi-world")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values)
def test_plain_values_come_back_exactly_for_someone_else_and_keep_their_ref(store, keys, value):
    mp, owner, stranger = keys
    ser = serialize(value)
    assert ser.kind == b"d"  # no pickle: loads for anyone
    ref = store.put_value(ser)
    mp.setenv(trust.ENV_KEY, stranger)
    try:
        back = store.get_value(ref)
    finally:
        mp.setenv(trust.ENV_KEY, owner)
    assert same(value, back)
    assert serialize(back).digest == ref  # what came back is stored as the same bytes


def test_equal_values_built_differently_have_one_ref():
    a = {"tags": {"x", "y", "z"}, "grid": np.arange(6.0).reshape(2, 3), "big": {2**80, -1}}
    b = {"tags": {"z", "y", "x"}, "grid": np.arange(8.0)[:6].reshape(2, 3), "big": {-1, 2**80}}
    assert serialize(a).digest == serialize(b).digest
    fortran = serialize(np.asfortranarray(a["grid"]))  # the layout is kept (and so named apart), as pickle kept it
    assert fortran.digest != serialize(a["grid"]).digest
    frame = pd.DataFrame({"a": [1.0, 2.0], "s": ["x", "y"]})
    assert serialize(frame).digest == serialize(frame.copy()).digest
    assert serialize(frame).digest != serialize(frame.rename(columns={"a": "b"})).digest


def test_what_is_not_plain_is_pickled_whole():
    class Mine:
        pass

    assert serialize([1, 2, Mine()]).kind == b"v"
    assert serialize(pd.Series([pd.Timestamp("2024")], dtype=object)).kind == b"v"
    assert serialize(np.array([1, "a"], dtype=object)).kind == b"v"
    assert serialize({"period": pd.period_range("2024", periods=2)}).kind == b"v"
    assert serialize(np.arange(3)).kind == b"d"


def _crafted(tree, buffers=()) -> bytearray:
    """A plain body as someone might write one by hand: a MessagePack tree, and buffers each after an empty pad."""
    import struct

    import msgspec

    meta = msgspec.msgpack.encode(tree)
    parts = [p for b in buffers for p in (b"", b)]
    return bytearray(struct.pack(f"<I{len(parts) + 1}Q", len(parts), len(meta), *map(len, parts)) + meta + b"".join(parts))


E = __import__("msgspec").msgpack.Ext
ENC = __import__("msgspec").msgpack.encode


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (_crafted(E(5, ENC(["<f8", [2], 0, "C"]))), "an array without its buffer"),
        (_crafted(E(5, ENC(["<f8", [1000], 0, "C"])), [b"x" * 16]), "an array whose shape does not match its bytes"),
        (_crafted(E(5, ENC(["|O", [1], 0, "C"])), [b"x" * 8]), "dtype |O is not a plain one"),
        (_crafted(E(5, ENC(["i4,i4", [1], 0, "C"])), [b"x" * 8]), "dtype i4,i4 is not a plain one"),
        (_crafted([E(1, b"zz"), 1]), "an unknown marker"),
        (_crafted(E(6, ENC(["<f8", b"abc"]))), "a scalar of the wrong size"),
        (_crafted([E(1, b"F"), 1, 2, 3, 4]), "a frame whose columns do not match their names"),
        (_crafted([E(1, b"d"), 1]), "a dict with a key and no value"),
        (_crafted(E(9, ENC(["posix?", "x"]))), "an unknown kind of path"),
        (bytearray(b"\x05\x00\x00\x00" + bytes(2)), "a body too short for its header"),
        (bytearray(b"\xff\xff\xff\xff" + bytes(60)), "a body that claims more buffers than it holds"),
    ],
)
def test_a_crafted_plain_body_is_an_error_never_a_value(body, why):
    from pi_jupyter.world.values import deserialize

    with pytest.raises(ValueError, match=__import__("re").escape(why)):
        deserialize(body, b"d")


def test_an_object_column_of_text_and_nans_and_a_frame_of_every_plain_kind_round_trip(store):
    frame = pd.DataFrame(
        {
            "f": [1.5, np.nan, 3.0],
            "i": np.array([1, 2, 3], dtype="int8"),
            "o": pd.Series(["a", None, np.nan], dtype=object),
            "s": pd.array(["x", None, "z"], dtype="string"),
            "c": pd.Categorical(["lo", "hi", "lo"], categories=["lo", "hi"], ordered=True),
            "n": pd.array([1, None, 3], dtype="Int64"),
            "b": pd.array([True, None, False], dtype="boolean"),
            "t": pd.date_range("2024-03-30", periods=3, tz="Europe/Paris"),
            "d": pd.to_timedelta([1, 2, 3], unit="s"),
        },
        index=pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1)], names=["k", "j"]),
    )
    frame.attrs["source"] = "lab"
    ref = store.put_value(serialize(frame))
    back = store.get_value(ref)
    assert back.equals(frame) and back.dtypes.equals(frame.dtypes) and back.index.names == ["k", "j"] and back.attrs == {"source": "lab"}
    assert serialize(decimal.Decimal("1.10")).kind == b"d"
