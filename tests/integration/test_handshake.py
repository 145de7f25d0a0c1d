"""Handshake, diagnostic and administrative commands, as MongoDB 7.0 answers them."""

import datetime
import importlib
import os
import subprocess
import uuid

import pytest
from bson.binary import Binary, UuidRepresentation
from bson.codec_options import CodecOptions
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.timestamp import Timestamp

import wire
from conftest import command_error, run_command

MAX_BSON = 16 * 1024 * 1024
MAX_MESSAGE = 48_000_000
MAX_BATCH = 100_000


def is_int(v):
    return isinstance(v, (int, Int64)) and not isinstance(v, bool)


def is_number(v):
    return isinstance(v, (int, float, Int64)) and not isinstance(v, bool)


def check_common_hello_fields(reply):
    assert reply["ok"] == 1
    assert reply["maxBsonObjectSize"] == MAX_BSON
    assert reply["maxMessageSizeBytes"] == MAX_MESSAGE
    assert reply["maxWriteBatchSize"] == MAX_BATCH
    assert isinstance(reply["localTime"], datetime.datetime)
    assert reply["logicalSessionTimeoutMinutes"] == 30
    assert is_int(reply["connectionId"])
    assert reply["minWireVersion"] == 0
    assert is_int(reply["maxWireVersion"]) and reply["maxWireVersion"] >= 17
    assert reply["readOnly"] is False
    # A standalone: no replica set name, not a mongos.
    assert "setName" not in reply
    assert reply.get("msg") != "isdbgrid"
    tv = reply["topologyVersion"]
    assert isinstance(tv["processId"], ObjectId)
    assert is_int(tv["counter"])


# -- hello / isMaster ---------------------------------------------------------
def test_hello_reply(client):
    reply = client.admin.command("hello")
    assert reply["isWritablePrimary"] is True
    check_common_hello_fields(reply)


def test_is_master_reply(client):
    reply = client.admin.command("isMaster")
    assert reply["ismaster"] is True
    check_common_hello_fields(reply)


def test_lowercase_ismaster_accepted(client):
    reply = client.admin.command("ismaster")
    assert reply["ismaster"] is True


def test_is_master_echoes_hello_ok(client):
    reply = client.admin.command({"isMaster": 1, "helloOk": True})
    assert reply["helloOk"] is True


def test_hello_works_on_any_database(client, db):
    assert db.command("hello")["isWritablePrimary"] is True


def test_connection_ids_differ_between_connections(server):
    a = wire.connect(server.port)
    b = wire.connect(server.port)
    try:
        ida = wire.command(a, {"hello": 1, "$db": "admin"})["connectionId"]
        idb = wire.command(b, {"hello": 1, "$db": "admin"})["connectionId"]
        assert ida != idb
        # Stable within a connection.
        assert wire.command(a, {"hello": 1, "$db": "admin"})["connectionId"] == ida
    finally:
        a.close()
        b.close()


def test_hello_local_time_is_now(client):
    t = client.admin.command("hello")["localTime"]
    now = datetime.datetime.utcnow()
    assert abs((now - t.replace(tzinfo=None)).total_seconds()) < 60


# -- compression ----------------------------------------------------------------
def _compressor_available(name):
    module = {"zlib": "zlib", "snappy": "snappy", "zstd": "zstandard"}[name]
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


@pytest.mark.parametrize("compressor", ["zlib", "snappy", "zstd"])
def test_compressed_crud_with_pymongo(server, compressor, unique_name):
    if not _compressor_available(compressor):
        pytest.skip(f"the Python module for {compressor} is not installed")
    c = server.client(compressors=compressor)
    try:
        coll = c["t_" + unique_name]["c"]
        docs = [{"_id": i, "s": "x" * 200 + str(i)} for i in range(500)]
        coll.insert_many(docs)
        got = list(coll.find({}, sort=[("_id", 1)]))
        assert got == docs
        assert coll.count_documents({"_id": {"$gte": 250}}) == 250
        c.drop_database("t_" + unique_name)
    finally:
        c.close()


def test_hello_negotiates_zlib(server):
    s = wire.connect(server.port)
    try:
        reply = wire.command(s, {"hello": 1, "compression": ["zlib"], "$db": "admin"})
        assert reply["compression"] == ["zlib"]
    finally:
        s.close()


def test_hello_negotiation_keeps_only_known_compressors(server):
    s = wire.connect(server.port)
    try:
        reply = wire.command(
            s, {"hello": 1, "compression": ["lz77-bogus", "zlib"], "$db": "admin"}
        )
        assert reply["compression"] == ["zlib"]
    finally:
        s.close()


def test_hello_without_compression_list_has_no_compression(server):
    s = wire.connect(server.port)
    try:
        reply = wire.command(s, {"hello": 1, "$db": "admin"})
        assert not reply.get("compression")
    finally:
        s.close()


def test_zlib_compressed_request_gets_zlib_compressed_reply(server):
    s = wire.connect(server.port)
    try:
        wire.command(s, {"hello": 1, "compression": ["zlib"], "$db": "admin"})
        for cmd in (
            {"ping": 1, "$db": "admin"},
            {"insert": "zc", "documents": [{"_id": 1, "v": "z" * 1000}], "$db": "t_wire_zlib"},
            {"find": "zc", "filter": {"_id": 1}, "$db": "t_wire_zlib"},
        ):
            inner, rid = wire.op_msg(cmd)
            msg, _ = wire.op_compressed(inner, wire.COMPRESSOR_ZLIB)
            s.sendall(msg)
            reply = wire.read_message(s)
            assert reply.response_to == rid
            assert reply.compressor_id == wire.COMPRESSOR_ZLIB
            assert reply.doc["ok"] == 1, reply.doc
        assert reply.doc["cursor"]["firstBatch"] == [{"_id": 1, "v": "z" * 1000}]
        wire.command(s, {"dropDatabase": 1, "$db": "t_wire_zlib"})
    finally:
        s.close()


def test_server_status_counts_compressed_traffic(server):
    s = wire.connect(server.port)
    c = server.client()
    try:
        before = c.admin.command("serverStatus")["network"]["compression"]["zlib"]
        wire.command(s, {"hello": 1, "compression": ["zlib"], "$db": "admin"})
        inner, _ = wire.op_msg({"ping": 1, "$db": "admin"})
        s.sendall(wire.op_compressed(inner)[0])
        wire.read_message(s)
        after = c.admin.command("serverStatus")["network"]["compression"]["zlib"]
        assert after["decompressor"]["bytesIn"] > before["decompressor"]["bytesIn"]
        assert after["compressor"]["bytesOut"] > before["compressor"]["bytesOut"]
    finally:
        s.close()
        c.close()


# -- buildInfo, ping, whatsmyuri, connectionStatus, hostInfo ---------------------
def test_build_info(client):
    r = client.admin.command("buildInfo")
    assert r["ok"] == 1
    assert isinstance(r["version"], str) and r["version"].startswith("7.0.")
    va = r["versionArray"]
    assert len(va) == 4 and all(is_int(x) for x in va)
    assert va[:2] == [7, 0]
    assert r["version"].split("-")[0] == ".".join(str(x) for x in va[:3])
    assert r["maxBsonObjectSize"] == MAX_BSON
    assert isinstance(r["gitVersion"], str)
    assert r["modules"] == []
    assert r["bits"] == 64
    assert isinstance(r["debug"], bool)


def test_build_info_lowercase_spelling(client):
    assert client.admin.command("buildinfo")["version"].startswith("7.0.")


def test_ping(client, db):
    assert client.admin.command("ping")["ok"] == 1
    assert db.command("ping")["ok"] == 1


def test_whatsmyuri(server):
    s = wire.connect(server.port)
    try:
        r = wire.command(s, {"whatsmyuri": 1, "$db": "admin"})
        assert r["ok"] == 1
        host, port = s.getsockname()
        assert r["you"] == f"{host}:{port}"
    finally:
        s.close()


def test_connection_status(client):
    r = client.admin.command("connectionStatus")
    assert r["ok"] == 1
    assert r["authInfo"]["authenticatedUsers"] == []
    assert r["authInfo"]["authenticatedUserRoles"] == []


def test_host_info(client):
    r = client.admin.command("hostInfo")
    assert r["ok"] == 1
    system = r["system"]
    assert isinstance(system["currentTime"], datetime.datetime)
    assert isinstance(system["hostname"], str) and system["hostname"]
    assert system["cpuAddrSize"] == 64
    assert is_number(system["memSizeMB"]) and system["memSizeMB"] > 0
    assert is_number(system["numCores"]) and system["numCores"] >= 1
    assert isinstance(system["cpuArch"], str)
    assert r["os"]["type"] == "Linux"
    assert "extra" in r


def test_get_cmd_line_opts(server, client):
    r = client.admin.command("getCmdLineOpts")
    assert r["ok"] == 1
    argv = r["argv"]
    assert "--port" in argv
    assert argv[argv.index("--port") + 1] == str(server.port)
    parsed = r["parsed"]
    assert parsed["net"]["port"] == server.port
    assert parsed["storage"]["dbPath"] == server.dbpath


# -- getParameter / setParameter ------------------------------------------------
def test_get_parameter_fcv(client):
    r = client.admin.command({"getParameter": 1, "featureCompatibilityVersion": 1})
    assert r["ok"] == 1
    assert r["featureCompatibilityVersion"] == {"version": "7.0"}


def test_get_parameter_unknown_name(client):
    r = run_command(client.admin, {"getParameter": 1, "noSuchParameterHere": 1})
    assert r["ok"] == 0
    assert r["errmsg"] == "no option found to get"
    assert r["code"] == 72 and r["codeName"] == "InvalidOptions"


def test_get_parameter_star_lists_parameters(client):
    r = client.admin.command({"getParameter": "*"})
    assert r["ok"] == 1
    assert "featureCompatibilityVersion" in r
    assert "cursorTimeoutMillis" in r


def test_set_parameter_round_trip(client):
    old = client.admin.command({"getParameter": 1, "cursorTimeoutMillis": 1})["cursorTimeoutMillis"]
    assert old == 600000  # MongoDB's default: 10 minutes
    try:
        r = client.admin.command({"setParameter": 1, "cursorTimeoutMillis": 123456})
        assert r["ok"] == 1
        assert r["was"] == old
        now = client.admin.command({"getParameter": 1, "cursorTimeoutMillis": 1})
        assert now["cursorTimeoutMillis"] == 123456
    finally:
        client.admin.command({"setParameter": 1, "cursorTimeoutMillis": old})


def test_set_parameter_at_startup(fresh_server):
    s = fresh_server.new(extra_args=["--setParameter", "cursorTimeoutMillis=4242"])
    c = s.client()
    try:
        r = c.admin.command({"getParameter": 1, "cursorTimeoutMillis": 1})
        assert r["cursorTimeoutMillis"] == 4242
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_get_parameter_must_run_on_admin(db):
    code, name, _ = command_error(db, {"getParameter": 1, "featureCompatibilityVersion": 1})
    assert (code, name) == (13, "Unauthorized")


# -- getLog -----------------------------------------------------------------------
def test_get_log_startup_warnings(client):
    r = client.admin.command({"getLog": "startupWarnings"})
    assert r["ok"] == 1
    assert isinstance(r["log"], list)
    assert all(isinstance(line, str) for line in r["log"])
    assert is_int(r["totalLinesWritten"])


def test_get_log_star_lists_names(client):
    r = client.admin.command({"getLog": "*"})
    assert r["ok"] == 1
    assert "global" in r["names"]
    assert "startupWarnings" in r["names"]


def test_get_log_global_lines_are_json(client):
    import json

    r = client.admin.command({"getLog": "global"})
    assert r["totalLinesWritten"] >= 1
    for line in r["log"]:
        entry = json.loads(line)
        assert {"t", "s", "c", "id", "ctx", "msg"} <= set(entry)


# -- serverStatus ---------------------------------------------------------------------
def test_server_status(client, db):
    r = client.admin.command("serverStatus")
    assert r["ok"] == 1
    assert isinstance(r["version"], str) and r["version"].startswith("7.0.")
    assert is_int(r["pid"])
    assert is_number(r["uptime"]) and r["uptime"] >= 0
    assert is_int(r["uptimeMillis"])
    assert isinstance(r["localTime"], datetime.datetime)
    assert r["connections"]["current"] >= 1
    assert "available" in r["connections"]
    assert r["connections"]["totalCreated"] >= r["connections"]["current"]
    mem = r["mem"]
    assert mem["bits"] == 64
    assert is_number(mem["resident"]) and is_number(mem["virtual"])
    net = r["network"]
    assert net["bytesIn"] > 0 and net["bytesOut"] > 0 and net["numRequests"] > 0
    for k in ("insert", "query", "update", "delete", "getmore", "command"):
        assert is_int(r["opcounters"][k])


def links_tcmalloc(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return "libtcmalloc" in out


def test_server_status_tcmalloc_section(client, db):
    # mongod reports its allocator's figures; a build without tcmalloc (the sanitizer build has
    # its own allocator) leaves the section out rather than inventing them.
    r = client.admin.command("serverStatus")
    if not links_tcmalloc(os.environ["HOURGLASSD"]):
        assert "tcmalloc" not in r
        return
    db.c.insert_many([{"pad": "x" * 10000} for _ in range(200)])
    t = client.admin.command("serverStatus")["tcmalloc"]
    g, m = t["generic"], t["tcmalloc"]
    assert g["current_allocated_bytes"] > 1 << 20
    assert g["heap_size"] >= g["current_allocated_bytes"]
    assert m["total_free_bytes"] == (
        m["central_cache_free_bytes"] + m["transfer_cache_free_bytes"]
        + m["thread_cache_free_bytes"])
    assert m["max_total_thread_cache_bytes"] > 0
    assert m["current_total_thread_cache_bytes"] <= m["max_total_thread_cache_bytes"]
    # {tcmalloc: 0} leaves it out, as for every section.
    assert "tcmalloc" not in client.admin.command("serverStatus", tcmalloc=0)


def test_server_status_process_name(client):
    # MongoDB documents "mongod" or "mongos"; tools read it to tell them apart.
    assert client.admin.command("serverStatus")["process"] == "mongod"


def test_server_status_opcounters_count_inserts(client, db):
    before = client.admin.command("serverStatus")["opcounters"]
    db.c.insert_many([{"i": i} for i in range(7)])
    db.c.find_one({})
    after = client.admin.command("serverStatus")["opcounters"]
    # opcounters.insert counts documents inserted.
    assert after["insert"] - before["insert"] == 7
    assert after["query"] > before["query"]
    assert after["command"] > before["command"]


def test_server_status_bytes_in_grow(client):
    a = client.admin.command("serverStatus")["network"]["bytesIn"]
    client.admin.command("ping")
    b = client.admin.command("serverStatus")["network"]["bytesIn"]
    assert b > a


# -- listCommands, unknown commands ------------------------------------------------------
def test_list_commands(client):
    r = client.admin.command("listCommands")
    assert r["ok"] == 1
    cmds = r["commands"]
    for name in ("find", "insert", "update", "delete", "aggregate", "getMore", "hello", "ping"):
        assert name in cmds, name
    assert isinstance(cmds["find"]["help"], str)


def test_unknown_command(db):
    r = run_command(db, {"noSuchCommandXyz": 1})
    assert r["ok"] == 0
    assert r["code"] == 59
    assert r["codeName"] == "CommandNotFound"
    assert r["errmsg"] == "no such command: 'noSuchCommandXyz'"


# -- sessions ---------------------------------------------------------------------------
def test_start_session_and_end_sessions(client):
    opts = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
    r = client.admin.command("startSession", codec_options=opts)
    assert r["ok"] == 1
    sid = r["id"]["id"]
    assert isinstance(sid, uuid.UUID)
    assert r["timeoutMinutes"] == 30
    r2 = client.admin.command(
        {"endSessions": [{"id": Binary(sid.bytes, 4)}]}, codec_options=opts
    )
    assert r2["ok"] == 1


def test_end_sessions_of_unknown_ids_is_ok(client):
    ids = [{"id": Binary(uuid.uuid4().bytes, 4)} for _ in range(50)]
    assert client.admin.command({"endSessions": ids})["ok"] == 1


def test_pymongo_explicit_session(client, db):
    with client.start_session() as s:
        db.c.insert_one({"_id": 1}, session=s)
        assert db.c.find_one({"_id": 1}, session=s) == {"_id": 1}


def test_commands_accept_session_and_cluster_time_fields(db):
    lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
    cluster_time = {
        "clusterTime": Timestamp(1, 1),
        "signature": {"hash": Binary(b"\x00" * 20, 0), "keyId": Int64(0)},
    }
    r = db.command(
        {
            "insert": "c",
            "documents": [{"_id": 1}],
            "lsid": lsid,
            "$clusterTime": cluster_time,
            "comment": "tagged",
            "maxTimeMS": 60000,
        }
    )
    assert r["ok"] == 1 and r["n"] == 1
    r = db.command(
        {
            "find": "c",
            "filter": {},
            "lsid": lsid,
            "$readPreference": {"mode": "primaryPreferred"},
            "apiVersion": "1",
        }
    )
    assert r["cursor"]["firstBatch"] == [{"_id": 1}]


def test_commands_accept_txn_number(db):
    # Hourglass's contract (shared/spec/wire.md) is to accept txnNumber on
    # every command; a standalone mongod would instead refuse retryable writes.
    lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
    r = db.command(
        {"insert": "c", "documents": [{"_id": 2}], "lsid": lsid, "txnNumber": Int64(1)}
    )
    assert r["ok"] == 1 and r["n"] == 1
    assert db.c.count_documents({"_id": 2}) == 1


def test_legacy_op_query_is_master(server):
    s = wire.connect(server.port)
    try:
        msg, rid = wire.op_query("admin.$cmd", {"isMaster": 1, "helloOk": True})
        s.sendall(msg)
        reply = wire.read_message(s)
        assert reply.opcode == wire.OP_REPLY
        assert reply.response_to == rid
        doc = reply.doc
        assert doc["ismaster"] is True
        assert doc["helloOk"] is True
        assert doc["maxWireVersion"] >= 17
        # The same connection then speaks OP_MSG.
        assert wire.command(s, {"ping": 1, "$db": "admin"})["ok"] == 1
    finally:
        s.close()
