"""Write-back buckets (hourglassTimeseriesWriteBack): a commit appends its measurements to the
measurement journal and to the buckets kept in memory; buckets reach storage every second or so,
before any read of the bucket collection, and at shutdown. These tests hold the flush off (a long
interval, a large byte limit) so that what they check happens while the measurements are only in
the journal: reads still see every acknowledged measurement, a kill -9 loses none of those written
with j: true, and direct writes, drops and restarts keep the buckets whole. Others flush as often
as they can (BUSY), so that flushes run while other connections commit to the buckets they
write: each measurement is then written once, with exact bounds, kill -9 or not."""

import datetime
import json
import itertools
import os
import subprocess
import threading
import time

import pytest
from bson import ObjectId
from pymongo import WriteConcern
from pymongo.errors import OperationFailure

from conftest import command_error, hourglassd_path
from test_durability import kill_during_journaled_writes
from tsbuckets import MISSING, bucket_count, columns

HOLD = [
    "--setParameter",
    "hourglassTimeseriesWriteBack=true",
    "--setParameter",
    "hourglassTimeseriesWriteBackIntervalMillis=3600000",
    "--setParameter",
    "hourglassTimeseriesWriteBackMaxBytes=1000000000",
    "--setParameter",
    "hourglassTimeseriesJournalBelowRows=1000000",  # journal whatever the commits' shape
]
# Flushes as often as they can: each commit finds the last flush's interval over, so flushes
# run while other connections commit to the same buckets.
# The journal's log files are small, so that they fill up and are removed while commits go on.
BUSY = [
    "--setParameter",
    "hourglassTimeseriesWriteBackIntervalMillis=0",
    "--setParameter",
    "hourglassTimeseriesJournalBelowRows=1000000",
    "--setParameter",
    "hourglassTimeseriesJournalSegmentBytes=65536",
]
# Each bucket a flush writes in a transaction of its own (hourglassTimeseriesFlushTransactionBytes
# 1), the entries marked by the last: a crash between them leaves buckets that hold some of the
# entries' rows already, which a replay must not write again.
ONE_BUCKET_PER_TRANSACTION = ["--setParameter", "hourglassTimeseriesFlushTransactionBytes=1"]
T0 = datetime.datetime(2024, 3, 1)


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def rows(bucket):
    return bucket_count(bucket)


def journal_files(server):
    """The files of the server's journal log."""
    return [f for f in os.listdir(os.path.join(server.dbpath, "timeseries-journal"))
            if f.endswith(".log")]


def replay_entries(server):
    """The journal entries the server's last start wrote to buckets (0 if it logged none)."""
    n = 0
    for line in server.log_text().splitlines():
        if "Wrote the time-series measurements the journal held" in line:
            n += json.loads(line)["attr"]["entries"]
    return n


def check_bucket(b):
    """A bucket is whole: every column has one cell per row (version 1: the row keys are the row
    numbers; version 2/3: BSONColumns of control.count cells -- tsbuckets.columns checks both),
    and control.min/max bound each column."""
    for field, col in columns(b).items():
        vals = [v for v in col if v is not MISSING and isinstance(v, (int, float))]
        if vals:
            assert b["control"]["min"][field] <= min(vals)
            assert b["control"]["max"][field] >= max(vals)


def check_exact_bucket(b):
    """check_bucket, and control.min/max of every numeric column are its extremes exactly (a
    flush that ran while later rows were being committed must not take their bounds)."""
    check_bucket(b)
    for field, col in columns(b).items():
        vals = [v for v in col if v is not MISSING and isinstance(v, (int, float))]
        if vals and field != "t":
            assert b["control"]["min"][field] == min(vals), (field, b["_id"])
            assert b["control"]["max"][field] == max(vals), (field, b["_id"])


@pytest.fixture
def held(fresh_server):
    return fresh_server.new(extra_args=HOLD)


def test_reads_see_measurements_not_yet_written(held):
    c = held.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(i), "m": f"s{i % 7}", "v": i} for i in range(700)])
    # The view, the bucket collection, counts and statistics all see the 700 measurements.
    assert db.ts.count_documents({}) == 700
    assert sorted(d["v"] for d in db.ts.find({"m": "s3"})) == list(range(3, 700, 7))
    bs = list(db["system.buckets.ts"].find())
    assert len(bs) == 7 and sum(rows(b) for b in bs) == 700
    for b in bs:
        check_bucket(b)
    st = db.command("collStats", "ts")
    assert st["timeseries"]["bucketCount"] == 7
    assert st["timeseries"]["numMeasurementsCommitted"] == 700
    # Later appends to the same buckets are read too.
    db.ts.insert_many([{"t": at(1000 + i), "m": f"s{i % 7}", "v": 1000 + i} for i in range(70)])
    got = list(db.ts.aggregate([{"$group": {"_id": "$m", "n": {"$sum": 1}, "hi": {"$max": "$v"}}}]))
    assert {g["_id"]: g["n"] for g in got} == {f"s{k}": 110 for k in range(7)}
    assert max(g["hi"] for g in got) == 1069
    c.close()


def test_direct_writes_to_unwritten_buckets_keep_every_measurement(held):
    c = held.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(5)])
    db.ts.insert_many([{"t": at(i), "m": "b", "v": i} for i in range(5)])
    # The delete reads the buckets first: it finds the bucket of "a" although its rows were only
    # journaled.
    assert db["system.buckets.ts"].delete_one({"meta": "a"}).deleted_count == 1
    db.ts.insert_many([{"t": at(10 + i), "m": "a", "v": 10 + i} for i in range(3)])
    db.ts.insert_many([{"t": at(10 + i), "m": "b", "v": 10 + i} for i in range(3)])
    assert sorted(d["v"] for d in db.ts.find({"m": "a"})) == [10, 11, 12]
    assert sorted(d["v"] for d in db.ts.find({"m": "b"})) == [0, 1, 2, 3, 4, 10, 11, 12]
    # A measurement delete through the view, then more appends to the same series.
    assert db.ts.delete_many({"m": "b", "v": {"$lt": 3}}).deleted_count == 3
    db.ts.insert_one({"t": at(20), "m": "b", "v": 20})
    assert sorted(d["v"] for d in db.ts.find({"m": "b"})) == [3, 4, 10, 11, 12, 20]
    for b in db["system.buckets.ts"].find():
        check_bucket(b)
    c.close()


def test_clean_shutdown_writes_the_buckets(held):
    c = held.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(i), "m": f"s{i % 50}", "v": i} for i in range(1000)])
    c.close()
    assert held.shutdown_command() == 0
    held.start()
    assert replay_entries(held) == 0  # nothing was left in the journal
    c = held.client()
    assert c.wb.ts.count_documents({}) == 1000
    c.close()


def kill9_during_inserts(server, want):
    """Four writers insert 100 measurements at a time over 200 series each (so that each
    insertMany touches many buckets) with j: true until `want` are acknowledged; the server is
    killed with SIGKILL and restarted. Every acknowledged measurement is then present exactly
    once with its own meta, and every bucket is whole with exact bounds. Returns the _ids
    present."""
    c = server.client()
    c.wb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    c.close()

    def write(coll, tid, i):
        docs = [
            {"_id": f"{tid}-{i + k}", "t": at(i + k), "m": {"w": tid, "s": (i + k) % 200}, "v": k}
            for k in range(100)
        ]
        coll.insert_many(docs)
        return [d["_id"] for d in docs]

    acked = kill_during_journaled_writes(server, "wb", "ts", write, want=want, timeout=30)
    assert len(acked) >= 100, "no write was acknowledged before the kill"
    server.start()
    # Startup wrote what the journal held and removed its log files.
    assert journal_files(server) == []
    c = server.client()
    docs = list(c.wb.ts.find({}, {"_id": 1, "m": 1}))
    present = {d["_id"] for d in docs}
    missing = set(acked) - present
    # Every measurement keeps its own meta, though the journal holds a bucket's meta only once
    # between two flushes.
    for d in docs:
        tid, n = d["_id"].split("-")
        assert d["m"] == {"w": int(tid), "s": int(n) % 200}, d
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged measurements lost"
    assert len(docs) == len(present)  # no measurement replayed twice
    bs = list(c.wb["system.buckets.ts"].find())
    assert sum(rows(b) for b in bs) == len(present)
    for b in bs:
        check_exact_bucket(b)
    c.close()
    return present


def test_kill9_with_measurements_only_in_the_journal(held):
    present = kill9_during_inserts(held, 8000)
    assert replay_entries(held) > 0
    c = held.client()
    # The replayed buckets take new measurements, and a second restart replays nothing.
    c.wb.ts.insert_one({"_id": "after", "t": at(5), "m": {"w": 0, "s": 5}, "v": 1})
    c.close()
    assert held.shutdown_command() == 0
    held.start()
    assert replay_entries(held) == 0
    c = held.client()
    assert c.wb.ts.count_documents({}) == len(present) + 1
    c.close()


def test_drop_forgets_unwritten_measurements(held):
    c = held.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    coll = db.get_collection("ts", write_concern=WriteConcern(w=1, j=True))
    coll.insert_many([{"t": at(i), "m": "s", "v": i} for i in range(10)])
    db.ts.drop()
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    coll.insert_one({"t": at(0), "m": "s", "v": 99})
    c.close()
    held.kill()
    held.start()
    c = held.client()
    assert [d["v"] for d in c.wb.ts.find()] == [99]
    c.close()


def test_write_back_is_chosen_at_startup(held):
    c = held.client()
    with pytest.raises(OperationFailure) as e:
        c.admin.command("setParameter", 1, hourglassTimeseriesWriteBack=False)
    assert e.value.code == 20  # IllegalOperation, as mongod answers for startup-only parameters
    got = c.admin.command("getParameter", 1, hourglassTimeseriesWriteBack=1)
    assert got["hourglassTimeseriesWriteBack"] is True
    # The journal's log is opened once, at startup, with its file size.
    with pytest.raises(OperationFailure) as e:
        c.admin.command("setParameter", 1, hourglassTimeseriesJournalSegmentBytes=1 << 20)
    assert e.value.code == 20
    got = c.admin.command("getParameter", 1, hourglassTimeseriesJournalSegmentBytes=1)
    assert got["hourglassTimeseriesJournalSegmentBytes"] == 64 << 20
    c.close()


@pytest.mark.parametrize("bad", ["100", "-1", "lots"])
def test_journal_segment_bytes_refuses_bad_values_at_startup(tmp_path, bad):
    r = subprocess.run([hourglassd_path(), "--dbpath", str(tmp_path), "--port", "1",
                        "--setParameter", f"hourglassTimeseriesJournalSegmentBytes={bad}"],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "hourglassTimeseriesJournalSegmentBytes" in r.stdout + r.stderr


def test_write_back_parameters_refuse_bad_values(held, tmp_path):
    c = held.client()
    try:
        for name in ("hourglassTimeseriesWriteBackIntervalMillis",
                     "hourglassTimeseriesWriteBackMaxBytes",
                     "hourglassTimeseriesJournalBelowRows",
                     "hourglassTimeseriesFlushTransactionBytes"):
            before = c.admin.command("getParameter", 1, **{name: 1})[name]
            for bad in (-1, "1000", None, 1.5e30):
                code, _, msg = command_error(c.admin, {"setParameter": 1, name: bad})
                assert code == 2, (name, bad)
                assert name in msg or "integer" in msg or "number" in msg, msg
            # Unchanged by the refusals; 0 is allowed (flush after every request, never
            # journal, one transaction per flush).
            assert c.admin.command("getParameter", 1, **{name: 1})[name] == before
            c.admin.command("setParameter", 1, **{name: 0})
            assert c.admin.command("getParameter", 1, **{name: 1})[name] == 0
            c.admin.command("setParameter", 1, **{name: before})
        # The server still takes measurements after the refusals.
        c.wb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        c.wb.ts.insert_one({"t": at(0), "m": 1, "v": 1})
        assert c.wb.ts.count_documents({}) == 1
    finally:
        c.close()
    # Not a boolean at startup: the server does not start, and says which parameter.
    r = subprocess.run([hourglassd_path(), "--dbpath", str(tmp_path), "--port", "1",
                        "--setParameter", "hourglassTimeseriesWriteBack=maybe"],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "hourglassTimeseriesWriteBack" in r.stdout + r.stderr


def test_journal_is_replayed_by_a_server_started_without_write_back(fresh_server, tmp_path):
    s = fresh_server.new(extra_args=HOLD)
    c = s.client()
    c.wb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    coll = c.wb.get_collection("ts", write_concern=WriteConcern(w=1, j=True))
    ids = coll.insert_many([{"t": at(i), "m": i % 3, "v": i} for i in range(30)]).inserted_ids
    c.close()
    s.kill()
    plain = fresh_server.new(dbpath=s.dbpath)
    assert replay_entries(plain) == 1
    c = plain.client()
    assert sorted(d["_id"] for d in c.wb.ts.find()) == sorted(ids)
    assert all(isinstance(i, ObjectId) for i in ids)
    c.close()


def test_commits_of_many_rows_per_bucket_write_their_buckets_at_once(fresh_server):
    # Default hourglassTimeseriesJournalBelowRows (3): a collection whose commits bring 10 rows
    # to each bucket stops journaling after its first 1,000 commits (a flush writes what the
    # journal held) and writes its buckets at each commit; one whose commits bring one row per
    # bucket keeps journaling.
    s = fresh_server.new(extra_args=HOLD[:6])
    c = s.client()
    db = c.wb
    for name in ("wide", "narrow"):
        db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
    wide = db.get_collection("wide", write_concern=WriteConcern(w=1, j=True))
    narrow = db.get_collection("narrow", write_concern=WriteConcern(w=1, j=True))
    n = 0
    for r in range(130):  # 10 series x 10 rows per request: 1,300 commits
        wide.insert_many([{"t": at(n + i), "m": k, "v": i} for k in range(10) for i in range(10)])
        n += 10
    narrow.insert_many([{"t": at(i), "m": i, "v": i} for i in range(50)])
    c.close()
    s.kill()
    s.start()
    # Only the narrow collection's rows were left in the journal.
    assert replay_entries(s) == 1
    c = s.client()
    assert c.wb.wide.count_documents({}) == 13000
    assert c.wb.narrow.count_documents({}) == 50
    c.close()


# A flush writes a compressed bucket as byte-range edits of what is stored, and whole after
# hourglassTimeseriesFlushEditsBeforeRewrite (32 by default, 4 here) edits in a row; with 0, always
# whole.
@pytest.mark.parametrize("flush_edits,split", [(0, []), (4, []), (0, ONE_BUCKET_PER_TRANSACTION)],
                         ids=["whole", "edits", "bucket-per-transaction"])
def test_flushes_alongside_commits_write_each_measurement_once_with_exact_bounds(
        fresh_server, flush_edits, split):
    s = fresh_server.new(extra_args=BUSY + split + [
        "--setParameter", f"hourglassTimeseriesFlushEditsBeforeRewrite={flush_edits}"])
    c = write_concurrently_each_once(s)
    # The journal's log went through several files (about 600 kB of entries, 64 kB files; a file
    # is named by its first entry's number), and those whose entries are all in buckets are gone,
    # but for up to two kept to be written over as the next ones.
    logs = sorted(journal_files(s))
    assert logs and int(logs[-1].split(".")[0], 16) > 1, logs
    assert len(logs) <= 3, logs
    spares = [f for f in os.listdir(os.path.join(s.dbpath, "timeseries-journal"))
              if f.endswith(".spare")]
    assert 1 <= len(spares) <= 2, spares
    c.close()


def test_writers_ahead_of_the_flushes_wait_for_them(fresh_server):
    """A writer that finds the rows not yet flushed at twice hourglassTimeseriesWriteBackMaxBytes
    waits for the running flush and writes what is left (here every one: a limit of one byte),
    while the other writers commit: each measurement is still written once, with exact bounds."""
    s = fresh_server.new(extra_args=[
        "--setParameter", "hourglassTimeseriesWriteBackIntervalMillis=3600000",
        "--setParameter", "hourglassTimeseriesWriteBackMaxBytes=1",
        "--setParameter", "hourglassTimeseriesJournalBelowRows=1000000"])
    c = write_concurrently_each_once(s)
    assert c.admin.command("serverStatus")["hourglass"]["timeseries"]["flushesForBacklog"] > 0
    c.close()


def write_concurrently_each_once(s):
    """Four writers insert 1,500 measurements each into 400 series of a new collection wb.ts;
    then every measurement must be there once and every bucket's bounds exact. Returns a client."""
    c = s.client()
    c.wb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    errors = []

    def writer(tid):
        wc = s.client()
        coll = wc.wb.ts
        try:
            for i in range(0, 1500, 100):
                # 400 series shared by every writer: each insertMany meets the buckets the others
                # are committing to and a flush is writing. Values grow with i, so a bound taken
                # from a row not yet written would show.
                # Some rows of each series have a field the others lack: a row whose fields
                # differ from its bucket's last one's walks the bucket's bounds at once.
                coll.insert_many(
                    [
                        {"_id": f"{tid}-{i + k}", "t": at(i + k), "m": (i + k) % 400,
                         "v": (i + k) * 10 + tid, "w": -(i + k),
                         **({"x": i + k} if (tid + (i + k) // 400) % 2 else {})}
                        for k in range(100)
                    ]
                )
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            wc.close()

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    docs = list(c.wb.ts.find({}, {"_id": 1, "v": 1, "m": 1}))
    assert len(docs) == 4 * 1500
    assert len({d["_id"] for d in docs}) == len(docs)  # no measurement written twice
    for d in docs:
        tid, n = d["_id"].split("-")
        assert d["v"] == int(n) * 10 + int(tid) and d["m"] == int(n) % 400, d
    bs = list(c.wb["system.buckets.ts"].find())
    assert sum(rows(b) for b in bs) == len(docs)
    for b in bs:
        check_exact_bucket(b)
    return c


def stored_whole_for_reads(c):
    return c.admin.command("serverStatus")["hourglass"]["timeseries"]["bucketsStoredWholeForReads"]


def test_reads_store_again_whole_the_buckets_flushes_edited(fresh_server):
    """Flushes that run for writes append to stored compressed buckets by edits; the next read's
    flush stores each such open bucket again whole (once), and writes the rows it flushes itself
    whole, so that no read of data just written re-applies a chain of edits."""
    s = fresh_server.new(extra_args=BUSY)  # every insert flushes what the journal holds
    c = s.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    # Counted only by reads' flushes: the writes alone leave it as it was.
    base = stored_whole_for_reads(c)
    for r in range(4):  # 10 series, one row each per request: an insert, then 3 edits each
        db.ts.insert_many([{"t": at(r), "m": k, "v": 10 * r + k} for k in range(10)])
    assert stored_whole_for_reads(c) == base
    assert db.ts.count_documents({}) == 40
    assert stored_whole_for_reads(c) == base + 10
    # Nothing is left to settle: later reads store nothing.
    assert sorted(d["v"] for d in db.ts.find({"m": 3})) == [3, 13, 23, 33]
    assert stored_whole_for_reads(c) == base + 10
    # Buckets a flush wrote whole are not stored again.
    c.admin.command({"setParameter": 1, "hourglassTimeseriesFlushEditsBeforeRewrite": 0})
    db.ts.insert_many([{"t": at(4), "m": k, "v": 40 + k} for k in range(10)])
    assert db.ts.count_documents({}) == 50
    assert stored_whole_for_reads(c) == base + 10
    c.admin.command({"setParameter": 1, "hourglassTimeseriesFlushEditsBeforeRewrite": 8})
    db.ts.insert_many([{"t": at(5), "m": k, "v": 50 + k} for k in range(5)])
    bs = list(db["system.buckets.ts"].find())
    assert stored_whole_for_reads(c) == base + 15
    assert len(bs) == 10 and sum(rows(b) for b in bs) == 55
    for b in bs:
        check_exact_bucket(b)
    c.close()


def test_a_reads_flush_writes_its_buckets_whole(fresh_server):
    """Rows still in the journal when a read comes are written by that read's flush, whole: it
    leaves nothing to store again."""
    s = fresh_server.new(extra_args=HOLD)
    c = s.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(0), "m": k, "v": k} for k in range(10)])
    assert db.ts.count_documents({}) == 10  # inserts the buckets
    base = stored_whole_for_reads(c)
    for r in range(1, 4):
        db.ts.insert_many([{"t": at(r), "m": k, "v": 10 * r + k} for k in range(10)])
        assert db.ts.count_documents({}) == 10 * (r + 1)
    assert stored_whole_for_reads(c) == base
    assert sorted(d["v"] for d in db.ts.find({"m": 7})) == [7, 17, 27, 37]
    c.close()


def test_reads_store_again_whole_the_buckets_commits_edited(fresh_server):
    """A collection whose commits bring many rows per bucket writes its buckets at each commit,
    by edits too; the next read stores each bucket they left edited again whole (once), as it
    does the flushes' (MongoDB's reads see no difference: only how storage holds the bucket)."""
    s = fresh_server.new(extra_args=HOLD[:6] + [
        "--setParameter", "hourglassTimeseriesBucketEditsBeforeRewrite=100"])
    c = s.client()
    db = c.wb
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    n = 0

    def insert_10_rows_per_series():
        nonlocal n
        db.ts.insert_many([{"t": at(n + i), "m": k, "v": n + i} for k in range(10)
                           for i in range(10)])
        n += 10

    # 10 series x 10 rows per request: past the first 1,000 commits the collection stops
    # journaling (commits_of_many_rows_per_bucket above) and writes its buckets at each commit.
    for _ in range(110):
        insert_10_rows_per_series()
    assert db.ts.count_documents({}) == 11000  # settles whatever was edited so far
    base = stored_whole_for_reads(c)
    for _ in range(3):  # an edit of each of the 10 open buckets per request
        insert_10_rows_per_series()
    assert stored_whole_for_reads(c) == base  # writes alone store nothing again
    assert db.ts.count_documents({}) == 11300
    assert stored_whole_for_reads(c) == base + 10
    assert sorted(d["v"] for d in db.ts.find({"m": 4, "v": {"$gte": 1090}})) == list(
        range(1090, 1130))
    assert stored_whole_for_reads(c) == base + 10  # nothing left to settle
    insert_10_rows_per_series()  # edited again, so listed again
    assert db.ts.count_documents({}) == 11400
    assert stored_whole_for_reads(c) == base + 20
    bs = list(db["system.buckets.ts"].find())
    assert sum(rows(b) for b in bs) == 11400
    for b in bs:
        check_exact_bucket(b)
    c.close()


def journaled_in_20_buckets(fresh_server):
    """A server whose flushes write one bucket per transaction, with test commands, holding 600
    measurements of 20 series (20 buckets) in its journal only. Returns the server and a client."""
    s = fresh_server.new(extra_args=HOLD + ONE_BUCKET_PER_TRANSACTION +
                         ["--setParameter", "enableTestCommands=1"])
    c = s.client()
    c.wb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    coll = c.wb.get_collection("ts", write_concern=WriteConcern(w=1, j=True))
    for i in range(0, 600, 100):
        coll.insert_many([{"_id": i + k, "t": at(i + k), "m": (i + k) % 20, "v": 3 * (i + k)}
                          for k in range(100)])
    return s, c


def sync_journal(c):
    """Makes every committed write durable: a write with j: true syncs the journal."""
    c.wb.get_collection("other", write_concern=WriteConcern(w=1, j=True)).insert_one({})


def check_600_once(c):
    """Each of journaled_in_20_buckets' measurements is present exactly once, with its own meta
    and value, in 20 whole buckets with exact bounds."""
    docs = list(c.wb.ts.find({}, {"_id": 1, "m": 1, "v": 1}))
    assert sorted(d["_id"] for d in docs) == list(range(600))  # none lost, none twice
    for d in docs:
        assert d["m"] == d["_id"] % 20 and d["v"] == 3 * d["_id"], d
    bs = list(c.wb["system.buckets.ts"].find())
    assert len(bs) == 20 and sum(rows(b) for b in bs) == 600
    for b in bs:
        check_exact_bucket(b)


def restart_replays_nothing(s):
    """Starts the stopped server `s`: its journal held nothing to write, and its 600 measurements
    are there."""
    s.start()
    assert replay_entries(s) == 0
    c = s.client()
    assert c.wb.ts.count_documents({}) == 600
    c.close()


def test_kill9_between_the_transactions_of_a_flush_writes_each_measurement_once(fresh_server):
    """A flush that writes its buckets one per transaction is held after its first (the fail
    point hangTimeseriesFlushBetweenTransactions) and the server killed there: one bucket then
    holds its rows already while every journal entry is still unmarked. The replay writes the
    other buckets' rows only: each measurement is present exactly once, with exact bounds."""
    s, c = journaled_in_20_buckets(fresh_server)
    fp = "hangTimeseriesFlushBetweenTransactions"
    assert c.admin.command("configureFailPoint", fp, mode="alwaysOn")["count"] == 0

    def read():  # its read barrier flushes, and hangs at the fail point
        rc = s.client(serverSelectionTimeoutMS=2000, socketTimeoutMS=60000)
        try:
            rc.wb.ts.count_documents({})
        except Exception:  # the server is killed under it
            pass
        finally:
            rc.close()

    reader = threading.Thread(target=read)
    reader.start()
    c.admin.command("waitForFailPoint", fp, timesEntered=1, maxTimeMS=30000)
    sync_journal(c)  # the flush's first transaction is durable too
    c.close()
    s.kill()
    reader.join(30)
    s.start()
    assert replay_entries(s) == 6
    c = s.client()
    check_600_once(c)
    c.close()
    # The replay forgot what the flush had recorded: a second restart writes nothing again.
    assert s.shutdown_command() == 0
    restart_replays_nothing(s)


@pytest.mark.parametrize("then", ["flush", "kill9"])
def test_a_flush_that_fails_after_some_transactions_keeps_each_measurement_once(
        fresh_server, then):
    """A flush writing its buckets one per transaction fails at its fourth (the fail point
    failTimeseriesFlushTransaction, {skip: 3}): three buckets hold their rows, the others' rows
    and every journal entry wait for the next flush -- or, after a kill -9, for the replay.
    Either way each measurement ends up present exactly once, with exact bounds."""
    s, c = journaled_in_20_buckets(fresh_server)
    fp = "failTimeseriesFlushTransaction"
    c.admin.command("configureFailPoint", fp, mode={"skip": 3})
    with pytest.raises(OperationFailure) as e:
        c.wb.ts.count_documents({})  # its read barrier's flush fails: the read with it
    assert e.value.code == 1 and fp in str(e.value)
    c.admin.command("configureFailPoint", fp, mode="off")
    if then == "kill9":
        sync_journal(c)
        c.close()
        s.kill()
        s.start()
        assert replay_entries(s) == 6
        c = s.client()
    else:
        # A read of the buckets flushes the rest first.
        assert c.wb["system.buckets.ts"].count_documents({}) == 20
    check_600_once(c)
    # Every entry is marked now: a kill -9 and a restart replay nothing.
    sync_journal(c)
    c.close()
    s.kill()
    restart_replays_nothing(s)


@pytest.mark.parametrize("split", [[], ONE_BUCKET_PER_TRANSACTION],
                         ids=["one-transaction", "bucket-per-transaction"])
def test_kill9_while_flushes_run_alongside_commits(fresh_server, split):
    kill9_during_inserts(fresh_server.new(extra_args=BUSY + split), 6000)


def test_reads_during_flushes_see_every_acknowledged_measurement(fresh_server):
    s = fresh_server.new(extra_args=BUSY)
    c = s.client()
    c.wb.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    lock = threading.Lock()
    acked = [0]
    done = threading.Event()
    errors = []
    reads = [0]

    out_of_time = []

    def writer(tid):
        wc = s.client()
        try:
            # At least 20 inserts each, and on until the reader has read twice meanwhile: a
            # read's flush must get its turn while the writers keep flushing after their commits.
            deadline = time.monotonic() + 60
            for n in itertools.count():
                if n >= 20 and reads[0] >= 2:
                    break
                if time.monotonic() > deadline:
                    out_of_time.append(tid)
                    break
                i = n * 100
                wc.wb.ts.insert_many(
                    [{"t": at(i + k), "m": (i + k) % 300, "v": tid} for k in range(100)])
                with lock:
                    acked[0] += 100
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            wc.close()

    def reader():
        rc = s.client()
        try:
            while not done.is_set():
                with lock:
                    before = acked[0]
                # A read flushes what is committed; it must see at least what was acknowledged
                # before it began, whether or not a flush was running then.
                n = rc.wb.ts.count_documents({})
                # The buckets as stored (compressed: each counts its rows in control.count).
                raw = next(rc.wb["system.buckets.ts"].aggregate(
                    [{"$group": {"_id": None, "n": {"$sum": "$control.count"}}}]), {"n": 0})["n"]
                assert n >= before and raw >= before, (n, raw, before)
                reads[0] += 1
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            rc.close()

    writers = [threading.Thread(target=writer, args=(t,)) for t in range(3)]
    r = threading.Thread(target=reader)
    r.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join(120)
    done.set()
    r.join(60)
    assert not errors, errors
    assert not out_of_time, f"the reader read {reads[0]} times in a minute of writes"
    assert c.wb.ts.count_documents({}) == acked[0]
    for b in c.wb["system.buckets.ts"].find():
        check_exact_bucket(b)
    c.close()
