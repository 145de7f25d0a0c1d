"""Persistence across restarts, crash safety of journaled writes, the dbpath
lock, and process conventions (shutdown, signals, --logpath)."""

import datetime
import json
import os
import re
import signal
import threading
import time

import pytest
from pymongo.errors import PyMongoError
from pymongo.write_concern import WriteConcern

from conftest import command_error


def populate(c):
    a = c.hg_dur_1.a
    a.insert_many([{"_id": i, "v": f"value-{i}", "n": i * 1.5} for i in range(300)])
    a.update_many({"_id": {"$lt": 10}}, {"$set": {"updated": True}})
    a.delete_many({"_id": {"$gte": 290}})
    c.hg_dur_1.create_collection("empty")
    c.hg_dur_2.c.insert_one({"_id": "only"})


def verify(c):
    a = c.hg_dur_1.a
    assert a.count_documents({}) == 290
    assert a.count_documents({"updated": True}) == 10
    assert a.find_one({"_id": 123}) == {"_id": 123, "v": "value-123", "n": 184.5}
    assert sorted(c.hg_dur_1.list_collection_names()) == ["a", "empty"]
    assert list(c.hg_dur_2.c.find()) == [{"_id": "only"}]
    assert {"hg_dur_1", "hg_dur_2"} <= set(c.list_database_names())


def with_client(server, fn):
    c = server.client()
    try:
        return fn(c)
    finally:
        c.close()


# -- clean restarts ------------------------------------------------------------------
def test_restart_after_shutdown_command(fresh_server):
    s = fresh_server.new()
    with_client(s, populate)
    assert s.shutdown_command() == 0
    s.start()
    with_client(s, verify)
    # A second restart cycle still sees everything.
    assert s.shutdown_command() == 0
    s.start()
    with_client(s, verify)
    assert s.shutdown_command() == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_restart_after_signal(fresh_server, sig):
    s = fresh_server.new()
    with_client(s, populate)
    assert s.signal(sig) == 0
    s.start()
    with_client(s, verify)
    assert s.signal(signal.SIGTERM) == 0


def test_shutdown_must_run_on_admin(fresh_server):
    s = fresh_server.new()
    c = s.client()
    try:
        code, name, msg = command_error(c.test, {"shutdown": 1})
        assert (code, name) == (13, "Unauthorized")
        assert msg == "shutdown may only be run against the admin database."
        assert c.admin.command("ping")["ok"] == 1
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_shutdown_closes_listener(fresh_server):
    s = fresh_server.new()
    port = s.port
    assert s.shutdown_command() == 0
    import socket

    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


# -- crash safety ----------------------------------------------------------------------
def test_kill9_keeps_journaled_writes(fresh_server):
    s = fresh_server.new()
    c = s.client()
    coll = c.hg_crash.get_collection("c", write_concern=WriteConcern(w=1, j=True))
    acked = []
    for i in range(100):
        coll.insert_one({"_id": i, "kind": "single"})
        acked.append(i)
    for b in range(5):
        batch = [{"_id": 1000 + b * 200 + k, "kind": "batch"} for k in range(200)]
        coll.insert_many(batch)
        acked += [d["_id"] for d in batch]
    coll.update_one({"_id": 0}, {"$set": {"changed": True}})
    coll.delete_one({"_id": 1})
    acked.remove(1)
    c.close()
    s.kill()
    assert s.proc.returncode == -signal.SIGKILL
    s.start()
    c = s.client()
    try:
        present = {d["_id"] for d in c.hg_crash.c.find({}, {"_id": 1})}
        missing = set(acked) - present
        assert not missing, f"{len(missing)} acknowledged documents lost, e.g. {sorted(missing)[:10]}"
        assert 1 not in present
        assert c.hg_crash.c.find_one({"_id": 0}) == {"_id": 0, "kind": "single", "changed": True}
    finally:
        c.close()
    assert s.shutdown_command() == 0


def kill_during_journaled_writes(server, db_name, coll_name, write, want, timeout):
    """Four threads call write(coll, tid, i) in a loop on db_name.coll_name with w: 1, j: true
    (it returns the _ids it wrote; i counts them per thread) until `want` _ids are acknowledged
    or `timeout` seconds pass; then the server is killed with SIGKILL. Returns the _ids
    acknowledged before the kill."""
    acked = []
    stop = threading.Event()

    def writer(tid):
        c = server.client(serverSelectionTimeoutMS=2000, socketTimeoutMS=5000)
        coll = c[db_name].get_collection(coll_name, write_concern=WriteConcern(w=1, j=True))
        i = 0
        try:
            while not stop.is_set():
                ids = write(coll, tid, i)
                acked.extend(ids)
                i += len(ids)
        except PyMongoError:
            pass  # the server died under us
        finally:
            c.close()

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    while len(acked) < want and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    stop.set()
    for t in threads:
        t.join(30)
    return list(acked)


def test_kill9_during_concurrent_journaled_inserts(fresh_server):
    s = fresh_server.new()

    def write(coll, tid, i):
        _id = f"{tid}-{i}"
        coll.insert_one({"_id": _id, "pad": "p" * 100})
        return [_id]

    snapshot = kill_during_journaled_writes(s, "hg_crash2", "c", write, want=200, timeout=20)
    assert len(snapshot) >= 1, "no write was acknowledged before the kill"
    s.start()
    c = s.client()
    try:
        present = {d["_id"] for d in c.hg_crash2.c.find({}, {"_id": 1})}
        missing = set(snapshot) - present
        assert not missing, f"{len(missing)} of {len(snapshot)} acknowledged documents lost"
        # Nothing half-written: every document that came back is whole.
        for d in c.hg_crash2.c.find({}):
            assert d["pad"] == "p" * 100
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_repeated_kill9_restarts(fresh_server):
    s = fresh_server.new()
    for round_ in range(3):
        c = s.client()
        coll = c.hg_crash3.get_collection("c", write_concern=WriteConcern(w=1, j=True))
        coll.insert_many([{"r": round_, "k": k} for k in range(50)])
        c.close()
        s.kill()
        s.start()
        c = s.client()
        try:
            for r in range(round_ + 1):
                assert c.hg_crash3.c.count_documents({"r": r}) == 50
        finally:
            c.close()
    assert s.shutdown_command() == 0


# -- the dbpath lock -----------------------------------------------------------------------
def test_lock_file_present_while_running(fresh_server):
    s = fresh_server.new()
    lock = os.path.join(s.dbpath, "mongod.lock")
    assert os.path.exists(lock)
    with open(lock) as f:
        content = f.read().strip()
    assert content == str(s.proc.pid)
    assert s.shutdown_command() == 0


def test_second_server_on_same_dbpath_refuses(fresh_server):
    first = fresh_server.new()
    with_client(first, lambda c: c.hg_lock.c.insert_one({"_id": 1}))
    second = fresh_server.new(dbpath=first.dbpath, start=False)
    second.spawn()
    rc = second.wait_exit(30)
    assert rc is not None, "second server on a locked dbpath did not exit"
    assert rc != 0
    log = second.log_text()
    assert re.search(r"lock|another", log, re.IGNORECASE), log[-2000:]
    # The first server is unaffected.
    assert with_client(first, lambda c: c.hg_lock.c.find_one()) == {"_id": 1}
    assert first.shutdown_command() == 0


def test_restart_reuses_lock_after_clean_shutdown(fresh_server):
    s = fresh_server.new()
    assert s.shutdown_command() == 0
    s.start()
    assert s.shutdown_command() == 0


# -- logging ------------------------------------------------------------------------------
def test_log_lines_are_json(fresh_server):
    s = fresh_server.new()
    assert s.shutdown_command() == 0
    lines = [l for l in s.log_text().splitlines() if l.strip()]
    assert lines, "no log output"
    json_lines = []
    for line in lines:
        try:
            json_lines.append(json.loads(line))
        except ValueError:
            pytest.fail(f"log line is not JSON: {line[:300]}")
    for entry in json_lines:
        assert {"t", "s", "c", "id", "ctx", "msg"} <= set(entry), entry
        assert "$date" in entry["t"]


def test_logpath_option(fresh_server, tmp_path):
    logfile = str(tmp_path / "server.log")
    s = fresh_server.new(extra_args=["--logpath", logfile])
    with_client(s, lambda c: c.admin.command("ping"))
    assert s.shutdown_command() == 0
    with open(logfile) as f:
        entries = [json.loads(l) for l in f if l.strip()]
    assert entries
    assert all({"t", "s", "c", "id", "ctx", "msg"} <= set(e) for e in entries)


def test_kill9_while_closed_buckets_are_compressed(fresh_server):
    # Buckets of five measurements close (and are rewritten compressed) all the time while four
    # writers insert with j: true; after kill -9 every acknowledged measurement is read back
    # through the view, once, whole, and every bucket is either version 1 or a version 2 whose
    # columns decode (the read fails otherwise).
    # (With write-back, every insert writes its buckets, then compresses the closed ones.)
    s = fresh_server.new(extra_args=[
        "--setParameter", "hourglassTimeseriesCompressClosedBuckets=true",
        "--setParameter", "timeseriesBucketMaxCount=5",
        "--setParameter", "hourglassTimeseriesWriteBackIntervalMillis=0"])
    c = s.client()
    c.hg_crash_ts.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    c.close()
    t0 = 1_700_000_000_000

    def write(coll, tid, i):
        batch = [{"_id": f"{tid}-{i + k}", "m": f"series-{tid}-{k % 3}",
                  "t": datetime.datetime.fromtimestamp((t0 + (i + k) * 1000) / 1000,
                                                       datetime.timezone.utc),
                  "v": float(i + k)} for k in range(10)]
        coll.insert_many(batch)
        return [d["_id"] for d in batch]

    snapshot = kill_during_journaled_writes(s, "hg_crash_ts", "ts", write, want=2000, timeout=30)
    assert len(snapshot) >= 100, "too few writes acknowledged before the kill"
    s.start()
    c = s.client()
    try:
        db = c.hg_crash_ts
        versions = {b["control"]["version"] for b in db["system.buckets.ts"].find()}
        assert 2 in versions, "no bucket was compressed before the kill"
        ids = [d["_id"] for d in db.ts.find({}, {"_id": 1})]
        assert len(ids) == len(set(ids)), "a measurement came back twice"
        missing = set(snapshot) - set(ids)
        assert not missing, f"{len(missing)} of {len(snapshot)} acknowledged measurements lost"
        for d in db.ts.find({"_id": {"$in": snapshot[:200]}}):
            tid, n = d["_id"].split("-")
            assert d["v"] == float(n) and d["m"] == f"series-{tid}-{int(n) % 10 % 3}"
    finally:
        c.close()
    assert s.shutdown_command() == 0
