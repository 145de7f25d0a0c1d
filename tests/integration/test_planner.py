"""The multi-planner, $indexStats, covered plans (PROJECTION_COVERED, COUNT_SCAN) and the find
options min/max/returnKey/showRecordId on regular collections. Expected values follow MongoDB
7.0's documented behavior; plans are observed through explain."""

import random

import pytest
from bson.son import SON

from conftest import command_error
from test_explain import explain, find_explain, stages

N = 50_000


@pytest.fixture(scope="module")
def two(client):
    """{b: 1} on every document, {a: i} unique values; b_1 is created first so that the rule
    order (creation order among equal rules) prefers it: only the trial can pick a_1."""
    db = client["planner_two"]
    db.drop_collection("c")
    coll = db.c
    for start in range(0, N, 10_000):
        coll.insert_many(
            [{"_id": i, "a": i, "b": 1, "c": i % 10, "s": "s%05d" % i} for i in range(start, start + 10_000)],
            ordered=False,
        )
    coll.create_index("b")
    coll.create_index("a")
    coll.create_index("c")
    yield coll


def index_name(plan):
    while plan["stage"] != "IXSCAN":
        plan = plan["inputStage"]
    return plan["indexName"]


# ---------------------------------------------------------------- multi-planner

# (filter, expected winning index, expected rejected indexes, keys the winner examines or None)
TRIAL_CASES = [
    ({"a": 7, "b": 1}, "a_1", {"b_1"}, 1),
    ({"b": 1, "a": {"$gte": 100, "$lt": 103}}, "a_1", {"b_1"}, 3),
    ({"b": 1, "c": 3, "a": {"$in": [5, 6, 13]}}, "a_1", {"b_1", "c_1"}, 3),
    # c matches 1/10 of the documents, b all of them: c's 101st result comes first.
    ({"b": 1, "c": 4}, "c_1", {"b_1"}, N // 10),
]


@pytest.mark.parametrize("flt,winner,rejected,keys", TRIAL_CASES)
def test_trial_picks_selective_index(two, flt, winner, rejected, keys):
    e = find_explain(two, flt, "allPlansExecution")
    qp = e["queryPlanner"]
    assert index_name(qp["winningPlan"]) == winner
    assert {index_name(p) for p in qp["rejectedPlans"]} == rejected
    st = e["executionStats"]
    expected = [d for d in two.find(flt).hint([("$natural", 1)])]
    assert st["nReturned"] == len(expected)
    # Only the winner's keys in bounds were read (the trial's share included, once).
    assert st["totalKeysExamined"] == keys
    assert st["totalDocsExamined"] == keys


def test_all_plans_execution_shape(two):
    e = find_explain(two, {"a": 4000, "b": 1}, "allPlansExecution")
    plans = e["executionStats"]["allPlansExecution"]
    assert len(plans) == 2
    by_index = {index_name(p["executionStages"]): p for p in plans}
    assert set(by_index) == {"a_1", "b_1"}
    a = by_index["a_1"]
    assert a["nReturned"] == 1
    assert a["totalKeysExamined"] == 1
    assert a["totalDocsExamined"] == 1
    assert stages(a["executionStages"]) == ["FETCH", "IXSCAN"]
    assert a["executionStages"]["nReturned"] == 1
    assert a["executionStages"]["inputStage"]["keysExamined"] == 1
    b = by_index["b_1"]
    # The trial stopped when a_1 reached its end: b_1 read a few keys and no more.
    assert 0 <= b["totalKeysExamined"] < 100
    assert b["nReturned"] == 0  # none of b's first documents has a == 4000
    for p in plans:
        assert {"nReturned", "executionTimeMillisEstimate", "totalKeysExamined",
                "totalDocsExamined", "executionStages"} <= set(p)


def test_execution_stats_verbosity_has_no_all_plans(two):
    e = find_explain(two, {"a": 7, "b": 1}, "executionStats")
    assert "allPlansExecution" not in e["executionStats"]
    e = find_explain(two, {"a": 7}, "allPlansExecution")
    # A single candidate plan: no trial.
    assert e["executionStats"]["allPlansExecution"] == []
    assert e["queryPlanner"]["rejectedPlans"] == []


def test_hint_skips_the_trial(two):
    e = find_explain(two, {"a": 7, "b": 1}, "allPlansExecution", hint="b_1")
    assert index_name(e["queryPlanner"]["winningPlan"]) == "b_1"
    assert e["queryPlanner"]["rejectedPlans"] == []
    assert e["executionStats"]["allPlansExecution"] == []
    assert e["executionStats"]["totalKeysExamined"] == N


def test_trial_winner_continues_without_rereading(two):
    """The trial's buffered results are returned once: a query with many results through the
    trial winner returns each document exactly once, in the index order when sorted by it."""
    flt = {"b": 1, "c": 2}
    got = [d["_id"] for d in two.find(flt)]
    assert sorted(got) == list(range(2, N, 10))
    assert len(got) == len(set(got))
    e = find_explain(two, flt)
    assert index_name(e["queryPlanner"]["winningPlan"]) == "c_1"
    assert e["executionStats"]["totalKeysExamined"] == N // 10
    assert e["executionStats"]["totalDocsExamined"] == N // 10
    # A sort the winner cannot provide: SORT over the winner.
    e = find_explain(two, flt, sort={"s": -1}, limit=3)
    assert index_name(e["queryPlanner"]["winningPlan"]) == "c_1"
    assert [d["_id"] for d in two.find(flt).sort("s", -1).limit(3)] == [N - 8, N - 18, N - 28]


def test_sort_providing_plan_wins_with_limit(two):
    """{b: 1} sorted by a with a small limit: the a_1 scan provides the order and produces its
    first results at once, b_1 needs a blocking sort over every document."""
    e = find_explain(two, {"b": 1}, sort={"a": 1}, limit=5)
    qp = e["queryPlanner"]
    assert index_name(qp["winningPlan"]) == "a_1"
    assert "SORT" not in stages(qp["winningPlan"])
    assert [d["a"] for d in two.find({"b": 1}).sort("a", 1).limit(5)] == [0, 1, 2, 3, 4]


def test_trial_for_writes_and_count(two):
    db = two.database
    db.drop_collection("w")
    db.w.insert_many([{"_id": i, "a": i, "b": i % 2} for i in range(2000)])
    db.w.create_index("b")
    db.w.create_index("a")
    r = db.w.update_many({"a": {"$in": [4, 6, 8]}, "b": 0}, {"$set": {"x": 1}})
    assert r.matched_count == 3 and r.modified_count == 3
    assert db.w.count_documents({"a": {"$lt": 10}, "b": 1}) == 5
    e = explain(db.w, SON([("delete", "w"), ("deletes", [{"q": {"a": 5, "b": 1}, "limit": 1}])]))
    assert index_name(e["queryPlanner"]["winningPlan"]) == "a_1"
    assert db.w.delete_one({"a": 5, "b": 1}).deleted_count == 1
    assert db.w.count_documents({}) == 1999


def test_random_queries_match_collection_scan(db):
    rnd = random.Random(99)
    docs = [
        {"_id": i, "a": rnd.randint(0, 50), "b": rnd.randint(0, 5), "c": rnd.choice(["x", "y", "z", 1, 2.5]),
         "d": rnd.randint(0, 1000)}
        for i in range(3000)
    ]
    db.r.insert_many(docs)
    for spec in (["a"], ["b"], ["c"], ["d"], ["a", "b"], ["b", "d"]):
        db.r.create_index([(f, 1) for f in spec])

    def pred(f):
        r = rnd.random()
        if r < 0.4:
            return rnd.randint(0, 50)
        if r < 0.6:
            return {"$in": [rnd.randint(0, 50) for _ in range(3)]}
        lo = rnd.randint(0, 900)
        return {"$gte": lo, "$lt": lo + rnd.randint(1, 200)}

    for _ in range(80):
        flt = {f: pred(f) for f in rnd.sample(["a", "b", "d", "c"], rnd.randint(2, 3))}
        expected = sorted(d["_id"] for d in db.r.find(flt).hint([("$natural", 1)]))
        assert sorted(d["_id"] for d in db.r.find(flt)) == expected, flt
        assert db.r.count_documents(flt) == len(expected), flt
        # Projections of index fields (covered when the bounds answer the filter), and counts.
        for proj in ({"a": 1, "_id": 0}, {"b": 1, "d": 1, "_id": 0}, {"c": 1, "_id": 0}):
            key = lambda d: sorted((k, str(v), type(v).__name__) for k, v in d.items())
            want_p = sorted((d for d in db.r.find(flt, proj).hint([("$natural", 1)])), key=key)
            assert sorted(db.r.find(flt, proj), key=key) == want_p, (flt, proj)
        assert db.r.database.command("count", "r", query=flt)["n"] == len(expected), flt
        sort_field = rnd.choice(["a", "d"])
        lim = rnd.randint(1, 20)
        want = [d[sort_field] for d in db.r.find(flt).sort(sort_field, 1).limit(lim).hint([("$natural", 1)])]
        assert [d[sort_field] for d in db.r.find(flt).sort(sort_field, 1).limit(lim)] == want, flt


# ---------------------------------------------------------------- $indexStats


def index_stats(coll):
    return {d["name"]: d for d in coll.aggregate([{"$indexStats": {}}])}


def test_index_stats_counts_queries(db):
    import datetime

    db.s.insert_many([{"_id": i, "a": i % 7, "b": i} for i in range(500)])
    db.s.create_index("a")
    db.s.create_index("b")
    db.s.create_index("z", sparse=True)
    before = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
    stats = index_stats(db.s)
    assert set(stats) == {"_id_", "a_1", "b_1", "z_1"}
    for name, d in stats.items():
        assert d["accesses"]["ops"] == 0, name
        assert isinstance(d["accesses"]["since"], datetime.datetime)
        assert d["accesses"]["since"] >= before
        assert ":" in d["host"]
        assert d["spec"]["name"] == name
    assert stats["a_1"]["key"] == {"a": 1}
    assert stats["z_1"]["spec"]["sparse"] is True
    assert "building" not in stats["a_1"]

    for i in range(5):
        assert len(list(db.s.find({"a": i}))) > 0  # a_1
    list(db.s.find({"b": {"$lt": 3}}))  # b_1
    db.s.count_documents({"b": 4})  # b_1
    list(db.s.aggregate([{"$match": {"a": 1}}, {"$count": "n"}]))  # a_1
    db.s.update_one({"_id": 3}, {"$set": {"x": 1}})  # _id_
    db.s.delete_many({"b": {"$gte": 490}})  # b_1
    list(db.s.find({"x": 1}))  # collection scan: no index
    db.s.find({"a": 2}).explain()  # explain does not count
    stats = index_stats(db.s)
    assert stats["a_1"]["accesses"]["ops"] == 6
    assert stats["b_1"]["accesses"]["ops"] == 3
    assert stats["_id_"]["accesses"]["ops"] == 1
    assert stats["z_1"]["accesses"]["ops"] == 0


def test_index_stats_or_union_counts_each_index_once(db):
    db.o.insert_many([{"_id": i, "a": i, "b": i} for i in range(100)])
    db.o.create_index("a")
    db.o.create_index("b")
    list(db.o.find({"$or": [{"a": 1}, {"b": 2}, {"a": 3}]}))
    stats = index_stats(db.o)
    assert stats["a_1"]["accesses"]["ops"] == 1
    assert stats["b_1"]["accesses"]["ops"] == 1


def test_index_stats_rest_of_pipeline_and_missing_collection(db):
    db.p.insert_one({"a": 1})
    db.p.create_index("a")
    got = list(db.p.aggregate([{"$indexStats": {}}, {"$project": {"_id": 0, "name": 1}}, {"$sort": {"name": 1}}]))
    assert got == [{"name": "_id_"}, {"name": "a_1"}]
    assert list(db.nothing_here.aggregate([{"$indexStats": {}}])) == []
    # Dropping and recreating an index resets its statistics.
    list(db.p.find({"a": 1}))
    assert index_stats(db.p)["a_1"]["accesses"]["ops"] == 1
    db.p.drop_index("a_1")
    db.p.create_index("a")
    assert index_stats(db.p)["a_1"]["accesses"]["ops"] == 0


@pytest.mark.parametrize(
    "pipeline,code",
    [
        ([{"$indexStats": {"x": 1}}], 28803),
        ([{"$indexStats": 1}], 28803),
        ([{"$match": {}}, {"$indexStats": {}}], 40602),
    ],
)
def test_index_stats_errors(db, pipeline, code):
    db.e.insert_one({"a": 1})
    c, name, _ = command_error(db, {"aggregate": "e", "pipeline": pipeline, "cursor": {}})
    assert c == code
    assert name == "Location%d" % code


def test_index_stats_time_series_in_user_terms(db):
    # $indexStats on a time-series collection lists its indexes as listIndexes does (user keys
    # and names) and counts the reads that use them; system.buckets.X shows the bucket specs.
    import datetime
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    t0 = datetime.datetime(2024, 1, 1)
    db.ts.insert_many([{"t": t0 + datetime.timedelta(minutes=i), "m": i % 4, "v": i}
                       for i in range(200)])
    db.ts.create_index([("v", 1)], name="v_1")
    stats = index_stats(db.ts)
    assert set(stats) == {"m_1_t_1", "v_1"}
    assert stats["m_1_t_1"]["key"] == {"m": 1, "t": 1}
    assert stats["v_1"]["key"] == {"v": 1} and stats["v_1"]["spec"]["key"] == {"v": 1}
    assert stats["m_1_t_1"]["accesses"]["ops"] == 0 and stats["v_1"]["accesses"]["ops"] == 0
    for _ in range(3):
        assert len(list(db.ts.find({"m": 2}))) == 50  # the series index
    assert len(list(db.ts.find({"v": {"$lt": 5}}).hint("v_1"))) == 5
    stats = index_stats(db.ts)
    assert stats["m_1_t_1"]["accesses"]["ops"] == 3
    assert stats["v_1"]["accesses"]["ops"] == 1
    raw = index_stats(db["system.buckets.ts"])
    assert any(list(d["key"]) == ["meta", "control.min.t", "control.max.t"]
               for d in raw.values())


# ---------------------------------------------------------------- covered plans and COUNT_SCAN


@pytest.fixture(scope="module")
def cov(client):
    db = client["planner_cov"]
    db.drop_collection("c")
    db.c.insert_many(
        [
            {"_id": i, "name": "n%04d" % i, "tag": "t%d" % (i % 5), "num": i * 1.5 if i % 2 else i, "x": i}
            for i in range(1000)
        ]
    )
    db.c.create_index("name")
    db.c.create_index([("tag", 1), ("name", -1)])
    db.c.create_index("num")
    db.c.insert_one({"_id": 5000, "tag": "t1"})  # no name: indexes as null
    yield db.c


# (filter, projection, sort, expected covered?)
COVER_CASES = [
    ({"name": "n0007"}, {"name": 1, "_id": 0}, None, True),
    ({"name": {"$gte": "n0100", "$lt": "n0110"}}, {"_id": 0, "name": 1}, None, True),
    ({"tag": "t2", "name": {"$lt": "n0050"}}, {"tag": 1, "name": 1, "_id": 0}, None, True),
    ({"tag": {"$in": ["t1", "t3"]}}, {"tag": 1, "_id": 0}, None, True),
    ({"name": {"$gt": "n0990"}}, {"name": 1, "_id": 0}, [("name", -1)], True),
    # _id is not in the index: it comes from the document.
    ({"name": "n0007"}, {"name": 1}, None, False),
    # A field the index lacks, a filter the bounds do not answer, an exclusion projection.
    ({"name": "n0007"}, {"name": 1, "x": 1, "_id": 0}, None, False),
    ({"name": "n0007", "x": 7}, {"name": 1, "_id": 0}, None, False),
    ({"name": {"$regex": "^n000"}}, {"name": 1, "_id": 0}, None, False),
    ({"name": "n0007"}, {"x": 0}, None, False),
    # A blocking sort on another field needs the documents.
    ({"tag": "t2"}, {"tag": 1, "_id": 0}, [("x", 1)], False),
]


@pytest.mark.parametrize("flt,proj,sort,covered", COVER_CASES)
def test_covered_projection(cov, flt, proj, sort, covered):
    def run(hint=None):
        cur = cov.find(flt, proj)
        if sort:
            cur = cur.sort(sort)
        if hint:
            cur = cur.hint(hint)
        return list(cur)

    got = run()
    want = run([("$natural", 1)])
    if sort:
        assert got == want
    else:
        key = lambda d: sorted(d.items())
        assert sorted(got, key=key) == sorted(want, key=key)
    assert len(want) > 0
    kw = {"projection": proj}
    if sort:
        kw["sort"] = SON(sort)
    e = find_explain(cov, flt, **kw)
    names = stages(e["queryPlanner"]["winningPlan"])
    if covered:
        assert names[0] == "PROJECTION_COVERED"
        assert "FETCH" not in names
        assert e["executionStats"]["totalDocsExamined"] == 0
    else:
        assert "PROJECTION_COVERED" not in names


def test_covered_numbers_keep_their_types(cov):
    """Numeric keys do not record int vs double: such values are read from the document."""
    got = {d["num"] for d in cov.find({"num": {"$gte": 10, "$lte": 13}}, {"num": 1, "_id": 0})}
    assert got == {10, 10.5, 12}  # i = 10, 7 (odd: i * 1.5), 12
    assert {type(d["num"]) for d in cov.find({"num": {"$gte": 10, "$lte": 13}}, {"num": 1, "_id": 0})} == {int, float}
    types = sorted(type(d["num"]).__name__ for d in cov.find({"num": {"$in": [10, 16.5]}}, {"num": 1, "_id": 0}))
    assert types == ["float", "int"]


# (filter, expected count, COUNT_SCAN or IXSCAN without FETCH, or None for a fetching plan)
COUNT_CASES = [
    ({"name": "n0007"}, 1, "COUNT_SCAN"),
    ({"name": {"$gte": "n0100", "$lt": "n0200"}}, 100, "COUNT_SCAN"),
    ({"tag": "t1"}, 201, "COUNT_SCAN"),
    ({"tag": "t1", "name": {"$gte": "n0500"}}, 100, "COUNT_SCAN"),
    ({"tag": {"$in": ["t1", "t2"]}}, 401, "IXSCAN"),
    ({"num": {"$gt": 1000}}, 167, "COUNT_SCAN"),  # odd i from 667
    # null matches missing fields too (and undefined): the documents are needed.
    ({"name": None}, 1, None),
    ({"name": "n0007", "x": 7}, 1, None),
]


@pytest.mark.parametrize("flt,n,stage", COUNT_CASES)
def test_count_scan(cov, flt, n, stage):
    assert cov.count_documents(flt) == n  # aggregate $match + $group
    assert cov.database.command("count", "c", query=flt)["n"] == n
    assert cov.database.command("count", "c", query=flt, skip=1, limit=5)["n"] == min(5, max(0, n - 1))
    e = explain(cov, SON([("count", "c"), ("query", flt)]))
    names = stages(e["queryPlanner"]["winningPlan"])
    assert names[0] == "COUNT"
    assert e["executionStats"]["executionStages"]["nCounted"] == n
    if stage is None:
        assert "FETCH" in names
    else:
        assert names[1:] == [stage]
        assert e["executionStats"]["totalDocsExamined"] == 0
        assert e["executionStats"]["totalKeysExamined"] == n


# ---------------------------------------------------------------- min, max, returnKey, showRecordId


@pytest.fixture(scope="module")
def mm(client):
    db = client["planner_minmax"]
    db.drop_collection("c")
    db.c.insert_many([{"_id": i, "a": i % 10, "b": i, "f": float(i) / 2} for i in range(100)])
    db.c.create_index("a")
    db.c.create_index([("a", 1), ("b", -1)])
    db.c.create_index("f")
    yield db.c


def find_cmd(coll, **kw):
    cmd = SON([("find", coll.name)])
    for k, v in kw.items():
        cmd[k] = v
    reply = coll.database.command(cmd)
    return reply["cursor"]["firstBatch"]


MIN_MAX_CASES = [
    # (min, max, hint, expected _ids as a predicate on the document)
    ({"a": 3}, {"a": 6}, "a_1", lambda d: 3 <= d["a"] < 6),
    ({"a": 7}, None, "a_1", lambda d: d["a"] >= 7),
    (None, {"a": 2}, {"a": 1}, lambda d: d["a"] < 2),
    # Compound with a descending field: index order is a ascending, then b descending.
    ({"a": 2, "b": 50}, {"a": 3, "b": 80}, "a_1_b_-1",
     lambda d: (d["a"] == 2 and d["b"] <= 50) or (d["a"] == 3 and d["b"] > 80)),
    ({"f": 10}, {"f": 12.5}, "f_1", lambda d: 10 <= d["f"] < 12.5),
]


@pytest.mark.parametrize("lo,hi,hint,pred", MIN_MAX_CASES)
def test_min_max(mm, lo, hi, hint, pred):
    kw = {"hint": hint, "batchSize": 1000}
    if lo is not None:
        kw["min"] = lo
    if hi is not None:
        kw["max"] = hi
    got = sorted(d["_id"] for d in find_cmd(mm, **kw))
    want = sorted(d["_id"] for d in mm.find() if pred(d))
    assert got == want
    assert len(want) > 0
    # With a filter too: both apply.
    kw["filter"] = {"b": {"$lt": 50}}
    got = sorted(d["_id"] for d in find_cmd(mm, **kw))
    assert got == [i for i in want if i < 50]


@pytest.mark.parametrize(
    "kw,code",
    [
        ({"min": {"a": 1}}, 51173),
        ({"max": {"a": 1}, "hint": {"$natural": 1}}, 51173),
        ({"min": {"b": 1}, "hint": "a_1"}, 51174),
        ({"min": {"a": 1}, "hint": "a_1_b_-1"}, 51174),
        ({"min": {"b": 1, "a": 1}, "hint": "a_1_b_-1"}, 51174),
        ({"min": {"a": 5}, "max": {"a": 5}, "hint": "a_1"}, 51175),
        ({"min": {"a": 6}, "max": {"a": 5}, "hint": "a_1"}, 51175),
        ({"min": 5, "hint": "a_1"}, 14),
    ],
)
def test_min_max_errors(mm, kw, code):
    cmd = SON([("find", "c")])
    cmd.update(kw)
    c, name, _ = command_error(mm.database, cmd)
    assert c == code
    assert name == ("TypeMismatch" if code == 14 else "Location%d" % code)


def test_return_key(mm):
    got = find_cmd(mm, filter={"a": 4, "b": {"$lt": 30}}, hint="a_1_b_-1", returnKey=True)
    assert got == [{"a": 4, "b": 24}, {"a": 4, "b": 14}, {"a": 4, "b": 4}]
    got = find_cmd(mm, filter={"f": {"$gte": 3, "$lt": 4}}, hint="f_1", returnKey=True)
    assert got == [{"f": 3.0}, {"f": 3.5}]
    assert all(isinstance(d["f"], float) for d in got)
    # A projection is ignored; a collection scan has no key.
    got = find_cmd(mm, filter={"b": {"$lt": 3}}, projection={"b": 1}, returnKey=True, hint={"$natural": 1})
    assert got == [{}, {}, {}]
    got = find_cmd(mm, filter={"a": 1}, hint="a_1", returnKey=True, sort={"b": -1}, limit=2)
    assert got == [{"a": 1}, {"a": 1}]


def test_show_record_id(mm):
    got = find_cmd(mm, filter={"a": 2}, showRecordId=True, batchSize=100)
    assert len(got) == 10
    rids = [d["$recordId"] for d in got]
    assert all(isinstance(r, int) for r in rids)
    assert len(set(rids)) == 10
    assert all(list(d)[-1] == "$recordId" for d in got)
    # The same RecordIds through a collection scan, with a projection applied before.
    by_scan = find_cmd(mm, filter={"a": 2}, showRecordId=True, projection={"b": 1, "_id": 0},
                       hint={"$natural": 1}, batchSize=100)
    assert {d["b"]: d["$recordId"] for d in by_scan} == {d["b"]: d["$recordId"] for d in got}
    assert all(set(d) == {"b", "$recordId"} for d in by_scan)
    both = find_cmd(mm, filter={"a": 2, "b": 12}, hint="a_1", showRecordId=True, returnKey=True)
    assert len(both) == 1 and both[0]["a"] == 2 and set(both[0]) == {"a", "$recordId"}
    # getMore keeps the options.
    cur = mm.find({"a": 3}, show_record_id=True, batch_size=2)
    assert all("$recordId" in d for d in cur)


def test_min_max_explain(mm):
    e = find_explain(mm, {}, min={"a": 3}, max={"a": 6}, hint="a_1")
    st = e["executionStats"]
    assert st["nReturned"] == 30
    assert st["totalKeysExamined"] == 30


# ---------------------------------------------------------------- DISTINCT_SCAN


@pytest.fixture(scope="module")
def dist(client):
    from bson.int64 import Int64

    db = client["planner_distinct"]
    db.drop_collection("c")
    docs = []
    for i in range(3000):
        d = {"_id": i, "g": "g%02d" % (i % 40), "n": i % 7, "x": i}
        if i % 7 == 3:
            d["n"] = 3.5  # a double among ints
        if i % 7 == 5:
            d["n"] = Int64(5)
        docs.append(d)
    docs.append({"_id": 9000, "g": "g00"})  # no n: missing is not a distinct value
    docs.append({"_id": 9001, "g": "g01", "n": None})
    docs.append({"_id": 9002, "g": "g02", "n": {"k": 1}})
    db.c.insert_many(docs)
    db.c.create_index("g")
    db.c.create_index([("n", -1), ("g", 1)])
    db.c.insert_one({"_id": 9003})  # neither field
    yield db.c


# (key, filter, DISTINCT_SCAN expected?)
DISTINCT_CASES = [
    ("g", {}, True),
    ("n", {}, True),
    ("g", {"g": {"$gte": "g10", "$lt": "g20"}}, True),
    ("n", {"n": {"$gt": 2}}, True),
    ("g", {"x": {"$lt": 100}}, False),  # the filter needs the documents
    ("x", {}, False),  # no index leads with x
]


@pytest.mark.parametrize("key,flt,scan", DISTINCT_CASES)
def test_distinct_scan(dist, key, flt, scan):
    got = dist.distinct(key, flt)
    want = []
    for d in dist.find(flt).hint([("$natural", 1)]):
        if key in d and d[key] not in want:
            want.append(d[key])
    assert len(got) == len(want)
    for v in want:
        assert v in got
    # Types survive: 3.5 is a float, Int64(5) and 0 are ints, null and an object are values.
    if key == "n" and not flt:
        assert None in got and {"k": 1} in got
        assert {type(v).__name__ for v in got if v not in (None, {"k": 1})} == {"int", "float", "Int64"}
    e = explain(dist, SON([("distinct", "c"), ("key", key), ("query", flt)]))
    names = stages(e["queryPlanner"]["winningPlan"])
    if scan:
        assert names == ["PROJECTION_COVERED", "DISTINCT_SCAN"]
        st = e["executionStats"]
        assert st["nReturned"] == len(want)
        # One key per value, plus the keys of missing fields under null.
        assert st["totalKeysExamined"] < 50
    else:
        assert "DISTINCT_SCAN" not in names


# ---------------------------------------------------------------- plan cache


def cache_entries(coll):
    return list(coll.aggregate([{"$planCacheStats": {}}]))


def test_plan_cache_entries_clear_and_ddl(db):
    db.pc.insert_many([{"_id": i, "a": i, "b": i % 3, "c": i % 50} for i in range(3000)])
    db.pc.create_index("b")
    db.pc.create_index("a")
    assert cache_entries(db.pc) == []
    # A single candidate plan makes no entry; two candidates do, one per shape.
    list(db.pc.find({"a": 5}))
    assert cache_entries(db.pc) == []
    for v in (5, 17, 2999):
        assert [d["_id"] for d in db.pc.find({"a": v, "b": v % 3})] == [v]
    entries = cache_entries(db.pc)
    assert len(entries) == 1
    e = entries[0]
    assert e["cachedPlan"]["indexName"] == "a_1"
    assert e["createdFromQuery"]["query"] == {"a": 5, "b": 2}
    assert e["isActive"] is True and e["works"] >= 1
    assert {"planCacheKey", "queryHash", "timeOfCreation", "host"} <= set(e)
    list(db.pc.find({"a": {"$gte": 10, "$lt": 20}, "b": 1}))
    list(db.pc.find({"a": 7, "b": 1}, {"a": 1, "_id": 0}))
    assert len(cache_entries(db.pc)) == 3
    # planCacheClear of one shape, then of the collection.
    db.command("planCacheClear", "pc", query={"a": 1, "b": 1})
    assert len(cache_entries(db.pc)) == 2
    db.command("planCacheClear", "pc")
    assert cache_entries(db.pc) == []
    # Index DDL makes the entries stale.
    list(db.pc.find({"a": 5, "b": 2}))
    assert len(cache_entries(db.pc)) == 1
    db.pc.create_index("c")
    assert cache_entries(db.pc) == []
    list(db.pc.find({"a": 5, "b": 2}))
    assert len(cache_entries(db.pc)) == 1
    db.pc.drop_index("c_1")
    assert cache_entries(db.pc) == []


def test_plan_cache_replans_when_the_cached_plan_does_poorly(db):
    """A cached plan that was good for one value and is poor for another is replaced."""
    docs = [{"_id": i, "a": 1 if i < 2900 else i, "b": i} for i in range(3000)]
    db.rp.insert_many(docs)
    db.rp.create_index("a")
    db.rp.create_index("b")
    # a = 2950 is selective: a_1 wins and is cached.
    assert [d["_id"] for d in db.rp.find({"a": 2950, "b": {"$lt": 5000}})] == [2950]
    assert cache_entries(db.rp)[0]["cachedPlan"]["indexName"] == "a_1"
    # a = 1 matches 2900 documents but b < 3 only three: a_1 exceeds its budget, b_1 wins.
    got = sorted(d["_id"] for d in db.rp.find({"a": 1, "b": {"$lt": 3}}))
    assert got == [0, 1, 2]
    entries = cache_entries(db.rp)
    assert len(entries) == 1
    assert entries[0]["cachedPlan"]["indexName"] == "b_1"


def test_plan_cache_errors(db):
    db.pe.insert_one({"a": 1})
    c, _, _ = command_error(db, {"planCacheClear": "pe", "sort": {"a": 1}})
    assert c == 2
    c, name, _ = command_error(
        db, {"aggregate": "pe", "pipeline": [{"$match": {}}, {"$planCacheStats": {}}], "cursor": {}}
    )
    assert (c, name) == (40602, "Location40602")
    assert list(db.missing.aggregate([{"$planCacheStats": {}}])) == []


def test_min_max_on_a_hashed_index_is_refused(db):
    db.h.insert_many([{"a": i} for i in range(5)])
    db.h.create_index([("a", "hashed")])
    code, name, _ = command_error(db, {"find": "h", "min": {"a": 1}, "hint": {"a": "hashed"}})
    assert (code, name) == (115, "CommandNotSupported")
