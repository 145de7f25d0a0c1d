"""The last-point family on time-series collections (issue 17): every spelling of "the latest
measurement per series or per key" that the read answers from each series' latest measurements.

Each spelling runs with the rewrites (twice: the first read fills the latest-measurements cache,
the second is served from it) and without them (hourglassTimeseriesRewrites: false: every bucket
unpacked, then the pipeline). The answers must be byte-identical. The data has several series per
key (a key on a subfield of the metaField), series without the subfield, a scalar meta, no meta,
ties on time across series and inside one series, fields missing in the latest measurement,
mixed types and gaps. Where the stages' order leaves a tie open (MongoDB leaves it unspecified),
the spelling breaks it with a unique field after the time key. Explain must show the rewrite
($_internalLastpoint) exactly for the spellings that have its meaning, and a few expected answers
are computed here from the inserted data."""

import datetime

import pytest
from bson.int64 import Int64

from conftest import (aggregate_raw, aggregate_raw_without_rewrites,
                      error_codes_with_and_without_rewrites, set_timeseries_rewrites,
                      timeseries_db)

T0 = datetime.datetime(2025, 6, 1)

METAS = [
    {"host": "a", "dc": "x"},
    {"host": "a", "dc": "y"},  # a second series of host a, same latest time as the first
    {"host": "b", "dc": "x"},
    {"host": "c"},  # no dc
    5,  # a scalar meta: m.host is missing
    None,  # stored without m
]


def at(minutes):
    return T0 + datetime.timedelta(minutes=minutes)


def make_docs():
    docs, n = [], 0
    for i, meta in enumerate(METAS):
        # Series end at different times; the two of host a end together at 300 minutes.
        last = 300 if i < 2 else 200 + 17 * i
        # A gap of 2 hours in the middle: the latest measurements are in later buckets.
        minutes = [m for m in range(0, last + 1, 5) if not 60 <= m < 180]
        for m in minutes:
            d = {"t": at(m), "n": n}
            if meta is not None:
                d["m"] = meta
            if m != last or i % 2 == 0:  # odd series lack v in their latest measurement
                d["v"] = [n, float(n) + 0.5, str(n)][n % 3]
            docs.append(d)
            n += 1
        if i == 2:  # a tie inside one series: two measurements at its latest time
            docs.append({"t": at(last), "m": meta, "n": n, "v": -1})
            n += 1
        if i == 3:  # and one at its third latest time
            docs.append({"t": at(last - 10), "m": meta, "n": n, "v": -2})
            n += 1
    return docs


def late_docs():
    """Measurements that arrive after the others, between their times: buckets of a series
    that overlap in time."""
    docs = []
    for i in (0, 3):
        last = 300 if i < 2 else 200 + 17 * i
        for k, m in enumerate((last - 2.5, last - 12.5, last - 32.5)):
            docs.append({"t": at(m), "m": METAS[i], "n": 10000 + 10 * i + k, "v": k})
    return docs


DOCS = make_docs() + late_docs()


@pytest.fixture(scope="module")
def ts(client):
    d = timeseries_db(client, "tslastpoint", [make_docs(), late_docs()])
    yield d
    set_timeseries_rewrites(client, True)




def explained_stages(db, pipeline):
    exp = db.command({"explain": {"aggregate": "w", "pipeline": pipeline, "cursor": {}},
                      "verbosity": "executionStats"})
    return exp["stages"]


BY_KEY = {"$sort": {"_id": 1}}

# (name, pipeline, whether it is a last-point spelling)
SPELLINGS = [
    ("meta, $first of $$ROOT", [{"$sort": {"m": 1, "t": -1}},
                               {"$group": {"_id": "$m", "last": {"$first": "$$ROOT"}}}], True),
    ("meta descending", [{"$sort": {"m": -1, "t": -1, "n": 1}},
                         {"$group": {"_id": "$m", "last": {"$first": "$$ROOT"}}}], True),
    ("subfield key, tie broken", [{"$sort": {"m.host": 1, "t": -1, "n": 1}},
                                  {"$group": {"_id": "$m.host",
                                              "last": {"$first": "$$ROOT"}}}], True),
    ("time alone", [{"$sort": {"t": -1, "n": -1}},
                    {"$group": {"_id": "$m.host", "v": {"$first": "$v"},
                                "t": {"$first": "$t"}}}], True),
    ("$last after time ascending", [{"$sort": {"t": 1, "n": -1}},
                                    {"$group": {"_id": "$m.host", "v": {"$last": "$v"},
                                                "n": {"$last": "$n"}}}], True),
    ("other subfield sorted first", [{"$sort": {"m.dc": 1, "t": -1}},
                                     {"$group": {"_id": "$m.host", "t": {"$first": "$t"}}}],
     True),
    ("$top", [{"$group": {"_id": "$m.host",
                          "last": {"$top": {"sortBy": {"t": -1, "n": 1},
                                            "output": ["$v", "$n"]}}}}], True),
    ("$bottom and $max of time", [{"$group": {"_id": "$m.host",
                                              "last": {"$bottom": {"sortBy": {"t": 1, "n": -1},
                                                                   "output": "$$ROOT"}},
                                              "mt": {"$max": "$t"}}}], True),
    ("object key", [{"$group": {"_id": {"h": "$m.host", "d": "$m.dc"},
                                "t": {"$top": {"sortBy": {"t": -1}, "output": "$t"}}}}], True),
    ("expression key", [{"$sort": {"m.host": 1, "t": -1, "n": 1}},
                        {"$group": {"_id": {"$toUpper": {"$ifNull": ["$m.host", "none"]}},
                                    "v": {"$first": "$v"}}}], True),
    ("constant key", [{"$sort": {"t": -1, "n": 1}},
                      {"$group": {"_id": None, "n": {"$first": "$n"}}}], True),
    ("expression output", [{"$sort": {"m": 1, "t": -1, "n": 1}},
                           {"$group": {"_id": "$m.dc",
                                       "x": {"$first": {"$concat": [{"$toString": "$n"}, "!"]}},
                                       "mt": {"$max": "$t"}}}], True),
    ("meta filter before", [{"$match": {"m.host": {"$in": ["a", "c"]}}},
                            {"$sort": {"m.host": 1, "t": -1, "n": 1}},
                            {"$group": {"_id": "$m.host", "last": {"$first": "$$ROOT"}}}], True),
    # Lower bounds on time keep a series' latest measurements exactly when they keep any: host
    # b's series (ending at 234 minutes) drops out, the others answer as before.
    ("time lower bound before", [{"$match": {"t": {"$gte": at(250)}}},
                                 {"$sort": {"m": 1, "t": -1, "n": 1}},
                                 {"$group": {"_id": "$m", "n": {"$first": "$n"}}}], True),
    ("meta and time bounds in $and", [{"$match": {"$and": [{"m.host": {"$in": ["a", "b", "c"]}},
                                                           {"t": {"$gt": at(251),
                                                                  "$gte": at(100)}}]}},
                                      {"$sort": {"m.host": 1, "t": -1, "n": 1}},
                                      {"$group": {"_id": "$m.host",
                                                  "last": {"$first": "$$ROOT"}}}], True),
    ("time lower bound, $top", [{"$match": {"t": {"$gt": at(284)}, "m": {"$ne": 5}}},
                                {"$group": {"_id": "$m.host",
                                            "v": {"$top": {"sortBy": {"t": -1, "n": 1},
                                                           "output": "$v"}}}}], True),
    ("time lower bound past every series", [{"$match": {"t": {"$gte": at(301)}}},
                                            {"$sort": {"m": 1, "t": -1}},
                                            {"$group": {"_id": "$m", "t": {"$first": "$t"}}}],
     True),
    # The latest n per key ($firstN/$lastN/$topN/$bottomN with a constant n): the rows among
    # each series' n latest (and the ties at the n-th) hold every answer.
    ("$topN", [{"$group": {"_id": "$m.host",
                           "last": {"$topN": {"n": 3, "sortBy": {"t": -1, "n": 1},
                                              "output": ["$n", "$v"]}}}}], True),
    ("$bottomN of $$ROOT across buckets", [{"$group": {"_id": "$m",
                                                       "last": {"$bottomN": {
                                                           "n": 15,
                                                           "sortBy": {"t": 1, "n": -1},
                                                           "output": "$$ROOT"}}}}], True),
    ("$firstN after $sort", [{"$sort": {"m": 1, "t": -1, "n": 1}},
                             {"$group": {"_id": "$m", "x": {"$firstN": {"n": 4, "input": "$n"}}}}],
     True),
    ("$lastN after time ascending", [{"$sort": {"t": 1, "n": -1}},
                                     {"$group": {"_id": "$m.dc",
                                                 "x": {"$lastN": {"n": 20,
                                                                  "input": "$$ROOT"}}}}], True),
    ("$topN beside $top and $max", [{"$group": {"_id": "$m.host",
                                                "a": {"$top": {"sortBy": {"t": -1, "n": 1},
                                                               "output": "$n"}},
                                                "b": {"$topN": {"n": Int64(2),
                                                                "sortBy": {"t": -1, "n": -1},
                                                                "output": "$v"}},
                                                "mt": {"$max": "$t"}}}], True),
    ("n above every series' count", [{"$sort": {"m": 1, "t": -1, "n": 1}},
                                     {"$group": {"_id": "$m",
                                                 "x": {"$firstN": {"n": 1000, "input": "$n"}}}}],
     True),
    ("$topN under a time lower bound", [{"$match": {"t": {"$gte": at(270)}}},
                                        {"$sort": {"m": 1, "t": -1, "n": 1}},
                                        {"$group": {"_id": "$m.host",
                                                    "x": {"$firstN": {"n": 6,
                                                                      "input": "$n"}}}}], True),
    ("meta filter matching nothing", [{"$match": {"m.host": "zzz"}},
                                      {"$sort": {"m": 1, "t": -1}},
                                      {"$group": {"_id": "$m", "t": {"$first": "$t"}}}], True),
    # Not last-point spellings: the same answers, read the usual way.
    ("earliest", [{"$sort": {"m": 1, "t": 1, "n": 1}},
                  {"$group": {"_id": "$m", "first": {"$first": "$$ROOT"}}}], False),
    ("$last after time descending", [{"$sort": {"m.host": 1, "t": -1, "n": 1}},
                                     {"$group": {"_id": "$m.host", "n": {"$last": "$n"}}}], False),
    ("key on a measurement field", [{"$sort": {"t": -1, "n": 1}},
                                    {"$group": {"_id": "$v", "t": {"$first": "$t"}}}], False),
    ("sorted first by a measurement field", [{"$sort": {"v": 1, "t": -1}},
                                             {"$group": {"_id": "$m.host",
                                                         "n": {"$first": "$n"}}}], False),
    ("a count beside", [{"$sort": {"m": 1, "t": -1}},
                        {"$group": {"_id": "$m", "t": {"$first": "$t"}, "c": {"$sum": 1}}}],
     False),
    ("$top of the earliest", [{"$group": {"_id": "$m.host",
                                          "x": {"$top": {"sortBy": {"t": 1, "n": 1},
                                                         "output": "$n"}}}}], False),
    ("a variable in the key", [{"$sort": {"t": -1, "n": 1}},
                               {"$group": {"_id": "$$ROOT.m", "n": {"$first": "$n"}}}], False),
    ("time filter before", [{"$match": {"t": {"$lt": at(250)}}},
                            {"$sort": {"m": 1, "t": -1, "n": 1}},
                            {"$group": {"_id": "$m", "n": {"$first": "$n"}}}], False),
    ("time bounded from both sides", [{"$match": {"t": {"$gte": at(100), "$lt": at(290)}}},
                                      {"$sort": {"m": 1, "t": -1, "n": 1}},
                                      {"$group": {"_id": "$m", "n": {"$first": "$n"}}}], False),
    ("time equal to", [{"$match": {"t": at(300)}},
                       {"$sort": {"m": 1, "t": -1, "n": 1}},
                       {"$group": {"_id": "$m", "n": {"$first": "$n"}}}], False),
    ("$firstN without a $sort", [{"$group": {"_id": "$m",
                                             "x": {"$firstN": {"n": 2, "input": "$n"}}}}], False),
    ("$topN of the earliest", [{"$group": {"_id": "$m.host",
                                           "x": {"$topN": {"n": 2, "sortBy": {"t": 1},
                                                           "output": "$n"}}}}], False),
    ("$topN with n an expression", [{"$group": {"_id": "$m.host",
                                                "x": {"$topN": {"n": {"$literal": 2},
                                                                "sortBy": {"t": -1, "n": 1},
                                                                "output": "$n"}}}}], False),
    ("a measurement field filtered", [{"$match": {"t": {"$gte": at(250)}, "n": {"$gte": 0}}},
                                      {"$sort": {"m": 1, "t": -1, "n": 1}},
                                      {"$group": {"_id": "$m", "n": {"$first": "$n"}}}], False),
]


def passes(d, match):
    """Whether measurement d passes `match`, for the filters the spellings above use."""
    for field, test in match.items():
        if field == "$and":
            if not all(passes(d, m) for m in test):
                return False
            continue
        value = host_of(d) if field == "m.host" else d.get(field, "<missing>")
        ops = test if isinstance(test, dict) else {"$eq": test}
        for op, arg in ops.items():
            ok = {"$eq": lambda: value == arg, "$ne": lambda: value != arg,
                  "$in": lambda: value in arg,
                  "$gt": lambda: value != "<missing>" and value > arg,
                  "$gte": lambda: value != "<missing>" and value >= arg}[op]()
            if not ok:
                return False
    return True


@pytest.mark.parametrize("name,pipeline,rewritten", SPELLINGS, ids=[s[0] for s in SPELLINGS])
def test_spelling_answers_as_without_rewrites(client, ts, name, pipeline, rewritten):
    full = pipeline + [BY_KEY]
    want = aggregate_raw_without_rewrites(client, ts, full)
    assert aggregate_raw(ts, full) == want, name  # may fill the cache
    assert aggregate_raw(ts, full) == want, name  # may be served from it
    stages = explained_stages(ts, full)
    lastpoint = [s for s in stages if "$_internalLastpoint" in s]
    assert bool(lastpoint) == rewritten, [next(iter(s)) for s in stages]
    if rewritten and any("$sort" in st for st in pipeline):
        # Only the measurements among each series' n latest (with the ties at the n-th) reach
        # the pattern's $sort.
        first_stage = next(s for s in stages if "$sort" in s)
        n = picks(pipeline)
        times = {}
        for d in DOCS:
            times.setdefault(repr(d.get("m", "<missing>")), []).append(d["t"])
        nth = {k: sorted(v, reverse=True)[:n][-1] for k, v in times.items()}
        match = pipeline[0].get("$match", {})
        among = sum(1 for d in DOCS if d["t"] >= nth[repr(d.get("m", "<missing>"))]
                    and passes(d, match))
        assert first_stage["nReturned"] == among


def picks(pipeline):
    """The most latest measurements per series an accumulator of the pipeline's $group picks."""
    group = next(st["$group"] for st in pipeline if "$group" in st)
    return max([int(acc.get("n", 1)) if isinstance(acc, dict) else 1
                for spec in group.values() if isinstance(spec, dict)
                for acc in spec.values()] + [1])


def host_of(d):
    return d["m"].get("host") if isinstance(d.get("m"), dict) else None


def test_latest_across_series_of_one_key(client, ts):
    """Host a has two series (dc x and y) ending at the same time; host b's latest measurement
    is tied inside its series. Computed from the data, not from the server."""
    got = list(ts.w.aggregate([
        {"$sort": {"m.host": 1, "t": -1, "n": -1}},
        {"$group": {"_id": "$m.host", "t": {"$first": "$t"}, "n": {"$first": "$n"}}},
        BY_KEY]))
    want = {}
    for d in DOCS:
        host = host_of(d)
        best = want.get(host)
        if best is None or (d["t"], d["n"]) > (best["t"], best["n"]):
            want[host] = {"_id": host, "t": d["t"], "n": d["n"]}
    assert got == [want[k] for k in sorted(want, key=lambda h: (h is not None, h))]
    assert want["a"]["t"] == at(300)


def test_explain_names_the_order_and_key_on_buckets(ts):
    stages = explained_stages(ts, [{"$sort": {"m.host": -1, "t": -1}},
                                   {"$group": {"_id": {"h": "$m.host"},
                                               "v": {"$first": "$v"}}}])
    spec = next(s for s in stages if "$_internalLastpoint" in s)["$_internalLastpoint"]
    assert spec["sortBy"] == {"meta.host": -1, "control.max.t": -1}
    assert spec["groupBy"] == {"h": "$meta.host"}


def test_new_measurements_move_the_answer(client, ts, db):
    """The cache and the buckets agree after writes: a newer measurement of one series, then
    one of a series that did not exist."""
    db.create_collection("w2", timeseries={"timeField": "t", "metaField": "m"})
    db.w2.insert_many([{"t": at(i), "m": {"host": h}, "n": i} for i in range(10) for h in "pq"])
    pipeline = [{"$group": {"_id": "$m.host",
                            "n": {"$top": {"sortBy": {"t": -1}, "output": "$n"}}}}, BY_KEY]
    assert list(db.w2.aggregate(pipeline)) == [{"_id": "p", "n": 9}, {"_id": "q", "n": 9}]
    db.w2.insert_one({"t": at(50), "m": {"host": "q", "rack": 2}, "n": 50})
    db.w2.insert_one({"t": at(40), "m": {"host": "r"}, "n": 40})
    assert list(db.w2.aggregate(pipeline)) == [
        {"_id": "p", "n": 9}, {"_id": "q", "n": 50}, {"_id": "r", "n": 40}]


def test_time_lower_bound_from_the_cache_and_from_buckets(client, db):
    """A last-point read under a lower bound on time reads every series' latest measurements
    (filling the cache with them), then serves those that pass the bound; the next read is served
    from the cache. The answer is computed here from the data; explain shows the bound."""
    db.create_collection("w3", timeseries={"timeField": "t", "metaField": "m"})
    # Host h<i> ends at minute 10 * i.
    db.w3.insert_many([{"t": at(m), "m": {"host": f"h{i}"}, "n": 100 * i + m}
                       for i in range(1, 6) for m in range(0, 10 * i + 1, 5)])

    def pipeline(since):
        return [{"$match": {"t": {"$gte": at(since)}}},
                {"$sort": {"m": 1, "t": -1}},
                {"$group": {"_id": "$m.host", "last": {"$first": "$$ROOT"}}},
                BY_KEY]

    def run(since):
        exp = db.command({"explain": {"aggregate": "w3", "pipeline": pipeline(since),
                                      "cursor": {}},
                          "verbosity": "executionStats"})
        stage = next(s for s in exp["stages"] if "$_internalLastpoint" in s)
        got = [(d["_id"], d["last"]["n"], d["last"]["t"])
               for d in db.w3.aggregate(pipeline(since))]
        return got, stage

    def want(since):
        return [(f"h{i}", 110 * i, at(10 * i)) for i in range(1, 6) if 10 * i >= since]

    got, stage = run(30)
    assert got == want(30)
    assert stage["latestCache"] == "filled"
    assert stage["$_internalLastpoint"]["timeFilter"] == {"t": {"$gte": at(30)}}
    got, stage = run(30)
    assert got == want(30)
    assert stage["latestCache"] == "hit"
    # The same cache answers another bound, and one past every series.
    assert run(45)[0] == want(45)
    assert run(51)[0] == []
    # With a test of the metaField beside the bound, the series it names.
    got = list(db.w3.aggregate([{"$match": {"t": {"$gt": at(20)}, "m.host": {"$in": ["h1", "h4"]}}},
                                {"$group": {"_id": "$m.host",
                                            "n": {"$top": {"sortBy": {"t": -1},
                                                           "output": "$n"}}}}]))
    assert got == [{"_id": "h4", "n": 440}]


@pytest.mark.parametrize("n", [0, -1, 2.5, "3", None])
def test_a_bad_n_fails_as_without_rewrites(client, ts, n):
    """An n the accumulators refuse keeps the usual read, which reports their error."""
    for pipeline in ([{"$group": {"_id": "$m", "x": {"$topN": {
                         "n": n, "sortBy": {"t": -1}, "output": "$n"}}}}],
                     [{"$sort": {"m": 1, "t": -1}},
                      {"$group": {"_id": "$m", "x": {"$firstN": {"n": n, "input": "$n"}}}}]):
        on, off = error_codes_with_and_without_rewrites(client, ts, pipeline)
        assert on == off, pipeline


# Series of one to twenty buckets, and series of at most eight (read by the walk alone).
@pytest.mark.parametrize("buckets", [[1, 3, 8, 9, 20, 2, 1, 12, 4, 2, 7, 1],
                                     [1, 3, 8, 2, 5, 2, 1, 4, 6, 2, 7, 1]],
                         ids=["few-and-many", "few"])
def test_latest_n_over_series_of_few_and_many_buckets(client, db, buckets):
    """The latest N per series, read from each series' newest buckets back: series of one to
    twenty buckets side by side, or of at most eight (a read that walks the index holds up to
    eight entries of a series; one of more, and every series after it, is read back from a
    seek), buckets that overlap in time, a series whose measurements were all deleted, and meta filters that skip series between others (the index orders the metas by
    g, then s: {g: 1} skips a block after a short series). Computed here from the
    data, and the same without the rewrites; each read twice (the first walks the index, the
    second the series the first listed)."""
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m",
                                           "granularity": "seconds"})
    docs, n = [], 0
    # Buckets per series (each hour of a series is a bucket of its own: maxSpan is one hour).
    for s, count in enumerate(buckets):
        for h in range(count):
            for k in range(3):
                docs.append({"t": at(60 * h * 2 + 7 * k), "m": {"s": s, "g": s % 3}, "n": n})
                n += 1
        if s % 4 == 1:
            # Late rows: a bucket of their own, older than the series' newest, newer than others.
            for k in range(2):
                docs.append({"t": at(60 * (count - 1) * 2 - 30 + k), "m": {"s": s, "g": s % 3},
                             "n": n})
                n += 1
    db.w.insert_many(docs[::2])
    db.w.insert_many(docs[1::2])
    db.w.delete_many({"m.s": 6})
    docs = [d for d in docs if d["m"]["s"] != 6]

    def latest(match, count):
        want = {}
        for d in docs:
            if match(d["m"]):
                want.setdefault(d["m"]["s"], []).append((d["t"], d["n"]))
        return [{"_id": s, "last": [{"t": t, "n": x} for t, x in
                                    sorted(v, key=lambda p: (p[0], p[1]), reverse=True)[:count]]}
                for s, v in sorted(want.items())]

    for count in (1, 3, 5):
        for meta_filter, match in (({}, lambda m: True),
                                   ({"m.g": {"$ne": 1}}, lambda m: m["g"] != 1),
                                   ({"m.s": {"$in": [2, 3, 4, 11]}},
                                    lambda m: m["s"] in (2, 3, 4, 11))):
            pipeline = ([{"$match": meta_filter}] if meta_filter else []) + [
                {"$group": {"_id": "$m.s", "last": {"$topN": {
                    "n": count, "sortBy": {"t": -1}, "output": {"t": "$t", "n": "$n"}}}}},
                {"$sort": {"_id": 1}}]
            want = latest(match, count)
            assert len(want) == sum(1 for s in range(12) if s != 6 and match({"s": s, "g": s % 3}))
            for _ in range(2):
                assert list(db.w.aggregate(pipeline)) == want, (count, meta_filter)
            assert aggregate_raw(db, pipeline) == aggregate_raw_without_rewrites(
                client, db, pipeline)
            assert any("$_internalLastpoint" in st for st in explained_stages(db, pipeline))
