"""Read concerns, cluster time and write concern errors (issue 19), compared with what MongoDB
documents and mongod 7.0 answers: readConcern's levels and options checked on every command;
"majority", "linearizable" and afterClusterTime on replica set members, where every reply carries
$clusterTime and operationTime; a standalone refusing what only a set can do; a write concern
that cannot be satisfied reported as writeConcernError beside the write's own result."""

import os
import signal
import time

import pytest
from bson import Timestamp
from pymongo import ReadPreference
from pymongo.errors import WriteConcernError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

import wire
from conftest import command_error, run_command
from test_replica_set import start_set, wait_for
from test_replication_log import oplog, primary_of_one, set_client

ZERO_SIGNATURE = {"hash": b"\0" * 20, "keyId": 0}


def raw(server, doc):
    """The reply to `doc` sent as it is (no session, no $clusterTime the driver would add)."""
    sock = wire.connect(server.port)
    try:
        return wire.command(sock, doc)
    finally:
        sock.close()


def ts_seconds_ahead(ts, seconds):
    return Timestamp(ts.time + seconds, 1)


# -- the argument, on any server -----------------------------------------------------------


@pytest.mark.parametrize("concern,code,words", [
    (5, 9, "readConcern field should be an object"),
    ({"level": 1}, 14, '"level" had the wrong type. Expected string, found int'),
    ({"level": "strong"}, 9, "readConcern.level must be either 'local', 'majority', "
                             "'linearizable', 'available', or 'snapshot'"),
    ({"level": "local", "bogus": 1}, 72, "Unrecognized option in readConcern: bogus"),
    ({"afterClusterTime": 5}, 14, '"afterClusterTime" had the wrong type. Expected timestamp'),
    ({"afterClusterTime": Timestamp(0, 0)}, 72, "afterClusterTime cannot be a null timestamp"),
    ({"level": "local", "atClusterTime": Timestamp(5, 1)}, 72,
     "atClusterTime field can be set only if level is equal to snapshot"),
    ({"level": "linearizable", "afterClusterTime": Timestamp(5, 1)}, 72,
     "afterClusterTime field can be set only if level is equal to majority, local, or snapshot"),
    ({"level": "available", "afterClusterTime": Timestamp(5, 1)}, 72,
     "afterClusterTime field can be set only if level is equal to majority, local, or snapshot"),
    ({"level": "snapshot", "atClusterTime": Timestamp(5, 1), "afterClusterTime": Timestamp(5, 1)},
     72, "Specifying a timestamp for readConcern snapshot in a causally consistent session"),
    ({"level": "snapshot", "atClusterTime": Timestamp(0, 0)}, 72,
     "atClusterTime cannot be a null timestamp"),
    ({"afterOpTime": 5}, 14, '"afterOpTime" had the wrong type. Expected object, found int'),
    ({"afterOpTime": {"t": 1}}, 4, 'Missing expected field "ts"'),
    ({"afterOpTime": {"ts": Timestamp(5, 1)}}, 4, 'Missing expected field "t"'),
    ({"afterOpTime": {"ts": Timestamp(5, 1), "t": 1}, "afterClusterTime": Timestamp(5, 1)}, 72,
     "Can not specify both afterClusterTime and afterOpTime"),
    ({"level": "snapshot", "afterOpTime": {"ts": Timestamp(5, 1), "t": 1}}, 72,
     "afterOpTime field cannot be set if level is equal to snapshot"),
    ({"provenance": 3}, 14, '"provenance" had the wrong type. Expected string, found int'),
])
def test_malformed_read_concerns(client, concern, code, words):
    c, _, msg = command_error(client.rc, {"find": "docs", "readConcern": concern})
    assert c == code and words in msg, msg


def test_commands_take_the_levels_mongod_gives_them(client):
    db = client.rc
    db.docs.insert_one({"_id": 1})
    # Writes and commands about the server take only "local".
    for cmd in [{"insert": "docs", "documents": [{"_id": 2}]},
                {"ping": 1},
                {"create": "other"}]:
        for level in ["majority", "available", "linearizable"]:
            c, name, msg = command_error(db, {**cmd, "readConcern": {"level": level}})
            assert (c, name) == (72, "InvalidOptions"), msg
            assert msg.startswith(f"Command {next(iter(cmd))} does not support {{ readConcern: "
                                  f"{{ level: \"{level}\"") and "read concern not supported" in msg
    assert db.docs.count_documents({}) == 1  # the refused insert wrote nothing
    db.command({"insert": "docs", "documents": [{"_id": 2}], "readConcern": {"level": "local"}})
    # afterClusterTime is refused where mongod refuses it, before anything else.
    for cmd in [{"ping": 1}, {"serverStatus": 1}, {"dbHash": 1}]:
        c, _, msg = command_error(db, {**cmd, "readConcern": {"afterClusterTime": Timestamp(5, 1)}})
        assert (c, msg) == (72, "afterClusterTime is not allowed for this command")


def test_a_standalone_reads_local_available_and_majority(client):
    db = client.rc
    db.levels.insert_many([{"_id": i} for i in range(5)])
    for level in ["local", "available", "majority"]:
        reply = db.command({"find": "levels", "readConcern": {"level": level}})
        assert len(reply["cursor"]["firstBatch"]) == 5
        # A standalone has no cluster time.
        assert "operationTime" not in reply and "$clusterTime" not in reply
        coll = db.get_collection("levels", read_concern=ReadConcern(level))
        assert coll.count_documents({}) == 5 and sorted(coll.distinct("_id")) == list(range(5))
    assert command_error(db, {"find": "levels", "readConcern": {"level": "snapshot"}}) == (
        123, "NotAReplicaSet", "node needs to be a replica set member to use readConcern: snapshot")
    assert command_error(db, {"find": "levels", "readConcern": {"level": "linearizable"}}) == (
        123, "NotAReplicaSet", "node needs to be a replica set member to use read concern")
    assert command_error(db, {"find": "levels", "readConcern": {"afterClusterTime":
                                                                Timestamp(1, 1)}}) == (
        20, "IllegalOperation",
        "Cannot specify afterClusterTime readConcern without replication enabled")


def test_a_standalone_refuses_write_concerns_only_a_set_satisfies(client):
    db = client.wcs
    for concern, msg in [({"w": 2}, "cannot use 'w' > 1 when a host is not replicated"),
                         ({"w": "dc1"}, "cannot use non-majority 'w' mode \"dc1\" when a host is "
                                        "not a member of a replica set")]:
        assert command_error(db, {"insert": "refused", "documents": [{"a": 1}],
                                  "writeConcern": concern}) == (2, "BadValue", msg)
    assert db.refused.count_documents({}) == 0  # refused before anything was written
    reply = db.command({"insert": "refused", "documents": [{"a": 1}],
                        "writeConcern": {"w": "majority", "j": True}})
    assert reply["n"] == 1 and "writeConcernError" not in reply


# -- a set of one --------------------------------------------------------------------------


def test_every_reply_of_a_member_carries_the_cluster_time(fresh_server):
    s, c = primary_of_one(fresh_server)
    try:
        reply = raw(s, {"insert": "docs", "documents": [{"_id": 1}], "$db": "ct"})
        assert reply["ok"] == 1 and reply["n"] == 1
        # mongod's order: the command's fields, ok, $clusterTime, operationTime.
        assert list(reply)[-3:] == ["ok", "$clusterTime", "operationTime"]
        assert reply["$clusterTime"]["signature"] == ZERO_SIGNATURE
        entry = oplog(s, {"ns": "ct.docs", "op": "i"})[-1]
        # A write's operationTime is its oplog entry's timestamp; the cluster time is no older.
        assert reply["operationTime"] == entry["ts"]
        assert reply["$clusterTime"]["clusterTime"] >= entry["ts"]
        # Failures too, those refused before running included.
        for failing in [{"find": "docs", "filter": 5, "$db": "ct"},
                        {"noSuchCommand": 1, "$db": "ct"},
                        {"find": "docs", "readConcern": {"level": 7}, "$db": "ct"}]:
            reply = raw(s, failing)
            assert reply["ok"] == 0 and reply["operationTime"] >= entry["ts"], reply
            assert reply["$clusterTime"]["signature"] == ZERO_SIGNATURE
        hello = raw(s, {"hello": 1, "$db": "admin"})
        assert hello["$clusterTime"]["clusterTime"] >= entry["ts"]
    finally:
        c.close()


def test_after_cluster_time_on_the_primary(fresh_server):
    s, c = primary_of_one(fresh_server)
    try:
        wrote = raw(s, {"insert": "docs", "documents": [{"_id": 1}], "$db": "act"})
        op_time = wrote["operationTime"]
        reply = raw(s, {"find": "docs", "readConcern": {"afterClusterTime": op_time},
                        "$db": "act"})
        assert reply["cursor"]["firstBatch"] == [{"_id": 1}]
        # Later than any cluster time the member knows: refused, as mongod does.
        ahead = ts_seconds_ahead(reply["$clusterTime"]["clusterTime"], 100)
        refused = raw(s, {"find": "docs", "readConcern": {"afterClusterTime": ahead},
                          "$db": "act"})
        code, msg = refused["code"], refused["errmsg"]
        assert code == 72 and msg.startswith(
            "readConcern afterClusterTime value must not be greater than the current clusterTime."
            f" Requested clusterTime: {{ ts: Timestamp({ahead.time}, {ahead.inc}) }}"), msg
        # With a $clusterTime that far ahead gossiped in the request, the primary accepts it and
        # logs a no-op later than it, so the read returns.
        gossip = {"clusterTime": ahead, "signature": ZERO_SIGNATURE}
        reply = raw(s, {"find": "docs", "readConcern": {"afterClusterTime": ahead},
                        "$clusterTime": gossip, "$db": "act"})
        assert reply["ok"] == 1 and reply["cursor"]["firstBatch"] == [{"_id": 1}]
        assert reply["operationTime"] > ahead
        # (The no-op's row is written once the set commits it, which the read need not wait
        # for: it carries no data.)
        notes = wait_for(lambda: oplog(s, {"op": "n", "o.msg":
                                           "noop write for afterClusterTime read concern"}),
                         what="the no-op in the oplog")
        assert notes[-1]["ts"] > ahead
        # The writes after it are later than the gossiped time.
        later = raw(s, {"insert": "docs", "documents": [{"_id": 2}], "$db": "act"})
        assert later["operationTime"] > ahead
        # Malformed or implausible gossip is refused.
        far = Timestamp(int(time.time()) + 2 * 366 * 24 * 3600, 1)
        bad = raw(s, {"ping": 1, "$clusterTime": {"clusterTime": far, "signature":
                                                  ZERO_SIGNATURE}, "$db": "admin"})
        assert (bad["code"], bad["codeName"]) == (205, "ClusterTimeFailsRateLimiter")
        bad = raw(s, {"ping": 1, "$clusterTime": {"clusterTime": ahead}, "$db": "admin"})
        assert (bad["code"], bad["errmsg"]) == (4, 'Missing expected field "signature"')
        bad = raw(s, {"ping": 1, "$clusterTime": 3, "$db": "admin"})
        assert bad["code"] == 14
    finally:
        c.close()


def test_majority_and_linearizable_reads_on_the_primary(fresh_server):
    s, c = primary_of_one(fresh_server)
    try:
        db = c.lin
        db.docs.insert_many([{"_id": i} for i in range(10)])
        majority = db.get_collection("docs", read_concern=ReadConcern("majority"))
        assert majority.count_documents({}) == 10
        reply = raw(s, {"find": "docs", "readConcern": {"level": "majority"}, "$db": "lin"})
        assert len(reply["cursor"]["firstBatch"]) == 10
        # operationTime of a majority read: the set's committed point, here every write.
        assert reply["operationTime"] >= oplog(s, {"ns": "lin.docs"})[-1]["ts"]
        before = len(oplog(s, {"op": "n", "o.msg": "linearizable read"}))
        linear = db.get_collection("docs", read_concern=ReadConcern("linearizable"))
        assert linear.find_one({"_id": 3}) == {"_id": 3}
        assert sorted(linear.distinct("_id")) == list(range(10))
        # Each linearizable read was confirmed by a no-op the set committed (its row is
        # written when the member applies it, just after).
        wait_for(lambda: len(oplog(s, {"op": "n", "o.msg": "linearizable read"})) >= before + 2,
                 what="the linearizable reads' no-ops in the oplog")
        # Only reads take it; "snapshot" is not read at a point in time yet (loud, not wrong).
        assert command_error(db, {"insert": "docs", "documents": [{"_id": 99}],
                                  "readConcern": {"level": "linearizable"}})[0] == 72
        assert command_error(db, {"aggregate": "docs", "pipeline": [{"$out": "copy"}],
                                  "cursor": {}, "readConcern": {"level": "linearizable"}}) == (
            72, "InvalidOptions", "$out cannot be used with a 'linearizable' read concern level")
        assert command_error(db, {"find": "docs", "readConcern": {"level": "snapshot"}})[0] == 115
        assert db.docs.count_documents({"_id": 99}) == 0
    finally:
        c.close()


def test_write_concern_errors_come_beside_the_write(fresh_server):
    s, c = primary_of_one(fresh_server)
    try:
        reply = raw(s, {"insert": "docs", "documents": [{"_id": 1}], "writeConcern": {"w": 2},
                        "$db": "wce"})
        # The write happened (ok: 1, n: 1); the write concern could not be satisfied.
        assert reply["ok"] == 1 and reply["n"] == 1
        wce = reply["writeConcernError"]
        assert (wce["code"], wce["codeName"], wce["errmsg"]) == (
            100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes")
        assert wce["errInfo"]["writeConcern"] == {"w": 2, "wtimeout": 0,
                                                 "provenance": "clientSupplied"}
        assert list(reply)[-4:] == ["writeConcernError", "ok", "$clusterTime", "operationTime"]
        reply = raw(s, {"createIndexes": "docs", "indexes": [{"key": {"a": 1}, "name": "a_1"}],
                        "writeConcern": {"w": "dc1"}, "$db": "wce"})
        assert reply["ok"] == 1 and reply["writeConcernError"]["code"] == 79
        # The drivers raise it as a write concern error, after the write.
        with pytest.raises(WriteConcernError) as e:
            c.wce.docs.with_options(write_concern=WriteConcern(w=3)).insert_one({"_id": 2})
        assert e.value.code == 100
        assert c.wce.docs.count_documents({}) == 2
        assert "a_1" in c.wce.docs.index_information()
        # Malformed ones refuse the command before it writes.
        assert command_error(c.wce, {"insert": "docs", "documents": [{"_id": 3}],
                                     "writeConcern": {"w": -1}})[0] == 9
        assert c.wce.docs.count_documents({"_id": 3}) == 0
    finally:
        c.close()


# -- three members -------------------------------------------------------------------------


def test_causally_consistent_reads_from_secondaries(fresh_server):
    members = start_set(fresh_server)
    rs = set_client(members)
    try:
        db = rs.get_database("causal", write_concern=WriteConcern(w=1))
        sec = rs.get_database("causal", read_preference=ReadPreference.SECONDARY)
        # Each read on a secondary, in the session, sees the session's write just before it:
        # pymongo sends afterClusterTime (the write's operationTime) and $clusterTime.
        with rs.start_session(causal_consistency=True) as session:
            for i in range(40):
                db.docs.insert_one({"_id": i, "v": i}, session=session)
                assert sec.docs.find_one({"_id": i}, session=session) == {"_id": i, "v": i}
                assert sec.docs.count_documents({"_id": {"$lte": i}}, session=session) == i + 1
        # A secondary refuses linearizable reads and serves majority ones.
        direct = members[1].client(directConnection=True, readPreference="secondary")
        try:
            assert command_error(direct.causal, {"find": "docs", "readConcern":
                                                 {"level": "linearizable"}},
                                 read_preference=ReadPreference.SECONDARY) == (
                10107, "NotWritablePrimary",
                "cannot satisfy linearizable read concern on non-primary node")
            wait_for(lambda: direct.causal.get_collection(
                "docs", read_concern=ReadConcern("majority"),
                read_preference=ReadPreference.SECONDARY).count_documents({}) == 40,
                what="the majority-committed writes on a secondary")
            # A cluster time no member wrote: the secondary waits for it, until maxTimeMS.
            now = direct.admin.command("ping")["$clusterTime"]["clusterTime"]
            ahead = ts_seconds_ahead(now, 3600)
            reply = raw(members[1], {"find": "docs", "readConcern": {"afterClusterTime": ahead},
                                     "$clusterTime": {"clusterTime": ahead,
                                                      "signature": ZERO_SIGNATURE},
                                     "maxTimeMS": 300, "$readPreference": {"mode": "secondary"},
                                     "$db": "causal"})
            assert (reply["ok"], reply["code"]) == (0, 50), reply
        finally:
            direct.close()
    finally:
        rs.close()


def test_a_read_refused_after_it_ran_leaves_no_cursor(fresh_server):
    """A linearizable find that cannot be confirmed (the secondaries are stopped) fails after it
    read: the cursor it opened for the rest of its batches is closed with it."""
    members = start_set(fresh_server)
    c = members[0].client(directConnection=True)
    try:
        db = c.get_database("rc", write_concern=WriteConcern(w="majority"))
        db.docs.insert_many([{"_id": i} for i in range(10)])
        open_before = c.admin.command("serverStatus")["metrics"]["cursor"]["open"]["total"]
        for m in members[1:]:
            os.kill(m.proc.pid, signal.SIGSTOP)
        try:
            reply = run_command(db, {"find": "docs", "batchSize": 1, "maxTimeMS": 300,
                                     "readConcern": {"level": "linearizable"}})
        finally:
            for m in members[1:]:
                os.kill(m.proc.pid, signal.SIGCONT)
        # It ran, then its confirmation timed out (or found the member no longer primary).
        assert reply["ok"] == 0 and reply["code"] in (50, 187, 10107), reply
        assert c.admin.command("serverStatus")["metrics"]["cursor"]["open"]["total"] == \
            open_before
    finally:
        c.close()


def test_an_idle_primary_writes_periodic_noops(fresh_server):
    s, c = primary_of_one(fresh_server, extra=["--setParameter", "periodicNoopIntervalSecs=1"])
    try:
        assert c.admin.command("getParameter", 1, periodicNoopIntervalSecs=1)[
            "periodicNoopIntervalSecs"] == 1
        assert c.admin.command("getParameter", 1, writePeriodicNoops=1)["writePeriodicNoops"]
        before = c.admin.command("hello")["lastWrite"]["opTime"]["ts"]
        # Nobody writes; the primary's optime still moves, by mongod's no-op entries.
        wait_for(lambda: oplog(s, {"op": "n", "o.msg": "periodic noop"}), 10,
                 what="a periodic no-op in the oplog")
        wait_for(lambda: c.admin.command("hello")["lastWrite"]["opTime"]["ts"] > before, 10,
                 what="the primary's lastWrite to move")
    finally:
        c.close()
    # A value outside mongod's range is refused at startup.
    bad = fresh_server.new(extra_args=["--replSet", "rs0", "--setParameter",
                                       "periodicNoopIntervalSecs=11"], start=False)
    with pytest.raises(RuntimeError) as e:
        bad.start()
    assert "periodicNoopIntervalSecs" in str(e.value)
