"""The newest time bins (issue 17's order and limit pushdown): $group by a $dateTrunc of the time
field, $sort {_id: -1}, $limit N reads a window of the newest times and widens it until the N
bins are settled. Every pipeline here must answer byte for byte as without the rewrites
(hourglassTimeseriesRewrites: false: every bucket unpacked, then the stages), including
order-dependent accumulators ($push, $first), filters on meta and on values, bins in a time
zone, gaps in the data that make the window widen, and windows that never settle. serverStatus's
hourglass.timeseries.newestBinsWindowReads says when a window settled the answer."""

import datetime

import pytest

from conftest import aggregate_raw, aggregate_raw_without_rewrites, set_timeseries_rewrites

T0 = datetime.datetime(2025, 3, 1)
END = T0 + datetime.timedelta(hours=6)


def at(minutes=0, seconds=0):
    return T0 + datetime.timedelta(minutes=minutes, seconds=seconds)


def make_docs():
    docs, n = [], 0
    for s in range(0, 6 * 3600, 10):
        minute = s // 60
        if 200 <= minute < 260:  # an hour with nothing: windows must widen over it
            continue
        if minute < 120 and s % 300:  # sparse early data: a reading every 5 minutes
            continue
        for host in ("a", "b", "c"):
            if host == "c" and minute >= 300:  # c stops an hour before the end
                continue
            docs.append({"t": at(seconds=s), "m": {"host": host}, "v": (n * 37) % 101 - 3,
                         "n": n})
            n += 1
    return docs


DOCS = make_docs()


@pytest.fixture(scope="module")
def ts(client):
    d = client["tsnewestbins"]
    client.drop_database("tsnewestbins")
    d.create_collection("w", timeseries={"timeField": "t", "metaField": "m",
                                         "granularity": "seconds"})
    d.w.insert_many([dict(x) for x in DOCS], ordered=False)
    yield d
    set_timeseries_rewrites(client, True)



def windows(client):
    return client.admin.command("serverStatus")["hourglass"]["timeseries"][
        "newestBinsWindowReads"]



def by_minute(extra=None, unit="minute", **args):
    trunc = {"date": "$t", "unit": unit, **args}
    group = {"_id": {"$dateTrunc": trunc}, "hi": {"$max": "$v"}}
    group.update(extra or {})
    return {"$group": group}


def newest(n, match=None, group=None, after=()):
    stages = [] if match is None else [{"$match": match}]
    return stages + [group or by_minute(), {"$sort": {"_id": -1}}, {"$limit": n}] + list(after)


# (name, pipeline, whether a window settles it)
CASES = [
    ("TSBS groupby-orderby-limit", newest(5, {"t": {"$lt": at(330, 7)}}), True),
    ("no upper bound", newest(5), True),
    ("end inside the gap", newest(5, {"t": {"$lt": at(230)}}), True),
    ("order-dependent accumulators", newest(4, {"t": {"$lt": at(100)}}, by_minute(
        {"all": {"$push": "$n"}, "first": {"$first": "$n"}, "last": {"$last": "$v"},
         "avg": {"$avg": "$v"}})), True),
    ("meta and value filter", newest(6, {"m.host": {"$in": ["a", "c"]}, "v": {"$gt": 40},
                                         "t": {"$lt": at(320)}}), True),
    ("bins of 7 minutes in a time zone", newest(3, None, by_minute(
        binSize=7, timezone="America/New_York")), True),
    ("hours", newest(1, {"t": {"$gte": at(30)}}, by_minute(unit="hour")), True),
    ("hours, a window past half the data", newest(2, {"t": {"$gte": at(30)}},
                                                  by_minute(unit="hour")), False),
    ("stages after the limit", newest(3, None, None, [{"$project": {"hi": 1, "x": {
        "$toString": "$_id"}}}]), True),
    ("more bins than the data has", newest(100000, {"t": {"$lt": at(20)}}), False),
    ("before the data", newest(5, {"t": {"$lt": T0}}), False),
    ("window reaches the lower bound", newest(30, {"t": {"$gte": at(190), "$lt": at(270)}}),
     False),
    # Not the pattern: the same answers the usual way.
    ("ascending", [by_minute(), {"$sort": {"_id": 1}}, {"$limit": 5}], False),
    ("key of meta and time", [{"$group": {"_id": {"h": "$m.host", "b": {"$dateTrunc": {
        "date": "$t", "unit": "minute"}}}, "n": {"$sum": 1}}}, {"$sort": {"_id": -1}},
        {"$limit": 5}], False),
    ("unit from a field", [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "$u"}},
                                       "n": {"$sum": 1}}}, {"$sort": {"_id": -1}},
                           {"$limit": 5}], False),
]


@pytest.mark.parametrize("name,pipeline,settles", CASES, ids=[c[0] for c in CASES])
def test_answers_as_without_rewrites(client, ts, name, pipeline, settles):
    want = aggregate_raw_without_rewrites(client, ts, pipeline)
    before = windows(client)
    assert aggregate_raw(ts, pipeline) == want, name
    assert (windows(client) - before == 1) == settles


def test_newest_minutes_computed_from_the_data(ts):
    end = at(330, 7)
    got = list(ts.w.aggregate(newest(5, {"t": {"$lt": end}})))
    want = {}
    for d in DOCS:
        if d["t"] < end:
            m = d["t"].replace(second=0)
            want[m] = max(want.get(m, d["v"]), d["v"])
    newest_five = sorted(want, reverse=True)[:5]
    assert got == [{"_id": m, "hi": want[m]} for m in newest_five]
    # Over the gap: the bins before it are the next newest.
    got = list(ts.w.aggregate(newest(3, {"t": {"$lt": at(262)}})))
    assert [g["_id"] for g in got] == [at(261), at(260), at(199)]


def test_new_measurements_move_the_newest_bins(client, db):
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    db.w.insert_many([{"t": at(i), "m": 1, "v": i} for i in range(0, 120, 2)])
    pipeline = newest(2)
    assert [g["_id"] for g in db.w.aggregate(pipeline)] == [at(118), at(116)]
    db.w.insert_one({"t": at(500), "m": 2, "v": -1})
    assert list(db.w.aggregate(pipeline)) == [{"_id": at(500), "hi": -1},
                                              {"_id": at(118), "hi": 118}]


NOT_THE_PATTERN = {"ascending", "key of meta and time", "unit from a field"}


def explain(db, pipeline, verbosity="executionStats"):
    return db.command({"explain": {"aggregate": "w", "pipeline": pipeline, "cursor": {}},
                       "verbosity": verbosity})["stages"]


@pytest.mark.parametrize("name,pipeline,settles", CASES, ids=[c[0] for c in CASES])
def test_explain_shows_the_window_the_read_settled_in(client, ts, name, pipeline, settles):
    """Explain names the newest-bins read ($_internalNewestBins) and, run, the window it settled
    in; the stages below it are those of the read over that window, so they unpack fewer
    measurements than there are, and return what the read returns."""
    stages = explain(ts, pipeline)
    entry = [s["$_internalNewestBins"] for s in stages if "$_internalNewestBins" in s]
    if name in NOT_THE_PATTERN:
        assert entry == []
        return
    assert len(entry) == 1
    spec = entry[0]
    limit = next(s["$limit"] for s in pipeline if "$limit" in s)
    assert spec["limit"] == limit
    assert spec["windowsRead"] >= (1 if settles else 0)
    want = list(ts.w.aggregate(pipeline))
    last = stages[-1]
    assert last["nReturned"] == len(want)
    # Unpacked by $_internalUnpackBucket, or by $_internalGroupFromControl for what control
    # cannot answer.
    unpacked = next(s["measurementsUnpacked"] for s in stages if "measurementsUnpacked" in s)
    if settles:
        window = spec["window"]
        assert window["from"] < window["to"]
        # The groups all lie in the window, and the read over it unpacked only part of the data.
        assert all(g["_id"] >= window["from"] - datetime.timedelta(hours=1) for g in want)
        assert unpacked < len(DOCS)
        assert stages[0]["$cursor"]["executionStats"]["totalDocsExamined"] < len(
            list(ts["system.buckets.w"].find({}, {"_id": 1})))
    else:
        assert spec["window"] == "none: every time"


def test_explain_without_running_names_the_first_window(ts):
    stages = explain(ts, newest(5), "queryPlanner")
    spec = next(s["$_internalNewestBins"] for s in stages if "$_internalNewestBins" in s)
    # Six one-minute bins: the first window, widened until it settles when run.
    assert spec == {"limit": 5, "firstWindowMillis": 6 * 60 * 1000}
