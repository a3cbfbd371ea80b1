"""Plain data in a form that cannot run code when it is read back: no pickle, no import, no call of a stored name.

What a researcher keeps and exchanges most is stored this way, so a colleague's or a student's
branch checks out without any trust step (see :mod:`.trust`):

* Python's own values: ``None``, ``bool``, ``int`` (any size), ``float``, ``complex``, ``str``,
  ``bytes``, ``bytearray``, ``list``, ``tuple``, ``dict``, ``set``, ``frozenset``, ``range``,
  ``decimal.Decimal``, ``datetime`` (``date``, ``time``, ``timedelta``, and ``datetime`` naive or
  at a fixed offset) and ``pathlib`` paths, nested as deep as they go;
* NumPy arrays and scalars of plain dtypes (booleans, integers, floats, complex numbers, byte
  and unicode strings, ``datetime64``, ``timedelta64``);
* pandas ``DataFrame``, ``Series`` and indexes (range, plain, datetime, categorical, multi) whose
  columns are of plain NumPy dtypes, text (pandas' string dtype, or object columns of plain
  values), categories, nullable integers, floats and booleans, or time-zone-aware datetimes.

The value becomes a MessagePack tree (strings stay readable, so the secret scan reads them as
it read the pickle stream); arrays travel beside it as raw buffers, never copied into the tree,
and come back as views of the bytes read (writable, aligned to 64 bytes within the body). A
container of Python types is a list with a marker first (``[<tuple>, 1, 2]``), a marker no
stored value can hold, since only exact types are encoded: subclasses, objects of other types
anywhere inside, or anything the reader could not rebuild exactly make the whole value
:class:`NotPlain`, and it is pickled instead. The encoding of equal values is the same bytes
(set members are sorted by their encoding), so the content hash still tells "unchanged".
Reading checks every shape, dtype and length against the buffers it has, so a crafted object
is an error, never a wrong-sized view or a call.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import importlib.util
import math
import pathlib
from typing import Any

import msgspec

Ext = msgspec.msgpack.Ext

_MARK, _INT, _COMPLEX, _BYTEARRAY, _ARRAY, _SCALAR, _TIME, _DECIMAL, _PATH = range(1, 10)
_PLAIN_KINDS = frozenset("biufcSUMm")
_LEAVES = frozenset({str, int, float, bool, type(None), bytes})
_SCALARS = frozenset({str, float, bool, type(None), bytes})
"""Values written as they are whatever the mode (an int may be beyond 64 bits)."""
_ALIGN = 64


class NotPlain(Exception):
    """The value holds something the plain formats cannot keep exactly."""


class _Mark:
    """A container's kind, first in its list: no stored value can be one."""

    __slots__ = ("tag",)

    def __init__(self, tag: str) -> None:
        self.tag = tag


_MARKS = {tag: Ext(_MARK, tag.encode()) for tag in ("l", "t", "s", "f", "d", "g", "o", "c", "S", "m", "z", "F", "R", "I", "r", "M")}
_MARK_IDS = frozenset(id(m) for m in _MARKS.values())
_MARK_OF = {tag.encode(): _Mark(tag) for tag in _MARKS}


class Encoded:
    """A value as a MessagePack tree (``meta``) and the raw buffers of its arrays, each with what kind of text it may hold."""

    def __init__(self, meta: bytes, buffers: list[memoryview], texts: list[str | None]) -> None:
        self.meta = meta
        self.buffers = buffers
        self.texts = texts
        """Per buffer: ``"S"`` (bytes: a key's bytes, byte strings), ``"U"`` (UTF-32 text), ``None`` (numbers)."""


def encode(value: Any) -> Encoded:
    """The plain form of ``value``; :class:`NotPlain` when it has none."""
    enc = _Encoder(fast=True)
    try:
        tree = enc.tree(value)
        meta = msgspec.msgpack.encode(tree)
    except OverflowError:  # an int beyond 64 bits inside a container taken whole: walk it item by item
        enc = _Encoder(fast=False)
        tree = enc.tree(value)
        meta = _encode(tree)
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError) as exc:  # a lone surrogate, an odd key, too deep
        raise NotPlain(str(exc)) from None
    return Encoded(meta, enc.buffers, enc.texts)


def _encode(tree: Any) -> bytes:
    try:
        return msgspec.msgpack.encode(tree)
    except (OverflowError, UnicodeEncodeError, TypeError, ValueError, RecursionError) as exc:
        raise NotPlain(str(exc)) from None


def layout(encoded: Encoded, header_size: int) -> list[memoryview | bytes]:
    """The buffers as the body holds them: each real one after a pad that aligns it (``header_size``: what comes before the first)."""
    out: list[memoryview | bytes] = []
    offset = header_size + len(encoded.meta)
    for buf in encoded.buffers:
        pad = -offset % _ALIGN
        out.append(bytes(pad))
        out.append(buf)
        offset += pad + buf.nbytes
    return out


def decode(meta: memoryview | bytes, buffers: list[memoryview]) -> Any:
    """The value of a plain body: ``meta`` and its buffers (pads included, as :func:`layout` made them)."""
    real = buffers[1::2]
    tree = msgspec.msgpack.decode(meta, ext_hook=lambda code, data: _ext(code, data, real))
    return _fix(tree)


# ------------------------------------------------------------------ writing


def _marked(x: Any) -> bool:
    """A list the reader must build (a tuple, a set, a frame...), not take as it is."""
    return type(x) is list and bool(x) and id(x[0]) in _MARK_IDS


class _Encoder:
    """Turns a value into the tree: plain lists and maps of values the reader takes as they are, marked lists for the rest.

    A list or map is written as it is only when nothing in it must be built on reading, so
    the reader walks only marked lists, never a long list of numbers or strings.
    """

    def seq(self, items: list[Any]) -> list[Any]:
        """A list as written: marked when one of its items must be built."""
        return [_MARKS["l"], *items] if any(_marked(x) for x in items) else items

    def __init__(self, *, fast: bool) -> None:
        self.fast = fast
        self.buffers: list[memoryview] = []
        self.texts: list[str | None] = []
        self.seen: set[int] = set()

    def own(self, v: Any) -> None:
        """A mutable object met once: met twice, the value shares it, which only a pickle keeps (``a = [l, l]``)."""
        key = id(v)
        if key in self.seen:
            raise NotPlain("an object shared inside the value")
        self.seen.add(key)

    def tree(self, v: Any) -> Any:
        t = type(v)
        if t is str or t is float or t is bool or v is None or t is bytes:
            return v
        if t is int:
            if self.fast or -(2**63) <= v < 2**64:
                return v
            n = (v.bit_length() + 8) // 8
            return Ext(_INT, v.to_bytes(n, "little", signed=True))
        if t is list:
            self.own(v)
            if self.fast and _LEAVES.issuperset(map(type, v)):
                return v
            return self.seq([x if type(x) in _SCALARS else self.tree(x) for x in v])
        if t is dict:
            self.own(v)
            if all(type(k) is str for k in v):
                if self.fast and _LEAVES.issuperset(map(type, v.values())):
                    return v
                values, marked, fast = {}, False, self.fast
                for k, x in v.items():
                    tx = type(x)
                    if tx in _SCALARS or (fast and tx is list and _LEAVES.issuperset(map(type, x))):
                        if tx is list:
                            self.own(x)
                        values[k] = x  # the common case inline: a call per item is most of the time
                        continue
                    c = values[k] = self.tree(x)
                    marked = marked or (type(c) is list and bool(c) and id(c[0]) in _MARK_IDS)
                if not marked:
                    return values  # a map the reader takes as it is
                return [_MARKS["d"], *(p for k, c in values.items() for p in (k, c))]  # each value walked once
            out = [_MARKS["d"]]
            for k, x in v.items():
                out.append(self.tree(k))
                out.append(self.tree(x))
            return out
        if t is tuple:
            return [_MARKS["t"], *(v if self.fast and _LEAVES.issuperset(map(type, v)) else (self.tree(x) for x in v))]
        if t is set or t is frozenset:
            if t is set:
                self.own(v)
            strict = _Encoder(fast=False)  # each member on its own (an int beyond 64 bits is an extension there)
            members = sorted(_encode(strict.tree(x)) for x in v)
            return [_MARKS["s" if t is set else "f"], *(msgspec.Raw(m) for m in members)]
        if t is complex:
            import struct

            return Ext(_COMPLEX, struct.pack("<dd", v.real, v.imag))
        if t is bytearray:
            self.own(v)
            return Ext(_BYTEARRAY, bytes(v))
        if t is range:
            return [_MARKS["g"], v.start, v.stop, v.step]
        if t is decimal.Decimal:
            return Ext(_DECIMAL, str(v).encode())
        if t in (_dt.datetime, _dt.date, _dt.time, _dt.timedelta):
            return Ext(_TIME, _encode(_time(v)))
        if t in _PATHS:
            return Ext(_PATH, _encode([_PATHS[t], str(v)]))
        module = t.__module__ or ""
        if module == "numpy":
            if type(v).__name__ == "ndarray":
                self.own(v)
            return self.numpy(v)
        if module == "pandas" or module.startswith("pandas."):
            self.own(v)
            return self.pandas(v)
        raise NotPlain(t.__qualname__)

    # -------------------------------------------------------------- numpy
    def numpy(self, v: Any) -> Any:
        import numpy as np

        if type(v) is np.ndarray:
            return self.array(v)
        if isinstance(v, np.generic) and type(v) is v.dtype.type and _plain_dtype(v.dtype):
            return Ext(_SCALAR, _encode([_descr(v.dtype), v.tobytes()]))
        raise NotPlain(type(v).__qualname__)

    def array(self, a: Any) -> Ext:
        import numpy as np

        if type(a) is not np.ndarray or not _plain_dtype(a.dtype):
            raise NotPlain(f"array of {a.dtype}")
        order = "C"
        if a.flags.c_contiguous:
            flat = a
        elif a.flags.f_contiguous:
            flat, order = a.T, "F"
        else:
            flat = np.ascontiguousarray(a)
        raw = flat.reshape(-1).view(np.uint8) if flat.size else np.empty(0, np.uint8)
        self.buffers.append(raw.data)
        kind = a.dtype.kind
        self.texts.append("U" if kind == "U" else "S" if kind == "S" or (kind in "iu" and a.dtype.itemsize == 1) else None)
        return Ext(_ARRAY, _encode([_descr(a.dtype), list(a.shape), len(self.buffers) - 1, order]))

    # -------------------------------------------------------------- pandas
    def pandas(self, v: Any) -> Any:
        import pandas as pd

        t = type(v)
        if t is pd.DataFrame:
            if v.flags.allows_duplicate_labels is False:
                raise NotPlain("a frame that refuses duplicate labels")
            cols = self.seq([self.column(ser) for _label, ser in v.items()])
            return [_MARKS["F"], self.index(v.index), self.index(v.columns), cols, self.tree(dict(v.attrs))]
        if t is pd.Series:
            if v.flags.allows_duplicate_labels is False:
                raise NotPlain("a series that refuses duplicate labels")
            return [_MARKS["R"], self.column(v), self.index(v.index), self.tree(v.name), self.tree(dict(v.attrs))]
        if isinstance(v, pd.Index):
            return self.index(v)
        raise NotPlain(t.__qualname__)

    def index(self, idx: Any) -> Any:
        import pandas as pd

        t = type(idx)
        if t is pd.RangeIndex:
            return [_MARKS["r"], idx.start, idx.stop, idx.step, self.tree(idx.name)]
        if t is pd.MultiIndex:
            levels = self.seq([self.index(level) for level in idx.levels])
            codes = [self.array(c) for c in idx.codes]
            return [_MARKS["M"], levels, codes, self.tree(list(idx.names))]
        if t in (pd.Index, pd.DatetimeIndex, pd.TimedeltaIndex, pd.CategoricalIndex):
            freq = getattr(idx, "freqstr", None) if t is pd.DatetimeIndex else None
            return [_MARKS["I"], self.column(idx), self.tree(idx.name), freq]
        raise NotPlain(t.__qualname__)

    def column(self, col: Any) -> Any:
        """The values of a Series or an Index."""
        import numpy as np
        import pandas as pd

        dtype = col.dtype
        if isinstance(dtype, np.dtype):
            values = col.to_numpy()
            if dtype.kind == "O":
                return [_MARKS["o"], self.tree(values.tolist())]
            return self.array(values)
        arr = col.array
        if isinstance(dtype, pd.CategoricalDtype):
            return [_MARKS["c"], self.array(np.asarray(arr.codes)), self.index(arr.categories), bool(dtype.ordered)]
        if isinstance(dtype, pd.StringDtype):
            na = "NA" if dtype.na_value is pd.NA else "nan"
            return [_MARKS["S"], str(dtype.storage), na, col.to_numpy(dtype=object, na_value=None).tolist()]
        if isinstance(arr, (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)):
            fill = False if dtype.kind == "b" else 0
            data = arr.to_numpy(dtype=dtype.numpy_dtype, na_value=fill)
            return [_MARKS["m"], dtype.name, self.array(data), self.array(np.asarray(arr.isna()))]
        if isinstance(dtype, pd.DatetimeTZDtype):
            tz = str(dtype.tz)
            if pd.DatetimeTZDtype(unit=dtype.unit, tz=tz) != dtype:
                raise NotPlain(f"time zone {tz}")
            utc = np.asarray(pd.Series(arr).dt.tz_convert("UTC").dt.tz_localize(None))
            return [_MARKS["z"], tz, self.array(utc)]
        raise NotPlain(f"column of {dtype}")


def _plain_dtype(dtype: Any) -> bool:
    return dtype.kind in _PLAIN_KINDS and not dtype.hasobject and dtype.fields is None and dtype.subdtype is None


def _descr(dtype: Any) -> str:
    return str(dtype.str)


_PATHS: dict[type, str] = {
    type(pathlib.Path()): "path",
    pathlib.PurePosixPath: "posix",
    pathlib.PureWindowsPath: "windows",
}


def _time(v: Any) -> list[Any]:
    if type(v) is _dt.timedelta:
        return ["td", v.days, v.seconds, v.microseconds]
    if type(v) is _dt.date:
        return ["d", v.year, v.month, v.day]
    offset = None
    if v.tzinfo is not None:
        tz = v.tzinfo
        if type(tz) is not _dt.timezone:
            raise NotPlain(f"time zone {type(tz).__qualname__}")
        delta = tz.utcoffset(None)
        if tz != _dt.timezone(delta) or tz.tzname(None) != _dt.timezone(delta).tzname(None):
            raise NotPlain("a named time zone")
        offset = [delta.days, delta.seconds, delta.microseconds]
    if type(v) is _dt.time:
        return ["t", v.hour, v.minute, v.second, v.microsecond, v.fold, offset]
    return ["dt", v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.fold, offset]


# ------------------------------------------------------------------ reading


class Malformed(ValueError):
    """A plain body that no writer of ours made."""


def _ext(code: int, data: memoryview, buffers: list[memoryview]) -> Any:
    if code == _MARK:
        mark = _MARK_OF.get(bytes(data))
        if mark is None:
            raise Malformed("an unknown marker")
        return mark
    if code == _INT:
        return int.from_bytes(data, "little", signed=True)
    if code == _COMPLEX:
        import struct

        re, im = struct.unpack("<dd", data)
        return complex(re, im)
    if code == _BYTEARRAY:
        return bytearray(data)
    if code == _ARRAY:
        return _array(msgspec.msgpack.decode(data), buffers)
    if code == _SCALAR:
        import numpy as np

        descr, raw = msgspec.msgpack.decode(data)
        dtype = _dtype(descr)
        if not isinstance(raw, bytes) or len(raw) != dtype.itemsize:
            raise Malformed("a scalar of the wrong size")
        return np.frombuffer(raw, dtype)[0]
    if code == _TIME:
        return _time_of(msgspec.msgpack.decode(data))
    if code == _DECIMAL:
        return decimal.Decimal(bytes(data).decode("ascii"))
    if code == _PATH:
        kind, text = msgspec.msgpack.decode(data)
        cls = {"path": pathlib.Path, "posix": pathlib.PurePosixPath, "windows": pathlib.PureWindowsPath}.get(kind)
        if cls is None or not isinstance(text, str):
            raise Malformed("an unknown kind of path")
        return cls(text)
    raise Malformed(f"an unknown extension {code}")


def _dtype(descr: Any) -> Any:
    import numpy as np

    if not isinstance(descr, str) or len(descr) > 32:
        raise Malformed("a dtype that is not a short string")
    dtype = np.dtype(descr)
    if not _plain_dtype(dtype):
        raise Malformed(f"dtype {descr} is not a plain one")
    return dtype


def _array(spec: Any, buffers: list[memoryview]) -> Any:
    import numpy as np

    descr, shape, index, order = spec
    dtype = _dtype(descr)
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape) or len(shape) > 64:
        raise Malformed("an array of an impossible shape")
    if type(index) is not int or not 0 <= index < len(buffers) or order not in ("C", "F"):
        raise Malformed("an array without its buffer")
    buf = buffers[index]
    if math.prod(shape) * dtype.itemsize != buf.nbytes:
        raise Malformed("an array whose shape does not match its bytes")
    flat = np.frombuffer(buf, dtype=dtype) if buf.nbytes else np.empty(0, dtype)
    if order == "F":
        return flat.reshape(shape[::-1]).T
    return flat.reshape(shape)


def _time_of(spec: Any) -> Any:
    kind, *rest = spec
    if kind == "td":
        return _dt.timedelta(days=rest[0], seconds=rest[1], microseconds=rest[2])
    if kind == "d":
        return _dt.date(*rest)
    *fields, fold, offset = rest
    tz = None
    if offset is not None:
        tz = _dt.timezone(_dt.timedelta(days=offset[0], seconds=offset[1], microseconds=offset[2]))
    if kind == "t":
        hour, minute, second, micro = fields
        return _dt.time(hour, minute, second, micro, tzinfo=tz, fold=fold)
    if kind == "dt":
        year, month, day, hour, minute, second, micro = fields
        return _dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz, fold=fold)
    raise Malformed("an unknown kind of time")


def _fix(x: Any) -> Any:
    """The value of a tree node: a marked list is built; a plain list or map is taken as it is (nothing in it needs building)."""
    if type(x) is list and x and type(x[0]) is _Mark:
        return _build(x[0].tag, [_fix(i) if type(i) is list else i for i in x[1:]])
    if type(x) is _Mark:
        raise Malformed("a marker out of place")
    return x


def _build(tag: str, items: list[Any]) -> Any:
    if any(type(i) is _Mark for i in items):
        raise Malformed("a marker out of place")
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    if tag == "s":
        return set(items)
    if tag == "f":
        return frozenset(items)
    if tag == "d":
        if len(items) % 2:
            raise Malformed("a dict with a key and no value")
        return dict(zip(items[0::2], items[1::2], strict=True))
    if tag == "g":
        if len(items) != 3 or not all(type(i) is int for i in items):
            raise Malformed("a range that is not three ints")
        return range(*items)
    return _build_pandas(tag, items)


def _build_pandas(tag: str, items: list[Any]) -> Any:
    import numpy as np

    if tag == "o":
        (values,) = items
        if type(values) is not list:
            raise Malformed("an object column that is not a list")
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    import pandas as pd

    if tag == "c":
        codes, categories, ordered = items
        return pd.Categorical.from_codes(_ndarray(codes), categories=categories, ordered=bool(ordered))
    if tag == "S":
        storage, na, values = items
        if storage not in ("python", "pyarrow") or na not in ("nan", "NA") or type(values) is not list:
            raise Malformed("an odd string column")
        if storage == "pyarrow" and importlib.util.find_spec("pyarrow") is None:
            storage = "python"  # the same text, kept another way
        dtype = pd.StringDtype(storage=storage, na_value=pd.NA if na == "NA" else np.nan)
        return pd.array(values, dtype=dtype)
    if tag == "m":
        name, data, mask = items
        data, mask = _ndarray(data), _ndarray(mask)
        if mask.dtype != np.bool_ or mask.shape != data.shape or data.ndim != 1:
            raise Malformed("a nullable column without its mask")
        kinds = {"i": pd.arrays.IntegerArray, "u": pd.arrays.IntegerArray, "f": pd.arrays.FloatingArray, "b": pd.arrays.BooleanArray}
        cls = kinds.get(data.dtype.kind)
        if cls is None or pd.api.types.pandas_dtype(name).numpy_dtype != data.dtype:
            raise Malformed("a nullable column of an odd dtype")
        return cls(data, mask)
    if tag == "z":
        tz, utc = items
        if not isinstance(tz, str) or _ndarray(utc).dtype.kind != "M":
            raise Malformed("an odd time-zone column")
        return pd.Series(utc).dt.tz_localize("UTC").dt.tz_convert(tz).array
    if tag == "r":
        start, stop, step, name = items
        if not all(type(i) is int for i in (start, stop, step)):
            raise Malformed("a range index that is not three ints")
        return pd.RangeIndex(start, stop, step, name=name)
    if tag == "M":
        levels, codes, names = items
        return pd.MultiIndex(levels=levels, codes=[_ndarray(c) for c in codes], names=names, verify_integrity=True)
    if tag == "I":
        values, name, freq = items
        if isinstance(values, np.ndarray) and values.dtype == object:
            return pd.Index(values, dtype=object, name=name, copy=False)
        if freq is not None:
            if not isinstance(freq, str):
                raise Malformed("an odd frequency")
            return pd.DatetimeIndex(values, freq=freq, name=name)
        return pd.Index(values, name=name, copy=False)
    if tag == "F":
        index, columns, cols, attrs = items
        if not isinstance(index, pd.Index) or not isinstance(columns, pd.Index) or type(cols) is not list or len(cols) != len(columns):
            raise Malformed("a frame whose columns do not match their names")
        frame = pd.DataFrame(dict(enumerate(cols)), index=index, copy=False)
        frame.columns = columns
        if attrs:
            frame.attrs = attrs
        return frame
    if tag == "R":
        values, index, name, attrs = items
        if not isinstance(index, pd.Index):
            raise Malformed("a series without its index")
        series = pd.Series(values, index=index, name=name, copy=False)
        if attrs:
            series.attrs = attrs
        return series
    raise Malformed(f"an unknown marker {tag}")


def _ndarray(x: Any) -> Any:
    import numpy as np

    if type(x) is not np.ndarray:
        raise Malformed("an array where one was expected")
    return x
