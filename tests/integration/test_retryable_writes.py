"""Retryable writes (issue 19): a write sent again with the same lsid and txnNumber — what a driver
does after a network error or a failover — runs each of its statements once, on the member that
ran it first and on any member that becomes primary after it. Compared with what MongoDB documents
for retryable writes: the answers of retried statements (insert's n, update's n/nModified/
upserted, delete's n, findAndModify's value), `retriedStmtIds`/`retriedStmtId`, serverStatus's
transactions counters, and the errors (TransactionTooOld 225, retryable writes with multi=true or
limit=0 refused with 72, txnNumber on other commands 50768, multi-document transactions refused).
"""

import datetime
import re
import threading
import time
import uuid

import pymongo
import pytest
from bson import Binary, Int64
from pymongo import ReadPreference
from pymongo.write_concern import WriteConcern

import wire
from test_replica_set import hello_of, start_set, wait_for
from test_replication_log import primary_of_one, set_client, wait_same_hashes

BASE = datetime.datetime(2026, 12, 1)


def raw(server, db, doc):
    """Sends `doc` as it is (pymongo would put its own session's lsid in it)."""
    sock = wire.connect(server.port)
    try:
        return wire.command(sock, dict(doc, **{"$db": db}))
    finally:
        sock.close()


class Session:
    """A logical session of its own (pymongo's pooled sessions number their own writes), whose
    retryable writes go to `server` as a driver sends them: lsid, txnNumber."""

    def __init__(self, server, db):
        self.server, self.db = server, db
        self.lsid = {"id": Binary(uuid.uuid4().bytes, 4)}

    def run(self, cmd, txn):
        return raw(self.server, self.db, dict(cmd, lsid=self.lsid, txnNumber=Int64(txn)))


@pytest.fixture
def member_db(fresh_server):
    s, c = primary_of_one(fresh_server)
    yield s, c, c.rw
    c.close()


# -- each statement runs once --------------------------------------------------------------


def test_an_insert_sent_again_inserts_nothing_more(member_db):
    server, c, db = member_db
    s = Session(server, "rw")
    first = s.run({"insert": "docs", "documents": [{"_id": 1}, {"_id": 2}]}, 1)
    assert first["ok"] == 1 and first["n"] == 2 and "retriedStmtIds" not in first
    again = s.run({"insert": "docs", "documents": [{"_id": 1}, {"_id": 2}]}, 1)
    # No duplicate key error: the statements ran; the retry reports them done.
    assert again["ok"] == 1 and again["n"] == 2, again
    assert again["retriedStmtIds"] == [0, 1]
    assert "writeErrors" not in again
    # A retry that carries a statement the first attempt never reached runs that one only.
    more = s.run({"insert": "docs", "documents": [{"_id": 1}, {"_id": 2},
                                                               {"_id": 3}]}, 1)
    assert more["n"] == 3 and more["retriedStmtIds"] == [0, 1]
    # A new txnNumber is a new write: the same documents now collide.
    fresh = s.run({"insert": "docs", "documents": [{"_id": 1}]}, 2)
    assert fresh["writeErrors"][0]["code"] == 11000
    assert sorted(d["_id"] for d in db.docs.find()) == [1, 2, 3]


def test_statements_are_known_by_the_ids_the_command_gives(member_db):
    server, c, db = member_db
    s = Session(server, "rw")
    first = s.run({"insert": "ids", "documents": [{"_id": 1}, {"_id": 2}], "stmtIds": [5, 6]}, 1)
    assert first["n"] == 2
    # Statement 6 sent again at another place in the batch is still statement 6.
    again = s.run({"insert": "ids", "documents": [{"_id": 2}, {"_id": 3}], "stmtIds": [6, 7]}, 1)
    assert again["n"] == 2 and again["retriedStmtIds"] == [6], again
    # Without stmtIds: stmtId + index.
    more = s.run({"insert": "ids", "documents": [{"_id": 3}, {"_id": 4}], "stmtId": 7}, 1)
    assert more["n"] == 2 and more["retriedStmtIds"] == [7], more
    assert sorted(d["_id"] for d in db.ids.find()) == [1, 2, 3, 4]


def test_documents_without_id_are_inserted_once(member_db):
    server, c, db = member_db
    s = Session(server, "rw")
    for _ in range(3):
        r = s.run({"insert": "noid", "documents": [{"v": 1}, {"v": 2}]}, 7)
        assert r["n"] == 2
    assert db.noid.count_documents({}) == 2


def test_measurements_sent_again_are_inserted_once(member_db):
    server, c, db = member_db
    db.create_collection("cpu", timeseries={"timeField": "t", "metaField": "host"})
    docs = [{"t": BASE + datetime.timedelta(seconds=i), "host": f"h{i % 3}", "v": i}
            for i in range(30)]
    s = Session(server, "rw")
    assert s.run({"insert": "cpu", "documents": docs}, 1)["n"] == 30
    again = s.run({"insert": "cpu", "documents": docs}, 1)
    # MongoDB counts retried measurements in n and lists no retriedStmtIds for them.
    assert again["ok"] == 1 and again["n"] == 30 and "retriedStmtIds" not in again
    more = docs + [{"t": BASE + datetime.timedelta(seconds=99), "host": "h9", "v": 99}]
    assert s.run({"insert": "cpu", "documents": more}, 1)["n"] == 31
    assert db.cpu.count_documents({}) == 31
    assert db.cpu.count_documents({"host": "h9"}) == 1
    assert sorted(d["v"] for d in db.cpu.find()) == list(range(30)) + [99]


def test_an_update_sent_again_applies_once(member_db):
    server, c, db = member_db
    db.counters.insert_one({"_id": "a", "n": 0})
    s = Session(server, "rw")
    cmd = {"update": "counters", "updates": [
        {"q": {"_id": "a"}, "u": {"$inc": {"n": 1}}},
        {"q": {"_id": "b"}, "u": {"$inc": {"n": 10}}, "upsert": True},
        {"q": {"_id": "none"}, "u": {"$inc": {"n": 1}}}]}
    first = s.run(cmd, 3)
    assert (first["n"], first["nModified"]) == (2, 1)
    assert first["upserted"] == [{"index": 1, "_id": "b"}]
    again = s.run(cmd, 3)
    # The same answer; the statement that wrote nothing runs again (it changes nothing).
    assert (again["n"], again["nModified"]) == (2, 1), again
    assert again["upserted"] == [{"index": 1, "_id": "b"}]
    assert again["retriedStmtIds"] == [0, 1]
    assert db.counters.find_one({"_id": "a"})["n"] == 1
    assert db.counters.find_one({"_id": "b"})["n"] == 10


def test_measurement_updates_and_deletes_sent_again_apply_once(member_db):
    server, c, db = member_db
    db.create_collection("m", timeseries={"timeField": "t", "metaField": "host"})
    db.m.insert_many([{"t": BASE + datetime.timedelta(seconds=i), "host": "a", "v": i}
                      for i in range(5)])
    s = Session(server, "rw")
    inc = {"update": "m", "updates": [{"q": {"v": 2}, "u": {"$inc": {"v": 100}}}]}
    first = s.run(inc, 1)
    assert (first["n"], first["nModified"]) == (1, 1), first
    again = s.run(inc, 1)
    assert (again["n"], again["nModified"], again["retriedStmtIds"]) == (1, 1, [0]), again
    assert sorted(d["v"] for d in db.m.find()) == [0, 1, 3, 4, 102]
    upsert = {"update": "m", "updates": [
        {"q": {"host": "z", "t": BASE}, "u": {"$set": {"v": 7}}, "upsert": True}]}
    first = s.run(upsert, 2)
    assert first["n"] == 1 and first["upserted"][0]["index"] == 0, first
    again = s.run(upsert, 2)
    assert again["upserted"] == first["upserted"] and again["retriedStmtIds"] == [0], again
    assert db.m.count_documents({"host": "z"}) == 1
    delete = {"delete": "m", "deletes": [{"q": {"host": "a"}, "limit": 1}]}
    assert s.run(delete, 3)["n"] == 1
    again = s.run(delete, 3)
    assert again["n"] == 1 and again["retriedStmtIds"] == [0], again
    assert db.m.count_documents({"host": "a"}) == 4
    # Statements that change many measurements are not retryable, as mongod says.
    r = s.run({"delete": "m", "deletes": [{"q": {"host": "a"}, "limit": 0}]}, 4)
    assert r["writeErrors"][0]["code"] == 72
    assert db.m.count_documents({"host": "a"}) == 4


def test_a_delete_sent_again_reports_what_it_deleted(member_db):
    server, c, db = member_db
    db.items.insert_many([{"_id": i, "k": i % 2} for i in range(6)])
    s = Session(server, "rw")
    cmd = {"delete": "items", "deletes": [{"q": {"k": 0}, "limit": 1}]}
    assert s.run(cmd, 1)["n"] == 1
    again = s.run(cmd, 1)
    assert again["n"] == 1 and again["retriedStmtIds"] == [0]
    assert db.items.count_documents({"k": 0}) == 2  # one deleted, not two


def test_find_and_modify_sent_again_answers_the_same_document(member_db):
    server, c, db = member_db
    db.jobs.insert_many([{"_id": 1, "state": "new", "tries": 0},
                         {"_id": 2, "state": "new", "tries": 0}])
    s = Session(server, "rw")
    take = {"findAndModify": "jobs", "query": {"state": "new"}, "sort": {"_id": 1},
            "update": {"$set": {"state": "taken"}, "$inc": {"tries": 1}}}
    first = s.run(take, 1)
    assert first["value"] == {"_id": 1, "state": "new", "tries": 0}
    again = s.run(take, 1)
    # The retry answers the document the first attempt took, not the next one.
    assert again["value"] == first["value"]
    assert again["lastErrorObject"] == {"n": 1, "updatedExisting": True}
    assert again["retriedStmtId"] == 0
    new = dict(take, new=True, fields={"tries": 1})
    after = s.run(new, 2)
    assert after["value"] == {"_id": 2, "tries": 1}
    assert s.run(new, 2)["value"] == {"_id": 2, "tries": 1}
    gone = s.run({"findAndModify": "jobs", "query": {}, "sort": {"_id": 1},
                             "remove": True}, 3)
    assert gone["value"]["_id"] == 1
    again = s.run({"findAndModify": "jobs", "query": {}, "sort": {"_id": 1},
                              "remove": True}, 3)
    assert again["value"]["_id"] == 1 and again["lastErrorObject"] == {"n": 1}
    assert [d["_id"] for d in db.jobs.find()] == [2]
    assert db.jobs.find_one({"_id": 2})["tries"] == 1


def test_retries_survive_a_restart(member_db):
    s, c, db = member_db
    sess = Session(s, "rw")
    assert sess.run({"insert": "k", "documents": [{"_id": 1}]}, 5)["n"] == 1
    s.kill()
    s.start(port=s.port)
    wait_for(lambda: hello_of(s).get("isWritablePrimary"), what="the member to be primary")
    r = sess.run({"insert": "k", "documents": [{"_id": 1}]}, 5)
    assert r["n"] == 1 and r["retriedStmtIds"] == [0], r
    r = sess.run({"insert": "k", "documents": [{"_id": 9}]}, 4)
    assert (r["code"], r["codeName"]) == (225, "TransactionTooOld")
    c2 = s.client()
    try:
        assert [d["_id"] for d in c2.rw.k.find()] == [1]
    finally:
        c2.close()


# -- errors --------------------------------------------------------------------------------


def test_an_older_txn_number_is_refused(member_db):
    server, c, db = member_db
    s = Session(server, "rw")
    assert s.run({"insert": "t", "documents": [{"_id": 1}]}, 10)["ok"] == 1
    r = s.run({"insert": "t", "documents": [{"_id": 2}]}, 9)
    assert (r["code"], r["codeName"]) == (225, "TransactionTooOld")
    assert re.match(r"Retryable write with txnNumber 9 is prohibited on session "
                    r"[0-9a-f-]{36} - .* because a newer retryable write with txnNumber 10 "
                    r"has already started on this session\.", r["errmsg"]), r["errmsg"]
    assert db.t.count_documents({"_id": 2}) == 0


def test_multi_statements_are_refused_in_retryable_writes(member_db):
    server, c, db = member_db
    db.m.insert_many([{"_id": i} for i in range(3)])
    s = Session(server, "rw")
    r = s.run({"update": "m", "updates": [
        {"q": {"_id": 0}, "u": {"$set": {"a": 1}}},
        {"q": {}, "u": {"$set": {"b": 1}}, "multi": True}], "ordered": False}, 1)
    assert r["n"] == 1
    err = r["writeErrors"][0]
    assert (err["index"], err["code"]) == (1, 72)
    assert err["errmsg"] == "Cannot use (or request) retryable writes with multi=true"
    r = s.run({"delete": "m", "deletes": [{"q": {}, "limit": 0}]}, 2)
    assert r["n"] == 0 and r["writeErrors"][0]["code"] == 72
    assert r["writeErrors"][0]["errmsg"] == \
        "Cannot use (or request) retryable writes with limit=0"
    assert db.m.count_documents({}) == 3 and db.m.count_documents({"b": 1}) == 0


def test_txn_number_arguments_are_checked(member_db):
    server, c, db = member_db
    lsid = {"id": Binary(uuid.uuid4().bytes, 4)}
    r = raw(server, "rw", {"insert": "x", "documents": [{}], "txnNumber": Int64(-1),
                           "lsid": lsid})
    assert (r["code"], r["errmsg"]) == (72, "Transaction number cannot be negative")
    r = raw(server, "rw", {"insert": "x", "documents": [{}], "txnNumber": Int64(1)})
    assert (r["code"], r["errmsg"]) == (
        72, "Transaction number requires a session ID to also be specified")
    r = raw(server, "rw", {"insert": "x", "documents": [{}], "txnNumber": 1, "lsid": lsid})
    assert r["code"] == 14 and "txnNumber" in r["errmsg"]
    # The statement ids a command may give its statements (mongod's stmtId / stmtIds).
    r = raw(server, "rw", {"insert": "x", "documents": [{}], "txnNumber": Int64(1),
                           "lsid": lsid, "stmtIds": "0"})
    assert r["code"] == 14 and "stmtIds" in r["errmsg"], r
    r = raw(server, "rw", {"insert": "x", "documents": [{}], "txnNumber": Int64(1),
                           "lsid": lsid, "stmtIds": [0.5]})
    assert r["code"] == 14 and "stmtIds" in r["errmsg"], r
    r = raw(server, "rw", {"update": "x", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}],
                           "txnNumber": Int64(1), "lsid": lsid, "stmtId": Int64(3)})
    assert r["code"] == 14 and "stmtId" in r["errmsg"], r
    # On a replica set member only the retryable write commands take a txnNumber (mongod).
    r = raw(server, "rw", {"find": "x", "txnNumber": Int64(1), "lsid": lsid})
    assert (r["code"], r["codeName"]) == (50768, "NotARetryableWriteCommand")
    assert "find is not a retryable write command" in r["errmsg"]
    # Multi-document transactions are refused, not run as plain writes.
    r = raw(server, "rw", {"insert": "x", "documents": [{"_id": "tx"}], "txnNumber": Int64(2),
                           "lsid": lsid, "autocommit": False, "startTransaction": True})
    assert (r["code"], r["codeName"]) == (115, "CommandNotSupported")
    assert db.x.count_documents({"_id": "tx"}) == 0


def test_a_standalone_refuses_transactions_and_keeps_retries_once(server, db):
    s = Session(server, db.name)
    r = raw(server, db.name, {"insert": "tx", "documents": [{"_id": 1}], "txnNumber": Int64(1),
                              "lsid": s.lsid, "autocommit": False, "startTransaction": True})
    assert (r["code"], r["codeName"]) == (20, "IllegalOperation")
    assert r["errmsg"] == \
        "Transaction numbers are only allowed on a replica set member or mongos"
    # A standalone takes retryable writes (docs/compatibility.md) and runs them once, its
    # time-series measurements too (recorded after their journal entry: write-back).
    db.create_collection("ts", timeseries={"timeField": "t"})
    measurements = [{"t": BASE + datetime.timedelta(minutes=i), "v": i} for i in range(5)]
    other = Session(server, db.name)
    for _ in range(2):
        assert s.run({"insert": "tx", "documents": [{"_id": 2}]}, 1)["n"] == 1
        assert other.run({"insert": "ts", "documents": measurements}, 1)["n"] == 5
    assert db.tx.count_documents({}) == 1
    assert db.ts.count_documents({}) == 5


def test_server_status_counts_retries(member_db):
    server, c, db = member_db
    before = c.admin.command("serverStatus")["transactions"]
    s = Session(server, "rw")
    cmd = {"insert": "ss", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]}
    s.run(cmd, 1)
    s.run(cmd, 1)
    after = c.admin.command("serverStatus")["transactions"]
    assert after["retriedCommandsCount"] - before["retriedCommandsCount"] == 1
    assert after["retriedStatementsCount"] - before["retriedStatementsCount"] == 3
    assert after["transactionsCollectionWriteCount"] > before["transactionsCollectionWriteCount"]


# -- across a failover ---------------------------------------------------------------------


def test_a_retry_after_failover_runs_nothing_twice(fresh_server):
    members = start_set(fresh_server)
    rs = set_client(members)
    try:
        db = rs.get_database("fo", write_concern=WriteConcern(w="majority", wtimeout=20000))
        db.create_collection("cpu", timeseries={"timeField": "t", "metaField": "host"})
        db.counters.insert_one({"_id": "c", "n": 0})
        docs = [{"_id": i} for i in range(50)]
        measurements = [{"t": BASE + datetime.timedelta(seconds=i), "host": f"h{i % 4}", "v": i}
                        for i in range(40)]
        inc = {"update": "counters", "updates": [{"q": {"_id": "c"}, "u": {"$inc": {"n": 1}}}]}
        old = next(m for m in members if hello_of(m).get("isWritablePrimary"))
        sessions = [Session(old, "fo") for _ in range(3)]
        writes = [{"insert": "docs", "documents": docs},
                  {"insert": "cpu", "documents": measurements}, inc]
        majority = {"writeConcern": {"w": "majority"}}
        first = [s.run(dict(w, **majority), 4) for s, w in zip(sessions, writes)]
        assert [first[0]["n"], first[1]["n"], first[2]["nModified"]] == [50, 40, 1], first
        # The primary dies; the retries reach the new one, which knows what ran.
        old.kill()
        survivors = [m for m in members if m is not old]
        new_primary = wait_for(
            lambda: next((m for m in survivors if hello_of(m).get("isWritablePrimary")), None),
            30, what="a new primary")
        for s in sessions:
            s.server = new_primary
        again = [s.run(w, 4) for s, w in zip(sessions, writes)]
        assert again[0]["n"] == 50 and again[0]["retriedStmtIds"] == list(range(50)), again[0]
        assert again[1]["n"] == 40 and "writeErrors" not in again[1], again[1]
        assert again[2]["nModified"] == 1 and again[2]["retriedStmtIds"] == [0], again[2]
        # The new primary knows each session's number: an older one is refused.
        assert sessions[2].run(inc, 3)["code"] == 225
        assert db.docs.count_documents({}) == 50
        assert db.cpu.count_documents({}) == 40
        assert db.counters.find_one({"_id": "c"})["n"] == 1
        primary = next(m for m in survivors if hello_of(m).get("isWritablePrimary"))
        wait_same_hashes([primary] + [m for m in survivors if m is not primary], "fo")
        sec = rs.get_database("fo", read_preference=ReadPreference.SECONDARY)
        wait_for(lambda: sec.cpu.count_documents({}) == 40, 20, what="the secondary's copy")
    finally:
        rs.close()


def test_a_driver_retries_writes_across_a_failover(fresh_server):
    """pymongo's own retryable writes (retryWrites=true, its default): four writers insert
    measurements while the primary is killed; every acknowledged one is present exactly once
    (a retry of an insert that had run would store it twice: measurements have no unique key)."""
    members = start_set(fresh_server)
    rs = set_client(members, retryWrites=True)
    try:
        db = rs.get_database("drv", write_concern=WriteConcern(w="majority"))
        db.create_collection("m", timeseries={"timeField": "t", "metaField": "w"})
        acknowledged = []
        stop = threading.Event()

        def writer(n):
            i = 0
            while not stop.is_set():
                seq = n * 1_000_000 + i
                i += 1  # each measurement is sent once by the writer (the driver may retry it)
                try:
                    db.m.insert_one({"t": BASE + datetime.timedelta(milliseconds=seq),
                                     "w": n, "seq": seq})
                    acknowledged.append(seq)
                except pymongo.errors.PyMongoError:  # no primary yet
                    time.sleep(0.05)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        old = next(m for m in members if hello_of(m).get("isWritablePrimary"))
        old.kill()
        count_at_kill = len(acknowledged)
        wait_for(lambda: len(acknowledged) > count_at_kill + 100, 20, what="writes to resume")
        stop.set()
        for t in threads:
            t.join()
        counts = {}
        for d in db.m.find({}, {"seq": 1}):
            counts[d["seq"]] = counts.get(d["seq"], 0) + 1
        assert not [s for s in acknowledged if s not in counts]
        twice = {s: c for s, c in counts.items() if c > 1}
        assert not twice, list(twice.items())[:5]
    finally:
        rs.close()
