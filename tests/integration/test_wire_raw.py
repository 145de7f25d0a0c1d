"""Raw-socket tests of message framing: malformed frames must never take the
server down, and hand-built valid messages (checksums, document sequences,
moreToCome, legacy OP_QUERY) must work."""

import socket
import struct

import bson
import pytest

import wire

REPLY_TIMEOUT_S = 15.0


def assert_alive(server):
    """A brand-new connection can still ping the server."""
    s = wire.connect(server.port, timeout=10)
    try:
        assert wire.command(s, {"ping": 1, "$db": "admin"})["ok"] == 1
    finally:
        s.close()


def expect_error_or_close(sock, request_id=None):
    """The server must either answer with an OP_MSG error (ok: 0 and a code)
    or close the connection; silence (a hang) is a failure."""
    sock.settimeout(REPLY_TIMEOUT_S)
    try:
        reply = wire.read_message(sock)
    except (wire.ConnectionClosed, ConnectionResetError, BrokenPipeError):
        return None
    except socket.timeout:
        pytest.fail("server neither answered nor closed the connection")
    assert reply.opcode == wire.OP_MSG, f"unexpected reply opcode {reply.opcode}"
    assert reply.doc["ok"] == 0, reply.doc
    assert isinstance(reply.doc.get("code"), int), reply.doc
    if request_id is not None:
        assert reply.response_to == request_id
    return reply.doc


def send_quietly(sock, data):
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may close before reading everything


PING = {"ping": 1, "$db": "admin"}


# -- malformed frames ------------------------------------------------------------------
def test_length_below_header_size(server):
    s = wire.connect(server.port)
    try:
        send_quietly(s, wire.header(10, 1, 0, wire.OP_MSG) + b"\x00" * 8)
        expect_error_or_close(s)
    finally:
        s.close()
    assert_alive(server)


def test_negative_length(server):
    s = wire.connect(server.port)
    try:
        send_quietly(s, wire.header(-5, 1, 0, wire.OP_MSG))
        expect_error_or_close(s)
    finally:
        s.close()
    assert_alive(server)


def test_length_above_max_message_size(server):
    s = wire.connect(server.port)
    try:
        # Only the header is sent: the server must reject the length itself
        # instead of waiting for 48 MB that never come.
        send_quietly(s, wire.header(48_000_001, 1, 0, wire.OP_MSG))
        expect_error_or_close(s)
    finally:
        s.close()
    assert_alive(server)


def test_unknown_opcode(server):
    s = wire.connect(server.port)
    try:
        body = b"\x00" * 20
        send_quietly(s, wire.header(16 + len(body), 7, 0, 9999) + body)
        expect_error_or_close(s)
    finally:
        s.close()
    assert_alive(server)


def test_bad_checksum(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_msg(PING, checksum=True)
        bad = msg[:-4] + struct.pack("<I", (struct.unpack("<I", msg[-4:])[0] ^ 0xDEADBEEF))
        send_quietly(s, bad)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_truncated_section(server):
    s = wire.connect(server.port)
    try:
        doc = bson.encode(PING)
        # The kind-0 section claims the full document but the frame ends early.
        sections = b"\x00" + doc[: len(doc) - 5]
        msg, rid = wire.op_msg(None, raw_sections=sections)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_truncated_sequence_section(server):
    s = wire.connect(server.port)
    try:
        seq = wire.section_sequence("documents", [{"_id": 1}])
        # Claimed size larger than what follows.
        seq = seq[:1] + struct.pack("<i", len(seq) + 100) + seq[5:]
        sections = wire.section_body({"insert": "c", "$db": "t_raw"}) + seq
        msg, rid = wire.op_msg(None, raw_sections=sections)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_invalid_bson_in_body(server):
    s = wire.connect(server.port)
    try:
        # {"ping": <element of unknown type 0x55>}: the lengths are consistent
        # but the type byte is not a BSON type.
        elem = b"\x55ping\x00" + struct.pack("<i", 1)
        doc = struct.pack("<i", 4 + len(elem) + 1) + elem + b"\x00"
        msg, rid = wire.op_msg(None, raw_sections=b"\x00" + doc)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_bson_string_length_overrun(server):
    s = wire.connect(server.port)
    try:
        # A string element whose length runs past the end of its document.
        elem = b"\x02$db\x00" + struct.pack("<i", 1000) + b"admin\x00"
        doc = struct.pack("<i", 4 + len(elem) + 1) + elem + b"\x00"
        msg, rid = wire.op_msg(None, raw_sections=b"\x00" + doc)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_two_body_sections(server):
    s = wire.connect(server.port)
    try:
        sections = wire.section_body(PING) + wire.section_body(PING)
        msg, rid = wire.op_msg(None, raw_sections=sections)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_no_body_section(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_msg(None, raw_sections=wire.section_sequence("documents", [{}]))
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_unknown_section_kind(server):
    s = wire.connect(server.port)
    try:
        sections = wire.section_body(PING) + b"\x07" + bson.encode({"x": 1})
        msg, rid = wire.op_msg(None, raw_sections=sections)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_unknown_required_flag_bit(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_msg(PING, flags=1 << 5)
        send_quietly(s, msg)
        expect_error_or_close(s, rid)
    finally:
        s.close()
    assert_alive(server)


def test_unknown_optional_flag_bit_is_ignored(server):
    s = wire.connect(server.port)
    try:
        assert wire.command(s, PING, flags=1 << 20)["ok"] == 1
    finally:
        s.close()


def test_garbage_bytes(server):
    s = wire.connect(server.port)
    try:
        send_quietly(s, b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        # "GET " read as a length is ~542 MB: the server must give up on this
        # connection (mongod first writes a short plain-text HTTP notice).
        s.settimeout(REPLY_TIMEOUT_S)
        try:
            while s.recv(65536):
                pass
        except (ConnectionResetError, BrokenPipeError):
            pass
        except socket.timeout:
            pytest.fail("server kept an HTTP connection open")
    finally:
        s.close()
    assert_alive(server)


def test_abrupt_close_mid_message(server):
    s = wire.connect(server.port)
    msg, _ = wire.op_msg(PING)
    s.sendall(msg[: len(msg) // 2])
    s.close()
    assert_alive(server)


def test_many_malformed_connections_in_a_row(server):
    for i in range(50):
        s = wire.connect(server.port)
        try:
            send_quietly(s, wire.header(16 + 4, i, 0, wire.OP_MSG) + b"\xff\xff\xff\xff")
        finally:
            s.close()
    assert_alive(server)


# -- valid hand-built messages ----------------------------------------------------------------
def test_checksummed_op_msg(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_msg(PING, checksum=True)
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.response_to == rid
        assert reply.doc["ok"] == 1
        if reply.flags & wire.FLAG_CHECKSUM_PRESENT:
            raw = reply.raw
            assert wire.crc32c(raw[:-4]) == struct.unpack("<I", raw[-4:])[0]
    finally:
        s.close()


def test_kind1_document_sequence_insert(server, client, unique_name):
    dbname = ("t_" + unique_name)[:60]
    s = wire.connect(server.port)
    try:
        docs = [{"_id": i, "v": "s" * i} for i in range(20)]
        reply = wire.command(
            s, {"insert": "seq", "$db": dbname, "ordered": True}, sequences=[("documents", docs)]
        )
        assert reply["ok"] == 1 and reply["n"] == 20, reply
        # A sequence may be combined with checksums too.
        reply = wire.command(
            s,
            {"update": "seq", "$db": dbname},
            sequences=[("updates", [{"q": {"_id": 1}, "u": {"$set": {"v": "u"}}}])],
            checksum=True,
        )
        assert reply["ok"] == 1 and reply["nModified"] == 1
        reply = wire.command(
            s, {"delete": "seq", "$db": dbname},
            sequences=[("deletes", [{"q": {"_id": {"$gte": 10}}, "limit": 0}])],
        )
        assert reply["ok"] == 1 and reply["n"] == 10
    finally:
        s.close()
    got = list(client[dbname].seq.find({}, sort=[("_id", 1)]))
    assert [d["_id"] for d in got] == list(range(10))
    assert got[1]["v"] == "u"
    client.drop_database(dbname)


def test_field_both_in_body_and_sequence_is_rejected(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_msg(
            {"insert": "c", "documents": [{"_id": 1}], "$db": "t_raw_dup"},
            sequences=[("documents", [{"_id": 2}])],
        )
        s.sendall(msg)
        reply = expect_error_or_close(s, rid)
        if reply is not None:
            assert reply["ok"] == 0
    finally:
        s.close()
    assert_alive(server)


def test_more_to_come_gets_no_reply(server, client, unique_name):
    dbname = ("t_" + unique_name)[:60]
    s = wire.connect(server.port)
    try:
        msg, rid1 = wire.op_msg(
            {"insert": "mtc", "$db": dbname, "documents": [{"_id": 1}, {"_id": 2}]},
            flags=wire.FLAG_MORE_TO_COME,
        )
        s.sendall(msg)
        # The next reply on this connection must answer the *find*, proving
        # no reply was produced for the moreToCome message.
        msg, rid2 = wire.op_msg({"find": "mtc", "$db": dbname, "sort": {"_id": 1}})
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.response_to == rid2
        assert reply.doc["cursor"]["firstBatch"] == [{"_id": 1}, {"_id": 2}]
    finally:
        s.close()
    assert client[dbname].mtc.count_documents({}) == 2
    client.drop_database(dbname)


def test_more_to_come_error_is_silent(server):
    s = wire.connect(server.port)
    try:
        msg, _ = wire.op_msg(
            {"noSuchCommandXyz": 1, "$db": "admin"}, flags=wire.FLAG_MORE_TO_COME
        )
        s.sendall(msg)
        msg, rid = wire.op_msg(PING)
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.response_to == rid
        assert reply.doc["ok"] == 1
    finally:
        s.close()


def test_op_query_is_master(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_query("admin.$cmd", {"isMaster": 1})
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.opcode == wire.OP_REPLY
        assert reply.response_to == rid
        assert len(reply.docs) == 1
        doc = reply.doc
        assert doc["ok"] == 1
        assert doc["ismaster"] is True
        assert doc["maxBsonObjectSize"] == 16 * 1024 * 1024
        msg, rid = wire.op_query("admin.$cmd", {"hello": 1})
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.opcode == wire.OP_REPLY
        assert reply.doc["isWritablePrimary"] is True
    finally:
        s.close()


def test_op_query_with_query_wrapper(server):
    # Old drivers wrap the command as {$query: {...}, $readPreference: ...}.
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_query(
            "admin.$cmd", {"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}}
        )
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.opcode == wire.OP_REPLY
        assert reply.doc["ismaster"] is True
    finally:
        s.close()


def test_pipelined_requests_answered_in_order(server):
    s = wire.connect(server.port)
    try:
        rids = []
        data = b""
        for i in range(20):
            msg, rid = wire.op_msg({"ping": 1, "$db": "admin", "comment": i})
            rids.append(rid)
            data += msg
        s.sendall(data)
        got = [wire.read_message(s).response_to for _ in rids]
        assert got == rids
    finally:
        s.close()


def test_request_ids_echoed_in_response_to(server):
    s = wire.connect(server.port)
    try:
        for rid in (1, 0x7FFFFFFF, -12345):
            msg, _ = wire.op_msg(PING, request_id=rid)
            s.sendall(msg)
            assert wire.read_message(s).response_to == rid
    finally:
        s.close()
