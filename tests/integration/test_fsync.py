"""fsync and fsyncUnlock (MongoDB 7.0 Database Commands → Administration): fsync writes every
committed write, measurements the bucket catalog holds in its journal included, to the data
files; with lock: true it then keeps every write out until fsyncUnlock, so that the files can be
copied for a backup, while reads go on."""

import datetime
import os
import threading
import time

from pymongo.errors import ConnectionFailure

from conftest import command_error


def storage_size(db, coll):
    return db.command({"collStats": coll})["storageSize"]


def test_fsync_writes_the_data_files(client, db):
    # Random bytes, which block compression cannot shrink below half as hex.
    db.plain.insert_many([{"_id": i, "pad": os.urandom(100).hex()} for i in range(20000)])
    before = storage_size(db, "plain")
    r = client.admin.command({"fsync": 1})
    assert r["ok"] == 1 and r["numFiles"] == 1
    # The checkpoint put the documents in the table's file.
    assert storage_size(db, "plain") > before + 20000 * 100 // 2


def test_fsync_writes_journaled_measurements_to_their_buckets(client, db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    # Many series, one row each per request: the bucket catalog journals them.
    for step in range(3):
        db.ts.insert_many([{"t": base + datetime.timedelta(minutes=step), "m": s, "v": step}
                           for s in range(2000)])
    client.admin.command({"fsync": 1})
    # Nothing read the buckets before fsync, so only its flush can have put the 2,000 buckets
    # in the file its checkpoint wrote (an empty table's file is 4 KB).
    assert storage_size(db, "system.buckets.ts") > 2000 * 20
    assert db["system.buckets.ts"].estimated_document_count() == 2000
    assert db.ts.count_documents({}) == 6000


def test_fsync_refusals(client, db):
    code, name, _ = command_error(db, {"fsync": 1})
    assert (code, name) == (13, "Unauthorized")
    code, name, msg = command_error(client.admin, {"fsync": 1, "lock": True, "async": True})
    assert (code, name) == (115, "CommandNotSupported"), msg
    code, name, msg = command_error(client.admin, {"fsyncUnlock": 1})
    assert (code, name) == (20, "IllegalOperation")
    assert msg == "fsyncUnlock called when not locked"
    code, _, _ = command_error(client.admin, {"fsync": 1, "bogus": 1})
    assert code == 40415
    code, _, _ = command_error(client.admin, {"fsyncUnlock": 1, "bogus": 1})
    assert code == 40415
    code, _, _ = command_error(client.admin, {"fsync": 1, "lock": "yes"})
    assert code == 14
    code, _, _ = command_error(db, {"fsyncUnlock": 1})
    assert code == 13


def wait_until(predicate, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def start_writer(fn):
    """Runs fn in a thread; returns the event it sets when fn returned. An exception fn raises
    leaves the event unset and is kept in the event's `errors`; its `thread` is the thread."""
    done = threading.Event()
    done.errors = []

    def run():
        try:
            fn()
        except Exception as e:  # the test that started it decides
            done.errors.append(e)
            return
        done.set()

    done.thread = threading.Thread(target=run, daemon=True)
    done.thread.start()
    return done


def test_fsync_lock_keeps_writes_out_until_unlocked(fresh_server):
    s = fresh_server.new()
    c, writer = s.client(), s.client()
    try:
        db = c.lockdb
        db.plain.insert_one({"_id": 0})
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        db.ts.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1})
        r = c.admin.command({"fsync": 1, "lock": True})
        assert r["info"] == "now locked against writes, use db.fsyncUnlock() to unlock"
        assert r["lockCount"] == 1 and r["seeAlso"] == "http://dochub.mongodb.org/core/fsynccommand"
        assert c.admin.command({"currentOp": 1})["fsyncLock"] is True
        wdb = writer.lockdb
        writes = [
            start_writer(lambda: wdb.plain.insert_one({"_id": 1})),
            start_writer(lambda: wdb.ts.insert_one({"t": datetime.datetime(2024, 1, 2), "m": 2})),
            start_writer(lambda: wdb.plain.update_one({"_id": 0}, {"$set": {"x": 1}})),
            start_writer(lambda: wdb.create_collection("made_while_locked")),
        ]
        time.sleep(1.0)
        assert not any(w.is_set() for w in writes)
        # Reads go on, and see none of the waiting writes.
        assert db.plain.find_one({"_id": 0}) == {"_id": 0}
        assert db.ts.count_documents({}) == 1
        assert "made_while_locked" not in db.list_collection_names()
        # A second lock is counted; the writes wait for both to be released.
        assert c.admin.command({"fsync": 1, "lock": True})["lockCount"] == 2
        r = c.admin.command({"fsyncUnlock": 1})
        assert (r["info"], r["lockCount"]) == ("fsyncUnlock completed", 1)
        time.sleep(0.5)
        assert not any(w.is_set() for w in writes)
        assert c.admin.command({"fsyncUnlock": 1})["lockCount"] == 0
        assert wait_until(lambda: all(w.is_set() for w in writes))
        assert "fsyncLock" not in c.admin.command({"currentOp": 1})
        assert db.plain.find_one({"_id": 0}) == {"_id": 0, "x": 1}
        assert db.plain.count_documents({}) == 2
        assert db.ts.count_documents({}) == 2
        assert "made_while_locked" in db.list_collection_names()
        code, _, msg = command_error(c.admin, {"fsyncUnlock": 1})
        assert code == 20 and msg == "fsyncUnlock called when not locked"
    finally:
        c.close()
        writer.close()
    assert s.shutdown_command() == 0


def test_fsync_lock_leaves_the_data_files_as_they_are(fresh_server):
    s = fresh_server.new()
    c, writer = s.client(), s.client()
    try:
        c.filesdb.plain.insert_many([{"_id": i, "pad": "x" * 100} for i in range(1000)])
        c.admin.command({"fsync": 1, "lock": True})

        def files():
            out = {}
            for root, _, names in os.walk(s.dbpath):
                for n in names:
                    if n.endswith(".wt") or n.startswith("WiredTiger"):
                        st = os.stat(os.path.join(root, n))
                        out[os.path.join(root, n)] = (st.st_size, st.st_mtime_ns)
            return out

        before = files()
        waiting = start_writer(lambda: writer.filesdb.plain.insert_many(
            [{"_id": 10000 + i, "pad": "y" * 100} for i in range(1000)]))
        time.sleep(2.5)  # past the checkpoint thread's one-second wake-ups
        assert not waiting.is_set()
        assert files() == before
        c.admin.command({"fsyncUnlock": 1})
        assert wait_until(waiting.is_set)
        assert c.filesdb.plain.count_documents({}) == 2000
    finally:
        c.close()
        writer.close()
    assert s.shutdown_command() == 0


def test_shutdown_while_locked_lets_waiting_writes_finish(fresh_server):
    s = fresh_server.new()
    # (No retry: the writer's connection ends with the server.)
    c, writer = s.client(), s.client(retryWrites=False)
    c.shutdb.plain.insert_one({"_id": 0})
    c.admin.command({"fsync": 1, "lock": True})
    waiting = start_writer(lambda: writer.shutdb.plain.insert_one({"_id": 1}))
    time.sleep(0.5)
    assert not waiting.is_set()
    c.close()
    # The shutdown does not wait for an fsyncUnlock that will never come.
    assert s.shutdown_command() == 0
    # The write either was acknowledged or lost its reply with the connection; nothing else.
    waiting.thread.join(20)
    assert not waiting.thread.is_alive()
    assert waiting.is_set() or (
        len(waiting.errors) == 1 and isinstance(waiting.errors[0], ConnectionFailure)
    ), waiting.errors
    writer.close()
    s2 = fresh_server.new(dbpath=s.dbpath)
    c = s2.client()
    try:
        # The write that waited went on before the server exited.
        assert sorted(d["_id"] for d in c.shutdb.plain.find()) == [0, 1]
    finally:
        c.close()
    assert s2.shutdown_command() == 0
