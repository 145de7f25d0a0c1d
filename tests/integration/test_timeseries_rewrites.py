"""Hourglass's time-series read rewrites (spec/timeseries.md 6.2-6.3) and the explain of
time-series reads.

Every case runs twice: with the rewrites (hourglassTimeseriesRewrites: true, the default) and
without (unpack every bucket, then run the pipeline). The two answers must be byte-identical
(same documents, field order and BSON types). Cases also check, through serverStatus's
hourglass.timeseries counters or explain's executionStats, that the rewrite reads or unpacks
fewer buckets, and that explain names it. A few expected answers are computed here from the
inserted data by MongoDB's documented semantics.

The module's server is shared and its counters are global: tests take deltas around one
operation and run one at a time."""

import contextlib
import datetime

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

from conftest import aggregate_raw, run_command, set_timeseries_rewrites

T0 = datetime.datetime(2024, 3, 5, 0, 0, 0)
HOURS = 40
SENSORS = ["a", "b", "c"]
PER_HOUR = 4  # 480 measurements; buckets roll over on type changes of `mixed`
RAW = CodecOptions(document_class=RawBSONDocument)


def at(hours=0, minutes=0, seconds=0):
    return T0 + datetime.timedelta(hours=hours, minutes=minutes, seconds=seconds)


def make_docs():
    docs = []
    for h in range(HOURS):
        for k in range(PER_HOUR):
            for i, s in enumerate(SENSORS):
                n = len(docs)
                d = {"t": at(h, 15 * k, i), "m": {"sensor": s}, "temp": (n * 7) % 31 - 5 + 0.5 * (n % 2)}
                if n % 5:
                    d["hum"] = n % 13
                # A column of mixed types with nulls, only in some hours.
                if h % 4 == 0:
                    d["mixed"] = [None, "x", 3, 2.5][n % 4]
                elif h % 4 == 1:
                    d["mixed"] = n % 9
                if h % 10 == 3:
                    d["obj"] = {"v": n % 3}
                docs.append(d)
    return docs


DOCS = make_docs()
BUCKETS = []  # the bucket documents, read by the fixture


@pytest.fixture(scope="module")
def tsdb(client):
    d = client["tsrewrites"]
    client.drop_database("tsrewrites")
    d.command({"create": "w", "timeseries": {"timeField": "t", "metaField": "m",
                                             "granularity": "seconds"}})
    d.w.insert_many([dict(x) for x in DOCS], ordered=True)
    BUCKETS[:] = list(d["system.buckets.w"].find())
    assert len(BUCKETS) >= HOURS * len(SENSORS)
    yield d
    set_timeseries_rewrites(client, True)



def counters(client):
    return dict(client.admin.command("serverStatus")["hourglass"]["timeseries"])



def run_both(client, db, pipeline, coll="w"):
    """(rewrites-on bytes, counter deltas on, rewrites-off bytes, counter deltas off)."""
    out = []
    for on in (True, False):
        set_timeseries_rewrites(client, on)
        before = counters(client)
        docs = aggregate_raw(db, pipeline, coll)
        after = counters(client)
        out.append((docs, {k: after[k] - before[k] for k in after}))
    set_timeseries_rewrites(client, True)
    return out[0][0], out[0][1], out[1][0], out[1][1]


def sensor_buckets(sensor):
    return len([b for b in BUCKETS if b["meta"]["sensor"] == sensor])


def buckets_inside(lo, hi):
    """Buckets whose every measurement has lo <= t < hi (by control)."""
    return len([b for b in BUCKETS if b["control"]["min"]["t"] >= lo
                and b["control"]["max"]["t"] < hi])


def explain(db, cmd, verbosity="executionStats"):
    return db.command({"explain": cmd, "verbosity": verbosity})


def stage_names(exp):
    return [next(iter(s)) for s in exp["stages"]]


def stage(exp, name):
    for s in exp["stages"]:
        if name in s:
            return s
    raise AssertionError(f"no {name} in {stage_names(exp)}")


WINDOW = {"t": {"$gte": at(10), "$lt": at(20)}}  # 10 whole hours

# (name, pipeline, what the rewrite must save: "unpacked" buckets fewer, "read" fewer, or None)
CASES = [
    # -- wholeBucketFilter: time ranges covering whole buckets skip the event filter
    ("whole-range", [{"$match": WINDOW}], None),
    ("whole-range-meta", [{"$match": {**WINDOW, "m.sensor": "b"}}], None),
    ("partial-range", [{"$match": {"t": {"$gt": at(10, 20), "$lte": at(12, 15, 1)}}}], None),
    ("range-plus-measurement", [{"$match": {**WINDOW, "temp": {"$gte": 10}}}], None),
    ("range-eq", [{"$match": {"t": at(5, 30, 2)}}], None),
    # -- projection / dependency pushdown
    ("include-project", [{"$project": {"temp": 1}}], None),
    ("include-project-no-id", [{"$project": {"_id": 0, "hum": 1, "m": 1}}], None),
    ("exclude-project", [{"$project": {"hum": 0, "obj": 0}}], None),
    ("exclude-unset", [{"$unset": ["mixed", "_id"]}], None),
    ("exclude-needed-by-filter", [{"$match": {"hum": {"$gt": 5}}}, {"$project": {"hum": 0}}], None),
    ("deps-addfields-group", [{"$addFields": {"x": {"$multiply": ["$temp", 2]}}},
                              {"$group": {"_id": "$m.sensor", "s": {"$sum": "$x"}}},
                              {"$sort": {"_id": 1}}], None),
    ("deps-count-after-skip", [{"$skip": 7}, {"$count": "n"}], None),
    ("deps-missing-field", [{"$match": {"nope": {"$exists": False}}}, {"$count": "n"}], None),
    # -- $group answered from control
    ("group-meta-minmax-count",
     [{"$group": {"_id": "$m.sensor", "lo": {"$min": "$temp"}, "hi": {"$max": "$temp"},
                  "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}], "unpacked"),
    ("group-meta-whole", [{"$group": {"_id": "$m", "c": {"$count": {}}, "h": {"$max": "$hum"}}},
                          {"$sort": {"_id": 1}}], "unpacked"),
    ("group-const-time", [{"$group": {"_id": None, "first": {"$min": "$t"},
                                      "last": {"$max": "$t"}}}], "unpacked"),
    ("group-string-const", [{"$group": {"_id": "all", "n": {"$sum": 1}}}], "unpacked"),
    ("group-count-stage", [{"$count": "total"}], "unpacked"),
    ("group-meta-filter", [{"$match": {"m.sensor": {"$in": ["a", "c"]}}},
                           {"$group": {"_id": "$m.sensor", "hi": {"$max": "$temp"}}},
                           {"$sort": {"_id": -1}}], "unpacked"),
    ("group-time-window", [{"$match": {"t": {"$gte": at(3, 20), "$lt": at(30)}}},
                           {"$group": {"_id": "$m.sensor", "n": {"$sum": 1},
                                       "lo": {"$min": "$temp"}}}, {"$sort": {"_id": 1}}],
     "unpacked"),
    ("group-event-filter", [{"$match": {"temp": {"$gt": 12}}},
                            {"$group": {"_id": None, "n": {"$sum": 1}}}], None),
    # null / mixed types / objects: control differs from the accumulator, buckets fall back
    ("group-mixed-nulls", [{"$group": {"_id": "$m.sensor", "lo": {"$min": "$mixed"},
                                       "hi": {"$max": "$mixed"}}}, {"$sort": {"_id": 1}}],
     "unpacked"),
    ("group-objects", [{"$group": {"_id": None, "lo": {"$min": "$obj"}, "hi": {"$max": "$obj"}}}],
     "unpacked"),
    ("group-missing-field", [{"$group": {"_id": "$m.sensor", "x": {"$max": "$absent"}}},
                             {"$sort": {"_id": 1}}], "unpacked"),
    # per time unit ($dateTrunc of the time field): buckets within one unit come from control
    ("group-hour", [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}},
                                "hi": {"$max": "$temp"}, "n": {"$sum": 1}}},
                    {"$sort": {"_id": 1}}], "unpacked"),
    ("group-sensor-2hours", [{"$group": {"_id": {"s": "$m.sensor", "h": {"$dateTrunc": {
        "date": "$t", "unit": "hour", "binSize": 2}}}, "lo": {"$min": "$temp"},
        "last": {"$max": "$t"}}}, {"$sort": {"_id.h": 1, "_id.s": 1}}], "unpacked"),
    ("group-day-tz", [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "day",
                                                         "timezone": "America/New_York"}},
                                  "n": {"$count": {}}}}, {"$sort": {"_id": 1}}], "unpacked"),
    ("group-minute-all-unpacked", [{"$group": {"_id": {"$dateTrunc": {"date": "$t",
                                                                      "unit": "minute"}},
                                               "n": {"$sum": 1}}}, {"$sort": {"_id": -1}},
                                   {"$limit": 5}], None),
    ("group-not-rewritable", [{"$group": {"_id": "$m.sensor", "avg": {"$avg": "$temp"}}},
                              {"$sort": {"_id": 1}}], None),
    # -- last point
    ("lastpoint", [{"$sort": {"m": 1, "t": -1}},
                   {"$group": {"_id": "$m", "t": {"$first": "$t"}, "temp": {"$first": "$temp"}}},
                   {"$sort": {"_id": 1}}], "unpacked"),
    ("lastpoint-desc-meta", [{"$match": {"m.sensor": {"$ne": "b"}}}, {"$sort": {"m": -1, "t": -1}},
                             {"$group": {"_id": "$m", "doc": {"$first": "$$ROOT"}}},
                             {"$sort": {"_id": 1}}], "unpacked"),
    ("lastpoint-top", [{"$group": {"_id": "$m", "x": {"$top": {"sortBy": {"t": -1},
                                                                "output": ["$t", "$temp"]}}}},
                       {"$sort": {"_id": 1}}], "unpacked"),
    ("lastpoint-bottom", [{"$match": {"m.sensor": "a"}},
                          {"$group": {"_id": "$m", "x": {"$bottom": {"sortBy": {"t": 1},
                                                                     "output": "$hum"}}}}],
     "unpacked"),
    ("lastpoint-top-wrong-order", [{"$group": {"_id": "$m", "x": {"$top": {
        "sortBy": {"t": 1}, "output": "$t"}}}}, {"$sort": {"_id": 1}}], None),
    ("lastpoint-no-series", [{"$match": {"m.sensor": "none"}}, {"$sort": {"m": 1, "t": -1}},
                             {"$group": {"_id": "$m", "t": {"$first": "$t"}}}], None),
    ("lastpoint-event-filter-not-rewritten",
     [{"$match": {"temp": {"$lt": 0}}}, {"$sort": {"m": 1, "t": -1}},
      {"$group": {"_id": "$m", "t": {"$first": "$t"}}}, {"$sort": {"_id": 1}}], None),
    # -- bounded sort
    ("sort-asc-limit", [{"$sort": {"t": 1}}, {"$limit": 5}], "read"),
    ("sort-desc-limit", [{"$sort": {"t": -1}}, {"$limit": 4}], "read"),
    ("sort-asc-all", [{"$sort": {"t": 1}}], None),
    ("sort-desc-filter", [{"$match": {"temp": {"$gt": 20}}}, {"$sort": {"t": -1}},
                          {"$limit": 10}, {"$project": {"_id": 0, "t": 1, "temp": 1}}], None),
    ("sort-asc-window", [{"$match": WINDOW}, {"$sort": {"t": 1}}, {"$skip": 3}, {"$limit": 3}],
     None),
    ("sort-meta-index", [{"$match": {"m": {"sensor": "c"}}}, {"$sort": {"t": -1}},
                         {"$limit": 2}], None),
    ("limit-no-filter", [{"$limit": 3}], "lazy"),  # reads stop early either way
    ("limit-meta-filter", [{"$match": {"m.sensor": "b"}}, {"$limit": 9}], "lazy"),
    ("limit-event-filter", [{"$match": {"hum": 4}}, {"$limit": 2}], None),
]


@pytest.mark.parametrize("name,pipeline,saves", CASES, ids=[c[0] for c in CASES])
def test_rewrite_gives_identical_results(client, tsdb, name, pipeline, saves):
    on, d_on, off, d_off = run_both(client, tsdb, pipeline)
    assert on == off, name
    assert d_off["bucketsRead"] >= d_on["bucketsRead"]
    assert d_off["bucketsUnpacked"] >= d_on["bucketsUnpacked"]
    if saves == "unpacked":
        assert d_on["bucketsUnpacked"] < d_off["bucketsUnpacked"], (d_on, d_off)
    elif saves == "lazy":
        assert d_on["bucketsRead"] < len(BUCKETS) / 4, (d_on, d_off)
    elif saves == "read":
        assert d_on["bucketsRead"] < d_off["bucketsRead"] / 2, (d_on, d_off)


# -- expected values from the documented semantics ------------------------------------------
def test_group_from_control_matches_python(client, tsdb):
    got = list(tsdb.w.aggregate([
        {"$group": {"_id": "$m.sensor", "lo": {"$min": "$temp"}, "hi": {"$max": "$temp"},
                    "n": {"$sum": 1}, "first": {"$min": "$t"}, "last": {"$max": "$t"}}},
        {"$sort": {"_id": 1}}]))
    want = []
    for s in SENSORS:
        mine = [d for d in DOCS if d["m"]["sensor"] == s]
        want.append({"_id": s, "lo": min(d["temp"] for d in mine),
                     "hi": max(d["temp"] for d in mine), "n": len(mine),
                     "first": min(d["t"] for d in mine), "last": max(d["t"] for d in mine)})
    assert got == want


def test_min_max_skip_nulls_and_order_types(client, tsdb):
    # $min/$max skip null; numbers sort before strings (canonical BSON order).
    [got] = list(tsdb.w.aggregate([{"$group": {"_id": None, "lo": {"$min": "$mixed"},
                                               "hi": {"$max": "$mixed"}}}]))
    values = [d["mixed"] for d in DOCS if d.get("mixed") is not None]
    nums = [v for v in values if not isinstance(v, str)]
    assert got == {"_id": None, "lo": min(nums), "hi": "x"}


def test_count_and_count_documents(client, tsdb):
    assert tsdb.w.count_documents({}) == len(DOCS)
    assert tsdb.w.count_documents({"m.sensor": "a"}) == len(DOCS) // 3
    assert tsdb.w.count_documents(WINDOW) == 10 * PER_HOUR * 3
    n = len([d for d in DOCS if d["temp"] > 12])
    assert tsdb.command({"count": "w", "query": {"temp": {"$gt": 12}}})["n"] == n
    assert tsdb.command({"count": "w", "query": {}, "skip": 5, "limit": 7})["n"] == 7
    before = counters(client)
    assert tsdb.command({"count": "w"})["n"] == len(DOCS)
    after = counters(client)
    assert after["bucketsUnpacked"] == before["bucketsUnpacked"]  # answered from row counts


def test_group_per_hour_matches_python(client, tsdb):
    got = list(tsdb.w.aggregate([
        {"$match": {"m.sensor": "b"}},
        {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}},
                    "hi": {"$max": "$temp"}, "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    want = {}
    for d in DOCS:
        if d["m"]["sensor"] != "b":
            continue
        h = d["t"].replace(minute=0, second=0, microsecond=0)
        hi, n = want.get(h, (None, 0))
        want[h] = (d["temp"] if hi is None else max(hi, d["temp"]), n + 1)
    assert got == [{"_id": h, "hi": hi, "n": n} for h, (hi, n) in sorted(want.items())]


@contextlib.contextmanager
def without_latest_cache(client):
    """Last-point reads go to the buckets (hourglassTimeseriesLatestCache off) in the block."""
    client.admin.command({"setParameter": 1, "hourglassTimeseriesLatestCache": False})
    try:
        yield
    finally:
        client.admin.command({"setParameter": 1, "hourglassTimeseriesLatestCache": True})


def test_lastpoint_matches_python_and_unpacks_one_bucket_per_series(client, tsdb):
    before = counters(client)
    got = list(tsdb.w.aggregate([
        {"$sort": {"m": 1, "t": -1}},
        {"$group": {"_id": "$m.sensor", "t": {"$first": "$t"}, "temp": {"$first": "$temp"}}},
        {"$sort": {"_id": 1}}]))
    after = counters(client)
    # A key on a subfield of the metaField: the last-point rewrite, the answer computed here.
    want = []
    for s in SENSORS:
        last = max((d for d in DOCS if d["m"]["sensor"] == s), key=lambda d: d["t"])
        want.append({"_id": s, "t": last["t"], "temp": last["temp"]})
    assert got == want
    # The buckets' path, not the latest-measurements cache (which the read above filled).
    with without_latest_cache(client):
        before = counters(client)
        got = list(tsdb.w.aggregate([
            {"$sort": {"m": 1, "t": -1}},
            {"$group": {"_id": "$m", "t": {"$first": "$t"}}}, {"$sort": {"_id": 1}}]))
        after = counters(client)
    assert [g["t"] for g in got] == [w["t"] for w in want]
    assert after["bucketsUnpacked"] - before["bucketsUnpacked"] == len(SENSORS)
    # The series index is walked backward: a bucket or two per series are read.
    assert after["bucketsRead"] - before["bucketsRead"] <= 2 * len(SENSORS)


def test_bounded_sort_matches_python(client, tsdb):
    asc = sorted(DOCS, key=lambda d: d["t"])
    got = list(tsdb.w.find({}, {"_id": 0, "t": 1}).sort("t", 1).limit(6))
    assert got == [{"t": d["t"]} for d in asc[:6]]
    got = list(tsdb.w.find({"temp": {"$gte": 20}}, {"_id": 0, "t": 1}).sort("t", -1).limit(5))
    want = sorted((d for d in DOCS if d["temp"] >= 20), key=lambda d: d["t"], reverse=True)[:5]
    assert got == [{"t": d["t"]} for d in want]


FIND_CASES = [
    {"filter": {}, "projection": {"temp": 1}},
    {"filter": {"hum": {"$gt": 8}}, "projection": {"_id": 0, "t": 1}, "sort": {"t": -1},
     "limit": 7},
    {"filter": {"m.sensor": "c"}, "projection": {"hum": 0, "_id": 0}, "sort": {"t": 1},
     "skip": 5, "limit": 4},
    {"filter": {}, "projection": {"m.sensor": 1, "x": {"$add": ["$temp", 1]}}, "limit": 5},
    {"filter": {"obj": {"$exists": True}}, "projection": {"obj.v": 1, "_id": 0}},
    {"filter": WINDOW, "sort": {"t": -1}, "limit": 3},
]


@pytest.mark.parametrize("spec", FIND_CASES)
def test_find_identical_with_rewrites(client, tsdb, spec):
    out = []
    for on in (True, False):
        set_timeseries_rewrites(client, on)
        reply = tsdb.command({"find": "w", "batchSize": 100000, **spec}, codec_options=RAW)
        out.append([bytes(d.raw) for d in reply["cursor"]["firstBatch"]])
    set_timeseries_rewrites(client, True)
    assert out[0] == out[1]
    assert out[0]


def test_bounded_sort_ties_keep_bucket_order(client, db):
    # Equal times in several buckets: the stable order of a forward scan, either direction.
    db.command({"create": "ties", "timeseries": {"timeField": "t", "metaField": "m"}})
    db.ties.insert_many([{"t": at(h), "m": s, "v": f"{s}{h}"} for h in (0, 0, 1, 2)
                         for s in "xyz"])
    for direction in (1, -1):
        on, _, off, _ = run_both(client, db, [{"$sort": {"t": direction}}], coll="ties")
        assert on == off


# -- explain -------------------------------------------------------------------------------
def test_explain_aggregate_shape_and_stats(client, tsdb):
    exp = explain(tsdb, {"aggregate": "w", "pipeline": [
        {"$match": {**WINDOW, "temp": {"$gt": 3}}}, {"$project": {"temp": 1}}], "cursor": {}})
    assert stage_names(exp) == ["$cursor", "$_internalUnpackBucket", "$project"]
    cur = exp["stages"][0]["$cursor"]
    assert cur["queryPlanner"]["namespace"] == "tsrewrites.system.buckets.w"
    plan = cur["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "CLUSTERED_IXSCAN"
    assert "control.max.temp" in str(plan["filter"])
    stats = cur["executionStats"]
    assert stats["totalDocsExamined"] < len(BUCKETS)
    assert 0 < stats["nReturned"] <= stats["totalDocsExamined"]
    for k in ("executionTimeMillis", "totalKeysExamined", "executionStages"):
        assert k in stats
    unpack = stage(exp, "$_internalUnpackBucket")
    spec = unpack["$_internalUnpackBucket"]
    assert spec["include"] == ["_id", "t", "temp"]  # t and temp for the event filter
    assert spec["timeField"] == "t" and spec["metaField"] == "m"
    assert spec["bucketMaxSpanSeconds"] == 3600
    assert spec["assumeNoMixedSchemaData"] is True
    assert "temp" in str(spec["eventFilter"])
    assert "wholeBucketFilter" not in spec  # temp cannot be decided per bucket
    n = len([d for d in DOCS if at(10) <= d["t"] < at(20) and d["temp"] > 3])
    assert unpack["nReturned"] == n
    assert stage(exp, "$project")["nReturned"] == n


def test_explain_whole_bucket_filter(client, tsdb):
    exp = explain(tsdb, {"aggregate": "w", "pipeline": [{"$match": WINDOW}], "cursor": {}})
    unpack = stage(exp, "$_internalUnpackBucket")
    spec = unpack["$_internalUnpackBucket"]
    assert spec["wholeBucketFilter"] == {"$and": [
        {"control.min.t": {"$_internalExprGte": at(10)}},
        {"control.max.t": {"$_internalExprLte": at(20) - datetime.timedelta(milliseconds=1)}}]}
    assert unpack["bucketsMatchedWhole"] == buckets_inside(at(10), at(20)) > 0
    assert unpack["nReturned"] == len([d for d in DOCS if at(10) <= d["t"] < at(20)])


def test_explain_verbosities(client, tsdb):
    cmd = {"aggregate": "w", "pipeline": [{"$match": {"m.sensor": "a"}}], "cursor": {}}
    qp = explain(tsdb, cmd, "queryPlanner")
    assert "executionStats" not in qp["stages"][0]["$cursor"]
    plan = qp["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "IXSCAN"
    assert plan["filter"] == {"meta.sensor": {"$eq": "a"}} or "meta.sensor" in str(plan["filter"])
    ap = explain(tsdb, cmd, "allPlansExecution")
    assert ap["stages"][0]["$cursor"]["executionStats"]["nReturned"] == sensor_buckets("a")
    assert stage(ap, "$_internalUnpackBucket")["nReturned"] == len(DOCS) // 3
    # aggregate's own explain option: queryPlanner.
    agg = tsdb.command({"aggregate": "w", "pipeline": [], "explain": True})
    assert agg["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"


def test_explain_find_count_distinct(client, tsdb):
    exp = explain(tsdb, {"find": "w", "filter": {"hum": 3}, "sort": {"t": -1}, "limit": 2,
                         "projection": {"_id": 0, "hum": 1}})
    assert stage_names(exp) == ["$cursor", "$_internalUnpackBucket", "$_internalBoundedSort",
                                "$limit", "$project"]
    # The columns: the filter's hum, the sort's t, the projection's hum (not _id).
    assert stage(exp, "$_internalUnpackBucket")["$_internalUnpackBucket"]["include"] == [
        "hum", "t"]
    bs = stage(exp, "$_internalBoundedSort")["$_internalBoundedSort"]
    assert bs["sortKey"] == {"t": -1}
    assert exp["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["direction"] == "backward"
    assert stage(exp, "$project")["nReturned"] == 2
    exp = explain(tsdb, {"count": "w", "query": {"m.sensor": "b"}})
    assert "$_internalGroupFromControl" in stage_names(exp)
    g = stage(exp, "$_internalGroupFromControl")
    assert g["bucketsFromControl"] == sensor_buckets("b") and g["bucketsUnpacked"] == 0
    exp = explain(tsdb, {"count": "w", "query": {}, "skip": 1})
    assert stage(exp, "$_internalUnpackBucket")["$_internalUnpackBucket"]["include"] == []
    exp = explain(tsdb, {"distinct": "w", "key": "m.sensor", "query": {}})
    assert stage(exp, "$_internalUnpackBucket")["$_internalUnpackBucket"]["include"] == ["m"]


def test_explain_shows_each_rewrite(client, tsdb):
    with without_latest_cache(client):  # the buckets' path, its statistics
        exp = explain(tsdb, {"aggregate": "w", "cursor": {}, "pipeline": [
            {"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "x": {"$first": "$temp"}}}]})
    assert stage_names(exp)[:3] == ["$cursor", "$_internalLastpoint", "$_internalUnpackBucket"]
    assert stage(exp, "$_internalLastpoint")["nReturned"] == len(SENSORS)
    assert stage(exp, "$sort")["nReturned"] == len(SENSORS)  # only each series' latest row
    plan = exp["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "DISTINCT_SCAN"
    assert plan["inputStage"]["direction"] == "backward"
    exp = explain(tsdb, {"aggregate": "w", "cursor": {}, "pipeline": [
        {"$group": {"_id": "$m", "x": {"$max": "$temp"}}}]})
    g = stage(exp, "$_internalGroupFromControl")
    assert g["$_internalGroupFromControl"]["group"] == {"_id": "$m", "x": {"$max": "$temp"}}
    assert g["bucketsFromControl"] == len(BUCKETS) and g["bucketsUnpacked"] == 0
    exp = explain(tsdb, {"aggregate": "w", "cursor": {}, "pipeline": [{"$limit": 6}]})
    plan = exp["stages"][0]["$cursor"]["executionStats"]["executionStages"]
    assert plan["stage"] == "LIMIT" and plan["limitAmount"] == 6
    assert plan["inputStage"]["docsExamined"] <= 6  # buckets read: each holds >= 1
    assert stage(exp, "$limit")["nReturned"] == 6
    exp = explain(tsdb, {"aggregate": "w", "cursor": {}, "pipeline": [{"$project": {"obj": 0}}]})
    assert stage(exp, "$_internalUnpackBucket")["$_internalUnpackBucket"]["exclude"] == ["obj"]
    assert stage_names(exp) == ["$cursor", "$_internalUnpackBucket"]
    exp = explain(tsdb, {"aggregate": "w", "cursor": {}, "pipeline": [
        {"$match": WINDOW}, {"$count": "n"}]})
    g = stage(exp, "$_internalGroupFromControl")
    # Buckets inside the window are counted from control; the edge ones are unpacked.
    assert g["bucketsFromControl"] == buckets_inside(at(10), at(20)) > 0
    kept = exp["stages"][0]["$cursor"]["executionStats"]["nReturned"]
    assert g["bucketsFromControl"] + g["bucketsUnpacked"] == kept
    assert g["bucketsUnpacked"] < kept / 4


def test_explain_with_rewrites_off_shows_plain_unpack(client, tsdb):
    set_timeseries_rewrites(client, False)
    try:
        exp = explain(tsdb, {"aggregate": "w", "cursor": {}, "pipeline": [
            {"$match": WINDOW}, {"$sort": {"t": 1}}, {"$count": "n"}]})
    finally:
        set_timeseries_rewrites(client, True)
    assert stage_names(exp) == ["$cursor", "$_internalUnpackBucket", "$sort", "$count"]
    spec = stage(exp, "$_internalUnpackBucket")["$_internalUnpackBucket"]
    assert "include" not in spec and "wholeBucketFilter" not in spec


def test_explain_errors(client, tsdb):
    # Explaining a write reports the write's own errors (a multi replacement: FailedToParse).
    for cmd, code in (({"update": "w", "updates": [{"q": {}, "u": {"x": 1}, "multi": True}]}, 9),):
        with pytest.raises(OperationFailure) as e:
            explain(tsdb, cmd)
        assert e.value.code == code
    with pytest.raises(OperationFailure) as e:
        explain(tsdb, {"find": "w", "filter": {"$bad": 1}})
    assert e.value.code == 2
    with pytest.raises(OperationFailure) as e:
        explain(tsdb, {"find": "w"}, "bogus")
    assert e.value.code == 2


# -- the parameter -------------------------------------------------------------------------
def test_parameter_get_set(client, tsdb):
    assert client.admin.command({"getParameter": 1, "hourglassTimeseriesRewrites": 1})[
        "hourglassTimeseriesRewrites"] is True
    set_timeseries_rewrites(client, False)
    try:
        assert client.admin.command({"getParameter": 1, "hourglassTimeseriesRewrites": 1})[
            "hourglassTimeseriesRewrites"] is False
        before = counters(client)
        list(tsdb.w.aggregate([{"$count": "n"}]))
        after = counters(client)
        assert after["bucketsUnpacked"] - before["bucketsUnpacked"] == len(BUCKETS)
    finally:
        set_timeseries_rewrites(client, True)


BASELINE_PIPELINES = [
    [{"$match": {"m.sensor": "b", "t": {"$gte": at(3), "$lt": at(9)}}},
     {"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "mx": {"$max": "$temp"}}},
     {"$sort": {"_id": 1}}],
    [{"$match": {"temp": {"$gt": 20}, "t": {"$lt": at(12)}}}, {"$sort": {"t": 1, "m.sensor": 1}}],
    [{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "last": {"$first": "$$ROOT"}}},
     {"$sort": {"_id": 1}}],
]


@pytest.mark.parametrize("pipeline", BASELINE_PIPELINES, ids=["groupby", "filter", "lastpoint"])
def test_bucket_filters_off_unpacks_everything(client, tsdb, pipeline):
    """hourglassTimeseriesBucketFilters: false is the unpack-everything-then-filter baseline:
    every bucket is read and unpacked, and the answer is the same as with every pushdown."""
    with_pushdowns = aggregate_raw(tsdb, pipeline)
    client.admin.command({"setParameter": 1, "hourglassTimeseriesBucketFilters": False})
    try:
        assert client.admin.command({"getParameter": 1, "hourglassTimeseriesBucketFilters": 1})[
            "hourglassTimeseriesBucketFilters"] is False
        before = counters(client)
        baseline = aggregate_raw(tsdb, pipeline)
        after = counters(client)
    finally:
        client.admin.command({"setParameter": 1, "hourglassTimeseriesBucketFilters": True})
    assert baseline == with_pushdowns
    assert after["bucketsRead"] - before["bucketsRead"] == len(BUCKETS)
    assert after["bucketsUnpacked"] - before["bucketsUnpacked"] == len(BUCKETS)
    assert after["measurementsUnpacked"] - before["measurementsUnpacked"] == len(DOCS)


@pytest.mark.parametrize("name", ["hourglassTimeseriesBucketFilters",
                                  "hourglassTimeseriesLatestCache"])
def test_read_parameters_reject_non_booleans(client, name):
    for value in ("x", None, [True]):
        with pytest.raises(OperationFailure) as e:
            client.admin.command({"setParameter": 1, name: value})
        assert e.value.code == 2
    assert client.admin.command({"getParameter": 1, name: 1})[name] is True


def test_parameter_at_startup(fresh_server):
    srv = fresh_server.new(extra_args=["--setParameter", "hourglassTimeseriesRewrites=false"])
    c = srv.client()
    try:
        assert c.admin.command({"getParameter": 1, "hourglassTimeseriesRewrites": 1})[
            "hourglassTimeseriesRewrites"] is False
    finally:
        c.close()


def test_lastpoint_finds_latest_time_in_an_older_bucket(client, db):
    # Bucket A (start 10:00) is full with 10:00 and 10:50; 10:20 opens bucket B, which starts
    # later but ends earlier: the latest measurement is in the older bucket.
    old = client.admin.command({"getParameter": 1, "timeseriesBucketMaxCount": 1})
    client.admin.command({"setParameter": 1, "timeseriesBucketMaxCount": 2})
    try:
        db.command({"create": "late", "timeseries": {"timeField": "t", "metaField": "m"}})
        for minute in (0, 50, 20):
            db.late.insert_one({"t": at(10, minute), "m": "x", "v": minute})
    finally:
        client.admin.command({"setParameter": 1, "timeseriesBucketMaxCount":
                              old["timeseriesBucketMaxCount"]})
    assert db["system.buckets.late"].count_documents({}) == 2
    pipeline = [{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "v": {"$first": "$v"}}}]
    on, d_on, off, _ = run_both(client, db, pipeline, coll="late")
    assert on == off
    assert list(db.late.aggregate(pipeline)) == [{"_id": "x", "v": 50}]
    assert d_on["bucketsUnpacked"] == 1


def test_bounded_sort_with_dates_outside_1970_2038(client, db):
    # Such buckets break the _id (start time) order of the bucket table: the sort still holds.
    db.command({"create": "wide", "timeseries": {"timeField": "t", "metaField": "m"}})
    times = [datetime.datetime(1960, 1, 1), datetime.datetime(2050, 6, 1),
             datetime.datetime(2000, 1, 1), datetime.datetime(1969, 12, 31, 23),
             datetime.datetime(2020, 2, 2)]
    db.wide.insert_many([{"t": t, "m": i % 2, "v": i} for i, t in enumerate(times)])
    for direction in (1, -1):
        on, _, off, _ = run_both(client, db, [{"$sort": {"t": direction}}], coll="wide")
        assert on == off
        got = [d["t"] for d in db.wide.find({}, {"_id": 0, "t": 1}).sort("t", direction)]
        assert got == sorted(times, reverse=direction < 0)


@pytest.mark.parametrize("pipeline", [
    [{"$sort": {"t": -1}}],
    [{"$group": {"_id": "$m", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
    [{"$match": {"m.sensor": "a"}}, {"$project": {"hum": 0}}],
])
def test_rewritten_reads_across_get_more(client, tsdb, pipeline):
    out = []
    for on in (True, False):
        set_timeseries_rewrites(client, on)
        out.append(list(tsdb.w.aggregate(pipeline, batchSize=7)))
    set_timeseries_rewrites(client, True)
    assert out[0] == out[1] and len(out[0]) > 0


def test_group_from_control_keeps_the_first_of_equal_numbers(client, db):
    # 1, 1.0 and NumberLong(1) compare equal: $min/$max keep the first one met, as control does.
    from bson.int64 import Int64
    db.command({"create": "eq", "timeseries": {"timeField": "t", "metaField": "m"}})
    vals = [Int64(1), 1.0, 1, 2.0, Int64(2), 2]
    # Two buckets of three measurements (hours 0 and 1).
    db.eq.insert_many([{"t": at(i // 3, i), "m": "s", "v": v} for i, v in enumerate(vals)])
    assert db["system.buckets.eq"].count_documents({}) == 2
    pipeline = [{"$group": {"_id": "$m", "lo": {"$min": "$v"}, "hi": {"$max": "$v"}}}]
    on, d_on, off, _ = run_both(client, db, pipeline, coll="eq")
    assert on == off
    assert d_on["bucketsUnpacked"] == 0


ERROR_CASES = [
    ({"aggregate": "w", "pipeline": [{"$match": {"$bad": 1}}], "cursor": {}}, 2),
    ({"aggregate": "w", "pipeline": [{"$count": ""}], "cursor": {}}, None),
    ({"aggregate": "w", "pipeline": [{"$group": {"_id": "$m", "x": {"$nope": 1}}}],
      "cursor": {}}, 15952),
    ({"aggregate": "w", "pipeline": [{"$sort": {"t": 2}}], "cursor": {}}, 15975),
    ({"count": "w", "query": {"t": {"$in": 5}}}, 2),
    ({"distinct": "w", "key": "hum", "query": {"$where": "1"}}, None),
]


@pytest.mark.parametrize("cmd,code", ERROR_CASES)
def test_errors_are_the_same_with_rewrites(client, tsdb, cmd, code):
    codes = []
    for on in (True, False):
        set_timeseries_rewrites(client, on)
        try:
            tsdb.command(cmd)
            codes.append(0)
        except OperationFailure as e:
            codes.append(e.code)
    set_timeseries_rewrites(client, True)
    assert codes[0] == codes[1] != 0
    if code is not None:
        assert codes[0] == code
