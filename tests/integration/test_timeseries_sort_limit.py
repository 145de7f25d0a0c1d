"""The first N measurements in time order on a time-series collection, across every series:
find().sort({t: -1}).limit(N), $sort then $limit (after any $skip), in both directions.

The read sorts buckets by their bounds (the bounded sort) and, knowing only N are wanted, skips
the buckets and measurements that cannot be among the first N and stops once no bucket left can
hold one. Every spelling here must answer byte for byte as without the rewrites
(hourglassTimeseriesRewrites: false: every bucket unpacked, then the stages), on data with many
series reporting at the same instants (ties across buckets), ties inside a series, buckets that
overlap in time (late measurements), a filter on a measurement field and limits past the data;
and the read must unpack fewer measurements than there are."""

import datetime

import pytest

from conftest import (aggregate_raw, aggregate_raw_without_rewrites,
                      error_codes_with_and_without_rewrites, set_timeseries_rewrites,
                      timeseries_db)

T0 = datetime.datetime(2025, 5, 1)


def at(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def make_docs():
    docs, n = [], 0
    for host in range(40):
        # Every host reports at the same instants; each stops at its own time.
        last = 300 - 3 * (host % 7)
        for m in range(0, last + 1, 2):
            docs.append({"t": at(m), "m": {"host": f"h{host}"}, "n": n, "v": (n * 31) % 97})
            n += 1
        if host % 5 == 0:  # a tie inside the series at its latest time
            docs.append({"t": at(last), "m": {"host": f"h{host}"}, "n": n, "v": -1})
            n += 1
    return docs


def late_docs():
    """Arriving after the rest, between their times: buckets of a series overlap."""
    return [{"t": at(m + 0.5), "m": {"host": "h3"}, "n": 100000 + m, "v": 1}
            for m in (299, 250, 1, 0)]


DOCS = make_docs() + late_docs()


@pytest.fixture(scope="module")
def ts(client):
    d = timeseries_db(client, "tssortlimit", [make_docs(), late_docs()])
    yield d
    set_timeseries_rewrites(client, True)


def sort_limit(direction, limit, skip=None, match=None, tie=None):
    stages = [] if match is None else [{"$match": match}]
    key = {"t": direction}
    if tie:
        key[tie] = 1
    stages.append({"$sort": key})
    if skip is not None:
        stages.append({"$skip": skip})
    return stages + [{"$limit": limit}]


CASES = [
    ("newest one", sort_limit(-1, 1)),
    ("newest 7", sort_limit(-1, 7)),
    ("newest 50, many tied", sort_limit(-1, 50)),
    ("oldest 3", sort_limit(1, 3)),
    ("oldest 100", sort_limit(1, 100)),
    ("skip then limit", sort_limit(-1, 5, skip=37)),
    ("limit past the data", sort_limit(-1, 100000)),
    ("a measurement filter", sort_limit(-1, 9, match={"v": {"$gt": 60}})),
    ("a meta filter", sort_limit(1, 4, match={"m.host": {"$in": ["h3", "h9"]}})),
    ("a time bound", sort_limit(-1, 6, match={"t": {"$lt": at(151)}})),
    ("a limit as a double", [{"$sort": {"t": -1}}, {"$limit": 3.0}]),
    ("then a projection", sort_limit(-1, 4) + [{"$project": {"_id": 0, "n": 1, "t": 1}}]),
]


@pytest.mark.parametrize("name,pipeline", CASES, ids=[c[0] for c in CASES])
def test_answers_as_without_rewrites(client, ts, name, pipeline):
    want = aggregate_raw_without_rewrites(client, ts, pipeline)
    assert aggregate_raw(ts, pipeline) == want, name


def test_find_sort_limit_from_the_data(ts):
    """The answers computed here: times and counts (which of the tied measurements comes first is
    left open, as MongoDB leaves it)."""
    newest = list(ts.w.find({}, {"_id": 0, "t": 1}).sort("t", -1).limit(12))
    assert [d["t"] for d in newest] == sorted((d["t"] for d in DOCS), reverse=True)[:12]
    oldest = list(ts.w.find({"v": {"$lt": 10}}, {"_id": 0, "t": 1}).sort("t", 1).skip(3).limit(8))
    assert [d["t"] for d in oldest] == sorted(d["t"] for d in DOCS if d["v"] < 10)[3:11]


def test_reads_only_what_can_be_among_the_first(ts):
    exp = ts.command({"explain": {"aggregate": "w", "pipeline": sort_limit(-1, 1), "cursor": {}},
                      "verbosity": "executionStats"})
    unpack = next(s for s in exp["stages"] if "$_internalUnpackBucket" in s)
    # The newest instant holds one measurement of each host that reports until then (6 of 40),
    # and a tie: far fewer than the collection.
    assert 0 < unpack["nReturned"] < len(DOCS) // 10


@pytest.mark.parametrize("stages", [[{"$limit": 2.5}], [{"$limit": 0}], [{"$limit": -3}],
                                    [{"$skip": -1}, {"$limit": 3}], [{"$limit": "4"}]],
                         ids=["fractional limit", "zero limit", "negative limit",
                              "negative skip", "string limit"])
def test_bad_counts_fail_as_without_rewrites(client, ts, stages):
    """A $limit or $skip the stages refuse is refused with the same code, rewrites or not."""
    on, off = error_codes_with_and_without_rewrites(client, ts, [{"$sort": {"t": -1}}] + stages)
    assert on == off
