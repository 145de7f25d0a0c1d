"""Time-series collections through pymongo: inserts, bucket documents, the
bucket catalog's rollover rules and statistics, reads on the view, direct
bucket writes, restarts and concurrent writers (spec/timeseries.md sections
3.1, 3.3, 3.4, 4.1, 4.2, 4.5-4.8, 5 and 6.1; MongoDB 7.0 behavior).

serverStatus counters are process-global and the module's server is shared by
its tests, so tests use per-collection collStats numbers, deltas taken right
around the operation, or a dedicated server."""

import datetime
import threading
import time

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.son import SON
from bson.timestamp import Timestamp
from pymongo.errors import BulkWriteError, OperationFailure
from pymongo.write_concern import WriteConcern

from conftest import command_error, run_command
from tsbuckets import bucket_count, columns, decompress
import wire

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 3, 5, 10, 0, 0)  # a whole hour
TIME_MSG = "'t' must be present and contain a valid BSON UTC datetime value"


def at(seconds=0, ms=0):
    return T0 + datetime.timedelta(seconds=seconds, milliseconds=ms)


def create_ts(db, name="ts", meta="m", **extra):
    spec = {"timeField": "t"}
    if meta:
        spec["metaField"] = meta
    spec.update(extra)
    db.command({"create": name, "timeseries": spec})
    return db[name]


def buckets(db, name="ts"):
    """Bucket documents in time order (then _id, for a stable order)."""
    docs = list(db[f"system.buckets.{name}"].find())
    return sorted(
        docs,
        key=lambda b: (b["control"]["min"]["t"], bson.encode({"m": b.get("meta")}), b["_id"]),
    )


def rows(bucket):
    """The number of measurements in a bucket, whatever its version."""
    return bucket_count(bucket)


def uncompressed_size(bucket):
    """The BSON size of the bucket as version 1: what the catalog's size limits are about."""
    return len(bson.encode(decompress(bucket)))


def ts_stats(db, name="ts"):
    return db.command("collStats", name)["timeseries"]


def catalog(client):
    return client.admin.command("serverStatus")["bucketCatalog"]


def read_counters(client):
    return dict(client.admin.command("serverStatus")["hourglass"]["timeseries"])


def delta(after, before, keys):
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys}


def ordered(value):
    """A dict tree as nested (key, value) lists, so comparisons see field order."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def insert_cmd(db, name, docs, **kwargs):
    """A raw insert command (no client-side _id generation), reply even on ok: 0."""
    return run_command(db, dict({"insert": name, "documents": docs}, **kwargs))


def oid_seconds(oid):
    return int.from_bytes(oid.binary[:4], "big")


def epoch_ms(d):
    return int(d.replace(tzinfo=UTC).timestamp() * 1000) if d.tzinfo is None else int(
        d.timestamp() * 1000
    )


def check_bucket_invariants(bucket, span=3600, rounding=60):
    """Structural rules of a bucket (3.1-3.4): version 1 (row indexes "0".."n-1", in order in
    every column), or version 2 / 3 (every column a BSONColumn of control.count cells, version
    2's rows in time order) -- checked by tsbuckets.columns -- and for any version: control.min.t
    is the rounded bucket start, control.max.t the latest time, every time within the span, the
    _id's timestamp the bucket start."""
    assert bucket["control"]["version"] in (1, 2, 3)
    times = columns(bucket)["t"]
    n = len(times)
    assert n >= 1
    lo = bucket["control"]["min"]["t"]
    hi = bucket["control"]["max"]["t"]
    assert epoch_ms(lo) % (rounding * 1000) == 0
    assert hi == max(times)
    for v in times:
        assert lo <= v < lo + datetime.timedelta(seconds=span)
    assert oid_seconds(bucket["_id"]) == epoch_ms(lo) // 1000
    if bucket["control"]["version"] != 1:
        assert bucket["control"]["count"] == n


# -- 5. inserts ----------------------------------------------------------------------
def test_insert_counts_measurements_and_generates_id(db):
    create_ts(db)
    r = insert_cmd(db, "ts", [{"t": at(i), "m": 1, "v": i} for i in range(5)])
    assert r["ok"] == 1 and r["n"] == 5 and "writeErrors" not in r
    got = list(db.ts.find())
    assert len(got) == 5
    assert all(isinstance(d["_id"], ObjectId) for d in got)
    assert len({d["_id"] for d in got}) == 5


def test_duplicate_id_is_allowed(db):
    create_ts(db)
    r = insert_cmd(db, "ts", [{"_id": 7, "t": at(1)}, {"_id": 7, "t": at(2)}])
    assert r["n"] == 2 and "writeErrors" not in r
    db.ts.insert_one({"_id": 7, "t": at(3)})
    assert db.ts.count_documents({"_id": 7}) == 3


@pytest.mark.parametrize(
    "bad",
    [None, "2024-01-01", 17, Int64(1700000000000), Timestamp(1700000000, 1), "missing",
     {"$date": 1}],
    ids=["null", "string", "int", "long", "timestamp", "missing", "object"],
)
def test_time_field_must_be_a_date(db, bad):
    create_ts(db)
    doc = {"m": 1, "x": 1}
    if bad != "missing":
        doc["t"] = bad
    r = insert_cmd(db, "ts", [doc])
    assert r["ok"] == 1
    assert r["n"] == 0
    [e] = r["writeErrors"]
    assert (e["index"], e["code"], e["errmsg"]) == (0, 2, TIME_MSG)
    assert list(db.ts.find()) == []


def test_time_field_message_names_the_time_field(db):
    db.command({"create": "ts", "timeseries": {"timeField": "when"}})
    r = insert_cmd(db, "ts", [{"x": 1}])
    assert r["writeErrors"][0]["errmsg"] == (
        "'when' must be present and contain a valid BSON UTC datetime value"
    )


def test_measurement_keeps_id_where_the_client_put_it(server, db):
    # A driver that appends _id (Node, mongosh) gets it back last, as MongoDB's manual shows
    # ({timestamp, metadata, temp, _id}); one that puts it first gets it first.
    # (pymongo moves _id first in every document it inserts, so the insert is sent raw.)
    create_ts(db)
    oid = ObjectId()
    sock = wire.connect(server.port)
    try:
        r = wire.command(sock, SON([("insert", "ts"), ("documents", [
            SON([("t", at(1)), ("m", 1), ("temp", 12), ("_id", oid)]),
            SON([("_id", 7), ("t", at(2)), ("m", 2), ("temp", 13)])]), ("$db", db.name)]))
    finally:
        sock.close()
    assert r["ok"] == 1 and r["n"] == 2, r
    got = {d["m"]: list(d.keys()) for d in db.ts.find()}
    assert got[1] == ["t", "m", "temp", "_id"]
    assert got[2] == ["t", "m", "_id", "temp"]
    assert db.ts.find_one({"m": 1})["_id"] == oid


@pytest.mark.parametrize("stage", [
    {"$project": {"c.a": "$m"}},
    {"$project": {"_id": 0, "c.a": "$m", "v": 1}},
    {"$project": {"c": {"a": "$m"}}},
    {"$project": {"_id": 0, "c.a": {"$add": ["$m", 1]}, "d.e": "$v"}},
])
def test_project_of_a_dotted_path_over_arrays_matches_a_collection(db, stage):
    # {"c.a": expr} over c: [{}, {}] sets a in each element, on a time-series collection as on
    # a regular one; d: 5 (not an object) is replaced by {e: ...}.
    create_ts(db)
    rows = [{"_id": 1, "t": at(1), "m": 4, "c": [{}, {"b": 1}], "v": 7, "d": 5},
            {"_id": 2, "t": at(2), "m": 5, "c": {"x": 1}, "v": 8, "d": [{"e": 0}, 3]}]
    db.ts.insert_many(rows)
    db.plain.insert_many(rows)
    got = sorted(db.ts.aggregate([stage]), key=lambda d: str(d))
    want = sorted(db.plain.aggregate([stage]), key=lambda d: str(d))
    assert got == want


def test_ordered_insert_stops_at_first_error(db):
    create_ts(db)
    docs = [{"t": at(1), "v": 0}, {"v": 1}, {"t": at(3), "v": 2}, {"t": "x", "v": 3}]
    with pytest.raises(BulkWriteError) as exc:
        db.ts.insert_many(docs, ordered=True)
    details = exc.value.details
    assert details["nInserted"] == 1
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(1, 2)]
    assert details["writeErrors"][0]["errmsg"] == TIME_MSG
    assert [d["v"] for d in db.ts.find()] == [0]


def test_unordered_insert_reports_every_bad_document(db):
    create_ts(db)
    r = insert_cmd(db, "ts", [{"v": 0}, {"t": at(1), "v": 1}, {"t": "invalid", "v": 2}],
                   ordered=False)
    assert r["ok"] == 1
    assert r["n"] == 1
    assert [(e["index"], e["code"], e["errmsg"]) for e in r["writeErrors"]] == [
        (0, 2, TIME_MSG),
        (2, 2, TIME_MSG),
    ]
    assert [d["v"] for d in db.ts.find()] == [1]


def test_one_insert_of_thousands_of_series_keeps_each_outcome(db):
    # More series in one request than the server's per-request tables start with: every
    # measurement lands in its series' bucket and each bad one is reported at its own index.
    create_ts(db)
    series, rounds = 3000, 3
    docs = []
    for r in range(rounds):
        for s in range(series):
            docs.append({"t": at(r), "m": {"host": s}, "v": r * series + s})
    bad = [500, 4321, 8999]
    for i in bad:
        docs[i] = {"m": {"host": -1}, "v": -1}
    r = insert_cmd(db, "ts", docs, ordered=False)
    assert r["ok"] == 1
    assert r["n"] == len(docs) - len(bad)
    assert [e["index"] for e in r["writeErrors"]] == bad
    per_host = {d["_id"]: d for d in db.ts.aggregate(
        [{"$group": {"_id": "$m.host", "n": {"$sum": 1}, "vs": {"$push": "$v"}}}])}
    assert len(per_host) == series
    for s in range(series):
        want = [k * series + s for k in range(rounds) if k * series + s not in bad]
        assert sorted(per_host[s]["vs"]) == want
    assert db.command("collStats", "ts")["timeseries"]["bucketCount"] == series


def test_meta_may_be_missing_or_any_type(db):
    create_ts(db)
    metas = [None, 1, "s", [1, 2], {"a": 1}, True, Decimal128("1.5"), "MISSING"]
    for i, m in enumerate(metas):
        doc = {"_id": i, "t": at(i)}
        if m != "MISSING":
            doc["m"] = m
        db.ts.insert_one(doc)
    got = {d["_id"]: d for d in db.ts.find()}
    assert len(got) == len(metas)
    for i, m in enumerate(metas):
        if m == "MISSING":
            assert "m" not in got[i]
        else:
            assert got[i]["m"] == m


# -- 3.1 / 3.3 / 3.4 bucket documents ---------------------------------------------------
def test_bucket_document_version_1_exact(db_v1):
    # The version-1 layout, byte for byte: on a server that writes version 1 (db_v1).
    db = db_v1
    create_ts(db)
    meta_in = SON([("z", 1), ("a", SON([("y", 1), ("b", 2)]))])
    docs = [
        SON([("_id", 1), ("t", at(5)), ("m", meta_in), ("x", 5), ("s", "b")]),
        SON([("_id", 2), ("t", at(65)), ("m", meta_in), ("x", 2.5), ("o", SON([("p", 1)]))]),
        SON([("_id", 3), ("t", at(30)), ("m", meta_in), ("s", "a"),
             ("o", SON([("p", 0), ("q", "x")]))]),
    ]
    r = insert_cmd(db, "ts", docs)
    assert r["n"] == 3
    [b] = buckets(db)
    assert isinstance(b["_id"], ObjectId)
    expected = {
        "_id": b["_id"],
        "control": {
            "version": 1,
            "min": {"_id": 1, "t": at(0), "x": 2.5, "s": "a", "o": {"p": 0, "q": "x"}},
            "max": {"_id": 3, "t": at(65), "x": 5, "s": "b", "o": {"p": 1, "q": "x"}},
        },
        "meta": {"a": {"b": 2, "y": 1}, "z": 1},
        "data": {
            "_id": {"0": 1, "1": 2, "2": 3},
            "t": {"0": at(5), "1": at(65), "2": at(30)},
            "x": {"0": 5, "1": 2.5},
            "s": {"0": "b", "2": "a"},
            "o": {"1": {"p": 1}, "2": {"p": 0, "q": "x"}},
        },
    }
    assert b == expected
    # Field order: top level, control, min/max in first-seen order, normalized meta,
    # data columns in first-seen order.
    assert ordered(b) == ordered(expected)
    assert oid_seconds(b["_id"]) == epoch_ms(at(0)) // 1000
    check_bucket_invariants(b)


def test_bucket_without_meta_field_has_no_meta(db):
    create_ts(db, meta=None)
    db.ts.insert_one({"_id": 1, "t": at(10), "v": 1})
    [b] = buckets(db)
    assert list(b) == ["_id", "control", "data"]
    create_ts(db, "ts2")
    db.ts2.insert_one({"_id": 1, "t": at(10), "v": 1})  # no meta value
    [b] = buckets(db, "ts2")
    assert "meta" not in b


def test_min_max_numbers_compare_numerically(db):
    create_ts(db)
    vals = [3, 2.5, Int64(10), Decimal128("7")]
    db.ts.insert_many([{"t": at(i), "m": 1, "n": v} for i, v in enumerate(vals)])
    [b] = buckets(db)
    assert b["control"]["min"]["n"] == 2.5 and isinstance(b["control"]["min"]["n"], float)
    assert b["control"]["max"]["n"] == 10 and isinstance(b["control"]["max"]["n"], Int64)


def test_min_max_nested_objects_and_arrays(db):
    create_ts(db)
    db.ts.insert_many(
        [
            {"t": at(1), "m": 1, "o": {"p": 1, "q": {"r": 5}}, "a": [1, 5]},
            {"t": at(2), "m": 1, "o": {"p": 0, "q": {"r": 7, "s": "x"}}, "a": [3, 2, 9]},
        ]
    )
    [b] = buckets(db)
    assert ordered(b["control"]["min"]["o"]) == ordered({"p": 0, "q": {"r": 5, "s": "x"}})
    assert ordered(b["control"]["max"]["o"]) == ordered({"p": 1, "q": {"r": 7, "s": "x"}})
    assert b["control"]["min"]["a"] == [1, 2, 9]
    assert b["control"]["max"]["a"] == [3, 5, 9]


def test_min_max_strings_and_dates(db):
    create_ts(db)
    d1, d2 = datetime.datetime(2000, 1, 1), datetime.datetime(1999, 1, 1)
    db.ts.insert_many(
        [
            {"t": at(1), "m": 1, "s": "pear", "d": d1},
            {"t": at(2), "m": 1, "s": "apple", "d": d2},
            {"t": at(3), "m": 1, "s": "zebra"},
        ]
    )
    [b] = buckets(db)
    assert (b["control"]["min"]["s"], b["control"]["max"]["s"]) == ("apple", "zebra")
    assert (b["control"]["min"]["d"], b["control"]["max"]["d"]) == (d2, d1)


@pytest.mark.parametrize(
    "options,t,expected_min",
    [
        ({}, datetime.datetime(2024, 3, 5, 10, 17, 45, 123000),
         datetime.datetime(2024, 3, 5, 10, 17)),
        ({"granularity": "minutes"}, datetime.datetime(2024, 3, 5, 10, 17, 45),
         datetime.datetime(2024, 3, 5, 10, 0)),
        ({"granularity": "hours"}, datetime.datetime(2024, 3, 5, 10, 17, 45),
         datetime.datetime(2024, 3, 5, 0, 0)),
        ({"bucketMaxSpanSeconds": 1000, "bucketRoundingSeconds": 1000},
         datetime.datetime(2024, 3, 5, 10, 17, 45),
         datetime.datetime(2024, 3, 5, 10, 3, 20)),  # 1709633865 s floored to 1000 s
        ({}, datetime.datetime(1969, 12, 31, 23, 59, 30, 500000),
         datetime.datetime(1969, 12, 31, 23, 59)),
        ({}, datetime.datetime(1969, 12, 31, 23, 58, 59, 999000),
         datetime.datetime(1969, 12, 31, 23, 58)),
        ({}, datetime.datetime(1969, 12, 31, 23, 58, 0),
         datetime.datetime(1969, 12, 31, 23, 58)),
        ({"granularity": "hours"}, datetime.datetime(1960, 6, 1, 12, 0),
         datetime.datetime(1960, 6, 1, 0, 0)),
    ],
    ids=["seconds", "minutes", "hours", "custom", "pre1970-a", "pre1970-b", "pre1970-exact",
         "pre1970-hours"],
)
def test_bucket_min_time_is_rounded_down(db, options, t, expected_min):
    create_ts(db, **options)
    db.ts.insert_one({"t": t, "m": 1})
    [b] = buckets(db)
    assert b["control"]["min"]["t"] == expected_min
    assert b["control"]["max"]["t"] == t
    # The _id timestamp is uint32(rounded seconds), truncated modulo 2^32 (3.4).
    assert oid_seconds(b["_id"]) == (epoch_ms(expected_min) // 1000) % 2**32


def test_custom_rounding_value_arithmetic():
    # Guards the expected value used above: 10:17:45 rounded down to 1000 s.
    secs = epoch_ms(datetime.datetime(2024, 3, 5, 10, 17, 45)) // 1000
    assert secs == 1709633865
    assert datetime.datetime.fromtimestamp(secs - secs % 1000, UTC).replace(
        tzinfo=None
    ) == datetime.datetime(2024, 3, 5, 10, 3, 20)


def test_bucket_ids_are_distinct_object_ids_with_rounded_time(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(0), "m": i} for i in range(20)])
    bs = buckets(db)
    assert len(bs) == 20
    assert len({b["_id"] for b in bs}) == 20
    for b in bs:
        assert oid_seconds(b["_id"]) == epoch_ms(T0) // 1000


# -- 4.1 series keys -----------------------------------------------------------------
def test_meta_objects_are_normalized_into_one_series(db):
    create_ts(db)
    db.ts.insert_one({"t": at(1), "m": SON([("b", 1), ("a", SON([("d", 1), ("c", 2)]))])})
    db.ts.insert_one({"t": at(2), "m": SON([("a", SON([("c", 2), ("d", 1)])), ("b", 1)])})
    [b] = buckets(db)
    assert rows(b) == 2
    assert ordered(b["meta"]) == ordered({"a": {"c": 2, "d": 1}, "b": 1})
    # Unpacked documents carry the normalized meta.
    for d in db.ts.find():
        assert ordered(d["m"]) == ordered({"a": {"c": 2, "d": 1}, "b": 1})


@pytest.mark.parametrize(
    "m1,m2,same",
    [
        (1, Int64(1), False),
        (1, 1.0, False),
        (None, "MISSING", False),
        ([{"b": 1, "c": 0}], [SON([("c", 0), ("b", 1)])], True),
        ([1, 2, 3], [2, 1, 3], False),
        ("a", "a", True),
    ],
    ids=["int-vs-long", "int-vs-double", "null-vs-missing", "objects-in-arrays",
         "array-order", "equal"],
)
def test_series_key_equality(db, m1, m2, same):
    create_ts(db)
    for i, m in enumerate((m1, m2)):
        doc = {"t": at(i)}
        if m != "MISSING":
            doc["m"] = m
        db.ts.insert_one(doc)
    bs = buckets(db)
    assert len(bs) == (1 if same else 2)
    if m2 == "MISSING":
        metas = [("meta" in b, b.get("meta")) for b in bs]
        assert sorted(metas, key=repr) == [(False, None), (True, None)]


# -- 4.2 rollover ------------------------------------------------------------------------
def test_count_rollover_2500_measurements(client, db):
    create_ts(db)
    before = catalog(client)
    db.ts.insert_many([{"t": at(i), "m": "sensor-1", "v": i} for i in range(2500)])
    after = catalog(client)
    bs = buckets(db)
    assert [rows(b) for b in bs] == [1000, 1000, 500]
    assert [b["control"]["min"]["t"] for b in bs] == [at(0), at(960), at(1980)]
    assert [b["control"]["max"]["t"] for b in bs] == [at(999), at(1999), at(2499)]
    for b in bs:
        check_bucket_invariants(b)
    st = ts_stats(db)
    assert st["bucketCount"] == 3
    assert st["numBucketsClosedDueToCount"] == 2
    assert st["numBucketInserts"] == 3
    assert st["numMeasurementsCommitted"] == 2500
    assert st["numBucketsClosedDueToTimeForward"] == 0
    assert st["numBucketsClosedDueToSize"] == 0
    d = delta(after, before, ["numBucketsClosedDueToCount", "numMeasurementsCommitted"])
    assert d == {"numBucketsClosedDueToCount": 2, "numMeasurementsCommitted": 2500}
    assert db.ts.count_documents({}) == 2500


def test_time_forward_rollover(client, db):
    create_ts(db)
    db.ts.insert_one({"t": at(10), "m": 1})
    db.ts.insert_one({"t": at(3599, 999), "m": 1})  # still < min + 3600 s
    before = catalog(client)
    db.ts.insert_one({"t": at(3600), "m": 1})  # one hour after the bucket start
    after = catalog(client)
    bs = buckets(db)
    assert [(b["control"]["min"]["t"], rows(b)) for b in bs] == [(at(0), 2), (at(3600), 1)]
    st = ts_stats(db)
    assert st["numBucketsClosedDueToTimeForward"] == 1
    assert st["numBucketsClosedDueToCount"] == 0
    assert delta(after, before, ["numBucketsClosedDueToTimeForward"]) == {
        "numBucketsClosedDueToTimeForward": 1
    }


def test_one_hour_later_opens_new_bucket_after_full_hour_of_data(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(60 * i), "m": "a"} for i in range(60)])
    db.ts.insert_one({"t": at(3600 + 1), "m": "a"})
    bs = buckets(db)
    assert [rows(b) for b in bs] == [60, 1]
    assert bs[1]["control"]["min"]["t"] == at(3600)
    assert ts_stats(db)["numBucketsClosedDueToTimeForward"] == 1


def test_time_backward_archives_bucket(client, db):
    create_ts(db)
    db.ts.insert_one({"t": at(1800), "m": 1})
    before = catalog(client)
    db.ts.insert_one({"t": at(600), "m": 1})  # before the open bucket's min time
    after = catalog(client)
    bs = buckets(db)
    assert [(b["control"]["min"]["t"], rows(b)) for b in bs] == [(at(600), 1), (at(1800), 1)]
    st = ts_stats(db)
    assert st["numBucketsArchivedDueToTimeBackward"] == 1
    assert st["numBucketsClosedDueToTimeForward"] == 0
    assert delta(after, before, ["numBucketsArchivedDueToTimeBackward"]) == {
        "numBucketsArchivedDueToTimeBackward": 1
    }


def test_out_of_order_within_bucket_does_not_roll_over(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(s), "m": 1} for s in (30, 10, 50, 0)])
    [b] = buckets(db)
    # Arrival order, except in a version-2 bucket (rows sorted by time).
    arrival = [at(30), at(10), at(50), at(0)]
    want = sorted(arrival) if b["control"]["version"] == 2 else arrival
    assert columns(b)["t"] == want
    assert b["control"]["min"]["t"] == at(0)
    assert b["control"]["max"]["t"] == at(50)


@pytest.mark.parametrize(
    "last,reason",
    [
        ({"t": at(3600), "x": 1}, "numBucketsClosedDueToTimeForward"),
        ({"t": at(-60), "x": 1}, "numBucketsArchivedDueToTimeBackward"),
        ({"t": at(5), "x": "schema change too"}, "numBucketsClosedDueToCount"),
    ],
    ids=["time-forward-before-count", "time-backward-before-count", "count-before-schema"],
)
def test_rollover_reasons_are_checked_in_order(db, last, reason):
    # A full bucket (1000 measurements) also fails the count check: the reason recorded
    # is the first applicable one of 4.2's list.
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": 1, "x": i} for i in range(1000)])
    db.ts.insert_one(dict(last, m=1))
    assert sorted(rows(b) for b in buckets(db)) == [1, 1000]
    st = ts_stats(db)
    reasons = ["numBucketsClosedDueToTimeForward", "numBucketsArchivedDueToTimeBackward",
               "numBucketsClosedDueToCount", "numBucketsClosedDueToSchemaChange",
               "numBucketsClosedDueToSize"]
    assert {k: st[k] for k in reasons} == {k: int(k == reason) for k in reasons}


def test_extended_range_dates_are_accepted(db):
    create_ts(db)
    late = datetime.datetime(2040, 2, 29, 12, 34, 56)
    early = datetime.datetime(1950, 1, 1, 0, 0, 30)
    db.ts.insert_many([{"t": late, "m": 1, "v": 1}, {"t": early, "m": 1, "v": 2}])
    assert sorted((d["t"], d["v"]) for d in db.ts.find({}, {"_id": 0})) == [
        (early, 2), (late, 1)
    ]
    bs = buckets(db)
    assert [b["control"]["min"]["t"] for b in bs] == [
        datetime.datetime(1950, 1, 1, 0, 0), datetime.datetime(2040, 2, 29, 12, 34)
    ]
    for b in bs:
        secs = epoch_ms(b["control"]["min"]["t"]) // 1000
        assert oid_seconds(b["_id"]) == secs % 2**32
    assert db.ts.count_documents({"t": {"$gt": datetime.datetime(2038, 1, 20)}}) == 1


def test_schema_change_number_to_string(client, db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": 1, "x": v} for i, v in enumerate([1, 2.5, Int64(3)])])
    before = catalog(client)
    db.ts.insert_one({"t": at(10), "m": 1, "x": "three"})
    after = catalog(client)
    bs = buckets(db)
    assert [rows(b) for b in bs] == [3, 1]
    assert columns(bs[1])["x"] == ["three"]
    old = columns(bs[0])["x"]
    assert old == [1, 2.5, 3] and [type(x) for x in old] == [int, float, Int64]
    st = ts_stats(db)
    assert st["numBucketsClosedDueToSchemaChange"] == 1
    assert delta(after, before, ["numBucketsClosedDueToSchemaChange"]) == {
        "numBucketsClosedDueToSchemaChange": 1
    }


@pytest.mark.parametrize(
    "first,second",
    [(1, {"a": 1}), ({"a": 1}, [1]), ("s", True), ({"a": 1}, {"a": "s"}),
     (datetime.datetime(2020, 1, 1), Timestamp(1, 1))],
    ids=["scalar-object", "object-array", "string-bool", "nested-number-string", "date-ts"],
)
def test_schema_changes_close_bucket(db, first, second):
    create_ts(db)
    db.ts.insert_one({"t": at(1), "m": 1, "x": first})
    db.ts.insert_one({"t": at(2), "m": 1, "x": second})
    assert [rows(b) for b in buckets(db)] == [1, 1]
    assert ts_stats(db)["numBucketsClosedDueToSchemaChange"] == 1


def test_compatible_schema_keeps_bucket(db):
    create_ts(db)
    db.ts.insert_many(
        [
            {"t": at(1), "m": 1, "x": 1, "o": {"a": 1}},
            {"t": at(2), "m": 1, "x": Decimal128("2"), "o": {"b": "new subfield"}},
            {"t": at(3), "m": 1},  # absent fields are fine
            {"t": at(4), "m": 1, "x": 4.5, "y": "new field"},
        ]
    )
    assert [rows(b) for b in buckets(db)] == [4]
    assert ts_stats(db)["numBucketsClosedDueToSchemaChange"] == 0


def test_size_rollover(db):
    create_ts(db)
    payload = "p" * 1000
    db.ts.insert_many([{"t": at(i), "m": 1, "s": payload} for i in range(300)])
    bs = buckets(db)
    assert sum(rows(b) for b in bs) == 300
    assert len(bs) >= 3
    st = ts_stats(db)
    assert st["numBucketsClosedDueToSize"] == len(bs) - 1
    assert st["numBucketsKeptOpenDueToLargeMeasurements"] == 0
    assert st["numBucketsClosedDueToCachePressure"] == 0
    for b in bs:
        # The limit is on the uncompressed bucket; a compressed one is smaller still.
        assert len(bson.encode(b)) <= uncompressed_size(b) <= 128000
        check_bucket_invariants(b)
    assert [c for b in bs for c in columns(b)["s"]] == [payload] * 300
    # Closed buckets are nearly full (the catalog works on a size estimate, so allow a
    # few percent of slack).
    for b in bs[:-1]:
        assert uncompressed_size(b) > 128000 * 0.95


def test_large_measurements_keep_bucket_open(client, db):
    create_ts(db)
    big = "L" * 70000
    before = catalog(client)
    # Three 70 KB measurements exceed 128000 bytes, but a bucket with fewer than
    # timeseriesBucketMinCount (10) measurements stays open up to 12 MiB.
    for i in range(3):
        db.ts.insert_one({"t": at(i), "m": 1, "s": big})
    after = catalog(client)
    bs = buckets(db)
    assert [rows(b) for b in bs] == [3]
    st = ts_stats(db)
    assert st["numBucketsKeptOpenDueToLargeMeasurements"] == 1  # once per bucket
    assert st["numBucketsClosedDueToSize"] == 0
    assert delta(after, before, ["numBucketsKeptOpenDueToLargeMeasurements"]) == {
        "numBucketsKeptOpenDueToLargeMeasurements": 1
    }


@pytest.fixture
def restore_parameters(client):
    saved = {}

    def set_(name, value):
        if name not in saved:
            saved[name] = client.admin.command("getParameter", 1, **{name: 1})[name]
        client.admin.command("setParameter", 1, **{name: value})

    yield set_
    for name, value in saved.items():
        client.admin.command("setParameter", 1, **{name: value})


def test_min_count_one_disables_large_measurement_rule(client, db, restore_parameters):
    restore_parameters("timeseriesBucketMinCount", 1)
    create_ts(db)
    big = "L" * 70000
    for i in range(3):
        db.ts.insert_one({"t": at(i), "m": 1, "s": big})
    assert [rows(b) for b in buckets(db)] == [1, 1, 1]
    st = ts_stats(db)
    assert st["numBucketsClosedDueToSize"] == 2
    assert st["numBucketsKeptOpenDueToLargeMeasurements"] == 0


def test_runtime_set_parameter_max_count(client, db, restore_parameters):
    restore_parameters("timeseriesBucketMaxCount", 4)
    assert client.admin.command("getParameter", 1, timeseriesBucketMaxCount=1)[
        "timeseriesBucketMaxCount"
    ] == 4
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": 1} for i in range(10)])
    assert [rows(b) for b in buckets(db)] == [4, 4, 2]
    assert ts_stats(db)["numBucketsClosedDueToCount"] == 2


def test_runtime_set_parameter_max_size(client, db, restore_parameters):
    restore_parameters("timeseriesBucketMaxSize", 4000)
    restore_parameters("timeseriesBucketMinCount", 1)
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": 1, "s": "x" * 500} for i in range(40)])
    bs = buckets(db)
    assert len(bs) > 1
    for b in bs:
        assert len(bson.encode(b)) <= uncompressed_size(b) <= 4000
    assert ts_stats(db)["numBucketsClosedDueToSize"] == len(bs) - 1


# -- 4.5 server parameters ----------------------------------------------------------------
def test_parameter_defaults(client):
    r = client.admin.command("getParameter", "*")
    assert r["timeseriesBucketMaxCount"] == 1000
    assert r["timeseriesBucketMaxSize"] == 128000
    assert r["timeseriesBucketMinCount"] == 10
    assert r["timeseriesBucketMinSize"] == 5120
    assert r["timeseriesIdleBucketExpiryMaxCountPerAttempt"] == 3
    assert r["timeseriesIdleBucketExpiryMemoryUsageThreshold"] == 0
    assert "timeseriesInsertMaxRetriesOnDuplicates" in r


def test_startup_set_parameter_max_count(fresh_server):
    s = fresh_server.new(extra_args=["--setParameter", "timeseriesBucketMaxCount=10"])
    c = s.client()
    try:
        assert c.admin.command("getParameter", 1, timeseriesBucketMaxCount=1)[
            "timeseriesBucketMaxCount"
        ] == 10
        db = c.tsparam
        create_ts(db)
        db.ts.insert_many([{"t": at(i), "m": 1} for i in range(25)])
        assert [rows(b) for b in buckets(db)] == [10, 10, 5]
        cat = catalog(c)
        assert cat["numBucketsClosedDueToCount"] == 2
        assert cat["numMeasurementsCommitted"] == 25
    finally:
        c.close()


def test_idle_buckets_expire_under_memory_threshold(fresh_server):
    # A 1-byte threshold is always exceeded: before a new bucket is allocated the
    # catalog archives (or closes) idle buckets of the new bucket's stripe (4.4, 4.5).
    # Each insert below commits before the next, so every earlier bucket is idle; with
    # at most 32 stripes (MongoDB's count), all but the first allocation of each stripe
    # finds an idle bucket to expire.
    series = 200
    s = fresh_server.new(
        extra_args=["--setParameter", "timeseriesIdleBucketExpiryMemoryUsageThreshold=1"]
    )
    c = s.client()
    try:
        assert c.admin.command(
            "getParameter", 1, timeseriesIdleBucketExpiryMemoryUsageThreshold=1
        )["timeseriesIdleBucketExpiryMemoryUsageThreshold"] == 1
        db = c.tsmem
        create_ts(db)
        for i in range(series):
            db.ts.insert_one({"t": at(i), "m": i, "v": i})
        cat = catalog(c)
        expired = (cat["numBucketsArchivedDueToMemoryThreshold"]
                   + cat["numBucketsClosedDueToMemoryThreshold"])
        assert expired >= series - 32
        assert cat["numOpenBuckets"] < series
        assert cat["numArchivedBuckets"] == cat["numBuckets"] - cat["numOpenBuckets"]
        # Nothing is lost, and expired series still accept measurements.
        for i in range(series):
            db.ts.insert_one({"t": at(1000 + i), "m": i, "v": 1000 + i})
        assert sorted(d["v"] for d in db.ts.find()) == list(range(series)) + list(
            range(1000, 1000 + series)
        )
        for b in buckets(db):
            check_bucket_invariants(b)
    finally:
        c.close()


# -- 4.6 / 4.7 / 4.8 statistics ----------------------------------------------------------
CATALOG_FIELDS = [
    "numBuckets", "numOpenBuckets", "numIdleBuckets", "numArchivedBuckets", "memoryUsage",
    "numActiveBuckets", "numBucketInserts", "numBucketUpdates", "numBucketsOpenedDueToMetadata",
    "numBucketsClosedDueToCount", "numBucketsClosedDueToSchemaChange",
    "numBucketsClosedDueToSize", "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToMemoryThreshold", "numCommits", "numWaits",
    "numMeasurementsCommitted", "avgNumMeasurementsPerCommit",
    "numBucketsClosedDueToReopening", "numBucketsArchivedDueToMemoryThreshold",
    "numBucketsArchivedDueToTimeBackward", "numBucketsReopened",
    "numBucketsKeptOpenDueToLargeMeasurements", "numBucketsClosedDueToCachePressure",
    "numBucketsFrozen", "numCompressedBucketsConvertedToUnsorted", "numBucketsFetched",
    "numBucketsQueried", "numBucketFetchesFailed", "numBucketQueriesFailed",
    "numBucketReopeningsFailed", "numDuplicateBucketsReopened",
    "numBucketDocumentsTooLargeInsert",
    "numBucketDocumentsTooLargeUpdate", "stateManagement",
]
EXEC_STATS = CATALOG_FIELDS[6:-1]
# The statistics of compression as buckets close, which MongoDB 7.x reports after
# numDuplicateBucketsReopened and 8.0, writing every bucket compressed, no longer does.
CLOSE_COMPRESSION_STATS = [
    "numBytesUncompressed", "numBytesCompressed", "numSubObjCompressionRestart",
    "numCompressedBuckets", "numUncompressedBuckets", "numFailedDecompressBuckets",
]


def catalog_fields(with_close_compression):
    """CATALOG_FIELDS in their order, with the close-time compression statistics or not."""
    if not with_close_compression:
        return CATALOG_FIELDS
    at_ = CATALOG_FIELDS.index("numDuplicateBucketsReopened") + 1
    return CATALOG_FIELDS[:at_] + CLOSE_COMPRESSION_STATS + CATALOG_FIELDS[at_:]


def always_compressed(client):
    name = "hourglassTimeseriesAlwaysCompressBuckets"
    return client.admin.command({"getParameter": 1, name: 1})[name]


@pytest.mark.parametrize("v1", [False, True], ids=["compressed", "version1"])
def test_server_status_bucket_catalog_section(request, v1):
    # Buckets written compressed (MongoDB 8.0): no close-time compression statistics; buckets
    # written as version 1 and compressed as they close (7.x): those statistics too.
    db = request.getfixturevalue("db_v1" if v1 else "db")
    client = db.client
    assert always_compressed(client) is not v1
    create_ts(db)
    db.ts.insert_one({"t": at(0), "m": 1})
    cat = catalog(client)
    keys = list(cat)
    want = catalog_fields(with_close_compression=v1)
    missing = [k for k in want if k not in keys]
    assert missing == []
    assert [k for k in keys if k not in want] == []
    positions = [keys.index(k) for k in want]
    assert positions == sorted(positions), keys
    assert cat["numArchivedBuckets"] == cat["numBuckets"] - cat["numOpenBuckets"]
    assert set(cat["stateManagement"]) >= {
        "bucketsManaged", "currentEra", "erasWithRemainingBuckets", "trackedClearOperations"
    }
    assert cat["avgNumMeasurementsPerCommit"] == cat["numMeasurementsCommitted"] // cat[
        "numCommits"
    ]


def test_coll_stats_timeseries_section(db):
    create_ts(db)
    st = db.command("collStats", "ts")
    assert "count" not in st and "avgObjSize" not in st
    assert st["numOrphanDocs"] == 0
    assert st["timeseries"]["bucketsNs"] == f"{db.name}.system.buckets.ts"
    assert st["timeseries"]["bucketCount"] == 0
    assert "avgBucketSize" not in st["timeseries"]
    assert "avgNumMeasurementsPerCommit" not in st["timeseries"]

    # One insert command: one commit per bucket (2 series).
    db.ts.insert_many([{"t": at(i), "m": i % 2, "v": i} for i in range(10)])
    db.ts.insert_one({"t": at(20), "m": 0, "v": 20})  # appends to a stored bucket
    st = db.command("collStats", "ts")
    ts = st["timeseries"]
    assert "count" not in st
    bs = buckets(db)
    assert ts["bucketCount"] == len(bs) == 2
    sizes = [len(bson.encode(b)) for b in bs]
    assert ts["avgBucketSize"] == sum(sizes) // len(sizes)
    assert ts["numBucketInserts"] == 2
    assert ts["numBucketUpdates"] == 1
    assert ts["numBucketsOpenedDueToMetadata"] == 2
    assert ts["numCommits"] == 3
    assert ts["numMeasurementsCommitted"] == 11
    assert ts["avgNumMeasurementsPerCommit"] == 11 // 3
    for k in EXEC_STATS:
        if k != "avgNumMeasurementsPerCommit":
            assert k in ts, k
    compressed = always_compressed(db.client)
    for k in CLOSE_COMPRESSION_STATS:
        assert (k in ts) is not compressed, k
    # Per-collection numbers: another collection does not change them.
    create_ts(db, "other")
    db.other.insert_one({"t": at(0), "m": 1})
    assert ts_stats(db)["numBucketInserts"] == 2


# -- 6.1 reads on the view --------------------------------------------------------------
def expected_unpacked(docs, meta="m"):
    """T first, then M, then the other fields in the order the bucket's data columns
    were first seen (all `docs` in one bucket)."""
    columns = []
    for d in docs:
        for k in d:
            if k not in ("t", meta) and k not in columns:
                columns.append(k)
    out = []
    for d in docs:
        e = {"t": d["t"]}
        if meta in d:
            e[meta] = d[meta]
        for c in columns:
            if c in d:
                e[c] = d[c]
        out.append(e)
    return out


def test_unpacked_documents_equal_inserted_ones(db):
    create_ts(db)
    docs = [
        SON([("_id", 1), ("temp", 20.5), ("t", at(1)), ("m", {"id": "s1", "loc": "x"})]),
        SON([("_id", 2), ("t", at(2)), ("m", {"id": "s1", "loc": "x"}), ("temp", 21),
             ("hum", Int64(40))]),
        SON([("t", at(3)), ("_id", 3), ("m", {"id": "s1", "loc": "x"}), ("hum", 41),
             ("tags", ["a", "b"]), ("o", {"k": None, "d": Decimal128("1.1")})]),
        SON([("_id", 4), ("t", at(4)), ("m", {"id": "s1", "loc": "x"})]),
    ]
    insert_cmd(db, "ts", docs)
    got = list(db.ts.find())
    exp = expected_unpacked(docs)
    assert got == exp
    assert [ordered(g) for g in got] == [ordered(e) for e in exp]
    assert list(got[0]) == ["t", "m", "_id", "temp"]
    # Same through aggregate.
    assert [ordered(g) for g in db.ts.aggregate([])] == [ordered(e) for e in exp]


def test_unpacked_documents_without_meta_field(db):
    create_ts(db, meta=None)
    docs = [SON([("_id", i), ("v", i), ("t", at(i))]) for i in range(3)]
    insert_cmd(db, "ts", docs)
    assert [ordered(g) for g in db.ts.find()] == [
        [("t", at(i)), ("_id", i), ("v", i)] for i in range(3)
    ]


def populate_sensors(db, sensors=("A", "B", "C"), hours=(0, 1, 2), per_bucket=20):
    """One bucket per (sensor, hour), measurements every 3 minutes from hh:00, inserted
    interleaved so that no sensor's buckets are stored next to each other."""
    docs = []
    for h in hours:
        for k in range(per_bucket):
            for s in sensors:
                docs.append(
                    {"t": at(3600 * h + 180 * k), "m": s, "v": h * 100 + k, "s": s}
                )
    db.ts.insert_many(docs)
    return docs


def strip_id(docs):
    return [{k: v for k, v in d.items() if k != "_id"} for d in docs]


def test_find_filter_sort_projection_skip_limit(db):
    create_ts(db)
    populate_sensors(db)
    got = list(db.ts.find({"m": "B", "v": {"$gte": 110}}, {"_id": 0, "v": 1, "t": 1})
               .sort([("t", -1)]).skip(2).limit(3))
    assert got == [
        {"t": at(3600 * 2 + 180 * 17), "v": 217},
        {"t": at(3600 * 2 + 180 * 16), "v": 216},
        {"t": at(3600 * 2 + 180 * 15), "v": 215},
    ]
    assert db.ts.find_one({"v": 5, "m": "C"}, {"_id": 0}) == {
        "t": at(900), "m": "C", "v": 5, "s": "C"
    }
    excl = db.ts.find_one({"v": 5, "m": "C"}, {"_id": 0, "m": 0, "s": 0})
    assert ordered(excl) == [("t", at(900)), ("v", 5)]


def test_count_distinct_and_aggregate(db):
    create_ts(db)
    populate_sensors(db)
    assert db.ts.count_documents({}) == 180
    assert db.ts.count_documents({"m": "A"}) == 60
    assert db.ts.count_documents({"t": {"$gte": at(3600), "$lt": at(7200)}}) == 60
    assert db.command({"count": "ts"})["n"] == 180
    assert db.command({"count": "ts", "query": {"v": {"$lt": 10}}})["n"] == 30
    assert db.ts.estimated_document_count() == 180
    assert sorted(db.ts.distinct("m")) == ["A", "B", "C"]
    assert sorted(db.ts.distinct("v", {"m": "A", "v": {"$gte": 218}})) == [218, 219]
    agg = list(
        db.ts.aggregate(
            [
                {"$match": {"t": {"$lt": at(3600)}}},
                {"$group": {"_id": "$m", "n": {"$sum": 1}, "mx": {"$max": "$v"}}},
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert agg == [
        {"_id": "A", "n": 20, "mx": 19},
        {"_id": "B", "n": 20, "mx": 19},
        {"_id": "C", "n": 20, "mx": 19},
    ]


def test_query_for_one_sensor_and_hour_reads_only_its_bucket(client, db):
    create_ts(db)
    hours = tuple(range(6))
    docs = populate_sensors(db, hours=hours, per_bucket=10)
    assert len(buckets(db)) == 18
    lo, hi = at(3 * 3600), at(4 * 3600)
    query = {"m": "B", "t": {"$gte": lo, "$lt": hi}}
    before = read_counters(client)
    got = list(db.ts.find(query, {"_id": 0}))
    after = read_counters(client)
    expected = [
        {"t": d["t"], "m": d["m"], "v": d["v"], "s": d["s"]}
        for d in docs
        if d["m"] == "B" and lo <= d["t"] < hi
    ]
    assert len(expected) == 10
    assert sorted(got, key=lambda d: d["t"]) == expected
    d = delta(after, before, ["bucketsRead", "bucketsUnpacked", "measurementsUnpacked"])
    # Only sensor B's bucket of hour 3 is unpacked ...
    assert d["bucketsUnpacked"] == 1
    assert d["measurementsUnpacked"] == 10
    # ... and only it is read: the series index leads to sensor B's buckets that start in
    # (lo - bucketMaxSpanSeconds, hi), which is hour 3's alone.
    assert d["bucketsRead"] == 1


def test_meta_only_query_unpacks_only_that_series(client, db):
    create_ts(db)
    populate_sensors(db)
    before = read_counters(client)
    # (count_documents would be answered from the buckets' row counts without unpacking.)
    assert len(list(db.ts.find({"m": "C"}))) == 60
    after = read_counters(client)
    d = delta(after, before, ["bucketsUnpacked", "measurementsUnpacked"])
    assert d == {"bucketsUnpacked": 3, "measurementsUnpacked": 60}


# -- 4.6 direct writes to the buckets collection ------------------------------------------
def test_direct_bucket_insert_is_readable(db):
    create_ts(db)
    oid = ObjectId.from_datetime(T0)
    bucket = SON([
        ("_id", oid),
        ("control", SON([("version", 1), ("min", {"t": at(0), "v": 1}),
                         ("max", {"t": at(20), "v": 2})])),
        ("meta", "hand"),
        ("data", SON([("t", {"0": at(10), "1": at(20)}), ("v", {"0": 1, "1": 2}),
                      ("w", {"1": "x"})])),
    ])
    db["system.buckets.ts"].insert_one(bucket)
    assert [ordered(d) for d in db.ts.find()] == [
        [("t", at(10)), ("m", "hand"), ("v", 1)],
        [("t", at(20)), ("m", "hand"), ("v", 2), ("w", "x")],
    ]
    # The catalog knows nothing of it: an insert of the series opens its own bucket
    # (or reopens this one), and both measurements stay readable.
    db.ts.insert_one({"t": at(30), "m": "hand", "v": 3})
    assert sorted(d["v"] for d in db.ts.find()) == [1, 2, 3]


def test_direct_bucket_delete_then_insert_opens_fresh_bucket(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "s", "v": i} for i in range(3)])
    [b] = buckets(db)
    assert db["system.buckets.ts"].delete_one({"_id": b["_id"]}).deleted_count == 1
    assert list(db.ts.find()) == []
    db.ts.insert_one({"t": at(5), "m": "s", "v": 5})
    [nb] = buckets(db)
    assert rows(nb) == 1
    assert columns(nb)["v"] == [5]
    assert [d["v"] for d in db.ts.find()] == [5]
    check_bucket_invariants(nb)


def test_direct_bucket_update_is_kept_by_later_inserts(db_v1):
    # A $set into a version-1 column (data.v.1): on a server that writes version 1 (db_v1).
    db = db_v1
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "s", "v": i} for i in range(3)])
    [b] = buckets(db)
    r = db["system.buckets.ts"].update_one({"_id": b["_id"]}, {"$set": {"data.v.1": 99}})
    assert r.modified_count == 1
    assert sorted(d["v"] for d in db.ts.find()) == [0, 2, 99]
    db.ts.insert_many([{"t": at(10 + i), "m": "s", "v": 10 + i} for i in range(2)])
    assert sorted(d["v"] for d in db.ts.find()) == [0, 2, 10, 11, 99]
    assert sum(rows(x) for x in buckets(db)) == 5


def test_direct_bucket_update_of_meta_moves_measurements(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "old", "v": i} for i in range(2)])
    db["system.buckets.ts"].update_many({"meta": "old"}, {"$set": {"meta": "new"}})
    assert db.ts.count_documents({"m": "new"}) == 2
    db.ts.insert_one({"t": at(5), "m": "old", "v": 5})
    assert db.ts.count_documents({"m": "old"}) == 1
    assert db.ts.count_documents({"m": "new"}) == 2


# -- updates / deletes on the view (not implemented yet) -----------------------------------
def test_delete_by_measurement_fields_rewrites_buckets(db):
    # Spec 8.2 (7.0+): any filter; a partly matching bucket keeps its _id and the remaining
    # measurements, with control.min/max recomputed; a fully matching one goes.
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "s", "v": i} for i in range(6)])
    db.ts.insert_many([{"t": at(i), "m": "x", "v": 100} for i in range(2)])
    [before] = [b for b in buckets(db) if b["meta"] == "s"]
    assert db.ts.delete_many({"v": {"$gte": 4}}).deleted_count == 4
    assert sorted(d["v"] for d in db.ts.find()) == [0, 1, 2, 3]
    [after] = buckets(db)
    assert after["_id"] == before["_id"]
    assert after["control"]["min"]["v"] == 0 and after["control"]["max"]["v"] == 3
    assert after["control"]["min"]["t"] == before["control"]["min"]["t"]
    assert after["control"]["max"]["t"] == at(3)
    assert rows(after) == 4
    # deleteOne removes exactly one measurement.
    assert db.ts.delete_one({"m": "s"}).deleted_count == 1
    assert db.ts.count_documents({}) == 3
    # The series goes on: a new measurement joins a bucket and everything stays readable.
    db.ts.insert_one({"t": at(10), "m": "s", "v": 10})
    assert db.ts.count_documents({"m": "s"}) == 4
    assert db.ts.delete_many({"v": 12345}).deleted_count == 0


def test_delete_many_by_meta(client, db):
    # Spec 8.2: a filter on the metaField deletes whole buckets; n counts measurements.
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": i % 2, "v": i} for i in range(6)])
    assert db.ts.delete_many({"m": 1}).deleted_count == 3
    assert sorted(d["v"] for d in db.ts.find()) == [0, 2, 4]
    assert len(buckets(db)) == 1
    # The deleted series starts a new bucket; the other goes on in its bucket.
    db.ts.insert_many([{"t": at(10), "m": 1, "v": 10}, {"t": at(11), "m": 0, "v": 11}])
    assert sorted(d["v"] for d in db.ts.find({"m": 1})) == [10]
    assert sorted(rows(b) for b in buckets(db)) == [1, 4]
    assert db.ts.delete_many({}).deleted_count == 5
    assert buckets(db) == []


def test_update_many_meta_only(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(3)])
    assert db.ts.update_many({"m": "a"}, {"$set": {"m": "b"}}).modified_count == 3
    assert db.ts.count_documents({"m": "b"}) == 3
    assert [b["meta"] for b in buckets(db)] == ["b"]


def test_update_meta_subfield_renormalizes_bucket_meta(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(i), "m": {"b": 1, "a": 1}, "v": i} for i in range(2)])
    r = db.ts.update_many({"m.a": 1}, {"$set": {"m.c": 0, "m.a": 2}})
    assert (r.matched_count, r.modified_count) == (2, 2)
    [b] = buckets(db)
    assert list(b["meta"].items()) == [("a", 2), ("b", 1), ("c", 0)]
    assert [d["m"] for d in db.ts.find({}, {"_id": 0})] == [{"a": 2, "b": 1, "c": 0}] * 2


def test_update_meta_array_with_array_filters(db):
    # $[<identifier>] with arrayFilters works on the metaField as on a regular document.
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(i), "m": {"tags": [1, 5, 9]}, "v": i} for i in range(2)])
    r = db.ts.update_many({}, {"$set": {"m.tags.$[big]": 0}}, array_filters=[{"big": {"$gte": 5}}])
    assert (r.matched_count, r.modified_count) == (2, 2)
    assert [d["m"] for d in db.ts.find({}, {"_id": 0})] == [{"tags": [1, 0, 0]}] * 2
    # An identifier without a filter is refused, as for regular collections.
    with pytest.raises(OperationFailure) as e:
        db.ts.update_many({}, {"$set": {"m.tags.$[nope]": 1}})
    assert e.value.code == 2


def test_update_meta_array_with_the_positional_operator(db):
    # "$" names the element of the meta array the filter matched, as in MongoDB's
    # timeseries_update_meta positional case; each bucket resolves it against its own meta.
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "tag"})
    db.ts.insert_many([{"t": at(i), "tag": [1, 2, 3], "v": i} for i in range(3)])
    db.ts.insert_many([{"t": at(i), "tag": [2, 7], "v": 10 + i} for i in range(2)])
    db.ts.insert_one({"t": at(0), "tag": [5], "v": 20})
    r = db.ts.update_many({"tag": 2}, {"$set": {"tag.$": 1000}})
    assert (r.matched_count, r.modified_count) == (5, 5)
    got = sorted((d["v"], d["tag"]) for d in db.ts.find({}, {"_id": 0}))
    assert got == [(0, [1, 1000, 3]), (1, [1, 1000, 3]), (2, [1, 1000, 3]),
                   (10, [1000, 7]), (11, [1000, 7]), (20, [5])]
    # Without a match through the array, "$" has nothing to name: MongoDB's BadValue.
    with pytest.raises(OperationFailure) as e:
        db.ts.update_many({}, {"$set": {"tag.$": 0}})
    assert e.value.code == 2


@pytest.fixture
def updates_as_7_0(client):
    """MongoDB 7.0's metaField-only updates (hourglassTimeseriesArbitraryUpdates false) for one
    test; test_timeseries_updates.py holds 8.0's updates of any field, the default."""
    name = "hourglassTimeseriesArbitraryUpdates"
    client.admin.command({"setParameter": 1, name: False})
    yield
    client.admin.command({"setParameter": 1, name: True})


def test_update_rules_of_spec_8_3(db, updates_as_7_0):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(3)])
    cases = [
        (lambda: db.ts.update_one({"m": "a"}, {"$set": {"m": "b"}}),
         "Cannot perform a non-multi update on a time-series collection"),
        (lambda: db.ts.update_many({"m": "a"}, {"$set": {"m": "b"}}, upsert=True),
         "Cannot perform an upsert on a time-series collection"),
        (lambda: db.ts.update_many({"v": 1}, {"$set": {"m": "b"}}),
         "Cannot perform an update or delete on a time-series collection when querying on a "
         "field that is not the metaField 'm'"),
        (lambda: db.ts.update_many({"m": "a"}, {"$set": {"v": 5}}),
         "Cannot perform an update on a time-series collection which updates a field that is "
         "not the metaField 'm'"),
    ]
    for run, message in cases:
        with pytest.raises(OperationFailure) as exc:
            run()
        assert exc.value.code == 72
        assert message in str(exc.value)
    assert db.ts.count_documents({"m": "a"}) == 3
    db.create_collection("nometa", timeseries={"timeField": "t"})
    db.nometa.insert_one({"t": at(0), "v": 1})
    with pytest.raises(OperationFailure) as exc:
        db.nometa.update_many({}, {"$set": {"v": 2}})
    assert exc.value.code == 72


# -- restarts ---------------------------------------------------------------------------
def test_clean_restart_reopens_last_bucket(fresh_server):
    s = fresh_server.new()
    c = s.client()
    db = c.tsrestart
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "A", "v": i} for i in range(5)])
    db.ts.insert_many([{"t": at(i), "m": "B", "v": i} for i in range(1000)])  # full
    c.close()
    assert s.stop() == 0
    s.start()
    c = s.client()
    try:
        db = c.tsrestart
        db.ts.insert_one({"t": at(100), "m": "A", "v": 100})
        bs = [b for b in buckets(db) if b["meta"] == "A"]
        assert [rows(b) for b in bs] == [6]
        check_bucket_invariants(bs[0])
        cat = catalog(c)
        assert cat["numBucketsReopened"] == 1
        assert cat["numBucketInserts"] == 0
        assert cat["numBucketUpdates"] == 1
        # A full bucket is not reopened.
        db.ts.insert_one({"t": at(1001), "m": "B", "v": 1001})
        assert sorted(rows(b) for b in buckets(db) if b["meta"] == "B") == [1, 1000]
        assert db.ts.count_documents({}) == 1007
    finally:
        c.close()


def test_acknowledged_journaled_inserts_survive_kill(fresh_server):
    s = fresh_server.new()
    c = s.client()
    coll = create_ts(c.tskill).with_options(write_concern=WriteConcern(j=True))
    acked = []
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set() and i < 3000:
            try:
                coll.insert_one({"t": at(i % 3000), "m": i % 3, "v": i})
            except Exception:
                return
            acked.append(i)
            i += 1

    th = threading.Thread(target=writer)
    th.start()
    deadline = time.monotonic() + 10
    while len(acked) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    s.kill()
    stop.set()
    th.join(30)
    c.close()
    assert len(acked) >= 300
    s.start()
    c = s.client()
    try:
        db = c.tskill
        got = sorted(d["v"] for d in db.ts.find())
        assert set(acked) <= set(got)
        assert len(got) == len(set(got))
        assert got == list(range(len(got)))  # one writer, in order: no gaps
        bs = buckets(db)
        for b in bs:
            check_bucket_invariants(b)
        assert sum(rows(b) for b in bs) == len(got)
        # The collection accepts new inserts after recovery.
        db.ts.insert_one({"t": at(1), "m": 0, "v": -1})
        assert db.ts.count_documents({}) == len(got) + 1
    finally:
        c.close()


# -- 4.6 concurrent writers ----------------------------------------------------------------
def test_concurrent_writers_to_one_series(client, db):
    create_ts(db)
    db.ts.insert_one({"t": at(0), "m": "shared", "w": -1, "i": -1})  # collection ready
    threads_n, per_thread = 10, 200
    errors = []
    start = threading.Barrier(threads_n)

    def writer(w):
        try:
            coll = db.ts
            start.wait()
            for i in range(per_thread):
                # One timestamp for all: buckets opened on count rollover start at the
                # same rounded minute, so no measurement is "time backward".
                coll.insert_one({"t": at(30), "m": "shared",
                                 "w": w, "i": i})
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    before = catalog(client)
    ths = [threading.Thread(target=writer, args=(w,)) for w in range(threads_n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(120)
    after = catalog(client)
    assert errors == []
    inserted = threads_n * per_thread
    got = {(d["w"], d["i"]) for d in db.ts.find({"w": {"$gte": 0}})}
    assert got == {(w, i) for w in range(threads_n) for i in range(per_thread)}
    assert db.ts.count_documents({}) == inserted + 1
    bs = buckets(db)
    assert sum(rows(b) for b in bs) == inserted + 1
    assert all(rows(b) <= 1000 for b in bs)
    for b in bs:
        check_bucket_invariants(b)
    st = ts_stats(db)
    assert st["numMeasurementsCommitted"] == inserted + 1
    assert st["numCommits"] < inserted + 1
    d = delta(after, before, ["numCommits", "numMeasurementsCommitted", "numWaits"])
    assert d["numMeasurementsCommitted"] == inserted
    assert d["numCommits"] < inserted
    assert d["numWaits"] > 0


def test_meta_collections_get_the_series_index(db):
    # Spec 2.1: a collection with a metaField gets the {M: 1, T: 1} index, shown on the view in
    # measurement terms and on the buckets in bucket terms; without a metaField there is none.
    db.create_collection("withmeta", timeseries={"timeField": "t", "metaField": "m"})
    db.create_collection("nometa", timeseries={"timeField": "t"})
    view = list(db.withmeta.list_indexes())
    assert [(i["name"], dict(i["key"])) for i in view] == [("m_1_t_1", {"m": 1, "t": 1})]
    assert list(db.nometa.list_indexes()) == []


def _wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_ttl_removes_expired_buckets_and_only_those(fresh_server):
    # Spec 9: the TTL monitor deletes whole buckets once every measurement they can hold is older
    # than expireAfterSeconds (bucket start <= now - expireAfterSeconds - bucketMaxSpanSeconds).
    s = fresh_server.new(extra_args=["--setParameter", "ttlMonitorSleepSecs=1"])
    c = s.client()
    try:
        db = c.ttl
        db.create_collection(
            "ts", timeseries={"timeField": "t", "metaField": "m"}, expireAfterSeconds=3600
        )
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        docs = [
            {"t": datetime.datetime(2020, 1, 1), "m": "old", "v": 1},
            {"t": datetime.datetime(1960, 6, 1), "m": "old", "v": 2},  # before 1970
            {"t": now - datetime.timedelta(hours=3), "m": "old", "v": 3},
            # Expired itself, but its bucket may still receive measurements that are not:
            # kept until the whole bucket span has expired.
            {"t": now - datetime.timedelta(minutes=90), "m": "recent", "v": 4},
            {"t": now, "m": "recent", "v": 5},
        ]
        db.ts.insert_many(docs)
        assert db.system.buckets.ts.count_documents({}) == 5
        before = c.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"]
        assert _wait_for(lambda: db.system.buckets.ts.count_documents({}) == 2)
        assert sorted(d["v"] for d in db.ts.find()) == [4, 5]
        ttl = c.admin.command("serverStatus")["metrics"]["ttl"]
        assert ttl["deletedDocuments"] - before == 3
        assert ttl["passes"] >= 1
        # Nothing else goes on later passes.
        time.sleep(2.5)
        assert sorted(d["v"] for d in db.ts.find()) == [4, 5]
        # collMod "off" stops expiry: an expired measurement inserted now stays.
        db.command({"collMod": "ts", "expireAfterSeconds": "off"})
        db.ts.insert_one({"t": datetime.datetime(2019, 1, 1), "m": "old", "v": 6})
        time.sleep(2.5)
        assert sorted(d["v"] for d in db.ts.find()) == [4, 5, 6]
    finally:
        c.close()


def test_collstats_stage_reports_timeseries_storage_stats(db):
    # Spec 4.8: $collStats' storageStats on a time-series collection has the `timeseries`
    # section (bucketsNs, bucketCount, the bucket catalog's counters) and no `count`.
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": at(i), "m": i % 2, "v": i} for i in range(30)])
    [doc] = list(db.ts.aggregate([{"$collStats": {"storageStats": {}}}]))
    assert doc["ns"] == f"{db.name}.ts"
    stats = doc["storageStats"]
    assert "count" not in stats
    ts = stats["timeseries"]
    assert ts["bucketsNs"] == f"{db.name}.system.buckets.ts"
    assert ts["bucketCount"] == 2
    assert ts["numMeasurementsCommitted"] == 30
    assert ts["numBucketInserts"] == 2
    # Later stages run on the statistics document.
    out = list(db.ts.aggregate([
        {"$collStats": {"storageStats": {}}},
        {"$project": {"_id": 0, "n": "$storageStats.timeseries.bucketCount"}},
    ]))
    assert out == [{"n": 2}]


def test_collstats_stage_bad_input(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    cases = [
        ([{"$collStats": 1}], 5447000),                          # spec must be a document
        ([{"$collStats": {"bogus": {}}}], 40415),                 # unknown field
        ([{"$collStats": {"storageStats": 1}}], 14),              # wrong type
        ([{"$collStats": {"storageStats": {"scale": 0}}}], 2),    # scale must be >= 1
        ([{"$collStats": {"latencyStats": {}}}], 115),            # not built yet: loud
        ([{"$collStats": {"count": {}}}], 115),                   # count on a time-series view
    ]
    for pipeline, code in cases:
        with pytest.raises(OperationFailure) as exc:
            list(db.ts.aggregate(pipeline))
        assert exc.value.code == code, pipeline


def test_timeseries_parameters_reject_bad_values(client):
    # The bucket catalog's and TTL monitor's knobs keep their lower bounds (spec 4.5).
    for name, value in [
        ("timeseriesBucketMaxCount", 0),
        ("timeseriesBucketMaxSize", 0),
        ("timeseriesIdleBucketExpiryMaxCountPerAttempt", 1),
        ("ttlMonitorSleepSecs", 0),
    ]:
        before = client.admin.command("getParameter", 1, **{name: 1})[name]
        with pytest.raises(OperationFailure) as exc:
            client.admin.command("setParameter", 1, **{name: value})
        assert exc.value.code == 2, name
        assert client.admin.command("getParameter", 1, **{name: 1})[name] == before


def test_collmod_timeseries_bad_input(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    with pytest.raises(OperationFailure) as exc:
        db.command({"collMod": "ts", "timeseriesBucketsMayHaveMixedSchemaData": "yes"})
    assert exc.value.code == 14
    with pytest.raises(OperationFailure) as exc:
        db.command({"collMod": "ts", "expireAfterSeconds": "later"})
    assert exc.value.code == 72


def test_find_options_a_view_cannot_take(db):
    # In MongoDB a time-series collection is a view: its finds run as aggregates, which take no
    # min, max, returnKey or showRecordId (InvalidPipelineOperator), in explain too.
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.create_index([("m", 1)])
    db.ts.insert_one({"t": datetime.datetime(2026, 1, 1), "m": 1})
    for option, value in (("min", {"m": 0}), ("max", {"m": 5}), ("returnKey", True),
                          ("showRecordId", True), ("noCursorTimeout", True),
                          ("allowPartialResults", True)):
        find = {"find": "ts", "filter": {}, "hint": {"m": 1}, option: value}
        for cmd in (find, {"explain": find}):
            code, name, msg = command_error(db, cmd)
            assert (code, name) == (168, "InvalidPipelineOperator"), cmd
            assert msg == "Option " + option + " not supported in aggregation."
    for cmd in ({"find": "ts", "sort": {"$natural": 1}}, {"find": "ts", "tailable": True}):
        assert command_error(db, cmd)[0] == 168, cmd
    # A $natural hint is no sort: it reads.
    assert len(db.command({"find": "ts", "hint": {"$natural": 1}})["cursor"]["firstBatch"]) == 1
