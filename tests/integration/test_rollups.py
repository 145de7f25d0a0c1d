"""Rollups: time-series collections declared with `rollupOf`, kept by the server.

A rollup holds one measurement per (series, bin) of its source; the tests compare its rows
with what the source's raw measurements give, computed here in Python from the inserted data
(MongoDB's $avg/$sum/$min/$max semantics) and with the server's own $group over the source,
after late, out-of-order, updated and deleted measurements, restarts, kill -9 and TTL.
"""

import datetime
import itertools
import math
import random
import time

import pytest
from bson.int64 import Int64
from bson.son import SON
from pymongo import WriteConcern
from pymongo.errors import OperationFailure

from conftest import command_error, module_server

HOUR = datetime.timedelta(hours=1)
T0 = datetime.datetime(2024, 3, 1)
FAST = ["--setParameter", "hourglassRollupMaintenanceIntervalMS=50",
        "--setParameter", "ttlMonitorSleepSecs=1"]
_db_numbers = itertools.count()


@pytest.fixture(scope="module")
def rollup_server(request, tmp_path_factory):
    yield from module_server(request, tmp_path_factory, "hg_rollup", "hourglassd_rollup", FAST)


@pytest.fixture
def db(rollup_server, request):
    c = rollup_server.client()
    name = "r%d" % next(_db_numbers)
    c.drop_database(name)
    yield c[name]
    c.close()


def rollup_stats(db, name):
    return db.command("collStats", name)["timeseries"]["rollup"]


def wait_settled(db, name, timeout=60):
    """Waits until the rollup has no pending bins; returns its statistics."""
    deadline = time.monotonic() + timeout
    while True:
        st = rollup_stats(db, name)
        if st["pendingRanges"] == 0:
            return st
        assert time.monotonic() < deadline, f"rollup {name} still pending: {st}"
        time.sleep(0.05)


def make_source(db, name="cpu", **kw):
    db.create_collection(name, timeseries={"timeField": "time", "metaField": "tags"}, **kw)
    return db[name]


def make_rollup(db, fields, name="cpu_1h", source="cpu", every="1h", **kw):
    db.create_collection(name, timeseries={"timeField": "time", "metaField": "tags",
                                           "granularity": "hours"},
                         rollupOf={"source": source, "every": every, "fields": fields}, **kw)
    return db[name]


def floor_bin(t, every_s):
    """$dateTrunc's bin: aligned to 2000-01-01T00:00:00Z."""
    ref = datetime.datetime(2000, 1, 1)
    secs = int((t - ref).total_seconds() // every_s) * every_s
    return ref + datetime.timedelta(seconds=secs)


def is_number(v):
    return isinstance(v, (int, float, Int64)) and not isinstance(v, bool)


def expected_rows(docs, fields, every_s=3600):
    """The rows MongoDB's $group would give per (host, bin), keyed by (host, bin)."""
    groups = {}
    for d in docs:
        key = (d["tags"]["host"], floor_bin(d["time"], every_s))
        groups.setdefault(key, []).append(d)
    out = {}
    for key, members in groups.items():
        row = {}
        for f in fields:
            present = [d[f] for d in members if f in d and d[f] is not None]
            nums = [v for v in present if is_number(v)]
            strings = [v for v in present if isinstance(v, str)]
            stats = {"sum": sum(nums) if nums else 0, "count": len(nums)}
            stats["avg"] = (math.fsum(nums) / len(nums)) if nums else None
            # BSON order: numbers before strings.
            stats["min"] = min(nums) if nums else (min(strings) if strings else None)
            stats["max"] = max(strings) if strings else (max(nums) if nums else None)
            row[f] = stats
        out[key] = row
    return out


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
    return a == b


def check_rows(rollup, docs, fields):
    rows = list(rollup.find({}, {"_id": 0}))
    expected = expected_rows(docs, fields)
    got = {(r["tags"]["host"], r["time"]): r for r in rows}
    assert len(rows) == len(got), "one row per (series, bin)"
    assert set(got) == set(expected)
    for key, exp in expected.items():
        row = got[key]
        for f, stats in fields.items():
            stored = row[f]
            for s in stats:
                assert close(stored[s], exp[f][s]), (key, f, s, stored, exp[f])
            if "avg" in stats:
                assert stored["count"] == exp[f]["count"]
                assert close(stored["sum"], exp[f]["sum"])
    return rows


def raw_group(source, fields):
    """The server's own $group over the source, per (host, hour)."""
    group = {"_id": {"h": "$tags.host", "t": {"$dateTrunc": {"date": "$time", "unit": "hour"}}}}
    for f in fields:
        group[f + "_avg"] = {"$avg": "$" + f}
        group[f + "_min"] = {"$min": "$" + f}
        group[f + "_max"] = {"$max": "$" + f}
        group[f + "_sum"] = {"$sum": "$" + f}
    return {(g["_id"]["h"], g["_id"]["t"]): g for g in source.aggregate([{"$group": group}])}


def random_docs(rng, n, hosts=5, hours=48, start=T0):
    docs = []
    for _ in range(n):
        d = {"time": start + datetime.timedelta(milliseconds=rng.randrange(hours * 3600 * 1000)),
             "tags": {"host": "h%d" % rng.randrange(hosts), "dc": "eu"},
             "u": rng.uniform(-50, 150)}
        r = rng.random()
        if r < 0.45:
            d["n"] = rng.randrange(-1000, 1000)
        elif r < 0.5:
            d["n"] = Int64(rng.randrange(1 << 40))
        elif r < 0.55:
            d["n"] = "text"  # not a number: $sum and $avg skip it, $max takes it
        # else: `n` missing
        docs.append(d)
    return docs


# -- creating a rollup -----------------------------------------------------------------
def test_create_stores_the_canonical_options(db):
    make_source(db)
    make_rollup(db, {"u": ["max", "avg", "min"], "n": ["count"]}, every="30m")
    (info,) = db.command("listCollections", filter={"name": "cpu_1h"})["cursor"]["firstBatch"]
    assert info["type"] == "timeseries"
    # groupBy filled in with the source's metaField; statistics in a fixed order.
    assert info["options"]["rollupOf"] == {
        "source": "cpu", "every": "30m", "groupBy": "tags",
        "fields": {"u": ["avg", "min", "max"], "n": ["count"]}}
    # The same create again is a no-op; a different rollupOf is a conflict.
    def create(fields):
        return db.command(SON([
            ("create", "cpu_1h"),
            ("timeseries", {"timeField": "time", "metaField": "tags", "granularity": "hours"}),
            ("rollupOf", {"source": "cpu", "every": "30m", "fields": fields})]))
    assert create({"u": ["avg", "min", "max"], "n": ["count"]})["ok"] == 1
    with pytest.raises(OperationFailure) as e:
        create({"u": ["avg"]})
    assert e.value.code == 48  # NamespaceExists
    st = rollup_stats(db, "cpu_1h")
    assert st["source"] == "cpu" and st["every"] == "30m"


BASE_TS = {"timeField": "time", "metaField": "tags"}


@pytest.mark.parametrize("cmd_extra, code, fragment", [
    ({"rollupOf": {"source": "cpu", "every": "1h", "fields": {"u": ["avg"]}}}, 72,
     "'rollupOf' requires 'timeseries'"),
    ({"timeseries": BASE_TS, "rollupOf": "cpu"}, 14, "create.rollupOf"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "fields": {"u": ["avg"]},
                                          "extra": 1}}, 40415, "create.rollupOf.extra"),
    ({"timeseries": BASE_TS, "rollupOf": {"every": "1h", "fields": {"u": ["avg"]}}}, 40414,
     "create.rollupOf.source"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "fields": {"u": ["avg"]}}}, 40414,
     "create.rollupOf.every"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h"}}, 40414,
     "create.rollupOf.fields"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1x", "fields": {"u": ["avg"]}}},
     2, "every"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "0h", "fields": {"u": ["avg"]}}},
     2, "every"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "7m", "fields": {"u": ["avg"]}}},
     2, "divide a day"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "fields": {"u": ["p99"]}}},
     2, "p99"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h",
                                          "fields": {"u": ["avg", "avg"]}}}, 2, "twice"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "fields": {"u": []}}},
     72, "no statistic"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "fields": {}}}, 72,
     "no field"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "fields": {"a.b": ["avg"]}}},
     72, "a.b"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "fields": {"time": ["max"]}}},
     72, "timeField"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "nope", "every": "1h", "fields": {"u": ["avg"]}}},
     26, "does not exist"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "plain", "every": "1h", "fields": {"u": ["avg"]}}},
     72, "not a time-series collection"),
    ({"timeseries": BASE_TS, "rollupOf": {"source": "cpu", "every": "1h", "groupBy": "host",
                                          "fields": {"u": ["avg"]}}}, 72, "groupBy"),
    ({"timeseries": {"timeField": "time"}, "rollupOf": {"source": "cpu", "every": "1h",
                                                        "fields": {"u": ["avg"]}}}, 72, "metaField"),
    ({"timeseries": {"timeField": "t", "metaField": "m"},
      "rollupOf": {"source": "cpu", "every": "1h", "fields": {"tags": ["max"]}}}, 72,
     "source's timeField or metaField"),
])
def test_create_refusals(db, cmd_extra, code, fragment):
    make_source(db)
    db.create_collection("plain")
    cmd = SON([("create", "bad")])
    cmd.update(cmd_extra)
    got_code, _, msg = command_error(db, cmd)
    assert got_code == code, msg
    assert fragment in msg
    assert "bad" not in db.list_collection_names()


def test_a_rollup_of_a_rollup_is_refused(db):
    make_source(db)
    make_rollup(db, {"u": ["avg"]})
    code, _, msg = command_error(db, SON([
        ("create", "cpu_1d"), ("timeseries", BASE_TS),
        ("rollupOf", {"source": "cpu_1h", "every": "1d", "fields": {"u": ["avg"]}})]))
    assert code == 72 and "itself a rollup" in msg


def test_clients_cannot_write_to_a_rollup(db):
    make_source(db)
    rollup = make_rollup(db, {"u": ["avg"]})
    db.cpu.insert_one({"time": T0, "tags": {"host": "a"}, "u": 1.0})
    wait_settled(db, "cpu_1h")
    assert rollup.count_documents({}) == 1
    for op in (lambda: rollup.insert_one({"time": T0, "tags": {"host": "b"}, "u": {"avg": 1}}),
               lambda: rollup.delete_many({}),
               lambda: rollup.update_many({}, {"$set": {"x": 1}}),
               lambda: rollup.find_one_and_delete({}),
               lambda: db["system.buckets.cpu_1h"].delete_many({}),
               lambda: db["system.buckets.cpu_1h"].insert_one({"x": 1}),
               lambda: list(db.cpu.aggregate([{"$out": "cpu_1h"}])),
               lambda: list(db.cpu.aggregate([{"$merge": {"into": "cpu_1h"}}]))):
        with pytest.raises(OperationFailure) as e:
            op()
        assert e.value.code == 20, e.value.details
        assert "rollup of cpu" in str(e.value)
    assert rollup.count_documents({}) == 1


# -- keeping it --------------------------------------------------------------------------
def test_rows_equal_the_raw_measurements_through_late_and_out_of_order_writes(db):
    rng = random.Random(7)
    source = make_source(db)
    fields = {"u": ["avg", "min", "max"], "n": ["avg", "sum", "count", "min", "max"]}
    docs = random_docs(rng, 3000)
    source.insert_many(docs[:2000])  # before the rollup: rolled up at creation
    rollup = make_rollup(db, fields)
    # Out of order, and late for bins already computed.
    rest = docs[2000:]
    rng.shuffle(rest)
    wait_settled(db, "cpu_1h")
    for i in range(0, len(rest), 100):
        source.insert_many(rest[i:i + 100], ordered=False)
    st = wait_settled(db, "cpu_1h")
    assert st["binsComputed"] >= 48 and st["rowsWritten"] >= 5 * 48
    rows = check_rows(rollup, docs, fields)
    # The layout: time, meta, then each field's statistics.
    assert list(rows[0].keys()) == ["time", "tags", "u", "n"]
    assert list(rows[0]["u"].keys()) == ["avg", "sum", "count", "min", "max"]
    # And the server's own $group over the raw measurements, exactly.
    raw = raw_group(source, fields)
    for r in rows:
        g = raw[(r["tags"]["host"], r["time"])]
        for f in fields:
            assert r[f]["avg"] == g[f + "_avg"]
            assert r[f]["min"] == g[f + "_min"] and r[f]["max"] == g[f + "_max"]
            assert r[f]["sum"] == g[f + "_sum"]


def test_bins_of_other_sizes(db):
    rng = random.Random(3)
    source = make_source(db)
    docs = random_docs(rng, 1500, hours=24 * 5)
    source.insert_many(docs)
    for every, secs in (("15m", 900), ("2d", 2 * 86400)):
        name = "cpu_" + every
        make_rollup(db, {"u": ["avg", "max"]}, name=name, every=every)
        wait_settled(db, name)
        rows = list(db[name].find({}, {"_id": 0}))
        exp = expected_rows(docs, {"u": 1}, every_s=secs)
        assert {(r["tags"]["host"], r["time"]) for r in rows} == set(exp)
        for r in rows:
            e = exp[(r["tags"]["host"], r["time"])]["u"]
            assert close(r["u"]["avg"], e["avg"]) and r["u"]["max"] == e["max"]


def test_deletes_and_updates_of_the_source_are_recomputed(db):
    rng = random.Random(11)
    source = make_source(db)
    fields = {"u": ["avg", "max", "count"]}
    rollup = make_rollup(db, fields)
    docs = random_docs(rng, 1000, hours=10)
    for i, d in enumerate(docs):
        d["_id"] = i
    source.insert_many(docs)
    wait_settled(db, "cpu_1h")
    check_rows(rollup, docs, fields)
    # Delete one host's measurements of hours 2-3; raise every u of host h1 in hour 5.
    lo, hi = T0 + 2 * HOUR, T0 + 4 * HOUR
    source.delete_many({"tags.host": "h0", "time": {"$gte": lo, "$lt": hi}})
    docs = [d for d in docs if not (d["tags"]["host"] == "h0" and lo <= d["time"] < hi)]
    lo5, hi5 = T0 + 5 * HOUR, T0 + 6 * HOUR
    source.update_many({"tags.host": "h1", "time": {"$gte": lo5, "$lt": hi5}},
                       {"$set": {"u": 1000.0}})
    for d in docs:
        if d["tags"]["host"] == "h1" and lo5 <= d["time"] < hi5:
            d["u"] = 1000.0
    wait_settled(db, "cpu_1h")
    check_rows(rollup, docs, fields)
    assert rollup.count_documents({"tags.host": "h0", "time": {"$gte": lo, "$lt": hi}}) == 0
    assert rollup.find_one({"tags.host": "h1", "time": lo5})["u"]["max"] == 1000.0


def test_the_source_ttl_leaves_the_rollup(db):
    # The rollup keeps what its source expires: the point of a rollup.
    admin = db.client.admin
    admin.command("setParameter", 1, ttlMonitorEnabled=False)
    try:
        source = make_source(db, expireAfterSeconds=3600)
        fields = {"u": ["avg", "min"]}
        rollup = make_rollup(db, fields)
        docs = random_docs(random.Random(5), 500, hours=6)
        source.insert_many(docs)
        wait_settled(db, "cpu_1h")
        before = check_rows(rollup, docs, fields)
        admin.command("setParameter", 1, ttlMonitorEnabled=True)
        deadline = time.monotonic() + 60
        while source.count_documents({}) > 0:
            assert time.monotonic() < deadline, "TTL did not expire the source"
            time.sleep(0.2)
        time.sleep(0.3)  # a few maintenance passes
        assert wait_settled(db, "cpu_1h")["pendingRanges"] == 0
        assert list(rollup.find({}, {"_id": 0})) == before
    finally:
        admin.command("setParameter", 1, ttlMonitorEnabled=True)


def test_the_rollup_has_a_ttl_of_its_own(db):
    source = make_source(db)
    rollup = make_rollup(db, {"u": ["max"]}, expireAfterSeconds=86400)
    old = [{"time": T0 + i * HOUR, "tags": {"host": "a"}, "u": float(i)} for i in range(3)]
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    recent = [{"time": now - datetime.timedelta(minutes=5), "tags": {"host": "a"}, "u": 7.0}]
    source.insert_many(old + recent)
    deadline = time.monotonic() + 60
    while rollup.count_documents({"time": {"$lt": now - HOUR * 2}}) > 0 or \
            rollup.count_documents({}) == 0:
        assert time.monotonic() < deadline, list(rollup.find())
        time.sleep(0.2)
    time.sleep(0.3)
    wait_settled(db, "cpu_1h")
    # The expired rows stay gone (their bins are not recomputed), the source keeps its own.
    assert [r["u"]["max"] for r in rollup.find()] == [7.0]
    assert source.count_documents({}) == 4


def test_dropping_and_recreating_the_source(db):
    source = make_source(db)
    rollup = make_rollup(db, {"u": ["max"]})
    source.insert_one({"time": T0, "tags": {"host": "a"}, "u": 1.0})
    wait_settled(db, "cpu_1h")
    source.drop()
    time.sleep(0.2)
    # The rollup keeps its rows; a new source of the same name is observed.
    assert rollup.count_documents({}) == 1
    source = make_source(db)
    source.insert_one({"time": T0 + HOUR, "tags": {"host": "a"}, "u": 2.0})
    wait_settled(db, "cpu_1h")
    assert sorted(r["u"]["max"] for r in rollup.find()) == [1.0, 2.0]
    # Dropping the rollup leaves the source alone.
    rollup.drop()
    source.insert_one({"time": T0 + 2 * HOUR, "tags": {"host": "a"}, "u": 3.0})
    assert source.count_documents({}) == 2


def test_a_source_without_meta_field(db):
    db.create_collection("plain_ts", timeseries={"timeField": "t"})
    db.create_collection("plain_1h", timeseries={"timeField": "t"},
                         rollupOf={"source": "plain_ts", "every": "1h", "fields": {"v": ["sum"]}})
    db.plain_ts.insert_many([{"t": T0 + datetime.timedelta(minutes=m), "v": m} for m in range(120)])
    wait_settled(db, "plain_1h")
    rows = list(db.plain_1h.find({}, {"_id": 0}).sort("t", 1))
    assert rows == [{"t": T0, "v": {"sum": sum(range(60))}},
                    {"t": T0 + HOUR, "v": {"sum": sum(range(60, 120))}}]


# -- restarts ------------------------------------------------------------------------------
def test_the_rollup_survives_restart_and_kill(fresh_server):
    s = fresh_server.new(extra_args=FAST)
    c = s.client()
    db = c.rdb
    fields = {"u": ["avg", "max"], "n": ["sum"]}
    source = make_source(db)
    rollup = make_rollup(db, fields)
    rng = random.Random(21)
    docs = random_docs(rng, 800, hours=12)
    source.insert_many(docs)
    wait_settled(db, "cpu_1h")
    # A clean restart: nothing pending, the rows unchanged.
    rows = list(rollup.find({}, {"_id": 0}).sort([("tags.host", 1), ("time", 1)]))
    c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    db = c.rdb
    assert wait_settled(db, "cpu_1h")["pendingRanges"] == 0
    assert list(db.cpu_1h.find({}, {"_id": 0}).sort([("tags.host", 1), ("time", 1)])) == rows
    # Late writes acknowledged with j: true, then kill -9 before maintenance can run.
    db.client.admin.command("setParameter", 1, hourglassRollupMaintenanceIntervalMS=600000)
    time.sleep(0.3)  # the pass under way ends; the next waits for the new interval
    late = random_docs(rng, 200, hours=12)
    # (Nothing reads the source before the kill: the late rows may still be only in the
    # measurement journal, and their marks come from its replay at startup.)
    db.get_collection("cpu", write_concern=WriteConcern(j=True)).insert_many(late)
    c.close()
    s.kill()
    s.start()
    c = s.client()
    db = c.rdb
    wait_settled(db, "cpu_1h")
    check_rows(db.cpu_1h, docs + late, fields)
    c.close()


# -- aggregates of the source answered from the rollup ---------------------------------------
RAW = {"time": {"$gt": datetime.datetime(1990, 1, 1)}}  # a $gt bound: no rollup answers it


def answered_by(db, coll, pipeline):
    ex = db.command("explain", {"aggregate": coll, "pipeline": pipeline, "cursor": {}},
                    verbosity="queryPlanner")
    return ex.get("answeredFromRollup")


def same_results(got, raw):
    assert len(got) == len(raw)
    for g, r in zip(got, raw):
        assert g.keys() == r.keys()
        for k in g:
            assert close(g[k], r[k]) if isinstance(g[k], float) else g[k] == r[k], (k, g, r)


def with_raw_match(pipeline):
    """The same question, spelled so that the source answers it."""
    if "$match" in pipeline[0]:
        return [{"$match": {"$and": [pipeline[0]["$match"], RAW]}}] + pipeline[1:]
    return [{"$match": RAW}] + pipeline


ANSWERED = [
    [{"$group": {"_id": {"h": "$tags.host", "t": {"$dateTrunc": {"date": "$time", "unit": "hour"}}},
                 "a": {"$avg": "$u"}, "lo": {"$min": "$u"}, "hi": {"$max": "$u"},
                 "s": {"$sum": "$n"}}},
     {"$sort": {"_id.h": 1, "_id.t": 1}}],
    [{"$match": {"tags.host": "h1", "time": {"$gte": T0 + 6 * HOUR, "$lt": T0 + 30 * HOUR}}},
     {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "hour", "binSize": 3}},
                 "a": {"$avg": "$u"}}},
     {"$sort": {"_id": 1}}],
    [{"$match": {"$and": [{"tags.dc": "eu"}, {"tags.host": {"$in": ["h0", "h3"]}}]}},
     {"$group": {"_id": {"d": {"$dateTrunc": {"date": "$time", "unit": "day", "timezone": "UTC"}},
                         "h": {"$toUpper": "$tags.host"}},
                 "a": {"$avg": "$n"}, "s": {"$sum": "$u"}, "lo": {"$min": "$n"}}},
     {"$sort": {"_id.d": 1, "_id.h": 1}}, {"$limit": 7}],
    [{"$group": {"_id": "$tags.host", "a": {"$avg": "$u"}, "lo": {"$min": "$n"}}},
     {"$sort": {"_id": 1}}],
    [{"$group": {"_id": None, "a": {"$avg": "$n"}, "hi": {"$max": "$u"}}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "week", "startOfWeek": "mon"}},
                 "s": {"$sum": "$n"}}}, {"$sort": {"_id": 1}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "month"}}, "a": {"$avg": "$u"}}},
     {"$project": {"x": {"$round": ["$a", 6]}}}, {"$sort": {"_id": 1}}],
]

NOT_ANSWERED = [
    # a field other than the metaField and time
    [{"$match": {"u": {"$gt": 10}}}, {"$group": {"_id": None, "a": {"$avg": "$u"}}}],
    # time bounds between bins, or not $gte/$lt
    [{"$match": {"time": {"$gte": T0 + datetime.timedelta(minutes=30)}}},
     {"$group": {"_id": None, "a": {"$avg": "$u"}}}],
    [{"$match": {"time": {"$lte": T0 + 5 * HOUR}}}, {"$group": {"_id": None, "a": {"$avg": "$u"}}}],
    # bins finer than the rollup's, or not in UTC
    [{"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "minute", "binSize": 30}},
                 "a": {"$avg": "$u"}}}, {"$sort": {"_id": 1}}],
    [{"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "day",
                                        "timezone": "Asia/Kolkata"}}, "a": {"$avg": "$u"}}},
     {"$sort": {"_id": 1}}],
    # accumulators the rollup does not keep
    [{"$group": {"_id": None, "c": {"$sum": 1}}}],
    [{"$group": {"_id": None, "c": {"$count": {}}}}],
    [{"$group": {"_id": None, "a": {"$min": "$n"}, "b": {"$stdDevPop": "$u"}}}],
    [{"$group": {"_id": None, "a": {"$max": "$n"}}}],
    # a key of a measurement field
    [{"$group": {"_id": "$n", "a": {"$avg": "$u"}}}, {"$sort": {"_id": 1}}],
    # no $group first
    [{"$sort": {"time": 1}}, {"$group": {"_id": None, "a": {"$avg": "$u"}}}],
]


@pytest.fixture
def answering(db):
    source = make_source(db)
    make_rollup(db, {"u": ["avg", "min", "max"], "n": ["avg", "min"]})
    docs = random_docs(random.Random(99), 3000, hours=24 * 40)
    source.insert_many(docs)
    return db, docs


@pytest.mark.parametrize("i", range(len(ANSWERED)))
def test_aggregates_of_the_source_are_answered_from_the_rollup(answering, i):
    db, docs = answering
    pipeline = ANSWERED[i]
    raw = list(db.cpu.aggregate(with_raw_match(pipeline)))
    assert raw
    assert answered_by(db, "cpu", with_raw_match(pipeline)) is None
    # With bins still pending (read from the source), then from the rollup alone.
    pending = answered_by(db, "cpu", pipeline)
    assert pending is not None and pending["rollup"].endswith(".cpu_1h")
    same_results(list(db.cpu.aggregate(pipeline)), raw)
    wait_settled(db, "cpu_1h")
    assert answered_by(db, "cpu", pipeline)["pendingRanges"] == 0
    same_results(list(db.cpu.aggregate(pipeline)), raw)
    # A late measurement is in the answer at once.
    late = {"time": T0 + 7 * HOUR, "tags": {"host": "h1", "dc": "eu"}, "u": 1e6, "n": -10**6}
    db.cpu.insert_one(late)
    assert answered_by(db, "cpu", pipeline)["pendingRanges"] >= 1
    same_results(list(db.cpu.aggregate(pipeline)), list(db.cpu.aggregate(with_raw_match(pipeline))))


@pytest.mark.parametrize("i", range(len(NOT_ANSWERED)))
def test_aggregates_the_rollup_cannot_answer_read_the_source(answering, i):
    db, docs = answering
    wait_settled(db, "cpu_1h")
    pipeline = NOT_ANSWERED[i]
    assert answered_by(db, "cpu", pipeline) is None
    got = list(db.cpu.aggregate(pipeline))
    same_results(got, list(db.cpu.aggregate(with_raw_match(pipeline))))


def test_the_cursor_of_an_answered_aggregate_names_the_source(answering):
    db, _ = answering
    pipeline = ANSWERED[0]
    reply = db.command("aggregate", "cpu", pipeline=pipeline, cursor={"batchSize": 5})
    assert reply["cursor"]["ns"] == db.name + ".cpu"
    rest = list(db.cpu.aggregate(pipeline, batchSize=5))
    assert len(rest) > 5 and rest[:5] == reply["cursor"]["firstBatch"]
    # aggregate's own explain flag says the same as the explain command.
    ex = db.command("aggregate", "cpu", pipeline=pipeline, explain=True)
    assert ex["answeredFromRollup"]["source"] == db.name + ".cpu"


def test_answers_keep_what_the_source_expired(db):
    admin = db.client.admin
    admin.command("setParameter", 1, ttlMonitorEnabled=False)
    try:
        source = make_source(db, expireAfterSeconds=3600)
        make_rollup(db, {"u": ["avg", "max"]})
        source.insert_many(random_docs(random.Random(8), 600, hours=30))
        pipeline = [{"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "day"}},
                                "a": {"$avg": "$u"}, "hi": {"$max": "$u"}}}, {"$sort": {"_id": 1}}]
        before = list(source.aggregate(with_raw_match(pipeline)))
        wait_settled(db, "cpu_1h")
        admin.command("setParameter", 1, ttlMonitorEnabled=True)
        deadline = time.monotonic() + 60
        while source.count_documents({}) > 0:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        # The raw measurements are gone; the rollup answers as before.
        assert list(source.aggregate(with_raw_match(pipeline))) == []
        same_results(list(source.aggregate(pipeline)), before)
    finally:
        admin.command("setParameter", 1, ttlMonitorEnabled=True)


# -- what the review of the first slice found ------------------------------------------------
def test_writes_during_maintenance_passes_all_reach_the_rollup(db):
    """Writes that commit while a pass recomputes their bins stay marked and are computed."""
    import threading
    source = make_source(db)
    fields = {"u": ["avg", "max"], "n": ["sum"]}
    rollup = make_rollup(db, fields)
    rng = random.Random(4)
    docs = random_docs(rng, 6000, hours=30)
    source.insert_many(docs[:1000])
    errors = []

    def writer(part):
        try:
            for i in range(0, len(part), 50):
                source.insert_many(part[i:i + 50], ordered=False)
                time.sleep(0.002)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(docs[1000 + k * 2500:3500 + k * 2500],))
               for k in range(2)]
    for t in threads:
        t.start()
    # Updates of whole hours too, while the passes run.
    for h in range(0, 30, 3):
        lo, hi = T0 + h * HOUR, T0 + (h + 1) * HOUR
        source.update_many({"tags.host": "h2", "time": {"$gte": lo, "$lt": hi}},
                           {"$set": {"n": 7}})
        time.sleep(0.03)
    for t in threads:
        t.join()
    assert not errors
    # The rollup against what the source holds now (every insert, the updated n's).
    now = list(source.find({}, {"_id": 0}))
    assert len(now) == len(docs)
    assert sum(1 for d in now if d.get("n") == 7) > 0
    wait_settled(db, "cpu_1h")
    check_rows(rollup, now, fields)


def test_late_writes_into_bins_the_source_ttl_thinned_keep_the_rows(db):
    admin = db.client.admin
    admin.command("setParameter", 1, ttlMonitorEnabled=False)
    try:
        source = make_source(db, expireAfterSeconds=3600)
        rollup = make_rollup(db, {"u": ["sum", "count"]})
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        old_bin = floor_bin(now - 4 * HOUR, 3600)
        new_bin = floor_bin(now, 3600)
        source.insert_many([{"time": old_bin + datetime.timedelta(minutes=m),
                             "tags": {"host": "a"}, "u": 1.0} for m in range(0, 60, 10)])
        source.insert_one({"time": new_bin, "tags": {"host": "a"}, "u": 5.0})
        wait_settled(db, "cpu_1h")
        assert rollup.find_one({"time": old_bin})["u"] == {"sum": 6.0, "count": 6}
        admin.command("setParameter", 1, ttlMonitorEnabled=True)
        deadline = time.monotonic() + 60
        while source.count_documents({"time": {"$lt": new_bin}}) > 0:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        admin.command("setParameter", 1, ttlMonitorEnabled=False)
        # A late measurement in the thinned bin: its row is not recomputed from what is left.
        source.insert_one({"time": old_bin + datetime.timedelta(minutes=5),
                           "tags": {"host": "a"}, "u": 100.0})
        source.insert_one({"time": new_bin, "tags": {"host": "a"}, "u": 5.0})
        wait_settled(db, "cpu_1h")
        assert rollup.find_one({"time": old_bin})["u"] == {"sum": 6.0, "count": 6}
        assert rollup.find_one({"time": new_bin})["u"] == {"sum": 10.0, "count": 2}
    finally:
        admin.command("setParameter", 1, ttlMonitorEnabled=True)


def test_a_dropped_source_leaves_its_pending_changes_behind(db):
    admin = db.client.admin
    source = make_source(db)
    rollup = make_rollup(db, {"u": ["max"]})
    source.insert_one({"time": T0, "tags": {"host": "a"}, "u": 1.0})
    wait_settled(db, "cpu_1h")
    admin.command("setParameter", 1, hourglassRollupMaintenanceIntervalMS=600000)
    try:
        time.sleep(0.3)
        source.insert_one({"time": T0 + datetime.timedelta(minutes=1), "tags": {"host": "a"},
                           "u": 50.0})
        assert rollup_stats(db, "cpu_1h")["pendingRanges"] == 1
        source.drop()
        assert rollup_stats(db, "cpu_1h")["pendingRanges"] == 0
        source = make_source(db)
        source.insert_one({"time": T0 + HOUR, "tags": {"host": "a"}, "u": 2.0})
    finally:
        admin.command("setParameter", 1, hourglassRollupMaintenanceIntervalMS=50)
    wait_settled(db, "cpu_1h")
    # The first hour kept its row (the change pending at the drop is gone with the source).
    assert sorted((r["time"], r["u"]["max"]) for r in rollup.find()) == [(T0, 1.0),
                                                                         (T0 + HOUR, 2.0)]


def test_merge_into_an_on_demand_view_still_works(answering):
    """MongoDB's way to keep aggregates by hand: $group then $merge into a regular collection."""
    db, docs = answering
    pipeline = [{"$group": {"_id": {"h": "$tags.host",
                                    "d": {"$dateTrunc": {"date": "$time", "unit": "day"}}},
                            "a": {"$avg": "$u"}, "hi": {"$max": "$u"}}},
                {"$merge": {"into": "daily", "whenMatched": "replace"}}]
    assert answered_by(db, "cpu", pipeline) is not None  # the $group comes from the rollup
    list(db.cpu.aggregate(pipeline))
    raw = {(r["_id"]["h"], r["_id"]["d"]): r
           for r in db.cpu.aggregate(with_raw_match(pipeline[:1]))}
    merged = list(db.daily.find())
    assert len(merged) == len(raw)
    for m in merged:
        r = raw[(m["_id"]["h"], m["_id"]["d"])]
        assert close(m["a"], r["a"]) and m["hi"] == r["hi"]
    # Again after late data: the view is refreshed the same way.
    db.cpu.insert_one({"time": T0 + 2 * HOUR, "tags": {"host": "h0", "dc": "eu"}, "u": 1e9})
    list(db.cpu.aggregate(pipeline))
    assert db.daily.find_one({"_id.h": "h0", "_id.d": T0})["hi"] == 1e9


@pytest.mark.parametrize("name, value, code", [
    ("hourglassRollupMaintenanceIntervalMS", 5, 2),
    ("hourglassRollupMaintenanceIntervalMS", -1, 2),
    ("hourglassRollupMaintenanceIntervalMS", "fast", 2),
    ("hourglassAnswerAggregatesFromRollups", "yes", 2),
])
def test_rollup_parameters_refuse_bad_values(db, name, value, code):
    admin = db.client.admin
    before = admin.command("getParameter", 1, **{name: 1})[name]
    got, _, msg = command_error(admin, SON([("setParameter", 1), (name, value)]))
    assert got == code, msg
    assert admin.command("getParameter", 1, **{name: 1})[name] == before


def test_answers_can_be_turned_off(answering):
    db, _ = answering
    admin = db.client.admin
    pipeline = ANSWERED[0]
    admin.command("setParameter", 1, hourglassAnswerAggregatesFromRollups=False)
    try:
        assert answered_by(db, "cpu", pipeline) is None
        off = list(db.cpu.aggregate(pipeline))
    finally:
        admin.command("setParameter", 1, hourglassAnswerAggregatesFromRollups=True)
    assert answered_by(db, "cpu", pipeline) is not None
    same_results(list(db.cpu.aggregate(pipeline)), off)


def test_a_bad_startup_interval_stops_the_server(fresh_server):
    s = fresh_server.new(extra_args=["--setParameter", "hourglassRollupMaintenanceIntervalMS=1"],
                         start=False)
    with pytest.raises(RuntimeError) as e:
        s.start()
    assert "hourglassRollupMaintenanceIntervalMS" in str(e.value)
