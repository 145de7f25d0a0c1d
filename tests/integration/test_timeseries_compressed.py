"""Compressed time-series buckets (issue 15, parts 4 and 5): version 2 (rows sorted by time) and
version 3 (unsorted) buckets, as MongoDB 7.0/8.0 lays them out, inserted directly into
system.buckets.X (what restoring a MongoDB dump does), read through the view, and rewritten or
deleted by time-series updates and deletes.

The compressed buckets are made here from the buckets the server wrote for the same
measurements in a twin collection (version 1, or version 2 for the buckets it closed when
hourglassTimeseriesCompressClosedBuckets is on): each column becomes a BSONColumn (BinData
subtype 7) written by the small encoder of tsbuckets.py (literals, Simple-8b deltas and
delta-of-deltas, skips for missing cells), so every read of the compressed collection can be
compared with the same read of the twin. Two buckets MongoDB itself wrote (from its public
jstests) are read too.
"""

import base64
import copy
import datetime
import random
import time

import bson
import pytest
from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId
from pymongo.errors import OperationFailure, WriteError

from tsbuckets import MISSING, bucket_count, compress, decode_column, encode_column, rows

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 5, 1, tzinfo=UTC)

# --- the data ---------------------------------------------------------------------------------

def measurements(seed=11):
    """Five sensors over ~4 hours, arriving out of time order within each sensor; values of mixed
    types, nulls, missing fields, objects, arrays and strings. Times are unique."""
    rng = random.Random(seed)
    docs = []
    for i in range(1200):
        sensor = i % 5
        # Out of order: each block of 10 arrives reversed.
        j = (i // 10) * 10 + (9 - i % 10)
        d = {"t": T0 + datetime.timedelta(seconds=11 * j, milliseconds=sensor),
             "meta": {"sensor": sensor, "site": "north" if sensor < 3 else "south"},
             "w": rng.randrange(100000) / 8}
        kind = rng.randrange(7)
        if kind == 0:
            d["v"] = rng.randrange(100)
        elif kind == 1:
            d["v"] = Int64(rng.randrange(100))
        elif kind == 2:
            d["v"] = "s%d" % rng.randrange(4)
        elif kind == 3:
            d["v"] = None
        elif kind < 6:
            d["v"] = rng.randrange(1000) / 3
        if i % 4 == 0:
            d["a"] = [rng.randrange(10) for _ in range(rng.randrange(3))]
        elif i % 4 == 1:
            d["o"] = {"x": rng.randrange(5), "y": "z" * rng.randrange(20)}
        docs.append(d)
    return docs


def create(db, name):
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "meta",
                                           "granularity": "minutes"})


def typed(doc):
    """A document's bytes with its top-level fields sorted: equal only for the same values of
    the same types (5 and Int64(5) differ), whatever the field order."""
    return bson.encode(dict(sorted(doc.items())))


def bucket_measurements(bucket, meta_field="meta"):
    """The measurements a bucket holds, read from its columns (any version)."""
    out = []
    for row in rows(bucket):
        if "meta" in bucket:
            row[meta_field] = bucket["meta"]
        out.append(row)
    return out


@pytest.fixture
def trio(db):
    """plain: measurements inserted normally (compressed buckets, version 2 or 3 as their rows
    came in time order or not; version 1 under HOURGLASSD_EXTRA_ARGS that turn that off); c2 /
    c3: the same buckets compressed as version 2 / version 3, inserted into system.buckets
    directly."""
    create(db, "plain")
    docs = [dict(d) for d in measurements()]
    db.plain.insert_many(docs)
    buckets = list(db["system.buckets.plain"].find())
    assert len(buckets) > 10
    assert {b["control"]["version"] for b in buckets} <= {1, 2, 3}
    # The buckets hold exactly the measurements inserted, whatever their version.
    held = [m for b in buckets for m in bucket_measurements(b)]
    assert sorted(map(typed, held)) == sorted(map(typed, docs))
    rng = random.Random(5)
    for name, version in (("c2", 2), ("c3", 3)):
        create(db, name)
        made = [compress(copy.deepcopy(b), "t", version, rng) for b in buckets]
        db["system.buckets." + name].insert_many(made)
        stored = list(db["system.buckets." + name].find())
        assert len(stored) == len(buckets)
        assert all(b["control"]["version"] == version for b in stored)
        assert all(isinstance(c, bytes) for b in stored for c in b["data"].values())
        assert sum(bucket_count(b) for b in stored) == len(docs)
    return db


def by_id(docs):
    return sorted(docs, key=lambda d: d["_id"])


def assert_same(trio, read):
    """read(collection) must give the same answer on the three collections."""
    want = read(trio.plain)
    assert want, "the read returns something"
    assert read(trio.c2) == want
    assert read(trio.c3) == want
    return want


# --- MongoDB's own buckets --------------------------------------------------------------------

def test_buckets_mongodb_wrote_read_back(db):
    """A version-2 bucket (metaField m) and a version-3 bucket whose second row is earlier than
    the first, byte for byte as MongoDB's jstests insert them."""
    db.create_collection("m2", timeseries={"timeField": "t", "metaField": "m"})
    db["system.buckets.m2"].insert_one({
        "_id": ObjectId("65a6eb806ffc9fa4280ecac4"),
        "control": {"version": 2,
                    "min": {"_id": ObjectId("65a6eba7e6d2e848e08c3750"),
                            "t": datetime.datetime(2024, 1, 16, 20, 48, tzinfo=UTC), "a": 1},
                    "max": {"_id": ObjectId("65a6eba7e6d2e848e08c3751"),
                            "t": datetime.datetime(2024, 1, 16, 20, 48, 39, 448000,
                                                   tzinfo=UTC), "a": 1},
                    "count": 2},
        "meta": 0,
        "data": {"t": Binary(base64.b64decode("CQAYhggUjQEAAIAOAAAAAAAAAAA="), 7),
                 "a": Binary(base64.b64decode("AQAAAAAAAAAAAJAuAAAAAAAAAAA="), 7),
                 "_id": Binary(base64.b64decode("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA"), 7)}})
    t = datetime.datetime(2024, 1, 16, 20, 48, 39, 448000)
    assert list(db.m2.find()) == [
        {"t": t, "m": 0, "a": 0.0, "_id": ObjectId("65a6eba7e6d2e848e08c3750")},
        {"t": t, "m": 0, "a": 1.0, "_id": ObjectId("65a6eba7e6d2e848e08c3751")}]
    assert db.m2.count_documents({}) == 2
    assert db.m2.count_documents({"a": {"$gt": 0.5}}) == 1
    # Stored as written: its columns (read by tsbuckets' decoder) hold the same rows.
    [raw] = db["system.buckets.m2"].find()
    assert [typed(r) for r in rows(raw)] == [
        typed({"t": t, "a": 0.0, "_id": ObjectId("65a6eba7e6d2e848e08c3750")}),
        typed({"t": t, "a": 1.0, "_id": ObjectId("65a6eba7e6d2e848e08c3751")})]

    db.create_collection("m3", timeseries={"timeField": "t"})
    db["system.buckets.m3"].insert_one({
        "_id": ObjectId("630ea4802093f9983fc394dc"),
        "control": {"version": 3,
                    "min": {"_id": ObjectId("630fabf7c388456f8aea4f2d"),
                            "t": datetime.datetime(2022, 8, 31, tzinfo=UTC), "a": 0},
                    "max": {"_id": ObjectId("630fabf7c388456f8aea4f2f"),
                            "t": datetime.datetime(2022, 8, 31, 0, 0, 1, tzinfo=UTC), "a": 1},
                    "count": 2.0},  # MongoDB's shell writes the count as a double
        "data": {"t": Binary(base64.b64decode("CQDolzLxggEAAID+fAAAAAAAAAA="), 7),
                 "_id": Binary(base64.b64decode("BwBjD6v3w4hFb4rqTy2ATgAAAAAAAAAA"), 7),
                 "a": Binary(base64.b64decode("EAAAAAAAgC4AAAAAAAAAAA=="), 7)}})
    later = {"t": datetime.datetime(2022, 8, 31, 0, 0, 1),
             "_id": ObjectId("630fabf7c388456f8aea4f2d"), "a": 0}
    earlier = {"t": datetime.datetime(2022, 8, 31), "_id": ObjectId("630fabf7c388456f8aea4f2f"),
               "a": 1}
    assert list(db.m3.find()) == [later, earlier]  # stored order
    [raw] = db["system.buckets.m3"].find()
    assert [typed(r) for r in rows(raw)] == [typed(later), typed(earlier)]
    assert list(db.m3.find().sort("t", 1)) == [earlier, later]
    assert list(db.m3.find().sort("t", -1)) == [later, earlier]
    assert list(db.m3.aggregate([{"$group": {"_id": None, "first": {"$min": "$t"},
                                             "n": {"$count": {}}}}])) == [
        {"_id": None, "first": earlier["t"], "n": 2}]


def test_column_encoder_and_decoder_agree():
    """The BSONColumn encoder and decoder every test here relies on (tsbuckets.py) agree on the
    columns of the measurements: types, values and missing cells."""
    docs = measurements()
    for field in ("t", "w", "v", "a", "o", "meta"):
        cells = [d.get(field, MISSING) for d in docs[:400]]
        assert any(c is MISSING for c in cells) == (field in ("v", "a", "o"))
        got = decode_column(encode_column(cells))
        assert len(got) == len(cells)
        for want, cell in zip(cells, got):
            if want is MISSING:
                assert cell is MISSING, field
            else:
                assert cell is not MISSING and typed({"": cell}) == typed({"": want}), field


# --- reads: the compressed twins answer as the uncompressed collection -----------------------

def test_find_all_and_counts(trio):
    assert len(assert_same(trio, lambda c: by_id(c.find()))) == 1200
    assert_same(trio, lambda c: c.count_documents({}))
    assert_same(trio, lambda c: c.count_documents({"meta.sensor": 3}))
    assert_same(trio, lambda c: c.count_documents({"v": {"$type": "string"}}))
    assert_same(trio, lambda c: c.estimated_document_count() >= 0)
    # distinct keeps one of numerically equal values (0 and 0.0), whichever it meets first: the
    # rows of a version-2 bucket come in another order.
    assert_same(trio, lambda c: sorted(repr(float(v) if isinstance(v, (int, float)) else v)
                                       for v in c.distinct("v")))
    assert_same(trio, lambda c: sorted(c.distinct("meta.sensor")))


@pytest.mark.parametrize("flt", [
    {"meta.sensor": 2},
    {"t": {"$gte": T0 + datetime.timedelta(hours=1), "$lt": T0 + datetime.timedelta(hours=2)}},
    {"v": {"$gt": 50}},
    {"v": None},
    {"a": {"$size": 0}},
    {"o.x": {"$in": [1, 3]}},
    {"$or": [{"w": {"$lt": 100}}, {"meta.site": "south", "v": {"$type": "long"}}]},
], ids=["meta", "time-range", "measure", "null-or-missing", "array", "dotted", "or"])
def test_filters(trio, flt):
    assert_same(trio, lambda c: by_id(c.find(flt)))


def test_sort_on_time_both_directions_and_limit(trio):
    # Times are unique, so the order is fully determined; version 3's rows are shuffled.
    docs = assert_same(trio, lambda c: list(c.find().sort("t", 1)))
    assert [d["t"] for d in docs] == sorted(d["t"] for d in docs)
    assert_same(trio, lambda c: list(c.find().sort("t", -1)))
    assert_same(trio, lambda c: list(c.find({"meta.sensor": 4}).sort("t", -1).limit(7)))
    assert_same(trio, lambda c: list(c.aggregate([{"$sort": {"t": 1}}, {"$skip": 100},
                                                  {"$limit": 50}])))


@pytest.mark.parametrize("projection", [
    {"v": 1}, {"t": 1, "_id": 0}, {"o": 0, "a": 0}, {"meta": 1, "w": 1}, {"_id": 0, "missing": 1},
])
def test_projections(trio, projection):
    assert_same(trio, lambda c: sorted(map(repr, c.find({}, projection))))


GROUPS = [
    # Block processing (top-level fields).
    [{"$group": {"_id": "$meta", "s": {"$sum": "$w"}, "mn": {"$min": "$v"},
                 "mx": {"$max": "$v"}, "n": {"$count": {}}}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 20}},
                 "avg": {"$avg": "$w"}, "first": {"$min": "$t"}, "last": {"$max": "$t"}}}],
    # Filtered on columns, then grouped.
    [{"$match": {"w": {"$gt": 5000}}}, {"$group": {"_id": "$meta.site", "n": {"$sum": 1}}}],
    # Control-based answers: meta key, $min/$max of a field, counts, time bins.
    [{"$group": {"_id": "$meta.sensor", "lo": {"$min": "$w"}, "hi": {"$max": "$w"},
                 "first": {"$min": "$t"}, "n": {"$sum": 1}}}],
    [{"$group": {"_id": {"s": "$meta.sensor", "d": {"$dateTrunc": {"date": "$t",
                                                                  "unit": "day"}}},
                 "n": {"$sum": 1}}}],
    [{"$count": "n"}],
]


@pytest.mark.parametrize("pipeline", GROUPS, ids=[str(i) for i in range(len(GROUPS))])
def test_groups(trio, pipeline):
    def read(c):
        return list(c.aggregate(pipeline + [{"$sort": {"_id": 1}}]))
    assert_same(trio, read)


def test_group_uses_blocks_on_compressed_buckets(trio):
    status = trio.client.admin.command("serverStatus")["hourglass"]["timeseries"]
    before = status["bucketsAsBlocks"]
    pipeline = [{"$group": {"_id": "$meta", "s": {"$sum": "$w"}, "n": {"$count": {}}}},
                {"$sort": {"_id": 1}}]
    got = list(trio.c3.aggregate(pipeline))
    after = trio.client.admin.command("serverStatus")["hourglass"]["timeseries"]
    assert after["bucketsAsBlocks"] > before
    assert got == list(trio.plain.aggregate(pipeline))


def test_lastpoint(trio):
    pipeline = [{"$sort": {"meta.sensor": 1, "t": -1}},
                {"$group": {"_id": "$meta.sensor", "last": {"$first": "$$ROOT"}}},
                {"$sort": {"_id": 1}}]
    got = assert_same(trio, lambda c: list(c.aggregate(pipeline)))
    assert len(got) == 5
    top = [{"$group": {"_id": "$meta", "last": {"$top": {"sortBy": {"t": -1},
                                                         "output": ["$t", "$w"]}}}},
           {"$sort": {"_id": 1}}]
    assert_same(trio, lambda c: list(c.aggregate(top)))


EXPLAINED = [
    # Counted from control (control.count), no bucket unpacked.
    [{"$match": {"meta.sensor": 1}}, {"$group": {"_id": None, "n": {"$sum": 1}}}],
    # A filter on w: the buckets mostly match in part, so the $group folds the rows the filter
    # selects on the columns (block processing) instead of answering from control.
    [{"$match": {"meta.sensor": 1, "w": {"$gt": 1000}}},
     {"$group": {"_id": None, "n": {"$sum": 1}}}],
    # Block processing.
    [{"$match": {"meta.sensor": 1}}, {"$group": {"_id": None, "avg": {"$avg": "$w"}}}],
]


@pytest.mark.parametrize("pipeline", EXPLAINED, ids=["control", "filtered-blocks", "blocks"])
def test_explain_counters(trio, pipeline):
    def stats(c):
        e = c.database.command("explain", {"aggregate": c.name, "pipeline": pipeline,
                                           "cursor": {}}, verbosity="executionStats")
        out = []
        for stage in e["stages"]:
            name = next(iter(stage))
            if name == "$cursor":
                out.append((name, stage["$cursor"]["executionStats"]["totalDocsExamined"]))
            out.append((name,) + tuple(stage.get(k) for k in (
                "nReturned", "bucketsUnpacked", "measurementsUnpacked", "bucketsFromControl")))
        return out
    got = dict((s[0], s[1:]) for s in assert_same(trio, stats))
    if pipeline is EXPLAINED[2]:
        assert got["$_internalUnpackBucket"][0] == 240
        return
    if pipeline is EXPLAINED[1]:
        assert "$_internalGroupFromControl" not in got
        assert got["$_internalUnpackBucket"][0] == trio.plain.count_documents(
            pipeline[0]["$match"]) > 0
        return
    n_returned, unpacked, measurements, from_control = got["$_internalGroupFromControl"]
    assert (unpacked, measurements) == (0, 0) and from_control > 0


def test_results_equal_without_rewrites(trio):
    client = trio.client
    reads = [lambda c: list(c.find().sort("t", -1).limit(30)),
             lambda c: list(c.aggregate(GROUPS[0] + [{"$sort": {"_id": 1}}])),
             lambda c: list(c.aggregate(GROUPS[3] + [{"$sort": {"_id": 1}}])),
             lambda c: by_id(c.find({"v": {"$gt": 20}}, {"v": 1, "t": 1}))]
    with_rewrites = [assert_same(trio, r) for r in reads]
    client.admin.command({"setParameter": 1, "hourglassTimeseriesRewrites": False})
    try:
        without = [assert_same(trio, r) for r in reads]
    finally:
        client.admin.command({"setParameter": 1, "hourglassTimeseriesRewrites": True})
    assert without == with_rewrites


# --- writes: updates and deletes of measurements, TTL ----------------------------------------

def test_delete_many_on_meta_removes_compressed_buckets(trio):
    counts = assert_same(trio, lambda c: c.delete_many({"meta.sensor": 1}).deleted_count)
    assert counts == 240
    assert_same(trio, lambda c: by_id(c.find()))
    for name in ("c2", "c3"):
        assert trio["system.buckets." + name].count_documents({"meta.sensor": 1}) == 0


def test_delete_many_on_measurements_rewrites_compressed_buckets(trio):
    flt = {"w": {"$lt": 4000}}
    assert assert_same(trio, lambda c: c.delete_many(flt).deleted_count) > 0
    assert_same(trio, lambda c: by_id(c.find()))
    assert_same(trio, lambda c: list(c.find().sort("t", 1)))
    # A rewritten bucket stays compressed, in its version, and its control.count is its rows.
    total = trio.plain.count_documents({})
    for name, version in (("c2", 2), ("c3", 3)):
        buckets = list(trio["system.buckets." + name].find())
        assert {b["control"]["version"] for b in buckets} == {version}
        assert all(isinstance(b["data"]["t"], bytes) for b in buckets)
        assert sum(b["control"]["count"] for b in buckets) == total
    # Deleting every remaining measurement of a series deletes its buckets.
    assert_same(trio, lambda c: c.delete_many({"meta.sensor": 0, "w": {"$gte": 0}}).deleted_count)
    for name in ("c2", "c3"):
        assert trio["system.buckets." + name].count_documents({"meta.sensor": 0}) == 0
    assert_same(trio, lambda c: c.count_documents({}))


def test_delete_one_on_a_compressed_bucket(trio):
    victim = trio.plain.find_one({"meta.sensor": 2, "v": {"$type": "string"}})
    assert_same(trio, lambda c: c.delete_one({"_id": victim["_id"]}).deleted_count)
    assert_same(trio, lambda c: by_id(c.find({"meta.sensor": 2})))


def test_update_many_on_meta_keeps_buckets_compressed(trio):
    upd = {"$set": {"meta.site": "west"}}
    assert_same(trio, lambda c: c.update_many({"meta.sensor": {"$in": [0, 4]}}, upd).modified_count)
    assert_same(trio, lambda c: by_id(c.find()))
    assert_same(trio, lambda c: sorted(c.distinct("meta.site")))
    for name, version in (("c2", 2), ("c3", 3)):
        assert {b["control"]["version"] for b in trio["system.buckets." + name].find()} == {version}


def test_ttl_deletes_whole_compressed_buckets(fresh_server):
    srv = fresh_server.new(extra_args=["--setParameter", "ttlMonitorSleepSecs=1"])
    c = srv.client()
    db = c.ttlc
    db.create_collection("src", timeseries={"timeField": "t", "metaField": "meta"})
    now = datetime.datetime.now(UTC)
    old = [{"t": now - datetime.timedelta(days=3, minutes=i), "meta": i % 2, "v": i}
           for i in range(20)]
    new = [{"t": now - datetime.timedelta(minutes=i), "meta": i % 2, "v": i} for i in range(20)]
    db.src.insert_many(old + new)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "meta"},
                         expireAfterSeconds=86400)
    db["system.buckets.ts"].insert_many(
        [compress(b, "t", 2) for b in db["system.buckets.src"].find()])
    assert db.ts.count_documents({}) == 40
    deadline = time.time() + 30
    while time.time() < deadline and db.ts.count_documents({}) != 20:
        time.sleep(0.5)
    assert sorted(d["v"] for d in db.ts.find()) == sorted(d["v"] for d in new)
    c.close()


# --- direct writes: validated -----------------------------------------------------------------

def source_bucket(db):
    """The largest bucket of sensor 1's first measurements (any version)."""
    buckets = list(db["system.buckets.src"].find())
    return max(buckets, key=bucket_count)


def one_bucket(db):
    create(db, "src")
    db.src.insert_many([dict(d) for d in measurements()[:200] if d["meta"]["sensor"] == 1])
    create(db, "ts")
    b = source_bucket(db)
    assert bucket_count(b) > 5
    return compress(b, "t", 2)


def refused(db, doc, why):
    with pytest.raises(OperationFailure) as e:
        db["system.buckets.ts"].insert_one(doc)
    assert e.value.code == 121, e.value.details
    assert why in repr(e.value.details), e.value.details
    assert db["system.buckets.ts"].count_documents({}) == 0
    assert db.ts.count_documents({}) == 0


def test_invalid_column_is_refused(db):
    b = one_bucket(db)
    raw = bytearray(b["data"]["w"])
    raw[0] = 0xE5  # not a control byte
    b["data"]["w"] = Binary(bytes(raw), 7)
    refused(db, b, "column 'data.w' is not a valid BSONColumn")


def test_truncated_column_is_refused(db):
    b = one_bucket(db)
    b["data"]["t"] = Binary(bytes(b["data"]["t"])[:-3], 7)
    refused(db, b, "column 'data.t' is not a valid BSONColumn")


def test_count_mismatch_is_refused(db):
    b = one_bucket(db)
    n = b["control"]["count"]
    b["control"]["count"] = n + 1
    refused(db, b, f"column 'data.t' holds {n} measurements but 'control.count' is {n + 1}")
    b["control"]["count"] = n - 1
    refused(db, b, f"column 'data.t' holds {n} measurements but 'control.count' is {n - 1}")


def test_missing_count_and_wrong_types_are_refused(db):
    b = one_bucket(db)
    del b["control"]["count"]
    refused(db, b, "'control.count' is required")
    b = one_bucket_again(db)
    b["data"]["w"] = Binary(bytes(b["data"]["w"]), 0)
    refused(db, b, "must be a BinData of subtype 7")
    b = one_bucket_again(db)
    b["data"]["w"] = {"0": 1.0}
    refused(db, b, "must be a BinData of subtype 7")
    b = one_bucket_again(db)
    b["data"]["t"] = b["data"]["w"]
    refused(db, b, "the time column 'data.t' holds a double")


def test_control_takes_only_its_own_fields_and_a_count_of_at_least_one(db):
    """The bucket collection's validator is schema version 2 (MongoDB 7.1+): control.count, if
    present, is a number of at least 1, and control holds no field but version, min, max, closed
    and count."""
    b = one_bucket(db)
    extra = copy.deepcopy(b)
    extra["control"]["note"] = "x"
    refused(db, extra, "additional field 'control.note'")
    for bad in (0, -3, "7"):
        wrong = copy.deepcopy(b)
        wrong["control"]["count"] = bad
        refused(db, wrong, "'control.count' must be a number of at least 1")
    closed = copy.deepcopy(b)
    closed["control"]["closed"] = True
    db["system.buckets.ts"].insert_one(closed)
    assert db.ts.count_documents({}) == b["control"]["count"]


def one_bucket_again(db):
    return compress(source_bucket(db), "t", 2)


def test_valid_update_and_replace_accepted_invalid_refused(db):
    b = one_bucket(db)
    db["system.buckets.ts"].insert_one(b)
    before = list(db.ts.find())
    assert len(before) == b["control"]["count"]
    with pytest.raises(WriteError) as e:
        db["system.buckets.ts"].update_one({"_id": b["_id"]},
                                           {"$set": {"control.count": len(before) - 1}})
    assert e.value.code == 121
    with pytest.raises(WriteError) as e:
        db["system.buckets.ts"].update_one({"_id": b["_id"]},
                                           {"$set": {"data.w": Binary(b"\x01\x00", 7)}})
    assert e.value.code == 121
    assert list(db.ts.find()) == before
    # Replacing it with its version-3 form (rows reversed) is a valid write.
    v3 = compress(source_bucket(db), "t", 3, random.Random(3))
    db["system.buckets.ts"].replace_one({"_id": b["_id"]}, v3)
    assert by_id(db.ts.find()) == by_id(before)
    assert db["system.buckets.ts"].find_one()["control"]["version"] == 3


def test_inserts_after_a_restored_compressed_bucket(db):
    """Measurements inserted into a collection whose buckets were restored compressed go into
    the restored bucket when their time fits its span (appended to its columns, as MongoDB 8.0
    appends to compressed buckets); every measurement reads back."""
    b = one_bucket(db)
    db["system.buckets.ts"].insert_one(b)
    n = b["control"]["count"]
    restored = [d["_id"] for d in db.ts.find()]
    assert len(restored) == n
    more = [dict(d) for d in measurements()[200:300] if d["meta"]["sensor"] == 1]
    db.ts.insert_many(more)
    assert db.ts.count_documents({}) == n + len(more)
    want = restored + [m["_id"] for m in more]
    assert sorted(d["_id"] for d in db.ts.find()) == sorted(want)
    after = db["system.buckets.ts"].find_one({"_id": b["_id"]})
    assert after["control"]["version"] in (2, 3)
    assert bucket_count(after) > n
    assert after["control"]["count"] == bucket_count(after)
