"""Time-series bucket documents, whatever their version, for the tests that read
system.buckets.X.

A bucket is version 1 (each `data.<field>` an object {"0": v, "1": v, ...}, the row index as the
field name, missing cells left out) or compressed: version 2 (rows sorted by time) or version 3
(rows in any order), with `control.count` rows and each `data.<field>` a BSONColumn (BinData
subtype 7) of exactly that many cells (spec timeseries.md §3.2, §3.5). The server writes every
bucket compressed from its first write (version 2 while its rows come in time order, else 3);
with hourglassTimeseriesAlwaysCompressBuckets=false it writes version 1, and then, with
hourglassTimeseriesCompressClosedBuckets, rewrites closed buckets as version 2.

Reading:
  bucket_count(bucket)        its rows (control.count, checked against the time column, or the
                              length of a version-1 time column)
  columns(bucket)             {field: [cell, ...]}: every column as a list of `count` cells in
                              stored row order, MISSING where a row has no such field
  rows(bucket)                the rows as documents (data fields only, in column order)
  decompress(bucket)          the bucket as version 1 (same _id, control.min/max, meta; rows in
                              stored order), whatever version it is
  decode_column(binary)       a BSONColumn's cells
Writing (for tests that insert compressed buckets directly, as restoring a MongoDB dump does):
  encode_column(cells)        a BSONColumn (a small encoder: literals, deltas of integers,
                              doubles' bits and dates, skips)
  compress(bucket, version)   the version-2 or version-3 form of any bucket

The decoder reads everything MongoDB's BSONColumn format allows (literals of every type,
Simple-8b blocks at every double scale, extended selectors 7 and 8, RLE, skips, 128-bit deltas of
strings, BinData and Decimal128, delta of delta for dates, timestamps and ObjectIds, interleaved
objects and arrays 0xF0-0xF2), written here from the format's description, not from the server's
code, so that the tests check the server's buckets against an independent reading. Corrupt input
raises ColumnError.
"""

import datetime
import struct

import bson
from bson.binary import Binary
from bson.int64 import Int64

MISSING = object()  # a cell whose row has no such field


class ColumnError(ValueError):
    pass


# --- BSONColumn decoding -----------------------------------------------------------------------

_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1

# BSON type bytes.
_DOUBLE, _STRING, _OBJECT, _ARRAY, _BINDATA = 0x01, 0x02, 0x03, 0x04, 0x05
_OID, _BOOL, _DATE, _CODE, _CODEWSCOPE = 0x07, 0x08, 0x09, 0x0D, 0x0F
_INT32, _TIMESTAMP, _INT64, _DECIMAL = 0x10, 0x11, 0x12, 0x13
_LITERAL_TYPES = set(range(0x01, 0x14)) | {0x7F, 0xFF}
_DELTA_OF_DELTA = {_OID, _DATE, _TIMESTAMP}
_WIDE = {_STRING, _CODE, _BINDATA, _DECIMAL}  # 128-bit streams

# Double scales: control byte high nibble -> scale index; index 5 is "IEEE bits as int64".
_SCALE_OF_NIBBLE = {0x8: 5, 0x9: 0, 0xA: 1, 0xB: 2, 0xC: 3, 0xD: 4}
_MULTIPLIER = [1.0, 10.0, 100.0, 10000.0, 100000000.0]

# Simple-8b: (value bits, slots) per selector; extensions of selectors 7 and 8 (bits 4-7 non-zero)
# add a trailing-zero count to each slot.
_BASE = {1: (1, 60), 2: (2, 30), 3: (3, 20), 4: (4, 15), 5: (5, 12), 6: (6, 10), 7: (7, 8),
         8: (8, 7), 9: (10, 6), 10: (12, 5), 11: (15, 4), 12: (20, 3), 13: (30, 2), 14: (60, 1)}
# Selector 7, nibble 1-9: 4-bit count of zero bits.
_SEVEN = {1: (2, 9), 2: (3, 8), 3: (4, 7), 4: (5, 6), 5: (7, 5), 6: (10, 4), 7: (14, 3),
          8: (24, 2), 9: (52, 1)}
# Selector 8, nibble 1-7: 4-bit count of zero nibbles; nibble 8-13: 5-bit count of zero nibbles.
_EIGHT_SMALL = {1: (4, 7), 2: (5, 6), 3: (7, 5), 4: (10, 4), 5: (14, 3), 6: (24, 2), 7: (52, 1)}
_EIGHT_LARGE = {8: (4, 6), 9: (6, 5), 10: (9, 4), 11: (13, 3), 12: (23, 2), 13: (51, 1)}


def _word_slots(word, wide, last):
    """The slots of one Simple-8b word: ints, or None for skips. An RLE word repeats `last`."""
    selector = word & 0xF
    nibble = (word >> 4) & 0xF
    if selector == 0:
        raise ColumnError("Simple-8b word with selector 0")
    if selector == 15:
        return [last] * ((nibble + 1) * 120)
    zero_bits, unit = 0, 1
    if selector in (7, 8) and nibble != 0:
        if selector == 7 and nibble in _SEVEN:
            (bits, count), zero_bits, unit = _SEVEN[nibble], 4, 1
        elif selector == 8 and nibble in _EIGHT_SMALL:
            (bits, count), zero_bits, unit = _EIGHT_SMALL[nibble], 4, 4
        elif selector == 8 and nibble in _EIGHT_LARGE:
            (bits, count), zero_bits, unit = _EIGHT_LARGE[nibble], 5, 4
        else:
            raise ColumnError(f"Simple-8b extended selector {selector}/{nibble}")
    else:
        bits, count = _BASE[selector]
    start = 8 if selector in (7, 8) else 4
    width = bits + zero_bits
    mask = (1 << width) - 1
    out = []
    for i in range(count):
        slot = (word >> (start + width * i)) & mask
        if slot == mask:
            out.append(None)
            continue
        if zero_bits:
            shift = (slot & ((1 << zero_bits) - 1)) * unit
            slot = (slot >> zero_bits) << shift
            if slot.bit_length() > (128 if wide else 64):
                raise ColumnError("Simple-8b value wider than its stream")
        out.append(slot)
    return out


def _unzigzag(u):
    return (u >> 1) ^ -(u & 1)


def _wrap64(v):
    return ((v + (1 << 63)) & _M64) - (1 << 63)


def _encode_double(d, scale):
    """The integer of double d at a scale index, or None if it does not round-trip."""
    if scale == 5:
        return struct.unpack("<q", struct.pack("<d", d))[0]
    m = _MULTIPLIER[scale]
    x = d * m
    if not (-2.0 ** 53 <= x <= 2.0 ** 53):
        return None  # NaN too
    r = int(x)  # towards zero; then round half away from zero
    if abs(x - r) >= 0.5:
        r += 1 if x > 0 else -1
    if struct.pack("<d", float(r) / m) != struct.pack("<d", d):
        return None
    return r


def _value_size(t, buf, v):
    """The size of the value of type t starting at buf[v]."""
    def i32(at):
        if at + 4 > len(buf):
            raise ColumnError("truncated literal")
        return struct.unpack_from("<i", buf, at)[0]
    if t in (_DOUBLE, _DATE, _TIMESTAMP, _INT64):
        return 8
    if t in (_STRING, _CODE, 0x0E):
        return 4 + i32(v)
    if t in (_OBJECT, _ARRAY):
        return i32(v)
    if t == _BINDATA:
        return 5 + i32(v)
    if t in (0x06, 0x0A, 0x7F, 0xFF):
        return 0
    if t == _OID:
        return 12
    if t == _BOOL:
        return 1
    if t == 0x0B:  # regex: two C strings
        a = buf.index(b"\0", v)
        return buf.index(b"\0", a + 1) + 1 - v
    if t == 0x0C:  # DBPointer
        return 4 + i32(v) + 12
    if t == _INT32:
        return 4
    if t == _DECIMAL:
        return 16
    raise ColumnError(f"literal of type 0x{t:02x}")


def _element(t, name, value):
    return bytes([t]) + name + b"\0" + value


def _document(elements):
    body = b"".join(elements)
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def _fields(doc):
    """(type, name bytes, value bytes) of each field of a BSON document."""
    out = []
    pos, end = 4, struct.unpack_from("<i", doc, 0)[0] - 1
    while pos < end:
        t = doc[pos]
        nul = doc.index(b"\0", pos + 1)
        name = doc[pos + 1:nul]
        size = _value_size(t, doc, nul + 1)
        out.append((t, name, doc[nul + 1:nul + 1 + size]))
        pos = nul + 1 + size
    return out


class _Stream:
    """Decoding state of one stream of values: the column, or an interleaved leaf."""

    def __init__(self):
        self.type = None  # BSON type of the last value; None before any
        self.value = b""  # its value bytes
        self.only_repeat = False
        self.slots = []
        self.pos = 0
        self.last_slot = 0  # what an RLE word repeats

    def literal(self, t, value):
        self.type, self.value = t, value
        self.only_repeat = False
        self.slots, self.pos, self.last_slot = [], 0, 0
        self.enc = 0  # the last integer (for delta of delta: the last delta)
        self.dod = 0  # delta of delta: the last integer
        self.scale = 5
        if t in (_STRING, _CODE):
            s = value[4:-1]
            self.enc = 0 if len(s) > 16 or s[:1] == b"\0" else int.from_bytes(
                s[::-1].ljust(16, b"\0"), "little")
        elif t == _BINDATA:
            payload = value[5:]
            self.enc = int.from_bytes(payload.ljust(16, b"\0"), "little") if len(
                payload) <= 16 else 0
        elif t == _DECIMAL:
            self.enc = int.from_bytes(value, "little")
        elif t == _OID:
            b = value
            self.dod = int.from_bytes(bytes([b[11], b[3], b[10], b[2], b[9], b[1], b[0], 0]),
                                      "little", signed=True)
        elif t in (_DATE, _TIMESTAMP):
            self.dod = struct.unpack("<q", value)[0]
        elif t == _INT64:
            self.enc = struct.unpack("<q", value)[0]
        elif t == _INT32:
            self.enc = struct.unpack("<i", value)[0]
        elif t == _BOOL:
            self.enc = int(value != b"\0")

    def start_block(self, control, words):
        """Loads a Simple-8b block (its control byte and its words)."""
        scale = _SCALE_OF_NIBBLE.get(control >> 4)
        if scale is None:
            raise ColumnError(f"control byte 0x{control:02x}")
        if self.type == _DOUBLE:
            enc = _encode_double(struct.unpack("<d", self.value)[0], scale)
            if enc is None:
                raise ColumnError("previous double does not fit the block's scale")
            self.enc = enc
        self.scale = scale
        wide = self.type in _WIDE
        self.slots, self.pos = [], 0
        for w in words:
            got = _word_slots(w, wide, self.last_slot)
            if got:
                self.last_slot = got[-1]
            self.slots.extend(got)

    def has_slot(self):
        return self.pos < len(self.slots)

    def apply_next(self):
        """Applies the next slot; returns False for a missing cell."""
        slot = self.slots[self.pos]
        self.pos += 1
        if slot is None:
            return False
        if self.type is None:
            if slot == 0:
                return False
            raise ColumnError("delta without a previous value")
        t = self.type
        if self.only_repeat:
            # After an interleaved section: the last row repeats; a double may also change.
            if slot == 0:
                return True
            if t != _DOUBLE:
                raise ColumnError("non-zero delta after an interleaved section")
        if t in _WIDE:
            if slot == 0:
                return True
            self.enc = (self.enc + _unzigzag(slot)) & _M128
            raw = self.enc.to_bytes(16, "little")
            if t in (_STRING, _CODE):
                s = raw.rstrip(b"\0")[::-1]
                self.value = struct.pack("<i", len(s) + 1) + s + b"\0"
            elif t == _BINDATA:
                n = struct.unpack_from("<i", self.value, 0)[0]
                if n > 16:
                    raise ColumnError("delta of a BinData longer than 16 bytes")
                self.value = self.value[:5] + raw[:n]
            else:
                self.value = raw
            return True
        dod = t in _DELTA_OF_DELTA
        if not dod and slot == 0:
            return True
        if dod:
            self.enc = _wrap64(self.enc + _unzigzag(slot))
            self.dod = _wrap64(self.dod + self.enc)
            v = self.dod
        else:
            self.enc = _wrap64(self.enc + _unzigzag(slot))
            v = self.enc
        if t == _DOUBLE:
            d = (struct.unpack("<d", struct.pack("<q", v))[0] if self.scale == 5
                 else float(v) / _MULTIPLIER[self.scale])
            self.value = struct.pack("<d", d)
        elif t == _INT32:
            if not -(1 << 31) <= v < (1 << 31):
                raise ColumnError("int32 delta out of range")
            self.value = struct.pack("<i", v)
        elif t in (_INT64, _DATE, _TIMESTAMP):
            self.value = struct.pack("<q", v)
        elif t == _BOOL:
            if v not in (0, 1):
                raise ColumnError("bool delta out of range")
            self.value = bytes([v])
        elif t == _OID:
            e = struct.pack("<q", v)
            b = bytearray(self.value)
            b[0], b[1], b[2], b[3] = e[6], e[5], e[3], e[1]
            b[9], b[10], b[11] = e[4], e[2], e[0]
            self.value = bytes(b)
        else:
            raise ColumnError(f"non-zero delta for type 0x{t:02x}")
        return True


class _Decoder:
    def __init__(self, buf):
        self.buf = bytes(buf)
        self.p = 0
        self.cells = []  # (type, value bytes) or None for missing

    def literal(self):
        buf, p = self.buf, self.p
        t = buf[p]
        if t == _CODEWSCOPE or t not in _LITERAL_TYPES:
            raise ColumnError(f"literal of type 0x{t:02x} at {p}")
        if p + 1 >= len(buf) or buf[p + 1] != 0:
            raise ColumnError(f"literal without an empty name at {p}")
        size = _value_size(t, buf, p + 2)
        if p + 2 + size > len(buf):
            raise ColumnError(f"truncated literal at {p}")
        self.p = p + 2 + size
        return t, buf[p + 2:p + 2 + size]

    def block(self, stream):
        buf, p = self.buf, self.p
        n = (buf[p] & 0xF) + 1
        if p + 1 + 8 * n > len(buf):
            raise ColumnError(f"truncated Simple-8b block at {p}")
        stream.start_block(buf[p], struct.unpack_from(f"<{n}Q", buf, p + 1))
        self.p = p + 1 + 8 * n

    def run(self):
        regular = _Stream()
        buf = self.buf
        while True:
            if regular.has_slot():
                present = regular.apply_next()
                self.cells.append((regular.type, regular.value) if present else None)
                continue
            if self.p >= len(buf):
                raise ColumnError("column does not end with 0x00")
            c = buf[self.p]
            if c == 0:
                if self.p + 1 != len(buf):
                    raise ColumnError("bytes after the end of the column")
                return self.cells
            if c in _LITERAL_TYPES:
                t, v = self.literal()
                regular.literal(t, v)
                self.cells.append((t, v))
            elif 0xF0 <= c <= 0xF2:
                regular = self.interleaved(regular)
            elif 0x80 <= c <= 0xDF:
                self.block(regular)
            else:
                raise ColumnError(f"control byte 0x{c:02x} at {self.p}")

    def interleaved(self, regular):
        """Decodes an interleaved section; returns the regular stream to resume with."""
        buf = self.buf
        c = buf[self.p]
        root = _ARRAY if c == 0xF2 else _OBJECT
        descend = (_OBJECT, _ARRAY) if c != 0xF0 else (_OBJECT,)
        ref_len = struct.unpack_from("<i", buf, self.p + 1)[0]
        ref = buf[self.p + 1:self.p + 1 + ref_len]
        if ref_len < 5 or len(ref) != ref_len:
            raise ColumnError("truncated interleaved reference object")
        self.p += 1 + ref_len

        def leaves(doc):
            for t, _, v in _fields(doc):
                if t in descend:
                    yield from leaves(v)
                else:
                    yield t, v
        streams = []
        for t, v in leaves(ref):
            if t == _CODEWSCOPE:
                raise ColumnError("CodeWScope in an interleaved reference")
            s = _Stream()
            s.literal(t, v)
            streams.append(s)
        if not streams:
            raise ColumnError("interleaved reference object without scalar fields")
        state = {"leaf": 0, "done": 0}

        def next_cell(s):
            """The leaf's next cell: True present, False missing, None end of the section."""
            if s.has_slot():
                return s.apply_next()
            if self.p >= len(buf):
                raise ColumnError("column ends inside an interleaved section")
            ctl = buf[self.p]
            if ctl == 0:
                if state["done"]:
                    raise ColumnError("interleaved section ends inside a row")
                self.p += 1
                return None
            if ctl in _LITERAL_TYPES:
                s.literal(*self.literal())
                return True
            if 0xF0 <= ctl <= 0xF2:
                raise ColumnError("interleaved start inside an interleaved section")
            self.block(s)
            if not s.has_slot():
                raise ColumnError("empty Simple-8b block")
            return s.apply_next()

        def row(doc):
            """The elements of one row under reference (sub)document doc; None at the end."""
            out = []
            for t, name, v in _fields(doc):
                if t in descend:
                    sub = row(v)
                    if sub is None:
                        return None
                    if sub or len(v) <= 5:  # a sub-document with nothing is left out
                        out.append(_element(t, name, _document(sub)))
                    continue
                s = streams[state["leaf"]]
                state["leaf"] += 1
                got = next_cell(s)
                if got is None:
                    return None
                state["done"] += 1
                if got:
                    out.append(_element(s.type, name, s.value))
            return out

        last = None
        while True:
            state["leaf"] = state["done"] = 0
            elements = row(ref)
            if elements is None:
                break
            if elements:
                last = _document(elements)
                self.cells.append((root, last))
            else:
                self.cells.append(None)
        # Regular decoding goes on from the last cell, which only repeats.
        resumed = _Stream()
        if self.cells and self.cells[-1] is not None:
            if last is not None:
                resumed.literal(root, last)
            else:
                resumed.literal(regular.type, regular.value)
            resumed.only_repeat = True
        return resumed


def decode_column(binary, codec_options=bson.DEFAULT_CODEC_OPTIONS):
    """The cells of a BSONColumn (bytes or Binary subtype 7), as Python values, MISSING for the
    rows without a value."""
    if isinstance(binary, Binary) and binary.subtype != 7:
        raise ColumnError(f"BinData of subtype {binary.subtype}, not 7")
    if not binary:
        raise ColumnError("empty column")
    cells = _Decoder(binary).run()
    # One document holds every present cell; decoding it gives the Python values.
    doc = bson.decode(_document([_element(c[0], str(i).encode(), c[1])
                                 for i, c in enumerate(cells) if c is not None]), codec_options)
    return [MISSING if c is None else doc[str(i)] for i, c in enumerate(cells)]


# --- BSONColumn encoding (a small encoder for tests that write compressed buckets) -------------

_SKIP = (1 << 60) - 1  # an all-ones 60-bit slot
_SELECTOR_ONE_60_BIT_VALUE = 14


def _literal(value):
    """A BSON element with an empty field name: type byte, NUL, value bytes."""
    doc = bson.encode({"": value})
    return doc[4:-1]


def _zigzag(d):
    return ((d << 1) ^ (d >> 63)) & _M64


def _as_int(value):
    """(kind, integer) for the types whose deltas this encoder writes, else None. Doubles go as
    their IEEE bits (scale nibble 0x8, 'memory as integer'); dates use delta of delta."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Int64):
        return ("int64", int(value))
    if isinstance(value, int) and -(1 << 31) <= value < (1 << 31):
        return ("int32", value)
    if isinstance(value, float):
        return ("double", struct.unpack("<q", struct.pack("<d", value))[0])
    if isinstance(value, datetime.datetime):
        # bson.encode({"": d}): int32 length, type byte, empty name's NUL, then the millis.
        return ("date", struct.unpack("<q", bson.encode({"": value})[6:14])[0])
    return None


def encode_column(cells):
    """A BSONColumn of cells (values or MISSING). Each Simple-8b word holds one 60-bit slot
    (selector 14); values without deltas here are literals."""
    out = bytearray()
    words = []
    prev = None  # (kind, last integer, last delta) of the stream after a literal

    def flush():
        while words:
            chunk = words[:16]
            del words[:16]
            out.append(0x80 | (len(chunk) - 1))
            for w in chunk:
                out.extend(struct.pack("<Q", w))

    for cell in cells:
        if cell is MISSING:
            words.append((_SKIP << 4) | _SELECTOR_ONE_60_BIT_VALUE)
            continue
        as_int = _as_int(cell)
        if prev is not None and as_int is not None and as_int[0] == prev[0]:
            kind, last, last_delta = prev
            delta = as_int[1] - last
            if kind == "date":
                encoded = _zigzag(delta - last_delta)
            elif kind == "double":
                # IEEE bits as int64, wrapping.
                delta = ((as_int[1] - last + (1 << 63)) % (1 << 64)) - (1 << 63)
                encoded = _zigzag(delta)
            else:
                encoded = _zigzag(delta)
            if encoded < _SKIP and -(1 << 62) < delta < (1 << 62):
                words.append((encoded << 4) | _SELECTOR_ONE_60_BIT_VALUE)
                prev = (kind, as_int[1], delta if kind == "date" else 0)
                continue
        flush()
        out.extend(_literal(cell))
        prev = (as_int[0], as_int[1], 0) if as_int is not None else None
    flush()
    out.append(0)
    return Binary(bytes(out), 7)


# --- buckets -----------------------------------------------------------------------------------

def version(bucket):
    return int(bucket["control"]["version"])


def is_compressed(bucket):
    return version(bucket) in (2, 3)


def columns(bucket, time_field="t", codec_options=bson.DEFAULT_CODEC_OPTIONS):
    """{field: cells} for every data column, each `count` cells long in stored row order
    (MISSING for rows without the field). Checks the layout of the bucket's version: a
    compressed bucket's columns are BSONColumns of exactly control.count cells; a version-1
    bucket's row indexes are "0".."n-1" in its time column and in order in every column."""
    v = version(bucket)
    data = bucket["data"]
    if v == 1:
        times = data[time_field]
        n = len(times)
        assert list(times) == [str(i) for i in range(n)], "version-1 time column indexes"
        out = {}
        for field, column in data.items():
            assert isinstance(column, dict), f"version-1 column {field!r} is not an object"
            keys = [int(k) for k in column]
            assert keys == sorted(set(keys)) and all(0 <= k < n for k in keys), field
            out[field] = [column.get(str(i), MISSING) for i in range(n)]
        return out
    assert v in (2, 3), f"unknown bucket version {v!r}"
    count = bucket["control"]["count"]
    assert count == int(count) and count >= 1, f"control.count {count!r}"
    out = {}
    for field, column in data.items():
        assert isinstance(column, Binary) and column.subtype == 7, \
            f"compressed column {field!r} is {type(column).__name__}, not BinData subtype 7"
        cells = decode_column(column, codec_options)
        assert len(cells) == count, \
            f"column {field!r} holds {len(cells)} cells, control.count is {count}"
        out[field] = cells
    assert all(c is not MISSING for c in out[time_field]), "a row without a time"
    if v == 2:
        times = out[time_field]
        assert times == sorted(times), "version-2 rows are not in time order"
    return out


def bucket_count(bucket, time_field="t"):
    """The number of measurements (rows) in the bucket, whatever its version."""
    return len(columns(bucket, time_field)[time_field])


def rows(bucket, time_field="t"):
    """The rows as documents of their data fields (column order), in stored order."""
    cols = columns(bucket, time_field)
    n = len(cols[time_field])
    return [{f: cells[i] for f, cells in cols.items() if cells[i] is not MISSING}
            for i in range(n)]


def decompress(bucket, time_field="t"):
    """The version-1 form of a bucket (a copy): control.version 1 without count, each column an
    object of its present cells under their row index, rows in the stored order."""
    cols = columns(bucket, time_field)
    control = {k: v for k, v in bucket["control"].items() if k != "count"}
    control["version"] = 1
    out = {}
    for k, v in bucket.items():
        if k == "control":
            out[k] = control
        elif k == "data":
            out[k] = {f: {str(i): c for i, c in enumerate(cells) if c is not MISSING}
                      for f, cells in cols.items()}
        else:
            out[k] = v
    return out


def compress(bucket, time_field, version, rng=None):
    """The compressed bucket (MongoDB's layout) of a bucket of any version: version 2 sorts the
    rows by time (stable), version 3 shuffles them when given a random.Random (any order is a
    valid version 3). The time column comes first."""
    cols = columns(bucket, time_field)
    n = len(cols[time_field])
    order = list(range(n))
    if version == 2:
        order.sort(key=lambda r: cols[time_field][r])
    elif rng is not None:
        rng.shuffle(order)
    names = [time_field] + [c for c in cols if c != time_field]
    control = {}
    for k, v in bucket["control"].items():
        if k != "count":
            control[k] = version if k == "version" else v
    control["count"] = n
    out = {"_id": bucket["_id"], "control": control}
    for k, v in bucket.items():
        if k not in ("_id", "control", "data"):
            out[k] = v
    out["data"] = {c: encode_column([cols[c][r] for r in order]) for c in names}
    return out
