"""explain and the planner, on a 100,000-document collection: indexed equality, range and $in
queries examine only the keys and documents they return; COLLSCAN without an index; hints by
name, key pattern and $natural; sorts provided by an index; explain of aggregate, count,
distinct, update and delete. Shapes follow MongoDB 7.0's explain output."""

import datetime
import pytest
from bson.son import SON
from pymongo.errors import OperationFailure

from conftest import command_error

N = 100_000


@pytest.fixture(scope="module")
def big(client):
    db = client["explain_big"]
    db.drop_collection("c")
    coll = db.c
    batch = []
    for i in range(N):
        batch.append({"_id": i, "k": i, "g": i % 100, "s": "v%d" % (i % 1000), "arr": [i, i + N]})
        if len(batch) == 10_000:
            coll.insert_many(batch, ordered=False)
            batch = []
    coll.create_index("k")
    coll.create_index("g")
    coll.create_index("arr")
    coll.create_index([("g", 1), ("k", -1)])
    yield coll


def explain(coll, cmd, verbosity="executionStats"):
    return coll.database.command(SON([("explain", cmd), ("verbosity", verbosity)]))


def find_explain(coll, flt, verbosity="executionStats", **kw):
    cmd = SON([("find", coll.name), ("filter", flt)])
    for k, v in kw.items():
        cmd[k] = v
    return explain(coll, cmd, verbosity)


def stages(plan):
    """The stage names from the top of a plan tree down."""
    out = []
    while plan is not None:
        out.append(plan["stage"])
        plan = plan.get("inputStage")
    return out


def ixscan(plan):
    while plan["stage"] != "IXSCAN":
        plan = plan["inputStage"]
    return plan


def test_equality_examines_only_matching_keys(big):
    e = find_explain(big, {"k": 12345})
    qp = e["queryPlanner"]
    assert qp["namespace"] == "explain_big.c"
    assert stages(qp["winningPlan"]) == ["FETCH", "IXSCAN"]
    ix = ixscan(qp["winningPlan"])
    assert ix["indexName"] == "k_1"
    assert ix["keyPattern"] == {"k": 1}
    assert ix["isMultiKey"] is False
    assert ix["direction"] == "forward"
    assert ix["indexBounds"] == {"k": ["[12345, 12345]"]}
    st = e["executionStats"]
    assert st["nReturned"] == 1
    assert st["totalKeysExamined"] == 1
    assert st["totalDocsExamined"] == 1
    assert st["executionStages"]["stage"] == "FETCH"
    assert st["executionStages"]["docsExamined"] == 1
    assert st["executionStages"]["inputStage"]["keysExamined"] == 1
    assert "command" in e and e["command"]["find"] == "c"
    assert {"host", "port", "version"} <= set(e["serverInfo"])


def test_selective_equality_on_repeated_values(big):
    e = find_explain(big, {"g": 7})
    st = e["executionStats"]
    assert st["nReturned"] == N // 100
    assert st["totalDocsExamined"] == st["nReturned"]
    assert st["totalKeysExamined"] == st["nReturned"]


def test_range_bounds(big):
    e = find_explain(big, {"k": {"$gte": 100, "$lt": 200}})
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexBounds"] == {"k": ["[100, 200)"]}
    st = e["executionStats"]
    assert st["nReturned"] == 100
    assert st["totalKeysExamined"] == 100
    assert st["totalDocsExamined"] == 100


def test_open_range_bounds(big):
    e = find_explain(big, {"k": {"$gt": N - 10}})
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexBounds"] == {"k": ["(%d, inf.0]" % (N - 10)]}
    assert e["executionStats"]["nReturned"] == 9
    assert e["executionStats"]["totalKeysExamined"] == 9


def test_in_bounds(big):
    e = find_explain(big, {"k": {"$in": [500, 5, 50, 5]}})
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexBounds"] == {"k": ["[5, 5]", "[50, 50]", "[500, 500]"]}
    st = e["executionStats"]
    assert st["nReturned"] == 3
    assert st["totalKeysExamined"] == 3
    assert st["totalDocsExamined"] == 3


def test_compound_prefix_bounds(big):
    e = find_explain(big, {"g": 3, "k": {"$lt": 1000}}, hint="g_1_k_-1")
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexName"] == "g_1_k_-1"
    # k is descending: the interval is shown in index order.
    assert ix["indexBounds"] == {"g": ["[3, 3]"], "k": ["(1000, -inf.0]"]}
    st = e["executionStats"]
    assert st["nReturned"] == 10
    assert st["totalKeysExamined"] == 10


def test_planner_prefers_more_equality_fields(big):
    e = find_explain(big, {"g": 3, "k": 303})
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexName"] == "g_1_k_-1"
    assert len(e["queryPlanner"]["rejectedPlans"]) >= 1
    assert e["executionStats"]["nReturned"] == 1
    assert e["executionStats"]["totalKeysExamined"] == 1


def test_collscan_without_index(big):
    e = find_explain(big, {"s": "v5"})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    st = e["executionStats"]
    assert st["nReturned"] == N // 1000
    assert st["totalDocsExamined"] == N
    assert st["totalKeysExamined"] == 0


def test_multikey_index(big):
    e = find_explain(big, {"arr": N + 5})
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexName"] == "arr_1"
    assert ix["isMultiKey"] is True
    assert e["executionStats"]["nReturned"] == 1
    assert e["executionStats"]["totalDocsExamined"] == 1


def test_hint_by_name_and_key_pattern(big):
    e = find_explain(big, {"s": "v5"}, hint="k_1")
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexName"] == "k_1"
    assert ix["indexBounds"] == {"k": ["[MinKey, MaxKey]"]}
    assert e["executionStats"]["nReturned"] == N // 1000
    e = find_explain(big, {"k": 5}, hint={"g": 1})
    assert ixscan(e["queryPlanner"]["winningPlan"])["indexName"] == "g_1"
    assert e["executionStats"]["nReturned"] == 1
    docs = list(big.find({"k": {"$lt": 3}}).hint([("g", 1)]))
    assert sorted(d["_id"] for d in docs) == [0, 1, 2]


def test_natural_hint_is_collscan(big):
    e = find_explain(big, {"k": 5}, hint={"$natural": 1})
    assert e["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    last = list(big.find({}, {"_id": 1}).hint([("$natural", -1)]).limit(2))
    assert [d["_id"] for d in last] == [N - 1, N - 2]


@pytest.mark.parametrize("hint", ["nope_1", {"nope": 1}, {"k": "hashed"}])
def test_bad_hint(big, hint):
    code, name, msg = command_error(big.database, {"find": "c", "filter": {}, "hint": hint})
    assert (code, name) == (2, "BadValue")
    assert msg == "hint provided does not correspond to an existing index"
    code, _, _ = command_error(big.database, {"count": "c", "query": {"k": 1}, "hint": hint})
    assert code == 2
    reply = big.database.command(
        {"delete": "c", "deletes": [{"q": {"k": -1}, "limit": 0, "hint": hint}]}
    )
    assert reply["writeErrors"][0]["code"] == 2


def test_sort_provided_by_index(big):
    e = find_explain(big, {}, sort={"k": -1}, limit=3)
    plan = e["queryPlanner"]["winningPlan"]
    assert "SORT" not in stages(plan)
    assert ixscan(plan)["direction"] == "backward"
    assert [d["k"] for d in big.find().sort("k", -1).limit(3)] == [N - 1, N - 2, N - 3]
    assert e["executionStats"]["totalKeysExamined"] <= 16
    e = find_explain(big, {"s": "v1"}, sort={"s": 1})
    assert "SORT" in stages(e["queryPlanner"]["winningPlan"])


def test_query_planner_verbosity_does_not_execute(big):
    e = find_explain(big, {"k": 1}, verbosity="queryPlanner")
    assert "executionStats" not in e
    assert stages(e["queryPlanner"]["winningPlan"]) == ["FETCH", "IXSCAN"]


def test_cursor_explain_default_verbosity(big):
    e = big.find({"k": 42}).explain()
    assert e["executionStats"]["nReturned"] == 1
    assert "allPlansExecution" in e["executionStats"]


def test_explain_count_distinct_update_delete(big):
    e = explain(big, SON([("count", "c"), ("query", {"k": {"$lt": 10}})]))
    # The bounds answer the filter: the keys are counted, no document is read.
    assert stages(e["queryPlanner"]["winningPlan"]) == ["COUNT", "COUNT_SCAN"]
    assert e["executionStats"]["executionStages"]["nCounted"] == 10
    e = explain(big, SON([("distinct", "c"), ("key", "g"), ("query", {"k": {"$lt": 10}})]))
    assert "IXSCAN" in stages(e["queryPlanner"]["winningPlan"])
    e = explain(big, SON([("update", "c"), ("updates", [{"q": {"k": 5}, "u": {"$set": {"x": 1}}}])]))
    assert stages(e["queryPlanner"]["winningPlan"])[0] == "UPDATE"
    assert e["executionStats"]["executionStages"]["nMatched"] == 1
    e = explain(big, SON([("delete", "c"), ("deletes", [{"q": {"g": 5}, "limit": 0}])]))
    assert stages(e["queryPlanner"]["winningPlan"])[0] == "DELETE"
    assert e["executionStats"]["executionStages"]["nWouldDelete"] == N // 100
    # Nothing was written.
    assert big.count_documents({"x": 1}) == 0
    assert big.count_documents({"g": 5}) == N // 100


def test_explain_aggregate(big):
    db = big.database
    reply = db.command(SON([("aggregate", "c"), ("pipeline", [{"$match": {"k": 7}}]), ("explain", True)]))
    assert stages(reply["queryPlanner"]["winningPlan"]) == ["FETCH", "IXSCAN"]
    reply = explain(big, SON([("aggregate", "c"), ("pipeline", [{"$match": {"k": {"$in": [1, 2]}}}, {"$group": {"_id": None, "n": {"$sum": 1}}}]), ("cursor", {})]))
    cursor = reply["stages"][0]["$cursor"]
    assert stages(cursor["queryPlanner"]["winningPlan"]) == ["FETCH", "IXSCAN"]
    assert cursor["executionStats"]["nReturned"] == 2
    assert "$group" in reply["stages"][1]
    # The aggregation itself uses the index too.
    out = list(big.aggregate([{"$match": {"k": {"$in": [1, 2]}}}, {"$count": "n"}]))
    assert out == [{"n": 2}]


def test_explain_missing_collection_and_bad_verbosity(big):
    e = explain(big.database.nothere, SON([("find", "nothere"), ("filter", {"a": 1})]))
    assert e["queryPlanner"]["winningPlan"]["stage"] == "EOF"
    code, _, _ = command_error(big.database, SON([("explain", {"find": "c"}), ("verbosity", "bogus")]))
    assert code == 2
    code, _, _ = command_error(big.database, SON([("explain", {"insert": "c", "documents": [{}]})]))
    assert code == 115


@pytest.mark.parametrize("timeseries", [False, True])
def test_explain_parse_errors_match_the_command(db, timeseries):
    # Regular and time-series explain parse the command the same way, as the command does:
    # a negative skip fails (BadValue) in find and count alike.
    if timeseries:
        db.create_collection("pe", timeseries={"timeField": "t"})
    else:
        db.create_collection("pe")
    for cmd in (SON([("count", "pe"), ("skip", -1)]),
                SON([("find", "pe"), ("skip", -1)]),
                SON([("distinct", "pe")])):
        code, _, _ = command_error(db, SON([("explain", cmd), ("verbosity", "queryPlanner")]))
        assert code == (40414 if "distinct" in cmd else 2), cmd


@pytest.mark.parametrize("timeseries", [False, True])
def test_explain_parses_write_statements_as_the_command_does(db, timeseries):
    # The one update/delete statement is checked as update and delete check theirs: unknown
    # fields 40415, a missing q, u or limit 40414, a delete limit other than 0 or 1 FailedToParse.
    if timeseries:
        db.create_collection("ws", timeseries={"timeField": "t", "metaField": "m"})
    else:
        db.create_collection("ws")
    cases = [
        (SON([("update", "ws"), ("updates", [{"q": {}, "u": {"$set": {"m": 1}}, "bogus": 1}])]),
         40415),
        (SON([("update", "ws"), ("updates", [{"q": {}}])]), 40414),
        (SON([("update", "ws"), ("updates", [{"u": {"$set": {"m": 1}}}])]), 40414),
        (SON([("update", "ws"), ("updates", [{"q": 1, "u": {"$set": {"m": 1}}}])]), 14),
        (SON([("delete", "ws"), ("deletes", [{"q": {}}])]), 40414),
        (SON([("delete", "ws"), ("deletes", [{"q": {}, "limit": 2}])]), 9),
        (SON([("delete", "ws"), ("deletes", [{"q": {}, "limit": 0, "bogus": 1}])]), 40415),
    ]
    for cmd, want in cases:
        code, _, _ = command_error(db, SON([("explain", cmd), ("verbosity", "queryPlanner")]))
        assert code == want, cmd
        # The command itself answers the same.
        code, _, _ = command_error(db, cmd)
        assert code == want, cmd


def test_hidden_index_not_used(db):
    db.h.insert_many([{"a": i} for i in range(10)])
    db.h.create_index("a", hidden=True)
    assert find_explain(db.h, {"a": 3})["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    code, _, _ = command_error(db, {"find": "h", "filter": {}, "hint": "a_1"})
    assert code == 2
    db.command({"collMod": "h", "index": {"name": "a_1", "hidden": False}})
    e = find_explain(db.h, {"a": 3})
    assert ixscan(e["queryPlanner"]["winningPlan"])["indexName"] == "a_1"
    assert e["executionStats"]["nReturned"] == 1


def ts_explain(db, inner, verbosity="executionStats"):
    return db.command(SON([("explain", inner), ("verbosity", verbosity)]))


@pytest.fixture
def tsw(db):
    """A time-series collection: sensors a/b/c, 30 readings each, temp rising with the index."""
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    t0 = datetime.datetime(2024, 5, 1)
    db.ts.insert_many([{"t": t0 + datetime.timedelta(minutes=i), "m": s, "temp": i}
                       for s in "abc" for i in range(30)])
    return db


def test_time_series_delete_explain_counts_without_deleting(tsw):
    # A filter on the metaField alone: whole buckets, none unpacked.
    e = ts_explain(tsw, {"delete": "ts", "deletes": [{"q": {"m": "b"}, "limit": 0}]})
    plan = e["queryPlanner"]["winningPlan"]
    assert e["queryPlanner"]["namespace"].endswith(".system.buckets.ts")
    assert plan["stage"] == "TS_MODIFY"
    assert plan["opType"] == "deleteMany"
    assert plan["bucketFilter"] == {"meta": "b"}
    assert plan["residualFilter"] == {}
    # The buckets are found as a read finds them: series b's through the series index.
    assert plan["inputStage"]["stage"] == "FETCH"
    assert plan["inputStage"]["inputStage"]["stage"] == "IXSCAN"
    st = e["executionStats"]["executionStages"]
    assert st["nMeasurementsDeleted"] == 30
    assert st["nBucketsUnpacked"] == 0
    assert e["executionStats"]["totalDocsExamined"] == tsw["system.buckets.ts"].count_documents(
        {"meta": "b"})
    assert tsw.ts.count_documents({}) == 90  # nothing was deleted
    # A measurement filter: every bucket that may match is unpacked and tested.
    q = {"temp": {"$gte": 25}}
    e = ts_explain(tsw, {"delete": "ts", "deletes": [{"q": q, "limit": 0}]})
    assert e["queryPlanner"]["winningPlan"]["residualFilter"] == q
    st = e["executionStats"]["executionStages"]
    assert st["nMeasurementsDeleted"] == 15
    assert st["nBucketsUnpacked"] >= 3
    assert tsw.ts.count_documents(q) == 15
    # limit 1: one measurement.
    e = ts_explain(tsw, {"delete": "ts", "deletes": [{"q": q, "limit": 1}]})
    assert e["queryPlanner"]["winningPlan"]["opType"] == "deleteOne"
    assert e["executionStats"]["executionStages"]["nMeasurementsDeleted"] == 1
    # queryPlanner verbosity: the plan only.
    e = ts_explain(tsw, {"delete": "ts", "deletes": [{"q": q, "limit": 0}]}, "queryPlanner")
    assert "executionStats" not in e
    assert e["queryPlanner"]["winningPlan"]["stage"] == "TS_MODIFY"


def test_time_series_update_explain_counts_without_updating(tsw):
    inner = {"update": "ts", "updates": [{"q": {"m": "a"}, "u": {"$set": {"m": "z"}},
                                          "multi": True}]}
    e = ts_explain(tsw, inner)
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "TS_MODIFY"
    assert plan["opType"] == "updateMany"
    st = e["executionStats"]["executionStages"]
    assert st["nMeasurementsMatched"] == 30
    assert st["nMeasurementsUpdated"] == 30
    assert tsw.ts.count_documents({"m": "z"}) == 0
    assert tsw.ts.count_documents({"m": "a"}) == 30
    # The update's own rules apply: an unknown update operator is FailedToParse (9).
    code, _, _ = command_error(tsw, SON([("explain", {
        "update": "ts", "updates": [{"q": {"temp": 1}, "u": {"$bogus": {"m": "z"}},
                                     "multi": True}]})]))
    assert code == 9


def test_time_series_find_and_modify_explain(tsw):
    # TS_MODIFY of one measurement, counted without changing anything.
    e = ts_explain(tsw, {"findAndModify": "ts", "query": {"m": "a"}, "remove": True})
    st = e["executionStats"]["executionStages"]
    assert (st["stage"], st["opType"], st["nMeasurementsDeleted"]) == ("TS_MODIFY", "deleteOne", 1)
    e = ts_explain(tsw, {"findAndModify": "ts", "query": {"m": "a"}, "update": {"$set": {"x": 1}}})
    st = e["executionStats"]["executionStages"]
    assert (st["opType"], st["nMeasurementsMatched"], st["nMeasurementsUpdated"]) == (
        "updateOne", 1, 1)
    assert tsw.ts.count_documents({"m": "a"}) == 30 and tsw.ts.count_documents({"x": 1}) == 0
    # With a sort: the first measurement in its order, counted, nothing changed.
    newest = next(tsw.ts.find({"m": "a"}).sort("t", -1).limit(1))
    e = ts_explain(tsw, {"findAndModify": "ts", "query": {"m": "a"}, "sort": {"t": -1},
                         "update": {"$set": {"x": 1}}})
    st = e["executionStats"]["executionStages"]
    assert (st["opType"], st["nMeasurementsMatched"], st["nMeasurementsUpdated"]) == (
        "updateOne", 1, 1)
    assert st["sortPattern"] == {"t": -1}
    e = ts_explain(tsw, {"findAndModify": "ts", "query": {"m": "nobody"}, "sort": {"t": 1},
                         "remove": True})
    assert e["executionStats"]["executionStages"]["nMeasurementsDeleted"] == 0
    assert tsw.ts.count_documents({"x": 1}) == 0 and tsw.ts.count_documents({"m": "a"}) == 30
    assert tsw.ts.count_documents({"t": newest["t"], "m": "a"}) >= 1
    # The sort is checked as a find's is.
    code, _, _ = command_error(tsw, SON([("explain", {"findAndModify": "ts", "query": {},
                                                       "sort": {"t": "x"}, "remove": True})]))
    assert code == 15975


def test_time_series_output_pipeline_execution_explain_refused(db):
    # executionStats would run the $out; only the plan of such a pipeline is explained.
    db.create_collection("ts", timeseries={"timeField": "t"})
    pipeline = [{"$match": {}}, {"$out": "copy"}]
    code, _, _ = command_error(db, SON([("explain", {"aggregate": "ts", "pipeline": pipeline,
                                                      "cursor": {}}),
                                         ("verbosity", "executionStats")]))
    assert code == 115
    plan = db.command(SON([("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}}),
                           ("verbosity", "queryPlanner")]))
    assert "stages" in plan
    assert "copy" not in db.list_collection_names()


def test_or_union_of_index_scans(big):
    e = find_explain(big, {"$or": [{"k": 5}, {"k": {"$in": [7, 5]}}, {"g": 3, "k": {"$lt": 400}}]})
    plan = e["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH"
    assert plan["inputStage"]["stage"] == "OR"
    names = [s["indexName"] for s in plan["inputStage"]["inputStages"]]
    assert names == ["k_1", "k_1", "g_1_k_-1"]
    st = e["executionStats"]
    # 5 and 7, and 3, 103, 203, 303; k=5 found by two branches is fetched once.
    assert st["nReturned"] == 6
    assert st["totalDocsExamined"] == 6
    assert st["totalKeysExamined"] == 1 + 2 + 4
    # One branch without an index: a collection scan.
    e = find_explain(big, {"$or": [{"k": 5}, {"s": "v1"}]}, verbosity="queryPlanner")
    assert e["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    # Writes use the union too.
    r = big.database.command(
        {"update": "c", "updates": [{"q": {"$or": [{"k": 1}, {"k": 2}]}, "u": {"$set": {"o": 1}}, "multi": True}]}
    )
    assert r["n"] == 2
    assert big.count_documents({"o": 1}) == 2


def test_id_equality_uses_id_index(db):
    db.i.insert_many([{"_id": i} for i in range(100)])
    e = find_explain(db.i, {"_id": 42})
    assert ixscan(e["queryPlanner"]["winningPlan"])["indexName"] == "_id_"
    assert e["executionStats"]["totalDocsExamined"] == 1


def test_index_results_equal_collection_scan_results(db):
    """Random documents and filters: every plan (the planner's, each hinted index) returns
    exactly what a collection scan returns."""
    import random

    rnd = random.Random(1234)

    def value():
        r = rnd.random()
        if r < 0.35:
            return rnd.randint(-5, 5)
        if r < 0.5:
            return rnd.choice([0.5, -1.5, 2.0, float("inf")])
        if r < 0.65:
            return rnd.choice(["", "a", "b", "ab", "z"])
        if r < 0.8:
            return [rnd.randint(-5, 5) for _ in range(rnd.randint(0, 3))]
        if r < 0.9:
            return None
        return {"x": rnd.randint(0, 2)}

    docs = []
    for i in range(1500):
        d = {"_id": i}
        for f in ("a", "b"):
            if rnd.random() < 0.9:
                d[f] = value()
        if isinstance(d.get("b"), list):
            d["b"] = len(d["b"])  # {a, b} would hold parallel arrays (171)
        if rnd.random() < 0.5:
            d["n"] = {"c": rnd.randint(0, 3)} if rnd.random() < 0.5 else [{"c": rnd.randint(0, 3)}]
        docs.append(d)
    db.r.insert_many(docs)
    db.r.create_index("a")
    db.r.create_index([("a", 1), ("b", -1)])
    db.r.create_index([("b", -1)])
    db.r.create_index("n.c")

    def pred():
        op = rnd.choice(["eq", "gt", "gte", "lt", "lte", "in", "range"])
        v = rnd.choice([rnd.randint(-5, 5), rnd.choice(["a", "b", ""]), 1.5, None])
        if v is None and op not in ("eq", "in"):
            v = 0
        if op == "eq":
            return v
        if op == "in":
            return {"$in": [rnd.randint(-5, 5) for _ in range(3)] + [rnd.choice(["a", None])]}
        if op == "range":
            lo = rnd.randint(-5, 3)
            return {"$gte": lo, "$lt": lo + rnd.randint(0, 4)}
        return {"$" + op: v}

    hints = [None, {"$natural": 1}, "a_1", "a_1_b_-1", "b_-1", "n.c_1"]
    for i in range(120):
        if i % 20 == 19:
            # Writes in between: the indexes follow them.
            for _ in range(30):
                _id = rnd.randrange(1500)
                r = rnd.random()
                if r < 0.6:
                    db.r.update_one({"_id": _id}, {"$set": {"a": value()}})
                elif r < 0.8:
                    db.r.delete_one({"_id": _id})
                else:
                    db.r.update_many({"b": pred()}, {"$inc": {"touched": 1}, "$set": {"n": {"c": 2}}})
        flt = {}
        for f in rnd.sample(["a", "b", "n.c"], rnd.randint(1, 2)):
            flt[f] = pred()
        if i % 3 == 0:
            # A top-level $or: a union of index scans when every branch has an index.
            branches = [{f: pred()} for f in rnd.sample(["a", "b", "n.c", "zz"], rnd.randint(1, 3))]
            flt = {"$or": branches} if rnd.random() < 0.5 else dict(flt, **{"$or": branches})
        expected = sorted(d["_id"] for d in db.r.find(flt).hint([("$natural", 1)]))
        for h in hints:
            cur = db.r.find(flt)
            if h is not None:
                cur = cur.hint(h if isinstance(h, str) else list(h.items()))
            got = sorted(d["_id"] for d in cur)
            assert got == expected, (flt, h)
        assert db.r.count_documents(flt) == len(expected), flt
        # Sorted by b (whose index is not multikey, so it can provide the order, backwards too).
        for direction in (1, -1):
            by_scan = [d.get("b") for d in db.r.find(flt).sort("b", direction).hint([("$natural", 1)])]
            by_plan = [d.get("b") for d in db.r.find(flt).sort("b", direction)]
            assert by_plan == by_scan, (flt, direction)


def test_null_equality_uses_index_and_finds_missing_fields(db):
    db.n.insert_many(
        [
            {"_id": 1, "a": None},
            {"_id": 2},
            {"_id": 3, "a": []},
            {"_id": 4, "a": [None, 5]},
            {"_id": 5, "a": 5},
            {"_id": 6, "a": {"b": None}},
        ]
    )
    db.n.create_index("a")
    e = find_explain(db.n, {"a": None})
    ix = ixscan(e["queryPlanner"]["winningPlan"])
    assert ix["indexBounds"] == {"a": ["[undefined, undefined]", "[null, null]"]}
    assert sorted(d["_id"] for d in db.n.find({"a": None})) == [1, 2, 4]
    assert sorted(d["_id"] for d in db.n.find({"a": {"$in": [None, 5]}})) == [1, 2, 4, 5]
    db.n.create_index("a.b")
    expected = sorted(d["_id"] for d in db.n.find({"a.b": None}).hint([("$natural", 1)]))
    assert sorted(d["_id"] for d in db.n.find({"a.b": None}).hint("a.b_1")) == expected
    assert sorted(d["_id"] for d in db.n.find({"a.b": None})) == expected
