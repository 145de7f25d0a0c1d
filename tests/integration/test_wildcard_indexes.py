"""Wildcard indexes ({"$**": 1}, {"path.$**": 1}, wildcardProjection) on regular collections:
createIndexes/listIndexes/dropIndexes, the spec rejections with MongoDB 7.0's codes, reads that
use them (results identical to a collection scan), explain of their scans, maintenance by
writes, and what time-series collections answer.

Expected values follow MongoDB 7.0's manual (wildcard indexes, wildcardProjection, wildcard index
restrictions) and its error codes."""

import datetime
import random

import pytest
from bson import SON

from conftest import command_error
from test_explain import find_explain, ixscan, stages


def create(db, coll, *specs):
    return db.command({"createIndexes": coll, "indexes": list(specs)})


def listed(coll):
    return {ix["name"]: dict(ix) for ix in coll.list_indexes()}


# --- createIndexes / listIndexes / dropIndexes -----------------------------------------------

CREATE_CASES = [
    # (spec as given, name MongoDB gives or keeps, listed spec without v/name)
    ({"key": {"$**": 1}}, "$**_1", {"key": {"$**": 1}}),
    ({"key": {"$**": -1}}, "$**_-1", {"key": {"$**": -1}}),
    ({"key": {"a.b.$**": 1}}, "a.b.$**_1", {"key": {"a.b.$**": 1}}),
    (
        {"key": {"$**": 1}, "name": "incl", "wildcardProjection": {"a": 1, "b.c": True}},
        "incl",
        {"key": {"$**": 1}, "wildcardProjection": {"a": 1, "b.c": True}},
    ),
    (
        {"key": {"$**": 1}, "name": "excl", "wildcardProjection": {"a": 0, "_id": 1}},
        "excl",
        {"key": {"$**": 1}, "wildcardProjection": {"a": 0, "_id": 1}},
    ),
    (
        {"key": {"$**": 1}, "name": "part", "partialFilterExpression": {"x": {"$gt": 1}}},
        "part",
        {"key": {"$**": 1}, "partialFilterExpression": {"x": {"$gt": 1}}},
    ),
    ({"key": {"$**": 1}, "name": "hid", "hidden": True}, "hid", {"key": {"$**": 1}, "hidden": True}),
]


@pytest.mark.parametrize("spec,name,shown", CREATE_CASES, ids=[c[1] for c in CREATE_CASES])
def test_create_list_and_drop(db, spec, name, shown):
    db.c.insert_one({"_id": 1, "a": {"b": 1}})
    reply = create(db, "c", spec)
    assert (reply["numIndexesBefore"], reply["numIndexesAfter"]) == (1, 2)
    assert listed(db.c)[name] == {"v": 2, **{"key": shown["key"]}, "name": name,
                                  **{k: v for k, v in shown.items() if k != "key"}}
    again = create(db, "c", spec)
    assert again["note"] == "all indexes already exist"
    # Dropped by name, then (recreated) by key pattern.
    assert db.command("dropIndexes", "c", index=name)["nIndexesWas"] == 2
    assert name not in listed(db.c)
    create(db, "c", spec)
    db.command("dropIndexes", "c", index=spec["key"])
    assert name not in listed(db.c)


def test_same_key_with_other_projection_is_another_index(db):
    create(db, "c", {"key": {"$**": 1}, "name": "w1", "wildcardProjection": {"a": 1}})
    reply = create(db, "c", {"key": {"$**": 1}, "name": "w2", "wildcardProjection": {"b": 1}})
    assert reply["numIndexesAfter"] == 3
    assert {"w1", "w2"} <= set(listed(db.c))
    # Dropping by key pattern is then ambiguous: by name only.
    code, name, _ = command_error(db, {"dropIndexes": "c", "index": {"$**": 1}})
    assert (code, name) == (181, "AmbiguousIndexKeyPattern")
    db.command("dropIndexes", "c", index="w1")
    assert db.command("dropIndexes", "c", index={"$**": 1})["nIndexesWas"] == 2


REJECTIONS = [
    # (spec, code)
    ({"key": {"$**": 1}, "unique": True}, 67),
    ({"key": {"$**": 1}, "sparse": True}, 67),
    ({"key": {"a.$**": 1}, "expireAfterSeconds": 10}, 67),
    ({"key": {"a": 1}, "wildcardProjection": {"a": 1}}, 2),
    ({"key": {"a.$**": 1}, "wildcardProjection": {"a.b": 1}}, 9),
    ({"key": {"$**": 1}, "wildcardProjection": {}}, 9),
    ({"key": {"$**": 1}, "wildcardProjection": 5}, 14),
    ({"key": {"$**": 1}, "wildcardProjection": {"a": 1, "b": 0}}, 31254),
    ({"key": {"$**": 1}, "wildcardProjection": {"a": 0, "b": 1}}, 31253),
    ({"key": {"$**": 1}, "wildcardProjection": {"a": "yes"}}, 7246207),
    ({"key": {"$**": "hashed"}}, 67),
    ({"key": {"$**": 0}}, 67),
    ({"key": {"a.$**.b": 1}}, 67),
    ({"key": {"$**.a": 1}}, 67),
    ({"key": {"a.$**": 1, "b.$**": 1}}, 7246201),
    ({"key": {"a.$**": 1, "a.b": 1}}, 7246204),
    ({"key": {"$**": 1, "a": 1}}, 67),
    # Compound wildcard indexes (MongoDB 7.0) are not built yet.
    ({"key": {"a": 1, "b.$**": 1}}, 115),
    ({"key": {"$**": 1, "a": 1}, "wildcardProjection": {"b": 1}}, 115),
    # A wildcard text index is a text index: not supported yet.
    ({"key": {"$**": "text"}}, 115),
]


@pytest.mark.parametrize("spec,code", REJECTIONS, ids=[str(i) for i in range(len(REJECTIONS))])
def test_rejected_specs(db, spec, code):
    spec = dict(spec, name="w")
    got, _, _ = command_error(db, {"createIndexes": "c", "indexes": [spec]})
    assert got == code
    db.c.insert_one({"x": 1})
    assert "w" not in listed(db.c)


TIMESERIES_REJECTIONS = [
    # A measurement wildcard converts to control.min/control.max: two wildcard fields.
    ({"key": {"$**": 1}}, 7246201),
    ({"key": {"x.$**": 1}}, 7246201),
    ({"key": {"m.$**": 1}, "wildcardProjection": {"m.a": 1}}, 9),
    ({"key": {"m.$**": 1}, "sparse": True}, 67),
]


@pytest.mark.parametrize("spec,code", TIMESERIES_REJECTIONS, ids=["all", "measurement",
                                                                  "projection", "sparse"])
def test_timeseries_rejections(db, spec, code):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    got, _, _ = command_error(db, {"createIndexes": "ts", "indexes": [dict(spec, name="w")]})
    assert got == code


def test_timeseries_metafield_subtree(client, db):
    """{"m.$**": 1} on a time-series collection is {"meta.$**": 1} on its buckets."""
    t0 = datetime.datetime(2024, 1, 1)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([
        {"t": t0 + datetime.timedelta(seconds=j), "m": {"sensor": {"id": s, "kind": "ab"[s % 2]}},
         "v": s * 10 + j}
        for s in range(8) for j in range(5)
    ])
    reply = create(db, "ts", {"key": {"m.$**": 1}})
    assert reply["numIndexesAfter"] == reply["numIndexesBefore"] + 1
    assert listed(db.ts)["m.$**_1"]["key"] == {"m.$**": 1}
    assert listed(db["system.buckets.ts"])["m.$**_1"]["key"] == {"meta.$**": 1}

    def values(flt, **kw):
        return sorted(d["v"] for d in db.ts.find(flt, **kw))

    for flt in [{"m.sensor.id": 3}, {"m.sensor.id": {"$gte": 6}}, {"m.sensor.kind": "a"},
                {"m.sensor": {"$exists": True}}]:
        expected = values(flt, hint=[("$natural", 1)])
        assert expected
        assert values(flt) == expected
        assert values(flt, hint="m.$**_1") == expected
        assert values(flt, hint=[("m.$**", 1)]) == expected
    # Without the series index, a meta-subfield equality reads one bucket through the index.
    db.command({"collMod": "ts", "index": {"keyPattern": {"m": 1, "t": 1}, "hidden": True}})
    counters = lambda: client.admin.command("serverStatus")["hourglass"]["timeseries"]
    before = counters()["bucketsRead"]
    assert values({"m.sensor.id": 3}) == [30, 31, 32, 33, 34]
    assert counters()["bucketsRead"] - before == 1
    # Writes keep it in step.
    db.ts.insert_one({"t": t0, "m": {"sensor": {"id": 99}}, "v": -1})
    db.ts.delete_many({"m.sensor.id": 3})
    assert values({"m.sensor.id": 99}) == [-1]
    assert values({"m.sensor.id": 3}) == []
    assert values({"m.sensor.id": 3}, hint=[("$natural", 1)]) == []


# --- reads: identical to a collection scan --------------------------------------------------


def random_value(rng, depth):
    r = rng.random()
    if r < 0.35:
        return rng.randint(0, 9)
    if r < 0.5:
        return rng.choice(["s0", "s1", "s2", "m", "z"])
    if r < 0.55:
        return None
    if r < 0.6:
        return rng.choice([{}, [], True, 2.5])
    if depth >= 2:
        return rng.randint(0, 9)
    if r < 0.8:
        return {k: random_value(rng, depth + 1) for k in rng.sample(["b", "c", "d"], rng.randint(1, 3))}
    return [random_value(rng, depth + 1) for _ in range(rng.randint(1, 3))]


def random_docs(n, seed):
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        doc = {"_id": i}
        for f in rng.sample(["a", "arr", "c", "s", "e"], rng.randint(0, 5)):
            doc[f] = random_value(rng, 0)
        docs.append(doc)
    return docs


FILTERS = [
    {"a": 5},
    {"a.b": 3},
    {"a.b.c": "s1"},
    {"a": {"$gt": 3}},
    {"a.b": {"$gte": 2, "$lt": 6}},
    {"a": {"$in": [1, "s2", 7]}},
    {"s": {"$gt": "m"}},
    {"s": {"$lte": "s1"}},
    {"arr": 3},
    {"arr.b": {"$lt": 4}},
    {"c": {}},
    {"e": []},
    {"e": True},
    {"a": None},
    {"a.b": None},
    {"a": {"$exists": True}},
    {"a.b": {"$exists": True}},
    {"a": {"$exists": False}},
    {"a": {"$ne": 5}},
    {"a": {"$nin": [1, 2]}},
    {"a": {"b": 3}},
    {"arr": [1, 2]},
    {"arr": {"$elemMatch": {"$gt": 2, "$lt": 5}}},
    {"a": 5, "arr": 3},
    {"a": {"$gt": 2}, "c.b": {"$lt": 5}},
    {"$or": [{"a": 1}, {"c.d": "s0"}]},
    {"a": {"$in": []}},
    {"arr.0": 3},
    {"_id": 4},
]

INDEXES = [
    {"key": {"$**": 1}, "name": "all"},
    {"key": {"$**": -1}, "name": "desc"},
    {"key": {"a.$**": 1}, "name": "sub"},
    {"key": {"$**": 1}, "name": "incl", "wildcardProjection": {"a.b": 1, "arr": 1}},
    {"key": {"$**": 1}, "name": "excl", "wildcardProjection": {"c": 0, "_id": 1}},
]


@pytest.fixture(scope="module")
def twins(client):
    """One unindexed collection and, per wildcard index, a collection holding the same random
    documents; the index is built on the first half and maintained by the inserts of the rest."""
    db = client["wildcard_twins"]
    client.drop_database(db.name)
    docs = random_docs(400, seed=7)
    db.plain.insert_many(docs)
    for spec in INDEXES:
        coll = db["ix_" + spec["name"]]
        coll.insert_many(docs[:200])
        create(db, coll.name, spec)
        coll.insert_many(docs[200:])
    yield db
    client.drop_database(db.name)


@pytest.mark.parametrize("spec", INDEXES, ids=[s["name"] for s in INDEXES])
@pytest.mark.parametrize("flt", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_results_match_collection_scan(twins, spec, flt):
    expected = sorted(d["_id"] for d in twins.plain.find(flt))
    coll = twins["ix_" + spec["name"]]
    assert sorted(d["_id"] for d in coll.find(flt)) == expected
    assert coll.count_documents(flt) == len(expected)
    assert sorted(d["_id"] for d in coll.aggregate([{"$match": flt}])) == expected


def test_writes_maintain_the_index(db):
    create(db, "c", {"key": {"$**": 1}})
    db.c.insert_many([{"_id": i, "attrs": {"k": i % 5, "tags": ["x", i]}} for i in range(50)])
    db.c.update_many({"attrs.k": 2}, {"$set": {"attrs.k": 12, "attrs.new": True}})
    db.c.delete_many({"attrs.k": 3})
    db.c.replace_one({"_id": 0}, {"_id": 0, "other": {"k": 1}})
    checks = [
        ({"attrs.k": 2}, []),
        ({"attrs.k": 12}, [i for i in range(50) if i % 5 == 2]),
        ({"attrs.k": 3}, []),
        ({"attrs.new": True}, [i for i in range(50) if i % 5 == 2]),
        ({"attrs.tags": "x"}, [i for i in range(1, 50) if i % 5 != 3]),
        ({"other.k": 1}, [0]),
        ({"attrs.k": 0}, [5, 10, 15, 20, 25, 30, 35, 40, 45]),
    ]
    for flt, ids in checks:
        assert sorted(d["_id"] for d in db.c.find(flt)) == ids, flt
        assert sorted(d["_id"] for d in db.c.find(flt, hint="$**_1")) == ids, flt


# --- explain ---------------------------------------------------------------------------------


@pytest.fixture
def attrs(db):
    db.c.insert_many([{"_id": i, "attrs": {"k%d" % (i % 10): i}, "n": i} for i in range(100)])
    create(db, "c", {"key": {"$**": 1}})
    return db.c


EXPLAIN_CASES = [
    # (filter, $_path bounds, value bounds, keys examined, docs examined, returned)
    ({"attrs.k3": 13}, ['["attrs.k3", "attrs.k3"]'], ["[13, 13]"], 1, 1, 1),
    ({"attrs.k3": {"$gte": 50}}, ['["attrs.k3", "attrs.k3"]'], ["[50, inf.0]"], 5, 5, 5),
    ({"attrs.k3": {"$in": [3, 23, 1000]}}, ['["attrs.k3", "attrs.k3"]'],
     ["[3, 3]", "[23, 23]", "[1000, 1000]"], 2, 2, 2),
    ({"attrs.k3": {"$exists": True}}, ['["attrs.k3", "attrs.k3"]', '["attrs.k3.", "attrs.k3/")'],
     ["[MinKey, MaxKey]"], 10, 10, 10),
]


@pytest.mark.parametrize("flt,paths,values,keys,docs,n", EXPLAIN_CASES,
                         ids=["eq", "range", "in", "exists"])
def test_explain_shows_the_path_bounds(attrs, flt, paths, values, keys, docs, n):
    e = find_explain(attrs, flt)
    plan = e["queryPlanner"]["winningPlan"]
    assert stages(plan) == ["FETCH", "IXSCAN"]
    scan = ixscan(plan)
    assert scan["indexName"] == "$**_1"
    assert list(scan["keyPattern"].items()) == [("$_path", 1), ("attrs.k3", 1)]
    assert scan["indexBounds"] == {"$_path": paths, "attrs.k3": values}
    st = e["executionStats"]
    assert (st["totalKeysExamined"], st["totalDocsExamined"], st["nReturned"]) == (keys, docs, n)


@pytest.mark.parametrize("flt", [
    {"attrs.k3": None},
    {"attrs.k3": {"$exists": False}},
    {"attrs.k3": {"$ne": 3}},
    {"attrs": {"k3": 3}},
    {"attrs.k3": {"$regex": "^x"}},
    {"_id": {"$gt": -1}, "n": {"$type": "int"}},
], ids=["null", "not-exists", "ne", "object", "regex", "id"])
def test_predicates_the_index_cannot_answer_do_not_use_it(attrs, flt):
    plan = find_explain(attrs, flt)["queryPlanner"]["winningPlan"]
    assert "$**_1" not in str(plan)


def test_projection_decides_which_fields_use_the_index(db):
    db.c.insert_many([{"_id": i, "pub": i, "secret": i, "sub": {"x": i}} for i in range(20)])
    create(db, "c", {"key": {"$**": 1}, "name": "w", "wildcardProjection": {"secret": 0}})
    create(db, "c", {"key": {"sub.$**": 1}, "name": "s"})
    assert ixscan(find_explain(db.c, {"pub": 5})["queryPlanner"]["winningPlan"])["indexName"] == "w"
    assert stages(find_explain(db.c, {"secret": 5})["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
    assert stages(find_explain(db.c, {"_id": 5})["queryPlanner"]["winningPlan"]) != ["COLLSCAN"]
    e = find_explain(db.c, {"sub.x": 5}, "allPlansExecution")
    names = {ixscan(p)["indexName"] for p in
             [e["queryPlanner"]["winningPlan"]] + e["queryPlanner"]["rejectedPlans"]}
    assert names == {"w", "s"}
    assert [d["_id"] for d in db.c.find({"sub.x": 5})] == [5]


def test_hint_by_name_and_key_pattern(attrs):
    for hint in ("$**_1", {"$**": 1}):
        e = find_explain(attrs, {"attrs.k3": 13, "n": 13}, hint=hint)
        assert ixscan(e["queryPlanner"]["winningPlan"])["indexName"] == "$**_1"
        assert e["executionStats"]["nReturned"] == 1
    # A hinted wildcard index needs a filter field it can answer.
    code, _, _ = command_error(attrs.database, {"find": "c", "filter": {}, "hint": "$**_1"})
    assert code == 2
    code, _, _ = command_error(attrs.database,
                               {"find": "c", "filter": {"attrs.k3": None}, "hint": "$**_1"})
    assert code == 2


def test_ranges_intersect_until_the_path_holds_an_array(attrs):
    e = find_explain(attrs, {"attrs.k3": {"$gt": 10, "$lt": 50}})
    scan = ixscan(e["queryPlanner"]["winningPlan"])
    assert scan["indexBounds"]["attrs.k3"] == ["(10, 50)"]
    assert scan["isMultiKey"] is False
    assert scan["multiKeyPaths"] == {"$_path": [], "attrs.k3": []}
    assert (e["executionStats"]["totalKeysExamined"], e["executionStats"]["nReturned"]) == (4, 4)
    attrs.insert_one({"_id": 1000, "attrs": {"k3": [5, 60]}, "n": -1})
    e = find_explain(attrs, {"attrs.k3": {"$gt": 10, "$lt": 50}})
    scan = ixscan(e["queryPlanner"]["winningPlan"])
    assert scan["indexBounds"]["attrs.k3"] == ["(10, inf.0]"]
    assert scan["isMultiKey"] is True
    assert scan["multiKeyPaths"] == {"$_path": [], "attrs.k3": ["attrs.k3"]}
    # [5, 60] has one element above 10 and one below 50: it matches.
    assert sorted(d["n"] for d in attrs.find({"attrs.k3": {"$gt": 10, "$lt": 50}})) == \
        [-1, 13, 23, 33, 43]
    # Other paths are still not multikey.
    assert ixscan(find_explain(attrs, {"attrs.k4": 4})["queryPlanner"]["winningPlan"])[
        "isMultiKey"] is False


def test_sort_on_the_queried_path(attrs):
    e = find_explain(attrs, {"attrs.k4": {"$gt": 10}}, sort={"attrs.k4": -1})
    plan = e["queryPlanner"]["winningPlan"]
    assert "SORT" not in stages(plan)
    assert ixscan(plan)["direction"] == "backward"
    got = [d["n"] for d in attrs.find({"attrs.k4": {"$gt": 10}}).sort("attrs.k4", -1)]
    assert got == [94, 84, 74, 64, 54, 44, 34, 24, 14]
    # Not for another field, nor once the path holds an array.
    plan = find_explain(attrs, {"attrs.k4": {"$gt": 10}}, sort={"n": 1})["queryPlanner"][
        "winningPlan"]
    assert "SORT" in stages(plan)
    attrs.insert_one({"_id": 1000, "attrs": {"k4": [1, 95]}, "n": -1})
    plan = find_explain(attrs, {"attrs.k4": {"$gt": 10}}, sort={"attrs.k4": -1})[
        "queryPlanner"]["winningPlan"]
    assert "SORT" in stages(plan)
    got = [d["n"] for d in attrs.find({"attrs.k4": {"$gt": 10}}).sort("attrs.k4", -1)]
    assert got == [-1, 94, 84, 74, 64, 54, 44, 34, 24, 14]


def test_index_stats_count_wildcard_use(attrs):
    attrs.find_one({"attrs.k1": 11})
    list(attrs.find({"attrs.k2": {"$gt": 0}}))
    find_explain(attrs, {"attrs.k1": 11})  # explain does not count
    stats = {s["name"]: s for s in attrs.aggregate([{"$indexStats": {}}])}
    assert stats["$**_1"]["accesses"]["ops"] == 2
    assert stats["$**_1"]["key"] == {"$**": 1}


def test_plan_cache_keeps_the_path(db):
    # Two fields, both covered: the cached plan must read the path the trial chose.
    db.c.insert_many([{"_id": i, "a": i % 2, "b": i} for i in range(300)])
    create(db, "c", {"key": {"$**": 1}})
    for _ in range(3):
        assert [d["_id"] for d in db.c.find({"a": 1, "b": 7})] == [7]
    e = find_explain(db.c, {"a": 1, "b": 7})
    assert list(ixscan(e["queryPlanner"]["winningPlan"])["keyPattern"]) == ["$_path", "b"]
    assert e["executionStats"]["totalKeysExamined"] == 1


def test_update_and_delete_use_it(db):
    db.c.insert_many([{"_id": i, "m": {"v": i}} for i in range(30)])
    create(db, "c", {"key": {"m.$**": 1}})
    assert db.c.update_many({"m.v": {"$lt": 5}}, {"$inc": {"m.v": 100}}).modified_count == 5
    assert db.c.delete_many({"m.v": {"$gte": 100}}).deleted_count == 5
    assert db.c.count_documents({"m.v": {"$gte": 0}}) == 25
    e = db.command(SON([("explain", {"delete": "c", "deletes": [{"q": {"m.v": 7}, "limit": 0}]}),
                        ("verbosity", "queryPlanner")]))
    assert "m.$**_1" in str(e["queryPlanner"]["winningPlan"])


def test_index_survives_a_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    try:
        db = c.wildcard_restart
        db.c.insert_many([{"_id": i, "p": {"q": i % 3}, "hide": i} for i in range(30)])
        db.c.insert_one({"_id": 100, "arr": {"x": [1, 2]}})
        create(db, "c", {"key": {"$**": 1}, "name": "w", "wildcardProjection": {"hide": 0}})
    finally:
        c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    try:
        db = c.wildcard_restart
        assert listed(db.c)["w"]["wildcardProjection"] == {"hide": 0}
        db.c.insert_one({"_id": 30, "p": {"q": 1}})
        e = find_explain(db.c, {"p.q": 1})
        assert ixscan(e["queryPlanner"]["winningPlan"])["indexName"] == "w"
        assert e["executionStats"]["nReturned"] == 11
        assert stages(find_explain(db.c, {"hide": 1})["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
        # Which paths are multikey is kept too.
        scan = ixscan(find_explain(db.c, {"arr.x": 1})["queryPlanner"]["winningPlan"])
        assert (scan["isMultiKey"], scan["multiKeyPaths"]["arr.x"]) == (True, ["arr.x"])
        scan = ixscan(find_explain(db.c, {"p.q": 1})["queryPlanner"]["winningPlan"])
        assert scan["isMultiKey"] is False
    finally:
        c.close()
    assert s.shutdown_command() == 0
