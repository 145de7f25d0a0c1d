"""$setWindowFields on time-series collections sorted by time and partitioned by an expression of
the metaField (or not partitioned): the read delivers the measurements partition by partition,
each in time order (the bounded sort), and the stage windows them without sorting them again.

Every pipeline here must answer byte for byte as without the rewrites
(hourglassTimeseriesRewrites: false: every bucket unpacked, then the stage sorts), on data whose
metaField values are of several types (objects, strings, numbers of three types that are one
partition, null and missing, which are one partition too), with ties on time inside a series,
buckets that overlap in time (late measurements) and gaps. Explain shows the series order on
the bounded sort."""

import datetime

import pytest
from bson.int64 import Int64

from conftest import (aggregate_raw, aggregate_raw_without_rewrites,
                      error_codes_with_and_without_rewrites, set_timeseries_rewrites,
                      timeseries_db)

T0 = datetime.datetime(2025, 7, 1)

METAS = [{"host": "b"}, {"host": "a", "dc": 2}, {"host": "a"}, "s1", "s0", 1, 1.0, Int64(1), 2,
         None, "<missing>"]


def at(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def make_docs():
    docs, n = [], 0
    for i, meta in enumerate(METAS):
        for m in range(0, 200 + 7 * i, 3 + i % 3):
            if 70 <= m < 130 and i % 2:  # a gap of an hour in every other series
                continue
            d = {"t": at(m), "n": n, "v": (n * 13) % 29}
            if meta != "<missing>":
                d["m"] = meta
            if n % 11 == 0:
                del d["v"]
            docs.append(d)
            n += 1
            if m % 40 == 0:  # a tie on time inside the series
                docs.append(dict(d, n=n, v=-n))
                n += 1
    return docs


def late_docs():
    """Arriving after the rest, between their times: buckets of a series overlap."""
    docs = []
    for i in (0, 3, 5, 9):
        for k, m in enumerate((5.5, 61.5, 150.5)):
            d = {"t": at(m), "n": 50000 + 10 * i + k, "v": k}
            if METAS[i] != "<missing>":
                d["m"] = METAS[i]
            docs.append(d)
    return docs


DOCS = make_docs() + late_docs()


@pytest.fixture(scope="module")
def ts(client):
    d = timeseries_db(client, "tswindow", [make_docs(), late_docs()])
    yield d
    set_timeseries_rewrites(client, True)


def window(output, partition="$m", match=None, sort=None, after=()):
    spec = {"sortBy": sort or {"t": 1}, "output": output}
    if partition is not None:
        spec["partitionBy"] = partition
    stages = [] if match is None else [{"$match": match}]
    return stages + [{"$setWindowFields": spec}] + list(after)


MOVING = {"s": {"$sum": "$v", "window": {"documents": [-2, 0]}}}
# (name, pipeline, whether the read is in series order)
CASES = [
    ("moving sum by documents", window(MOVING), True),
    ("several functions", window({
        "rank": {"$documentNumber": {}},
        "prev": {"$shift": {"output": "$n", "by": -1, "default": "none"}},
        "locf": {"$locf": "$v"},
        "ema": {"$expMovingAvg": {"input": "$v", "N": 3}},
        "first": {"$first": "$n", "window": {"documents": ["unbounded", "current"]}},
        "hour": {"$avg": "$v", "window": {"range": [-60, 0], "unit": "minute"}},
        "rate": {"$derivative": {"input": "$n", "unit": "minute"},
                 "window": {"documents": [-1, 0]}},
    }), True),
    ("whole partition", window({"n": {"$count": {}}, "hi": {"$max": "$v"}}), True),
    ("a meta filter", window(MOVING, match={"m.host": "a"}), True),
    ("a time range and a value filter", window(MOVING, match={
        "t": {"$gte": at(50), "$lt": at(160)}, "v": {"$gt": 3}}), True),
    ("stages after", window(MOVING, after=[{"$project": {"_id": 0, "n": 1, "s": 1}},
                                           {"$match": {"s": {"$gt": 20}}}]), True),
    ("no partition", window(MOVING, partition=None), False),
    # Partitions that are expressions of the metaField: several series may share one (in time
    # order across them), and their order is the values', not the series index's.
    ("partition by a subfield", window(MOVING, partition="$m.host"), True),
    ("partition by an object of subfields", window(MOVING, partition={
        "d": "$m.dc", "h": "$m.host"}), True),
    ("partition by an expression", window(MOVING, partition={
        "$toUpper": {"$ifNull": ["$m.host", {"$toString": "$m"}]}}), True),
    ("a constant partition", window(MOVING, partition="all"), True),
    # Not the shape: the stage sorts, the answer is the same.
    ("partition by a measurement field", window(MOVING, partition="$v"), False),
    ("descending time", window(MOVING, sort={"t": -1}), False),
    ("time then a tie-breaker", window(MOVING, sort={"t": 1, "n": 1}), False),
]


@pytest.mark.parametrize("name,pipeline,series_order", CASES, ids=[c[0] for c in CASES])
def test_answers_as_without_rewrites(client, ts, name, pipeline, series_order):
    want = aggregate_raw_without_rewrites(client, ts, pipeline)
    got = aggregate_raw(ts, pipeline)
    assert len(got) == len(want), name
    assert got == want, name
    exp = ts.command({"explain": {"aggregate": "w", "pipeline": pipeline, "cursor": {}},
                      "verbosity": "executionStats"})
    sort = [s["$_internalBoundedSort"] for s in exp["stages"] if "$_internalBoundedSort" in s]
    assert bool(sort and sort[0].get("seriesOrder")) == series_order, exp["stages"]
    assert exp["stages"][-1]["nReturned"] == len(want)


def test_moving_sum_from_the_data(ts):
    """The answer for one series computed here: the sum of v over each measurement and the two
    before it in time (ties in arrival order)."""
    got = list(ts.w.aggregate(window(MOVING, match={"m": "s0"}) + [
        {"$project": {"_id": 0, "n": 1, "s": 1}}]))
    rows = sorted((d for d in DOCS if d.get("m") == "s0"), key=lambda d: (d["t"], d["n"]))
    want = [{"n": d["n"], "s": sum(r.get("v", 0) for r in rows[max(0, i - 2):i + 1])}
            for i, d in enumerate(rows)]
    assert got == want


def test_numbers_and_nulls_are_one_partition_each(ts):
    """1, 1.0 and NumberLong(1) are one partition, as null and a missing metaField are: their
    measurements are counted together, in time order across the series."""
    got = {repr(d["_id"]): d["n"] for d in ts.w.aggregate(window(
        {"c": {"$count": {}}}) + [{"$group": {"_id": "$m", "n": {"$max": "$c"}}}])}
    ones = sum(1 for d in DOCS if d.get("m", "x") == 1)
    nulls = sum(1 for d in DOCS if d.get("m") is None)
    assert got["1"] == ones or got["1.0"] == ones or got["Int64(1)"] == ones
    assert got["None"] == nulls


def test_an_array_partition_fails_as_without_rewrites(client, db):
    """partitionBy must not give an array (5722400), whichever way the read delivers the rows."""
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    db.w.insert_many([{"t": at(i), "m": m, "v": i} for i in range(5) for m in ("a", [1, 2])])
    assert error_codes_with_and_without_rewrites(client, db, window(MOVING)) == [5722400, 5722400]
