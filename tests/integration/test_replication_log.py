"""The replicated log (issue 19): every write on the primary becomes oplog entries — readable in
local.oplog.rs with MongoDB's fields (op, ns, ui, o, o2, ts, t, v, wall) — committed by Raft and
applied on every member, so secondaries serve the same data (dbHash checksums equal); write
concerns w: "majority", w: <n> and wtimeout; acknowledged majority writes survive kill -9 of the
primary. Compared with what MongoDB documents for the oplog, write concerns and replica set
reads."""

import datetime
import random
import signal
import threading
import time

import bson
import pymongo
import pytest
from bson import Timestamp
from bson.binary import Binary, UuidRepresentation
from pymongo import ReadPreference
from pymongo.errors import OperationFailure, WriteConcernError
from pymongo.write_concern import WriteConcern

from test_replica_set import (SET, hello_of, host_of, initiate, member, start_set, wait_for,
                              wait_primary)


def set_client(members, **kwargs):
    seeds = ",".join(host_of(m) for m in members)
    return pymongo.MongoClient(f"mongodb://{seeds}/?replicaSet={SET}",
                               serverSelectionTimeoutMS=15000, **kwargs)


def db_hashes(server, db):
    c = server.client(directConnection=True)
    try:
        return c[db].command("dbHash", read_preference=ReadPreference.SECONDARY_PREFERRED)
    finally:
        c.close()


def wait_same_hashes(members, db, timeout=30.0):
    """Waits until every member's dbHash of `db` equals the primary's (members[0]'s)."""
    def same():
        want = db_hashes(members[0], db)["collections"]
        return want if all(db_hashes(m, db)["collections"] == want for m in members[1:]) else None
    return wait_for(same, timeout, what=f"every member's dbHash of {db} to match")


def oplog(server, query=None):
    c = server.client()
    try:
        return list(c.local["oplog.rs"].find(query or {}).sort("$natural", 1))
    finally:
        c.close()


# -- one member: the entries ---------------------------------------------------------------


def primary_of_one(fresh_server, extra=()):
    """A set of one (its member started with `extra` arguments), initiated and primary: the
    server and a client of it."""
    s = member(fresh_server, extra=extra)
    initiate(s)
    wait_primary(s)
    return s, s.client()


def test_writes_become_oplog_entries(fresh_server):
    s, c = primary_of_one(fresh_server)
    db = c.logtest
    db.create_collection("docs")
    uuid = db.command("listCollections", filter={"name": "docs"})["cursor"]["firstBatch"][0][
        "info"]["uuid"]
    db.docs.insert_one({"_id": 1, "x": 1})
    db.docs.update_one({"_id": 1}, {"$set": {"x": 2}})
    db.docs.delete_one({"_id": 1})
    db.docs.create_index("x")
    db.docs.drop_index("x_1")
    entries = [e for e in oplog(s) if e["ns"].startswith("logtest.")]
    ops = [(e["op"], e["ns"]) for e in entries]
    assert ops == [("c", "logtest.$cmd"), ("i", "logtest.docs"), ("u", "logtest.docs"),
                   ("d", "logtest.docs"), ("c", "logtest.$cmd"), ("c", "logtest.$cmd")], ops
    create, ins, upd, dele, ci, di = entries
    assert create["o"]["create"] == "docs"
    assert ins["o"] == {"_id": 1, "x": 1}
    # An update is logged as mongod logs it: its diff ($v: 2), keyed by _id in o2.
    assert upd["o"] == {"$v": 2, "diff": {"u": {"x": 2}}} and upd["o2"] == {"_id": 1}
    assert dele["o"] == {"_id": 1}
    assert ci["o"]["createIndexes"] == "docs" and ci["o"]["key"] == {"x": 1}
    assert di["o"] == {"dropIndexes": "docs", "index": "x_1"}
    for e in entries:
        assert isinstance(e["ts"], Timestamp) and isinstance(e["t"], int) and e["t"] >= 1
        assert e["v"] == 2 and isinstance(e["wall"], datetime.datetime)
        assert e["ui"] == uuid
    # Timestamps rise in the oplog's natural order, and a time-series insert logs its bucket.
    assert [e["ts"] for e in entries] == sorted(e["ts"] for e in entries)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_one({"t": datetime.datetime(2026, 1, 1), "m": "a", "v": 1})
    buckets = [e for e in oplog(s) if e["ns"] == "logtest.system.buckets.ts"]
    assert len(buckets) == 1 and buckets[0]["op"] == "i"
    assert buckets[0]["o"]["meta"] == "a"
    assert buckets[0]["o"]["control"]["min"]["t"] == datetime.datetime(2026, 1, 1)
    # An append to the bucket is logged as mongod 8.0 logs it (o2 names the bucket): a diff of
    # control (the new count) and of data, each column's append a binary diff ({o, d}: the column
    # keeps o bytes, then d), not the bucket. Applied to the bucket before, it gives the bucket.
    db.ts.insert_one({"t": datetime.datetime(2026, 1, 1, 0, 0, 1), "m": "a", "v": 2,
                      "new": "field"})
    appends = [e for e in oplog(s) if e["ns"] == "logtest.system.buckets.ts" and e["op"] == "u"]
    assert len(appends) == 1 and appends[0]["o2"] == {"_id": buckets[0]["o"]["_id"]}
    o = appends[0]["o"]
    assert o["$v"] == 2 and set(o) == {"$v", "diff"}, o
    diff = o["diff"]
    assert list(diff) == ["scontrol", "sdata"], diff
    # control as mongod diffs it: the count, and sub-diffs of min and max (the start time, which
    # keys the bucket's series, unnamed).
    assert diff["scontrol"]["u"] == {"count": 2} and diff["scontrol"]["smin"] == {
        "i": {"new": "field"}}
    assert set(diff["scontrol"]["smax"]["u"]) == {"_id", "t", "v"}
    assert set(diff["sdata"]["b"]) == {"_id", "t", "v"} and set(diff["sdata"]["i"]) == {"new"}
    for col in diff["sdata"]["b"].values():
        assert set(col) == {"o", "d"} and isinstance(col["o"], int) and col["o"] >= 0
    stored = c.logtest.system.buckets.ts.find_one()
    assert bson.encode(apply_diff(buckets[0]["o"], diff)) == bson.encode(stored)
    # An append to a bucket of hundreds of rows logs what it adds, not the bucket.
    rng = random.Random(7)
    db.ts.insert_many([{"t": datetime.datetime(2026, 1, 1, 0, 1, i % 60), "m": "a",
                        "v": rng.random(), "new": "field"} for i in range(400)])
    before = c.logtest.system.buckets.ts.find_one()
    db.ts.insert_one({"t": datetime.datetime(2026, 1, 1, 0, 2), "m": "a", "v": 0.5})
    last = [e for e in oplog(s) if e["ns"] == "logtest.system.buckets.ts" and e["op"] == "u"][-1]
    after = c.logtest.system.buckets.ts.find_one()
    assert after["control"]["count"] == 403 and last["o2"] == {"_id": after["_id"]}
    assert len(bson.encode(last["o"])) * 4 < len(bson.encode(before)), last["o"]
    assert bson.encode(apply_diff(before, last["o"]["diff"])) == bson.encode(after)
    # Fields removed, changed and added: one diff; a replacement that reorders the fields: the
    # document (as is one whose diff would be no shorter than it, mongod's rule too).
    text = "unchanged " * 10
    db.more.insert_one({"_id": 1, "a": "first", "b": "second", "c": text})
    db.more.update_one({"_id": 1}, {"$unset": {"a": 1}, "$set": {"b": "2nd", "d": "fourth"}})
    db.more.replace_one({"_id": 1}, {"c": text, "b": "2nd"})
    db.more.update_one({"_id": 1}, {"$set": {"c": "short"}})
    upds = [e for e in oplog(s) if e["ns"] == "logtest.more" and e["op"] == "u"]
    assert [u["o"] for u in upds] == [
        {"$v": 2, "diff": {"d": {"a": False}, "u": {"b": "2nd"}, "i": {"d": "fourth"}}},
        {"_id": 1, "c": text, "b": "2nd"}, {"$v": 2, "diff": {"u": {"c": "short"}}}]
    # The local database is not logged.
    c.local.mine.insert_one({"_id": 1})
    assert not [e for e in oplog(s) if e["ns"].startswith("local.")]
    c.close()


def apply_diff(doc, diff):
    """`doc` with MongoDB's update diff `diff` applied, as mongod applies one: `d` removes, `u`
    replaces in place (adds at the end when missing), `i` adds at the end, `s<name>` is the diff
    of the sub-document `name`, `b` cuts a binary at `o` and appends `d`."""
    out = {}
    for name, value in doc.items():
        if name in diff.get("d", {}):
            continue
        if name in diff.get("u", {}):
            out[name] = diff["u"][name]
        elif name in diff.get("b", {}):
            spec = diff["b"][name]
            out[name] = Binary(bytes(value)[:spec["o"]] + bytes(spec["d"]), value.subtype)
        elif "s" + name in diff:
            out[name] = apply_diff(value, diff["s" + name])
        else:
            out[name] = value
    for name, value in list(diff.get("u", {}).items()) + list(diff.get("i", {}).items()):
        if name not in doc:
            out[name] = value
    return out


def written_together(client):
    return client.admin.command("serverStatus")["hourglass"]["timeseries"][
        "bucketsWrittenTogether"]


def test_a_requests_buckets_commit_together(fresh_server):
    """An insertMany that reaches many series writes their buckets in one storage transaction:
    one batch of the log (its entries side by side, one wall time) rather than one per bucket.
    When that transaction fails, each bucket is written in a transaction of its own, and every
    measurement is still written once."""
    s, c = primary_of_one(fresh_server, extra=["--setParameter", "enableTestCommands=1"])
    db = c.together
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2026, 3, 1)
    hosts = [f"h{i:02}" for i in range(30)]

    def insert(second):
        db.ts.insert_many([{"t": base + datetime.timedelta(seconds=second + k), "m": h, "v": k}
                           for h in hosts for k in range(2)])

    def bucket_entries():
        return [e for e in oplog(s) if e["ns"] == "together.system.buckets.ts"]

    before = written_together(c)
    insert(0)
    assert written_together(c) - before == 30
    entries = oplog(s)
    firsts = [i for i, e in enumerate(entries) if e["ns"] == "together.system.buckets.ts"]
    # Thirty bucket inserts, next to each other in the log, written at one wall time.
    assert len(firsts) == 30 and firsts == list(range(firsts[0], firsts[0] + 30))
    assert {entries[i]["op"] for i in firsts} == {"i"}
    assert len({entries[i]["wall"] for i in firsts}) == 1
    assert sorted(entries[i]["o"]["meta"] for i in firsts) == hosts
    # Appends to the thirty open buckets: thirty updates, together again.
    insert(10)
    assert written_together(c) - before == 60
    appends = [e for e in bucket_entries() if e["op"] == "u"]
    assert len(appends) == 30 and len({e["wall"] for e in appends}) == 1
    # A bucket deleted under its open bucket: its rows start a new one.
    db["system.buckets.ts"].delete_one({"meta": "h00"})
    insert(20)
    assert written_together(c) - before == 90
    # A shared transaction that fails: each bucket is written alone, its rows once.
    fp = "failTimeseriesWriteTogether"
    c.admin.command("configureFailPoint", fp, mode={"times": 1})
    insert(30)
    assert written_together(c) - before == 90
    c.admin.command("configureFailPoint", fp, mode="off")
    for h in hosts:
        want = 4 if h == "h00" else 8
        got = sorted((d["t"], d["v"]) for d in db.ts.find({"m": h}))
        assert len(got) == want and len(set(got)) == want, (h, got)
    assert sorted(b["meta"] for b in db["system.buckets.ts"].find()) == hosts
    # The next request's buckets go together again, and every bound is exact.
    insert(40)
    assert written_together(c) - before == 120
    for b in db["system.buckets.ts"].find():
        rows = list(db.ts.find({"m": b["meta"]}))
        # control.min's time is rounded down to the minute (granularity "seconds").
        assert b["control"]["min"]["t"] == min(r["t"] for r in rows).replace(second=0)
        assert b["control"]["max"]["t"] == max(r["t"] for r in rows)
        assert b["control"]["max"]["v"] == 1 and b["control"]["min"]["v"] == 0
    assert db.ts.count_documents({}) == 6 + 29 * 10
    c.close()


def test_write_concern_arguments(fresh_server):
    _, c = primary_of_one(fresh_server)
    coll = c.wc.docs
    coll.with_options(write_concern=WriteConcern(w="majority", wtimeout=5000)).insert_one({"a": 1})
    coll.with_options(write_concern=WriteConcern(w=1)).insert_one({"a": 2})
    coll.with_options(write_concern=WriteConcern(w=0)).insert_one({"a": 3})
    wait_for(lambda: coll.count_documents({}) == 3, what="the unacknowledged insert")
    # Write concerns the set cannot satisfy: the write is done, the reply's writeConcernError
    # says why (pymongo raises it as WriteConcernError).
    with pytest.raises(WriteConcernError) as e:
        coll.with_options(write_concern=WriteConcern(w=2)).insert_one({"a": 4})
    assert e.value.code == 100  # UnsatisfiableWriteConcern: one member
    with pytest.raises(WriteConcernError) as e:
        coll.with_options(write_concern=WriteConcern(w="dc1")).insert_one({"a": 5})
    assert e.value.code == 79  # UnknownReplWriteConcern
    assert coll.count_documents({"a": {"$in": [4, 5]}}) == 2
    # Malformed write concerns, as mongod answers them: refused before anything is written.
    for concern, code, words in [({"w": -1}, 9, "w has to be a non-negative number"),
                                 ({"w": 51}, 9, "not greater than 50"),
                                 ({"w": True}, 14, "writeConcern.w"),
                                 ({"w": 1, "wtimeout": "soon"}, 14, "writeConcern.wtimeout")]:
        with pytest.raises(OperationFailure) as e:
            c.wc.command("insert", "docs", documents=[{"bad": str(concern)}],
                         writeConcern=concern)
        assert e.value.code == code and words in str(e.value), (concern, e.value.details)
    assert coll.count_documents({"bad": {"$exists": True}}) == 0
    c.close()


def test_write_concern_range_on_a_standalone(client):
    # mongod checks w's range whether or not it is in a set.
    with pytest.raises(OperationFailure) as e:
        client.wcs.command("insert", "docs", documents=[{"a": 1}], writeConcern={"w": 99})
    assert e.value.code == 9 and "found: 99" in str(e.value)
    assert client.wcs.command("insert", "docs", documents=[{"a": 2}],
                              writeConcern={"w": 1, "wtimeout": 10})["n"] == 1


# -- three members -------------------------------------------------------------------------


def test_writes_reach_every_member(fresh_server):
    members = start_set(fresh_server)
    rs = set_client(members)
    try:
        db = rs.get_database("app", write_concern=WriteConcern(w="majority", wtimeout=20000))
        db.docs.insert_many([{"_id": i, "v": i, "tag": f"t{i % 7}"} for i in range(2000)])
        db.docs.update_many({"v": {"$lt": 100}}, {"$inc": {"v": 1000}})
        db.docs.delete_many({"tag": "t3"})
        db.docs.create_index([("tag", 1), ("v", -1)], name="tag_v")
        db.create_collection("cpu", timeseries={"timeField": "time", "metaField": "host"})
        base = datetime.datetime(2026, 12, 1)
        db.cpu.insert_many([{"time": base + datetime.timedelta(seconds=10 * i),
                             "host": f"h{i % 20}", "usage": float(i)} for i in range(3000)])
        db.create_collection("gone")
        db.gone.drop()
        db.docs.rename("documents")
        hashes = wait_same_hashes(members, "app")
        assert {"documents", "system.buckets.cpu"} <= set(hashes)
        assert "docs" not in hashes and "gone" not in hashes
        # Secondaries serve the data: reads with readPreference=secondary, and each member's own.
        sec = rs.get_database("app", read_preference=ReadPreference.SECONDARY)
        expected_docs = 2000 - len([i for i in range(2000) if i % 7 == 3])
        assert sec.documents.count_documents({}) == expected_docs
        assert sec.documents.find_one({"_id": 5})["v"] == 1005
        assert sec.cpu.count_documents({}) == 3000
        assert sec.cpu.count_documents({"host": "h7"}) == 150
        for m in members[1:]:
            direct = m.client(directConnection=True, readPreference="secondary")
            d = direct.app
            assert "tag_v" in d.documents.index_information()
            assert d.cpu.options()["timeseries"]["metaField"] == "host"
            assert sorted(d.list_collection_names()) == sorted(
                members[0].client().app.list_collection_names())
            # A secondary's oplog holds the primary's entries, same timestamps.
            logged = {"ns": {"$in": ["app.docs", "app.system.buckets.cpu"]}}
            mine = [e["ts"] for e in direct.local["oplog.rs"].find(logged)]
            theirs = [e["ts"] for e in members[0].client().local["oplog.rs"].find(logged)]
            assert mine == theirs and mine
            direct.close()
    finally:
        rs.close()


def test_majority_writes_survive_the_primary(fresh_server):
    members = start_set(fresh_server)
    rs = set_client(members, retryWrites=True)
    try:
        coll = rs.get_database("ha", write_concern=WriteConcern(w="majority")).events
        acknowledged = []
        stop = threading.Event()
        errors = []

        def writer(n):
            i = 0
            while not stop.is_set():
                doc = {"_id": f"{n}-{i}"}
                try:
                    coll.insert_one(doc)
                    acknowledged.append(doc["_id"])
                except pymongo.errors.PyMongoError as e:  # during the election
                    errors.append(e)
                    time.sleep(0.05)
                i += 1
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(2)
        members[0].kill()
        killed_at = time.monotonic()
        count_at_kill = len(acknowledged)
        wait_for(lambda: len(acknowledged) > count_at_kill + 20, 10, what="writes to resume")
        resumed = time.monotonic() - killed_at
        time.sleep(1)
        stop.set()
        for t in threads:
            t.join()
        assert resumed < 10, resumed
        # Each _id is sent once by its writer: a duplicate key could only come from a driver's
        # retry running an insert that had already run (retryable writes prevent it).
        assert not [e for e in errors if isinstance(e, pymongo.errors.DuplicateKeyError)]
        # Every write acknowledged with w: "majority" is on the new primary.
        stored = {d["_id"] for d in coll.find({}, {"_id": 1})}
        missing = [i for i in acknowledged if i not in stored]
        assert not missing, missing[:10]
        # The two others hold the same data.
        survivors = [m for m in members if m is not members[0]]
        primary = next(m for m in survivors if hello_of(m).get("isWritablePrimary"))
        wait_same_hashes([primary] + [m for m in survivors if m is not primary], "ha")
        # The old primary, restarted, rejoins: as a secondary holding every acknowledged write,
        # or — when it had committed writes the set's log never got, which needs a rollback
        # (not built yet) — RECOVERING, saying so in its log.
        members[0].start(port=members[0].port)

        def rejoined():
            old = members[0].client(directConnection=True, readPreference="secondary")
            try:
                state = old.admin.command("replSetGetStatus")["myState"]
                if state == 3:
                    return "recovering"
                if state != 2:
                    return None
                held = {d["_id"] for d in old.ha.events.find({}, {"_id": 1})}
                return "secondary" if all(i in held for i in acknowledged) else None
            finally:
                old.close()
        if wait_for(rejoined, 60, what="the old primary to rejoin") == "recovering":
            assert "needs a resync" in members[0].log_text()
    finally:
        rs.close()


def test_a_member_behind_the_snapshots_catches_up_from_the_oplog(fresh_server):
    members = start_set(fresh_server)
    behind = members[2]
    assert behind.stop() == 0
    rs = set_client(members)
    try:
        coll = rs.get_database("lag", write_concern=WriteConcern(w="majority")).docs
        # More Raft entries than Raft keeps behind its snapshots (every 1,024 entries, 2,048
        # kept): the stopped member cannot catch up from Raft's log alone. One writer waiting
        # for each commit, so that no two transactions share an entry.
        for i in range(4800):
            coll.insert_one({"_id": i, "v": i})
        behind.start(port=behind.port)
        wait_same_hashes(members, "lag", timeout=60)
        assert "Caught up from the primary's oplog" in behind.log_text()
        direct = behind.client(directConnection=True, readPreference="secondary")
        assert direct.lag.docs.count_documents({}) == 4800
        assert direct.admin.command("hello")["secondary"] is True
        direct.close()
    finally:
        rs.close()


def test_write_concerns_count_members(fresh_server):
    members = start_set(fresh_server)
    rs = set_client(members)
    try:
        coll = rs.wn.docs
        coll.with_options(write_concern=WriteConcern(w=3, wtimeout=20000)).insert_one({"_id": 1})
        coll.with_options(write_concern=WriteConcern(w=2, wtimeout=20000)).insert_one({"_id": 2})
        with pytest.raises(WriteConcernError) as e:
            coll.with_options(write_concern=WriteConcern(w=4)).insert_one({"_id": 3})
        assert e.value.code == 100
        # The primary's rs.status() shows how far each member's log goes.
        def caught_up():
            status = rs.admin.command("replSetGetStatus")
            top = max(m["optime"]["ts"] for m in status["members"])
            return all(m["optime"]["ts"] == top and m["optimeDurable"]["ts"] == top
                       for m in status["members"] if m["stateStr"] == "SECONDARY")
        wait_for(caught_up, what="the secondaries' optimes to reach the primary's")
        # Both secondaries stopped: a majority write cannot be acknowledged; wtimeout says so.
        for m in members[1:]:
            m.proc.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(WriteConcernError) as e:
                coll.with_options(write_concern=WriteConcern(w="majority", wtimeout=300)) \
                    .insert_one({"_id": 4})
            # WriteConcernFailed (errInfo.wtimeout), or PrimarySteppedDown if the primary noticed
            # it lost the majority first.
            assert e.value.code in (64, 189), e.value.details
            wce = e.value.details  # pymongo gives the writeConcernError document
            assert wce["errInfo"].get("wtimeout") is (True if e.value.code == 64 else None)
            assert wce["errInfo"]["writeConcern"] == {"w": "majority", "wtimeout": 300,
                                                      "provenance": "clientSupplied"}
        finally:
            for m in members[1:]:
                m.proc.send_signal(signal.SIGCONT)
    finally:
        rs.close()


def test_a_write_concern_wait_ends_at_max_time_ms_and_kill_op(fresh_server):
    """The write concern is waited for inside the operation: maxTimeMS and killOp end the wait,
    and the reply says the write is done but its write concern is not (writeConcernError), as
    mongod's."""
    members = start_set(fresh_server)
    c = members[0].client(directConnection=True)
    try:
        db = c.wck
        db.docs.insert_one({"_id": 0})
        for m in members[1:]:
            m.proc.send_signal(signal.SIGSTOP)
        try:
            # Right after the secondaries stopped (the primary notices it lost them only after
            # an election timeout, 1 s or more).
            result = {}

            def waiting_insert():
                result["reply"] = db.command({"insert": "docs", "documents": [{"_id": 2}],
                                              "writeConcern": {"w": "majority"}})

            t = threading.Thread(target=waiting_insert)
            t.start()

            def waiting():
                ops = c.admin.command({"currentOp": 1, "ns": "wck.docs",
                                       "command.insert": "docs"})["inprog"]
                return ops[0]["opid"] if ops else None
            opid = wait_for(waiting, 5, what="the insert waiting for its write concern")
            c.admin.command("killOp", op=opid)
            t.join(10)
            assert not t.is_alive()
            assert result["reply"]["n"] == 1
            wce = result["reply"]["writeConcernError"]
            assert (wce["code"], wce["codeName"]) == (11601, "Interrupted"), wce
            reply = db.command({"insert": "docs", "documents": [{"_id": 1}], "maxTimeMS": 300,
                                "writeConcern": {"w": "majority"}})
            assert reply["n"] == 1, reply
            wce = reply["writeConcernError"]
            # MaxTimeMSExpired, or PrimarySteppedDown if the primary noticed first.
            assert wce["code"] in (50, 189), wce
        finally:
            for m in members[1:]:
                m.proc.send_signal(signal.SIGCONT)
    finally:
        c.close()
