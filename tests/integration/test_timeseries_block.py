"""Block processing on time-series collections (issue 4, "Block processing").

A $group whose key and accumulators read top-level fields folds each bucket column by column
instead of unpacking a document per measurement. Its results must be exactly those of the same
$group over the unpacked measurements: every case below runs twice on the same time-series
collection, once as written (block processing) and once with an $addFields stage before the
$group, which makes the $group read documents. Order-sensitive accumulators ($first, $last,
$push) must agree too, since both see the measurements in the same order. The regular-collection
twin checks the order-insensitive results against MongoDB's documented semantics, and one case
checks values computed here by hand.
"""

import datetime
import random

import bson
import pytest
from pymongo.errors import OperationFailure
from bson.int64 import Int64

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 3, 1, tzinfo=UTC)


def measurements(seed):
    """Several sensors, minutes apart over ~5 hours; v of mixed types, sometimes null/missing."""
    rng = random.Random(seed)
    docs = []
    for i in range(1500):
        sensor = i % 5
        d = {
            "t": T0 + datetime.timedelta(seconds=37 * i + rng.randrange(30)),
            "meta": {"sensor": sensor, "site": "north" if sensor < 3 else "south"},
            "w": rng.randrange(10000) / 7,
        }
        kind = rng.randrange(8)
        if kind == 0:
            d["v"] = rng.randrange(100)
        elif kind == 1:
            d["v"] = Int64(rng.randrange(100))
        elif kind == 2:
            d["v"] = "s%d" % rng.randrange(4)
        elif kind == 3:
            d["v"] = None
        elif kind < 7:
            d["v"] = rng.randrange(1000) / 3
        if i % 3 == 0:  # an array (possibly empty), a scalar, or missing
            d["a"] = [rng.randrange(10) for _ in range(rng.randrange(3))]
        elif i % 3 == 1:
            d["a"] = rng.randrange(10)
        docs.append(d)
    return docs


GROUPS = [
    {"_id": "$meta", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "mn": {"$min": "$v"},
     "mx": {"$max": "$v"}, "n": {"$sum": 1}, "c": {"$count": {}}},
    {"_id": {"sensor": "$meta.sensor",
             "hour": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
     "avg": {"$avg": "$w"}, "mx": {"$max": "$w"}, "first": {"$first": "$t"},
     "last": {"$last": "$t"}},
    {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 15}},
     "mx": {"$max": "$w"}, "vals": {"$addToSet": "$v"}},
    {"_id": {"$dateTrunc": {"date": "$t", "unit": "day", "timezone": "America/New_York"}},
     "s": {"$sum": "$w"}, "sd": {"$stdDevPop": "$w"}},
    {"_id": None, "push": {"$push": "$v"}, "mn": {"$min": "$t"}, "mx": {"$max": "$t"}},
    {"_id": "$v", "n": {"$sum": 1}},
    {"_id": "$meta.site", "firstv": {"$first": "$v"}, "lastv": {"$last": "$v"}},
    # Keys reading the time only through $dateTrunc: a bucket whose rows all count is keyed by
    # its control.min/max times when both fall in one bin (every UTC day here), and its time
    # column is decoded when they do not (hours: each bucket spans several).
    {"_id": {"s": "$meta.sensor", "d": {"$dateTrunc": {"date": "$t", "unit": "day"}}},
     "avg": {"$avg": "$w"}, "n": {"$count": {}}},
    {"_id": {"s": "$meta.sensor", "h": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
     "avg": {"$avg": "$w"}, "mx": {"$max": "$v"}},
    # Percentiles fold columns of numbers (v mixes ints, longs, doubles, strings and nulls).
    {"_id": "$meta.sensor",
     "p": {"$percentile": {"input": "$v", "p": [0.1, 0.5, 0.99], "method": "approximate"}},
     "m": {"$median": {"input": "$w", "method": "approximate"}},
     "pa": {"$percentile": {"input": "$a", "p": [0.5], "method": "approximate"}}},
    # Expressions of fields fold each row's cells without a document of the measurement.
    {"_id": "$meta.site",
     "s": {"$sum": {"$multiply": ["$w", 2]}},
     "hot": {"$sum": {"$cond": [{"$gt": ["$w", 700]}, 1, 0]}},
     "a": {"$avg": {"$add": ["$w", "$meta.sensor"]}},
     "mx": {"$max": {"$ifNull": ["$v", "none"]}},
     "sensor": {"$addToSet": "$meta.sensor"},
     "types": {"$push": {"$type": "$a"}}},
    # Arithmetic of double columns only: computed for a bucket's rows at once (column_arith.h),
    # to the bit what each row's evaluation gives.
    {"_id": {"s": "$meta.sensor", "h": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
     "s": {"$sum": {"$multiply": ["$w", 2.5]}},
     "a": {"$avg": {"$add": ["$w", 0.1, "$w"]}},
     "d": {"$max": {"$subtract": ["$w", {"$multiply": ["$w", 0.3, 7]}]}},
     "mn": {"$min": {"$add": [{"$multiply": [3, "$w"]}, -1]}},
     "q": {"$avg": {"$divide": ["$w", {"$add": ["$w", 7]}]}}},
    # $cond by a comparison of number columns: counts and caps computed a bucket at a time.
    {"_id": "$meta.sensor", "hot": {"$sum": {"$cond": [{"$gt": ["$w", 700]}, 1, 0]}},
     "capped": {"$avg": {"$cond": {"if": {"$lt": ["$w", 500]}, "then": "$w", "else": 500.0}}},
     "same": {"$sum": {"$cond": [{"$eq": ["$w", "$w"]}, 1, 0]}}},
    # Keys of date parts: one evaluation per local minute, hour or day in a fixed time zone
    # (date_bins.h), the rows of a bin folded together; named zones and seconds go row by row.
    {"_id": {"s": "$meta.sensor", "h": {"$hour": "$t"}}, "avg": {"$avg": "$w"},
     "n": {"$count": {}}},
    {"_id": {"$dateToString": {"format": "%Y-%m-%d %H:%M", "date": "$t", "timezone": "+05:30"}},
     "mx": {"$max": "$w"}, "first": {"$first": "$v"}},
    {"_id": {"d": {"$dayOfWeek": {"date": "$t", "timezone": "-03:00"}},
             "m": {"$minute": ["$t"]}, "site": "$meta.site"}, "n": {"$sum": 1}},
    {"_id": {"$hour": {"date": "$t", "timezone": "America/New_York"}}, "n": {"$sum": 1}},
    {"_id": {"s": "$meta.sensor", "sec": {"$second": "$t"}}, "n": {"$sum": 1}},
]

MATCHES = [
    {},
    {"meta.sensor": {"$in": [1, 3]}},
    {"t": {"$gte": T0 + datetime.timedelta(hours=1), "$lt": T0 + datetime.timedelta(hours=3)}},
    {"w": {"$gt": 700}},
    {"meta.site": "north", "$or": [{"v": {"$type": "number"}}, {"w": {"$lt": 100}}]},
    {"$expr": {"$lt": ["$w", {"$multiply": ["$meta.sensor", 300]}]}},
    # Tests of single top-level fields: these run on the bucket's columns (block filtering).
    {"v": {"$ne": None}, "w": {"$gte": 200, "$lt": 9000}},
    {"$or": [{"w": {"$lt": 300}}, {"w": {"$gt": 1200}}], "v": {"$type": "number"}},
    {"a": {"$gt": 6}},
    {"a": {"$size": 2}, "v": {"$nin": [None, "s1"]}},
    {"a": {"$exists": False}, "meta": {"sensor": 2, "site": "north"}},
    {"meta.site": "south", "t": {"$lt": T0 + datetime.timedelta(hours=2)}, "v": {"$in": [1, 2, "s3"]}},
]
MATCH_IDS = ["all", "meta", "time", "measure", "mixed", "expr", "ne-range", "or-type", "array-gt",
             "size-nin", "missing-meta", "dotted-meta"]
# The filters that run on columns: every one made only of tests of single top-level fields.
COLUMN_FILTERED = {"time", "measure", "ne-range", "or-type", "array-gt", "size-nin", "missing-meta",
                   "dotted-meta"}


@pytest.fixture
def twins(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "meta",
                                           "granularity": "minutes"})
    docs = measurements(7)
    db.ts.insert_many([dict(d) for d in docs])
    db.plain.insert_many([dict(d) for d in docs])
    return db


def run(coll, pipeline):
    return list(coll.aggregate(pipeline + [{"$sort": {"_id": 1}}]))


def blocks_counter(db, name="bucketsAsBlocks"):
    return db.client.admin.command("serverStatus")["hourglass"]["timeseries"][name]


ORDER_SENSITIVE = ("$first", "$last", "$push", "$addToSet")
# An identity stage that cannot pass column blocks on: the $group after it reads documents.
DOCUMENT_PATH = [{"$replaceWith": "$$ROOT"}]


@pytest.mark.parametrize("match", MATCHES, ids=MATCH_IDS)
@pytest.mark.parametrize("group", GROUPS, ids=[str(i) for i in range(len(GROUPS))])
def test_group_on_buckets_equals_group_on_documents(twins, match, group):
    head = [{"$match": match}] if match else []
    before = blocks_counter(twins)
    filtered_before = blocks_counter(twins, "bucketsFilteredAsBlocks")
    blocks = run(twins.ts, head + [{"$group": group}])
    between = blocks_counter(twins)
    # Some bucket needed its measurements filtered: on the columns exactly when the filter is
    # made of tests of single fields.
    filtered = blocks_counter(twins, "bucketsFilteredAsBlocks") > filtered_before
    assert filtered == (MATCH_IDS[MATCHES.index(match)] in COLUMN_FILTERED)
    documents = run(twins.ts, head + DOCUMENT_PATH + [{"$group": group}])
    assert blocks_counter(twins) == between  # the document path takes no blocks
    assert between > before  # the first run did
    assert blocks == documents
    assert blocks  # every case groups something
    # The order-insensitive outputs equal those of the same documents in a regular collection.
    plain_group = {k: v for k, v in group.items()
                   if k == "_id" or next(iter(v)) not in ORDER_SENSITIVE}
    mine = [{k: d[k] for k in plain_group if k in d} for d in run(twins.ts, head + [{"$group": plain_group}])]
    theirs = run(twins.plain, head + [{"$group": plain_group}])
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert a["_id"] == b["_id"]
        for k in plain_group:
            if k != "_id":
                assert a[k] == pytest.approx(b[k], rel=1e-12) if isinstance(b[k], float) else a[k] == b[k]


def test_hourly_average_by_hand(twins):
    # The mean of w per sensor per hour, computed here from the documents themselves.
    want = {}
    for d in measurements(7):
        hour = d["t"].replace(minute=0, second=0, microsecond=0, tzinfo=None)
        want.setdefault((d["meta"]["sensor"], hour), []).append(d["w"])
    got = twins.ts.aggregate([{"$group": {
        "_id": {"s": "$meta.sensor", "h": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
        "avg": {"$avg": "$w"}, "n": {"$sum": 1}}}])
    got = {(g["_id"]["s"], g["_id"]["h"]): (g["avg"], g["n"]) for g in got}
    assert set(got) == set(want)
    for k, ws in want.items():
        assert got[k][1] == len(ws)
        assert got[k][0] == pytest.approx(sum(ws) / len(ws), rel=1e-12)


def errors_both_ways(coll, pipeline):
    """The (code, message) of `pipeline` failing on blocks, then on documents."""
    errors = []
    for p in (pipeline, DOCUMENT_PATH + pipeline):
        with pytest.raises(OperationFailure) as e:
            list(coll.aggregate(p))
        errors.append((e.value.code, str(e.value)))
    return errors


def test_expression_errors_like_the_document_path(twins):
    # $add of a string (some v are) fails at the same row, with the same code, both ways.
    pipeline = [{"$group": {"_id": None, "n": {"$sum": 1},
                            "s": {"$sum": {"$add": ["$w", "$v"]}}}}]
    errors = errors_both_ways(twins.ts, pipeline)
    assert errors[0] == errors[1]


def test_column_arithmetic_divide_by_zero_errors_like_the_document_path(twins):
    # A $divide over double columns is computed a bucket at a time; a zero divisor (w - w)
    # leaves the run to the per-row path, which fails with MongoDB's 16608 both ways.
    pipeline = [{"$group": {"_id": "$meta.sensor",
                            "q": {"$sum": {"$divide": ["$w", {"$subtract": ["$w", "$w"]}]}}}}]
    errors = errors_both_ways(twins.ts, pipeline)
    assert errors[0] == errors[1]
    assert errors[0][0] == 16608 and "can't $divide by zero" in errors[0][1]


def test_group_errors_like_the_document_path(twins):
    # $mergeObjects of a non-object fails the same way (40400) on both collections.
    codes = []
    for coll in (twins.ts, twins.plain):
        with pytest.raises(Exception) as e:
            list(coll.aggregate([{"$group": {"_id": None, "m": {"$mergeObjects": "$w"}}}]))
        codes.append(getattr(e.value, "code", None))
    assert codes == [40400, 40400]



def test_block_group_spills_like_the_document_path(twins):
    # With a tiny $group memory limit the table spills while blocks are folded into it; the
    # result must not change, and without allowDiskUse the stage fails with 292.
    admin = twins.client.admin
    name = "internalDocumentSourceGroupMaxMemoryBytes"
    old = admin.command("getParameter", 1, **{name: 1})[name]
    group = {"$group": {"_id": {"s": "$meta.sensor",
                                "m": {"$dateTrunc": {"date": "$t", "unit": "minute"}}},
                        "avg": {"$avg": "$w"}, "vals": {"$push": "$v"}, "n": {"$sum": 1}}}
    want = run(twins.ts, [{"$addFields": {"_unused": 1}}, group])
    try:
        admin.command("setParameter", 1, **{name: 4096})
        before = blocks_counter(twins)
        got = list(twins.ts.aggregate([group, {"$sort": {"_id": 1}}], allowDiskUse=True))
        assert blocks_counter(twins) > before
        with pytest.raises(Exception) as e:
            list(twins.ts.aggregate([group], allowDiskUse=False))
        assert getattr(e.value, "code", None) == 292
    finally:
        admin.command("setParameter", 1, **{name: old})
    assert len(got) == len(want) > 100
    for a, b in zip(got, want):
        assert a["_id"] == b["_id"] and a["n"] == b["n"] and a["vals"] == b["vals"]
        assert a["avg"] == pytest.approx(b["avg"], rel=1e-12)


def stage_names(db, pipeline):
    explained = db.command("aggregate", "ts", pipeline=pipeline, explain=True)
    return [next(iter(s)) for s in explained["stages"]]


def test_bins_finer_than_buckets_use_blocks_not_control(twins):
    # Buckets of granularity "minutes" span a day: hourly keys split almost every bucket, so
    # the $max is computed on blocks; a key on the meta field alone is answered from control.
    hourly = [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}},
                          "mx": {"$max": "$w"}}}]
    assert "$_internalGroupFromControl" not in stage_names(twins, hourly)
    before = blocks_counter(twins)
    got = run(twins.ts, hourly)
    assert blocks_counter(twins) > before
    assert got == run(twins.ts, [{"$addFields": {"_unused": 1}}] + hourly)
    per_sensor = [{"$group": {"_id": "$meta", "mx": {"$max": "$w"}}}]
    assert "$_internalGroupFromControl" in stage_names(twins, per_sensor)


def test_measurement_filters_group_on_blocks_not_control(twins):
    # A $group control could answer, after a filter on a measurement field that runs on columns:
    # most buckets match in part, so the $group folds the filtered columns instead of unpacking
    # those buckets measurement by measurement. Filters on the meta field or the time keep the
    # answer from control, and so does a filter that does not run on columns ($expr).
    group = {"$group": {"_id": "$meta", "mx": {"$max": "$w"}, "n": {"$count": {}}}}
    cases = [({"w": {"$gt": 700}}, False),
             ({"v": {"$type": "number"}, "meta.sensor": {"$lt": 3}}, False),
             ({"meta.sensor": 1}, True),
             ({"t": {"$gte": T0 + datetime.timedelta(hours=1)}}, True),
             ({"$expr": {"$gt": ["$w", 700]}}, True)]
    for match, control in cases:
        pipeline = [{"$match": match}, group]
        assert ("$_internalGroupFromControl" in stage_names(twins, pipeline)) == control, match
        before = blocks_counter(twins)
        got = run(twins.ts, pipeline)
        assert (blocks_counter(twins) > before) == (not control), match
        assert got == run(twins.ts, pipeline[:1] + DOCUMENT_PATH + pipeline[1:]), match
        assert got
        # $count, which is a $group and a $project, goes the same way.
        counted = [{"$match": match}, {"$count": "n"}]
        assert ("$_internalGroupFromControl" in stage_names(twins, counted)) == control, match
        before = blocks_counter(twins)
        assert list(twins.ts.aggregate(counted)) == [{"n": twins.plain.count_documents(match)}]
        assert (blocks_counter(twins) > before) == (not control), match
    # A filter no measurement passes: $count answers nothing, as MongoDB's does.
    assert list(twins.ts.aggregate([{"$match": {"w": {"$lt": -1}}}, {"$count": "n"}])) == []


def test_explain_execution_runs_the_block_path(twins):
    # executionStats runs the pipeline as the command would: the $group takes column blocks,
    # and the unpack stage reports the rows it passed on.
    pipeline = [{"$match": {"meta.sensor": 1}},
                {"$group": {"_id": None, "avg": {"$avg": "$w"}}}]
    before = blocks_counter(twins)
    twins.command("aggregate", "ts", pipeline=pipeline, explain=True)  # queryPlanner: no run
    assert blocks_counter(twins) == before
    explained = twins.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}},
                              verbosity="executionStats")
    assert blocks_counter(twins) > before
    unpack = next(s for s in explained["stages"] if "$_internalUnpackBucket" in s)
    assert unpack["nReturned"] == twins.plain.count_documents({"meta.sensor": 1}) == 300


@pytest.mark.parametrize("match", MATCHES, ids=MATCH_IDS)
def test_filter_on_columns_equals_filter_on_documents(twins, match):
    """A find whose filter is made of tests of single fields selects each bucket's rows on its
    columns and builds only those; the measurements found are those of the regular twin."""
    def found(coll):
        docs = [{k: v for k, v in d.items() if k != "_id"} for d in coll.find(match)]
        return sorted(docs, key=lambda d: (d["t"], d["w"]))

    before = blocks_counter(twins, "bucketsFilteredAsBlocks")
    mine = found(twins.ts)
    filtered = blocks_counter(twins, "bucketsFilteredAsBlocks") > before
    assert filtered == (MATCH_IDS[MATCHES.index(match)] in COLUMN_FILTERED)
    assert mine == found(twins.plain)
    assert mine


PROJECTIONS = [
    {"$addFields": {"x": {"$multiply": ["$w", 2]}, "v": {"$ifNull": ["$v", -1]}}},
    {"$set": {"x": {"$add": ["$w", "$meta.sensor", 0.5]}, "w": {"$literal": 3}}},
    {"$project": {"t": 1, "meta": 1, "v": 1, "x": {"$subtract": ["$w", {"$size": {
        "$cond": [{"$isArray": "$a"}, "$a", []]}}]}}},
    {"$project": {"v": 0, "a": 0}},
    {"$set": {"x": {"$divide": ["$w", "$meta.sensor"]}}},  # sensor 0: division by zero (16608)
    # Forms computed without a document per row: a renamed field, expressions of the meta field
    # alone (constant in a bucket), arithmetic of a double column, $dateTrunc in fixed bins.
    {"$addFields": {"x": "$w", "v": "$meta.site", "t": {"$dateTrunc": {
        "date": "$t", "unit": "minute", "binSize": 15}}}},
    {"$project": {"x": {"$multiply": ["$w", 2, "$w"]}, "meta": 1, "w": 1,
                  "v": {"$concat": ["$meta.site", "-", {"$toString": "$meta.sensor"}]},
                  "t": {"$dateTrunc": {"date": "$t", "unit": "hour", "timezone": "+05:30"}}}},
    {"$set": {"x": "$a", "t": {"$dateTrunc": {"date": "$t", "unit": "day"}}}},
    # An expression of the meta field that fails in one bucket's rows: 16608 as per row.
    {"$set": {"x": {"$divide": [1, "$meta.sensor"]}}},
    # Date parts, one evaluation per bin of the date.
    {"$set": {"x": {"$hour": {"date": "$t", "timezone": "+05:30"}},
              "v": {"$dateToString": {"format": "%d %H:%M", "date": "$t"}}}},
]
PROJECTED_GROUP = {"_id": "$meta.sensor", "sx": {"$sum": "$x"}, "ax": {"$avg": "$x"},
                   "mw": {"$max": "$w"}, "vs": {"$push": "$v"}, "n": {"$count": {}},
                   "lt": {"$last": "$t"}}


@pytest.mark.parametrize("match", [{}, MATCHES[2], MATCHES[6]], ids=["all", "time", "ne-range"])
@pytest.mark.parametrize("projection", PROJECTIONS, ids=["addFields", "set", "project", "exclude",
                                                         "divide-by-zero", "rename-meta-trunc",
                                                         "arith-concat-trunc-tz", "array-day",
                                                         "meta-divide-by-zero", "date-parts"])
def test_projection_on_blocks_equals_projection_on_documents(twins, match, projection):
    """$addFields/$set/$project between the scan and a block $group pass the blocks on: kept
    fields as they are, computed fields evaluated for the selected rows only. The results (or
    the error) are those of the same stages over documents."""
    head = [{"$match": match}] if match else []
    before = blocks_counter(twins)
    try:
        blocks = run(twins.ts, head + [projection, {"$group": PROJECTED_GROUP}])
        error = None
    except OperationFailure as e:
        blocks, error = None, e.code
    assert blocks_counter(twins) > before  # the blocks went through the projection
    try:
        documents = run(twins.ts, head + DOCUMENT_PATH + [projection, {"$group": PROJECTED_GROUP}])
        doc_error = None
    except OperationFailure as e:
        documents, doc_error = None, e.code
    assert error == doc_error
    assert blocks == documents
    if "$divide" in str(projection):
        assert error == 16608  # MongoDB's code for $divide by zero
    else:
        assert blocks and error is None


# The same question spelled with the key's parts computed before the $group (a user's
# $project or $set), beside the spelling that computes them in the _id.
HOUR = {"$dateTrunc": {"date": "$t", "unit": "hour"}}
KEYED_BEFORE = [
    ([{"$project": {"s": "$meta.sensor", "h": HOUR, "w": 1}}],
     {"_id": {"s": "$s", "h": "$h"}, "avg": {"$avg": "$w"}, "n": {"$count": {}}}),
    ([{"$set": {"s": "$meta.sensor"}}],
     {"_id": {"s": "$s", "h": HOUR}, "avg": {"$avg": "$w"}, "n": {"$count": {}}}),
    ([{"$set": {"h": HOUR}}],
     {"_id": {"s": "$meta.sensor", "h": "$h"}, "avg": {"$avg": "$w"}, "n": {"$count": {}}}),
    ([{"$addFields": {"w2": {"$multiply": ["$w", 2]}, "h": HOUR}}],
     {"_id": {"s": "$meta.sensor", "h": "$h"}, "avg": {"$avg": {"$divide": ["$w2", 2]}},
      "n": {"$count": {}}}),
]


@pytest.mark.parametrize("match", [{}, MATCHES[2], MATCHES[6]], ids=["all", "time", "ne-range"])
@pytest.mark.parametrize("index", range(len(KEYED_BEFORE)),
                         ids=["project", "set-meta", "set-hour", "addFields-arith"])
def test_keys_computed_before_the_group(twins, match, index):
    """The hourly mean per sensor, with the key's parts computed by a stage before the $group:
    the blocks pass through it, and the answer is the document path's and the one of the
    spelling that computes the key in the $group."""
    stages, group = KEYED_BEFORE[index]
    head = [{"$match": match}] if match else []
    before = blocks_counter(twins)
    blocks = run(twins.ts, head + stages + [{"$group": group}])
    assert blocks_counter(twins) > before
    assert blocks == run(twins.ts, head + DOCUMENT_PATH + stages + [{"$group": group}])
    direct = run(twins.ts, head + [{"$group": {
        "_id": {"s": "$meta.sensor", "h": HOUR}, "avg": {"$avg": "$w"}, "n": {"$count": {}}}}])
    assert len(blocks) == len(direct) > 5
    for a, b in zip(blocks, direct):
        assert a["_id"] == b["_id"] and a["n"] == b["n"]
        assert a["avg"] == pytest.approx(b["avg"], rel=1e-12)


def test_integer_column_arithmetic_equals_the_document_path(db):
    """Arithmetic of int32 and int64 columns is computed a bucket at a time: every result has the
    type and value each row's evaluation gives (int32 + int32 stays int32 unless it overflows;
    one series' values overflow int32 in their sums, which the rows then answer as longs)."""
    db.create_collection("tsi", timeseries={"timeField": "t", "metaField": "s"})
    rng = random.Random(5)
    docs = []
    for k in range(1200):
        s = k % 4
        i = 2147483000 + rng.randrange(600) if s == 3 else rng.randrange(-1000, 1000)
        docs.append({"t": T0 + datetime.timedelta(minutes=k), "s": s, "i": i,
                     "l": Int64(rng.randrange(-10**12, 10**12)), "w": rng.randrange(10**6) / 9})
    db.tsi.insert_many(docs)
    pipelines = [
        [{"$group": {"_id": "$s", "m": {"$sum": {"$multiply": ["$i", 3]}},
                     "a": {"$avg": {"$add": ["$i", "$l"]}},
                     "d": {"$max": {"$subtract": ["$l", "$i"]}},
                     "q": {"$min": {"$divide": ["$i", 4]}},
                     "twice": {"$push": {"$add": ["$i", "$i"]}},
                     "mixed": {"$sum": {"$add": ["$i", "$w", 1]}},
                     "abs": {"$sum": {"$cond": [{"$gte": ["$i", 0]}, "$i",
                                                {"$multiply": ["$i", -1]}]}},
                     "over": {"$sum": {"$cond": [{"$gt": ["$l", "$w"]}, 1, 0]}}}}],
        [{"$addFields": {"x": {"$multiply": ["$i", "$l"]}, "y": {"$add": ["$i", 1]},
                         "z": {"$subtract": ["$i", Int64(7)]}}},
         {"$group": {"_id": "$s", "x": {"$push": "$x"}, "y": {"$push": "$y"},
                     "z": {"$push": "$z"}, "sy": {"$sum": "$y"}}}],
    ]
    for pipeline in pipelines:
        before = blocks_counter(db)
        blocks = run(db.tsi, pipeline)
        assert blocks_counter(db) > before
        documents = run(db.tsi, DOCUMENT_PATH + pipeline)
        assert len(blocks) == 4
        # Types and bits: int32, int64 and doubles encode differently.
        assert [bson.encode(d) for d in blocks] == [bson.encode(d) for d in documents]
    # By hand: the sums of i + i overflow int32 in series 3 and are longs there, ints elsewhere.
    twice = {d["_id"]: d["twice"] for d in run(db.tsi, pipelines[0])}
    assert all(type(v) is Int64 for v in twice[3])
    assert all(type(v) is int for v in twice[0])


def test_random_values_are_drawn_per_row(twins):
    """$rand gives every measurement its own number, also where block processing evaluates an
    expression of a bucket's constant fields once: in a computed field and in a group key."""
    n = twins.ts.count_documents({})
    got = list(twins.ts.aggregate([
        {"$set": {"r": {"$add": ["$meta.sensor", {"$rand": {}}]}}},
        {"$group": {"_id": None, "rs": {"$addToSet": "$r"}}}]))
    assert len(got[0]["rs"]) == n
    groups = list(twins.ts.aggregate([
        {"$group": {"_id": {"$add": ["$meta.sensor", {"$rand": {}}]}, "n": {"$count": {}}}}]))
    assert len(groups) == n and all(g["n"] == 1 for g in groups)


def test_filter_only_column_stays_out_of_whole_buckets(twins):
    """A field the filter reads but a folded-in exclusion drops is missing for the $group, also
    in buckets that match whole (no row is tested): the block must not show the filter's column."""
    for field, match in (("w", {"w": {"$gte": 0}}),
                         ("t", {"t": {"$gte": T0, "$lt": T0 + datetime.timedelta(days=1)}})):
        pipeline = [{"$match": match}, {"$project": {field: 0}},
                    {"$group": {"_id": None, "mx": {"$max": "$" + field}, "n": {"$count": {}}}}]
        blocks = list(twins.ts.aggregate(pipeline))
        documents = list(twins.ts.aggregate(pipeline[:1] + DOCUMENT_PATH + pipeline[1:]))
        assert blocks == documents == [{"_id": None, "mx": None, "n": 1500}], field


BUCKETS = [
    # By a double column, with a default, order-sensitive outputs too.
    {"groupBy": "$w", "boundaries": [0, 100, 500.5, Int64(1000), 1400], "default": "other",
     "output": {"n": {"$sum": 1}, "a": {"$avg": "$w"}, "first": {"$first": "$t"},
                "vs": {"$push": "$v"}}},
    # Every row in a bin, no output: MongoDB's count.
    {"groupBy": "$w", "boundaries": [0, 250, 2000]},
    # A column of mixed types: numbers in bins, strings, nulls and missing cells to the default.
    {"groupBy": "$v", "boundaries": [0, 50, 100, 400], "default": -1,
     "output": {"n": {"$count": {}}, "mx": {"$max": "$w"}}},
    # Groupby computed as column arithmetic, and as an expression that is not.
    {"groupBy": {"$multiply": ["$w", 2]}, "boundaries": [0, 300, 900.25, 3000],
     "output": {"s": {"$sum": "$w"}}},
    {"groupBy": {"$cond": [{"$gt": ["$w", 700]}, "$w", 0]}, "boundaries": [0, 1, 1000, 1430],
     "default": "x", "output": {"n": {"$sum": 1}}},
    {"groupBy": {"$ifNull": ["$v", 7]}, "boundaries": [0, 10, 1000], "default": "other"},
    # A bucket constant, dates, and decimal boundaries (compared the general way).
    {"groupBy": "$meta.sensor", "boundaries": [0, 2, 5], "output": {"a": {"$avg": "$w"}}},
    {"groupBy": "$t", "boundaries": [T0, T0 + datetime.timedelta(hours=2),
                                     T0 + datetime.timedelta(hours=9)], "default": "late"},
    {"groupBy": "$w", "boundaries": [bson.Decimal128("0"), bson.Decimal128("700.5"),
                                     bson.Decimal128("1500")]},
]


@pytest.mark.parametrize("match", [{}, MATCHES[2], MATCHES[6]], ids=["all", "time", "ne-range"])
@pytest.mark.parametrize("spec", BUCKETS, ids=[str(i) for i in range(len(BUCKETS))])
def test_bucket_on_blocks_equals_bucket_on_documents(twins, match, spec):
    """$bucket folds column blocks as $group does; by a column of numbers (or arithmetic of
    them) its rows are put in bins by comparing doubles, one key per bin."""
    head = [{"$match": match}] if match else []
    before = blocks_counter(twins)
    blocks = list(twins.ts.aggregate(head + [{"$bucket": spec}]))
    assert blocks_counter(twins) > before
    documents = list(twins.ts.aggregate(head + DOCUMENT_PATH + [{"$bucket": spec}]))
    assert [bson.encode(d) for d in blocks] == [bson.encode(d) for d in documents]
    assert len(blocks) >= 2


def test_bucket_counts_by_hand(db):
    """$bucket's bins on a column of int32s, and doubles with NaN, infinities and -0.0, counted
    here as MongoDB documents them: [lower, upper), NaN below every number, the rest to the
    default; a row in no bin without a default fails with 40066."""
    db.create_collection("tsb", timeseries={"timeField": "t", "metaField": "s"})
    rng = random.Random(11)
    values = []
    for k in range(900):
        s = k % 3
        if s == 0:
            x = rng.randrange(-50, 150) if k % 7 else 65566  # int32 column
        elif s == 1:
            x = rng.choice([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 99.999,
                            100.0, rng.uniform(-10, 110)])
        else:
            x = rng.uniform(0, 100) if k % 5 else None
        doc = {"t": T0 + datetime.timedelta(minutes=k), "s": s}
        if x is not None:
            doc["x"] = x
        values.append((s, x, doc))
    db.tsb.insert_many([doc for _, _, doc in values])
    bounds = [-0.0, 25, 50.5, 100]
    want = {}
    for _, x, _ in values:
        key = "out"
        if x is not None and x == x and bounds[0] <= x < bounds[-1]:
            key = max(b for b in bounds[:-1] if b <= x)
        want[key] = want.get(key, 0) + 1
    got = list(db.tsb.aggregate([{"$bucket": {"groupBy": "$x", "boundaries": bounds,
                                              "default": "out"}}]))
    assert {g["_id"]: g["count"] for g in got} == want
    assert [g["_id"] for g in got][:3] == [-0.0, 25, 50.5]
    with pytest.raises(OperationFailure) as e:
        list(db.tsb.aggregate([{"$bucket": {"groupBy": "$x", "boundaries": [0, 50]}}]))
    assert e.value.code == 40066


def test_date_parts_in_named_zones_across_dst_changes(db):
    """Keys and computed fields of date parts in a named time zone are evaluated once per local
    bin under the offset in force (cut where it changes): across New York's fall-back hour, Lord
    Howe's half-hour change and Paris's spring-forward, they equal each row's own evaluation."""
    db.create_collection("tsz", timeseries={"timeField": "t", "metaField": "s",
                                            "granularity": "minutes"})
    rng = random.Random(13)
    starts = [datetime.datetime(2024, 11, 2, 18, tzinfo=UTC),   # New York: 06:00Z on the 3rd
              datetime.datetime(2024, 4, 6, 3, tzinfo=UTC),     # Lord Howe: 15:00Z on the 6th
              datetime.datetime(2024, 3, 31, 0, tzinfo=UTC)]    # Paris: 01:00Z on the 31st
    docs = []
    for start in starts:
        for k in range(1100):
            docs.append({"t": start + datetime.timedelta(seconds=97 * k + rng.randrange(60)),
                         "s": k % 3, "w": rng.randrange(10000) / 7})
    db.tsz.insert_many(docs)
    parts = [{"$hour": {"date": "$t", "timezone": "America/New_York"}},
             {"$dayOfMonth": {"date": "$t", "timezone": "America/New_York"}},
             {"$minute": {"date": "$t", "timezone": "Australia/Lord_Howe"}},
             {"$dateToString": {"format": "%d %H:%M", "date": "$t", "timezone": "Australia/Lord_Howe"}},
             {"$hour": {"date": "$t", "timezone": "Europe/Paris"}},
             # A local day that began under +01:00 ends at 22:00Z under +02:00, inside the bucket
             # that began at 00:00Z: its bin must end at the change.
             {"$dayOfMonth": {"date": "$t", "timezone": "Europe/Paris"}}]
    for part in parts:
        for pipeline in ([{"$group": {"_id": {"s": "$s", "p": part}, "a": {"$avg": "$w"},
                                      "n": {"$count": {}}, "f": {"$first": "$t"}}}],
                         [{"$set": {"p": part}},
                          {"$group": {"_id": "$p", "mx": {"$max": "$w"}, "l": {"$last": "$t"}}}]):
            before = blocks_counter(db)
            blocks = run(db.tsz, pipeline)
            assert blocks_counter(db) > before
            documents = run(db.tsz, DOCUMENT_PATH + pipeline)
            assert blocks == documents, part
            assert len(blocks) > 3
    # By hand: New York's 01:00 hour happens twice on 2024-11-03 (EDT, then EST), so the rows of
    # both fall in one group of $hour 1 there.
    got = {g["_id"]: g["n"] for g in db.tsz.aggregate([
        {"$match": {"t": {"$gte": starts[0], "$lt": starts[0] + datetime.timedelta(days=1)}}},
        {"$group": {"_id": {"$hour": {"date": "$t", "timezone": "America/New_York"}},
                    "n": {"$count": {}}}}])}
    want = {}
    for d in docs:
        t = d["t"]
        if starts[0] <= t < starts[0] + datetime.timedelta(days=1):
            offset = -4 if t < datetime.datetime(2024, 11, 3, 6, tzinfo=UTC) else -5
            h = (t + datetime.timedelta(hours=offset)).hour
            want[h] = want.get(h, 0) + 1
    assert got == want


def test_bucket_with_repeated_options_on_blocks_equals_documents(twins):
    """A $bucket spec that repeats groupBy or output (valid BSON a client can send): the block
    path keys and folds exactly what the stage parsed (the last groupBy, every output)."""
    from bson.raw_bson import RawBSONDocument

    def element(key, value):
        return bson.encode({key: value})[4:-1]

    def document(*elements):
        body = b"".join(elements)
        return RawBSONDocument((len(body) + 5).to_bytes(4, "little") + body + b"\x00")

    spec = document(element("groupBy", "$v"), element("groupBy", "$w"),
                    element("boundaries", [0, 300, 1500]), element("default", "other"),
                    element("output", {"n": {"$sum": 1}}), element("output", {"a": {"$avg": "$w"}}))
    stage = document(element("$bucket", spec))
    blocks = list(twins.ts.aggregate([stage]))
    documents = list(twins.ts.aggregate(DOCUMENT_PATH + [stage]))
    assert [bson.encode(d) for d in blocks] == [bson.encode(d) for d in documents]
    # By the last groupBy (w: doubles in [0, 1430)), with both outputs.
    assert [d["_id"] for d in blocks] == [0, 300]
    assert all(set(d) == {"_id", "n", "a"} for d in blocks)
