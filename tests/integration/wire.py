"""Hand-built MongoDB wire messages for raw-socket tests.

Implements just enough of the wire protocol (OP_MSG, OP_QUERY/OP_REPLY,
OP_COMPRESSED with zlib, CRC-32C checksums) to send well-formed and
deliberately malformed frames and to read the server's answers.
"""

import socket
import struct
import zlib

import bson

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

FLAG_CHECKSUM_PRESENT = 1 << 0
FLAG_MORE_TO_COME = 1 << 1
FLAG_EXHAUST_ALLOWED = 1 << 16

COMPRESSOR_NOOP = 0
COMPRESSOR_SNAPPY = 1
COMPRESSOR_ZLIB = 2
COMPRESSOR_ZSTD = 3

_HEADER = struct.Struct("<iiii")


# -- CRC-32C (Castagnoli), reflected polynomial 0x82F63B78 -------------------
def _make_crc32c_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value


# -- message builders -------------------------------------------------------
_next_request_id = [1000]


def next_request_id():
    _next_request_id[0] += 1
    return _next_request_id[0]


def header(length, request_id, response_to, opcode):
    return _HEADER.pack(length, request_id, response_to, opcode)


def frame(opcode, body, request_id=None, response_to=0):
    """Wraps `body` (bytes after the header) in a correct header."""
    rid = next_request_id() if request_id is None else request_id
    return header(16 + len(body), rid, response_to, opcode) + body, rid


def section_body(doc):
    return b"\x00" + (doc if isinstance(doc, (bytes, bytearray)) else bson.encode(doc))


def section_sequence(identifier, docs):
    payload = identifier.encode() + b"\x00" + b"".join(
        d if isinstance(d, (bytes, bytearray)) else bson.encode(d) for d in docs
    )
    return b"\x01" + struct.pack("<i", 4 + len(payload)) + payload


def op_msg(body_doc, sequences=(), flags=0, checksum=False, request_id=None, raw_sections=None):
    """Builds an OP_MSG; returns (bytes, request_id).

    `sequences` is a list of (identifier, [docs]) kind-1 sections.  When
    `checksum` is true the checksumPresent flag is set and a correct CRC-32C
    of the whole message is appended.  `raw_sections` replaces the sections
    entirely (for malformed messages)."""
    if checksum:
        flags |= FLAG_CHECKSUM_PRESENT
    if raw_sections is not None:
        sections = raw_sections
    else:
        sections = section_body(body_doc) + b"".join(
            section_sequence(i, d) for i, d in sequences
        )
    body = struct.pack("<I", flags) + sections
    rid = next_request_id() if request_id is None else request_id
    length = 16 + len(body) + (4 if checksum else 0)
    msg = header(length, rid, 0, OP_MSG) + body
    if checksum:
        msg += struct.pack("<I", crc32c(msg))
    return msg, rid


def op_query(full_collection_name, query, flags=0, skip=0, n_return=-1, request_id=None):
    body = (
        struct.pack("<i", flags)
        + full_collection_name.encode()
        + b"\x00"
        + struct.pack("<ii", skip, n_return)
        + bson.encode(query)
    )
    return frame(OP_QUERY, body, request_id)


def op_compressed(inner_message, compressor_id=COMPRESSOR_ZLIB, request_id=None):
    """Compresses an already-built message (header included) into an OP_COMPRESSED."""
    length, rid, response_to, opcode = _HEADER.unpack_from(inner_message)
    inner_body = inner_message[16:]
    if compressor_id == COMPRESSOR_ZLIB:
        data = zlib.compress(inner_body)
    elif compressor_id == COMPRESSOR_NOOP:
        data = inner_body
    else:
        raise ValueError("only zlib and noop are implemented here")
    body = struct.pack("<iiB", opcode, len(inner_body), compressor_id) + data
    rid = rid if request_id is None else request_id
    return header(16 + len(body), rid, response_to, OP_COMPRESSED) + body, rid


# -- reading replies --------------------------------------------------------
class ConnectionClosed(Exception):
    pass


def recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionClosed()
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class Reply:
    def __init__(self, opcode, request_id, response_to, flags, docs, sequences,
                 compressor_id=None, raw=b""):
        self.opcode = opcode
        self.request_id = request_id
        self.response_to = response_to
        self.flags = flags
        self.docs = docs  # OP_MSG: [body]; OP_REPLY: documents
        self.sequences = sequences
        self.compressor_id = compressor_id
        self.raw = raw

    @property
    def doc(self):
        return self.docs[0]


def parse_message(raw):
    length, rid, response_to, opcode = _HEADER.unpack_from(raw)
    body = raw[16:length]
    compressor_id = None
    if opcode == OP_COMPRESSED:
        original_opcode, size, compressor_id = struct.unpack_from("<iiB", body)
        data = body[9:]
        if compressor_id == COMPRESSOR_ZLIB:
            body = zlib.decompress(data)
        elif compressor_id == COMPRESSOR_NOOP:
            body = data
        else:
            raise AssertionError(f"reply compressed with unexpected compressor {compressor_id}")
        assert len(body) == size, "uncompressedSize does not match"
        opcode = original_opcode
    if opcode == OP_MSG:
        flags = struct.unpack_from("<I", body)[0]
        end = len(body) - (4 if flags & FLAG_CHECKSUM_PRESENT else 0)
        pos = 4
        docs, sequences = [], {}
        while pos < end:
            kind = body[pos]
            pos += 1
            if kind == 0:
                n = struct.unpack_from("<i", body, pos)[0]
                docs.append(bson.decode(body[pos:pos + n]))
                pos += n
            elif kind == 1:
                n = struct.unpack_from("<i", body, pos)[0]
                seq = body[pos + 4:pos + n]
                ident, _, rest = seq.partition(b"\x00")
                sequences[ident.decode()] = bson.decode_all(rest)
                pos += n
            else:
                raise AssertionError(f"unknown section kind {kind} in reply")
        return Reply(OP_MSG, rid, response_to, flags, docs, sequences, compressor_id, raw)
    if opcode == OP_REPLY:
        flags, cursor_id, starting_from, n = struct.unpack_from("<iqii", body)
        docs = bson.decode_all(body[20:])
        assert len(docs) == n
        return Reply(OP_REPLY, rid, response_to, flags, docs, {}, compressor_id, raw)
    raise AssertionError(f"unexpected reply opcode {opcode}")


def read_message(sock):
    head = recv_exact(sock, 16)
    length = struct.unpack_from("<i", head)[0]
    assert 16 <= length <= 48_000_000 + 16, f"bad reply length {length}"
    return parse_message(head + recv_exact(sock, length - 16))


def connect(port, timeout=30.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def command(sock, doc, **kwargs):
    """Sends an OP_MSG command and returns the reply body document."""
    msg, rid = op_msg(doc, **kwargs)
    sock.sendall(msg)
    reply = read_message(sock)
    assert reply.response_to == rid, "reply does not answer our request"
    return reply.doc
