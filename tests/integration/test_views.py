"""Read-only views (MongoDB 7.0): create/createView, listCollections and system.views, reads
through find/aggregate/count/distinct as pipeline concatenation (also over time-series
collections, with their rewrites beneath), writes refused, NamespaceExists, the definition's
checks (stages that write, cycles, depth), collMod and drop. Expected answers are computed
here from the documents, as MongoDB documents the view semantics."""

import datetime

import pytest
from pymongo.errors import OperationFailure

from conftest import command_error

DOCS = [{"_id": i, "g": i % 3, "x": i * 10, "tags": ["a", "b"] if i % 2 else ["c"]}
        for i in range(10)]


def names_and_types(db):
    r = db.command({"listCollections": 1})
    return {c["name"]: c for c in r["cursor"]["firstBatch"]}


@pytest.fixture
def src(db):
    db.src.insert_many(DOCS)
    return db


def test_create_view_lists_and_keeps_the_definition(src):
    pipeline = [{"$match": {"g": 1}}, {"$project": {"x": 1}}]
    assert src.command({"create": "v", "viewOn": "src", "pipeline": pipeline})["ok"] == 1
    entry = names_and_types(src)["v"]
    assert entry["type"] == "view"
    assert entry["options"] == {"viewOn": "src", "pipeline": pipeline}
    assert entry["info"] == {"readOnly": True}
    assert "idIndex" not in entry
    # MongoDB keeps the definition in <db>.system.views.
    assert list(src["system.views"].find({"_id": src.name + ".v"})) == [
        {"_id": src.name + ".v", "viewOn": "src", "pipeline": pipeline}]
    assert src.command({"dbStats": 1})["views"] == 1


def test_create_view_through_the_driver_helper(src):
    # pymongo's create_collection with viewOn, as db.createView in mongosh.
    src.create_collection("v", viewOn="src", pipeline=[{"$match": {"g": 2}}])
    assert sorted(d["_id"] for d in src.v.find()) == [i for i in range(10) if i % 3 == 2]


def test_find_through_a_view(src):
    src.create_collection("v", viewOn="src", pipeline=[{"$match": {"g": {"$ne": 0}}}])
    expected = [d for d in DOCS if d["g"] != 0]
    got = list(src.v.find({"x": {"$gte": 20}}, {"x": 1}).sort("x", -1).skip(1).limit(3))
    want = sorted((d for d in expected if d["x"] >= 20), key=lambda d: -d["x"])[1:4]
    assert got == [{"_id": d["_id"], "x": d["x"]} for d in want]
    assert src.v.find_one({"_id": 4}) == DOCS[4]
    assert src.v.find_one({"_id": 3}) is None  # g == 0: not in the view


def test_find_cursor_on_a_view_names_the_view_and_continues(src):
    src.create_collection("v", viewOn="src", pipeline=[])
    r = src.command({"find": "v", "batchSize": 3})
    assert r["cursor"]["ns"] == src.name + ".v"
    assert len(r["cursor"]["firstBatch"]) == 3
    seen = list(r["cursor"]["firstBatch"])
    cid = r["cursor"]["id"]
    while cid:
        more = src.command({"getMore": cid, "collection": "v", "batchSize": 3})
        assert more["cursor"]["ns"] == src.name + ".v"
        seen += more["cursor"]["nextBatch"]
        cid = more["cursor"]["id"]
    assert sorted(d["_id"] for d in seen) == list(range(10))


def test_aggregate_appends_to_the_view_pipeline(src):
    src.create_collection("v", viewOn="src", pipeline=[{"$match": {"x": {"$lt": 70}}},
                                                       {"$addFields": {"y": {"$add": ["$x", 1]}}}])
    got = list(src.v.aggregate([{"$group": {"_id": "$g", "s": {"$sum": "$y"}}},
                                {"$sort": {"_id": 1}}]))
    want = {}
    for d in DOCS:
        if d["x"] < 70:
            want[d["g"]] = want.get(d["g"], 0) + d["x"] + 1
    assert got == [{"_id": g, "s": s} for g, s in sorted(want.items())]
    r = src.command({"aggregate": "v", "pipeline": [], "cursor": {"batchSize": 2}})
    assert r["cursor"]["ns"] == src.name + ".v"


def test_count_and_distinct_through_a_view(src):
    src.create_collection("v", viewOn="src", pipeline=[{"$match": {"g": {"$in": [1, 2]}}}])
    in_view = [d for d in DOCS if d["g"] in (1, 2)]
    assert src.v.count_documents({}) == len(in_view)
    assert src.v.count_documents({"x": {"$gt": 40}}) == len([d for d in in_view if d["x"] > 40])
    r = src.command({"count": "v", "query": {"x": {"$gt": 10}}, "skip": 1, "limit": 3})
    assert r["n"] == min(3, len([d for d in in_view if d["x"] > 10]) - 1)
    assert src.command({"count": "v"})["n"] == len(in_view)
    assert src.v.distinct("g") == [1, 2]
    # Array values contribute their elements, as distinct on a collection.
    assert src.v.distinct("tags") == sorted({t for d in in_view for t in d["tags"]})
    assert src.v.distinct("tags", {"g": 1}) == sorted(
        {t for d in in_view if d["g"] == 1 for t in d["tags"]})


def test_count_and_distinct_through_a_view_keep_their_hint(src):
    src.create_collection("v", viewOn="src", pipeline=[])
    src.src.create_index("x")
    assert src.command({"count": "v", "query": {"x": {"$gt": 40}}, "hint": "x_1"})["n"] == \
        len([d for d in DOCS if d["x"] > 40])
    for cmd in ({"count": "v", "hint": "no_such_index"},
                {"distinct": "v", "key": "g", "hint": "no_such_index"}):
        code, _, msg = command_error(src, cmd)
        on_collection = command_error(src, {**cmd, next(iter(cmd)): "src"})
        assert code == on_collection[0], (cmd, msg, on_collection)


def test_view_on_a_view_composes_pipelines(src):
    src.create_collection("v1", viewOn="src", pipeline=[{"$match": {"g": 1}}])
    src.create_collection("v2", viewOn="v1", pipeline=[{"$project": {"_id": 1, "x": 1}},
                                                       {"$sort": {"x": -1}}])
    want = [{"_id": d["_id"], "x": d["x"]}
            for d in sorted((d for d in DOCS if d["g"] == 1), key=lambda d: -d["x"])]
    assert list(src.v2.find()) == want
    assert src.v2.count_documents({}) == len(want)


def test_view_on_a_missing_collection_reads_empty(db):
    db.create_collection("v", viewOn="nothing_here", pipeline=[])
    assert list(db.v.find()) == []
    assert db.v.count_documents({}) == 0
    db.nothing_here.insert_one({"_id": 1})
    assert list(db.v.find()) == [{"_id": 1}]


def test_view_over_a_time_series_collection(db):
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    rows = [{"t": base + datetime.timedelta(minutes=i), "m": i % 2, "v": i} for i in range(40)]
    db.w.insert_many(rows)
    db.create_collection("hot", viewOn="w", pipeline=[{"$match": {"v": {"$gte": 10}}}])
    got = list(db.hot.aggregate([{"$group": {"_id": "$m", "n": {"$sum": 1}, "s": {"$sum": "$v"}}},
                                 {"$sort": {"_id": 1}}]))
    want = [{"_id": m, "n": len([r for r in rows if r["m"] == m and r["v"] >= 10]),
             "s": sum(r["v"] for r in rows if r["m"] == m and r["v"] >= 10)} for m in (0, 1)]
    assert got == want
    assert db.hot.count_documents({"m": 1}) == want[1]["n"]
    assert db.hot.find_one({"v": 12}, {"_id": 0}) == {"t": rows[12]["t"], "m": 0, "v": 12}
    # Beneath the view the time-series read is still rewritten: the explain of the view is the
    # explain of the concatenated pipeline on the collection, reading buckets.
    group = {"$group": {"_id": "$m", "n": {"$sum": 1}}}
    on_view = db.command({"explain": {"aggregate": "hot", "pipeline": [group], "cursor": {}},
                          "verbosity": "queryPlanner"})
    direct = db.command({"explain": {"aggregate": "w", "pipeline": [
        {"$match": {"v": {"$gte": 10}}}, group], "cursor": {}}, "verbosity": "queryPlanner"})
    assert on_view["stages"] == direct["stages"]
    assert on_view["stages"][0]["$cursor"]["queryPlanner"]["namespace"] == \
        db.name + ".system.buckets.w"
    names = [next(iter(st)) for st in on_view["stages"]]
    assert "$_internalUnpackBucket" in names or "$_internalGroupFromControl" in names, names


def test_explain_of_a_find_on_a_view_shows_the_view_pipeline(src):
    src.create_collection("v", viewOn="src", pipeline=[{"$match": {"g": 1}}])
    exp = src.command({"explain": {"find": "v", "filter": {"x": {"$gt": 5}}},
                       "verbosity": "queryPlanner"})
    text = str(exp)
    assert src.name + ".src" in text
    assert "'g'" in text and "'x'" in text


@pytest.mark.parametrize("write", [
    lambda c: c.insert_one({"_id": 100}),
    lambda c: c.insert_many([{"_id": 100}, {"_id": 101}]),
    lambda c: c.update_one({"_id": 1}, {"$set": {"x": 0}}),
    lambda c: c.update_many({}, {"$set": {"x": 0}}),
    lambda c: c.replace_one({"_id": 1}, {"x": 0}),
    lambda c: c.delete_one({"_id": 1}),
    lambda c: c.delete_many({}),
    lambda c: c.find_one_and_update({"_id": 1}, {"$set": {"x": 0}}),
    lambda c: c.find_one_and_delete({"_id": 1}),
    lambda c: c.create_index("x"),
], ids=["insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one",
        "delete_many", "find_one_and_update", "find_one_and_delete", "create_index"])
def test_writes_to_a_view_are_refused(src, write):
    src.create_collection("v", viewOn="src", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        write(src.v)
    assert e.value.code == 166, e.value.details
    assert e.value.details["codeName"] == "CommandNotSupportedOnView"
    assert list(src.src.find().sort("_id", 1)) == DOCS  # nothing changed beneath


def test_namespace_exists_rules(src):
    pipeline = [{"$match": {"g": 1}}]
    src.create_collection("v", viewOn="src", pipeline=pipeline)
    # The same view again: ok (MongoDB 7.0); another definition by that name: 48.
    assert src.command({"create": "v", "viewOn": "src", "pipeline": pipeline})["ok"] == 1
    code, name, _ = command_error(src, {"create": "v", "viewOn": "src", "pipeline": []})
    assert (code, name) == (48, "NamespaceExists")
    code, _, _ = command_error(src, {"create": "v", "viewOn": "other", "pipeline": pipeline})
    assert code == 48
    # A collection where a view is, and a view where a collection is.
    code, _, _ = command_error(src, {"create": "v"})
    assert code == 48
    code, _, _ = command_error(src, {"create": "src", "viewOn": "v", "pipeline": []})
    assert code == 48
    code, _, _ = command_error(src, {"create": "v", "timeseries": {"timeField": "t"}})
    assert code == 48


@pytest.mark.parametrize("stage,code", [
    ({"$out": "elsewhere"}, 167),
    ({"$merge": {"into": "elsewhere"}}, 167),
    ({"$documents": [{"a": 1}]}, 73),
    ({"$noSuchStage": {}}, 40324),
])
def test_view_pipeline_checks(src, stage, code):
    got, _, msg = command_error(src, {"create": "v", "viewOn": "src", "pipeline": [stage]})
    assert got == code, msg
    assert "v" not in names_and_types(src)


def test_view_definition_types_and_options(src):
    code, _, _ = command_error(src, {"create": "v", "viewOn": 5, "pipeline": []})
    assert code == 14
    code, _, _ = command_error(src, {"create": "v", "viewOn": "src", "pipeline": {"$match": {}}})
    assert code == 14
    code, _, _ = command_error(src, {"create": "v", "viewOn": "src", "pipeline": [1]})
    assert code == 14
    code, _, _ = command_error(src, {"create": "v", "viewOn": "", "pipeline": []})
    assert code == 73
    code, _, msg = command_error(src, {"create": "v", "viewOn": "src", "pipeline": [],
                                       "capped": True, "size": 100})
    assert code == 72 and "capped" in msg
    # pipeline is optional: an empty one.
    assert src.command({"create": "v", "viewOn": "src"})["ok"] == 1
    assert names_and_types(src)["v"]["options"] == {"viewOn": "src", "pipeline": []}


def test_cycles_and_depth(db):
    db.create_collection("a", viewOn="b", pipeline=[])  # b does not exist yet
    code, name, msg = command_error(db, {"create": "b", "viewOn": "a", "pipeline": []})
    assert (code, name) == (5, "GraphContainsCycle"), msg
    code, _, _ = command_error(db, {"create": "self", "viewOn": "self", "pipeline": []})
    assert code == 5
    # A chain of 20 views is allowed; the 21st is too deep.
    db.base.insert_one({"_id": 1})
    prev = "base"
    for i in range(20):
        db.create_collection(f"d{i}", viewOn=prev, pipeline=[])
        prev = f"d{i}"
    assert list(db.d19.find()) == [{"_id": 1}]
    code, name, _ = command_error(db, {"create": "d20", "viewOn": "d19", "pipeline": []})
    assert (code, name) == (149, "ViewDepthLimitExceeded")


def test_collmod_of_a_view(src):
    src.create_collection("v", viewOn="src", pipeline=[{"$match": {"g": 0}}])
    src.create_collection("other", viewOn="src", pipeline=[{"$match": {"g": 2}}])
    assert src.command({"collMod": "v", "pipeline": [{"$match": {"g": 1}}]})["ok"] == 1
    assert sorted(d["_id"] for d in src.v.find()) == [d["_id"] for d in DOCS if d["g"] == 1]
    assert src.command({"collMod": "v", "viewOn": "other"})["ok"] == 1
    assert list(src.v.find()) == []  # g == 2 and g == 1: nothing
    entry = names_and_types(src)["v"]
    assert entry["options"] == {"viewOn": "other", "pipeline": [{"$match": {"g": 1}}]}
    assert src["system.views"].find_one({"_id": src.name + ".v"})["viewOn"] == "other"
    # A cycle through collMod, options views do not have, and views options on a collection.
    code, _, _ = command_error(src, {"collMod": "other", "viewOn": "v"})
    assert code == 5
    code, _, msg = command_error(src, {"collMod": "v", "validator": {"a": 1}})
    assert code == 72 and "validator" in msg
    code, _, msg = command_error(src, {"collMod": "src", "viewOn": "v"})
    assert code == 72 and "only supported on a view" in msg
    code, _, _ = command_error(src, {"collMod": "v", "pipeline": [{"$out": "x"}]})
    assert code == 167
    for bad in ({"viewOn": 5}, {"pipeline": {"$match": {}}}, {"pipeline": [1]}):
        code, _, msg = command_error(src, {"collMod": "v", **bad})
        assert code == 14, (bad, msg)
    assert names_and_types(src)["v"]["options"]["viewOn"] == "other"  # unchanged


def test_drop_a_view_keeps_its_collection(src):
    src.create_collection("v", viewOn="src", pipeline=[])
    assert src.command({"drop": "v"})["ok"] == 1
    assert "v" not in names_and_types(src)
    assert src["system.views"].find_one({"_id": src.name + ".v"}) is None
    assert src.src.count_documents({}) == len(DOCS)
    # The name is free again, for a collection this time.
    src.create_collection("v")
    src.v.insert_one({"_id": 1})
    assert list(src.v.find()) == [{"_id": 1}]


def test_find_options_aggregation_cannot_keep(src):
    src.create_collection("v", viewOn="src", pipeline=[])
    for extra in ({"min": {"_id": 1}}, {"max": {"_id": 1}}, {"returnKey": True},
                  {"showRecordId": True}, {"tailable": True}, {"noCursorTimeout": True},
                  {"sort": {"$natural": 1}}, {"singleBatch": True, "limit": 5}):
        code, name, msg = command_error(src, {"find": "v", **extra})
        assert (code, name) == (168, "InvalidPipelineOperator"), (extra, msg)
    # find's own checks come first, as on a collection.
    for extra in ({"skip": -1}, {"batchSize": -1}, {"limit": "x"}):
        got = command_error(src, {"find": "v", **extra})[:2]
        assert got == command_error(src, {"find": "src", **extra})[:2], extra
        assert got[0] in (2, 14), (extra, got)
    r = src.command({"find": "v", "singleBatch": True, "limit": 1})
    assert len(r["cursor"]["firstBatch"]) == 1 and r["cursor"]["id"] == 0


def test_stats_stages_on_a_view_are_refused(src):
    src.create_collection("v", viewOn="src", pipeline=[])
    for stage in ({"$collStats": {"storageStats": {}}}, {"$indexStats": {}}):
        code, _, _ = command_error(src, {"aggregate": "v", "pipeline": [stage], "cursor": {}})
        assert code == 166
    code, _, _ = command_error(src, {"listIndexes": "v"})
    assert code == 166


def test_views_survive_a_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    d = c.views_restart
    d.src.insert_many(DOCS)
    d.create_collection("v", viewOn="src", pipeline=[{"$match": {"g": 1}}])
    c.close()
    assert s.stop() == 0
    s.start()
    c = s.client()
    d = c.views_restart
    assert names_and_types(d)["v"]["type"] == "view"
    assert sorted(x["_id"] for x in d.v.find()) == [x["_id"] for x in DOCS if x["g"] == 1]
    c.close()


def test_lookup_union_with_and_graph_lookup_from_a_view(src):
    src.create_collection("odd", viewOn="src", pipeline=[{"$match": {"_id": {"$mod": [2, 1]}}},
                                                         {"$project": {"g": 1, "x": 1}}])
    src.keys.insert_many([{"_id": g, "k": g} for g in range(3)])
    got = list(src.keys.aggregate([
        {"$lookup": {"from": "odd", "localField": "k", "foreignField": "g", "as": "m"}},
        {"$project": {"ids": "$m._id"}}, {"$sort": {"_id": 1}}]))
    odd = [d for d in DOCS if d["_id"] % 2 == 1]
    assert got == [{"_id": g, "ids": [d["_id"] for d in odd if d["g"] == g]} for g in range(3)]
    # The pipeline form, with a let variable in the view's documents' match.
    got = list(src.keys.aggregate([
        {"$lookup": {"from": "odd", "let": {"k": "$k"}, "as": "m", "pipeline": [
            {"$match": {"$expr": {"$eq": ["$g", "$$k"]}}}, {"$count": "n"}]}},
        {"$sort": {"_id": 1}}]))
    assert [d["m"] for d in got] == [
        [{"n": len([d for d in odd if d["g"] == g])}] if any(d["g"] == g for d in odd) else []
        for g in range(3)]
    union = list(src.keys.aggregate([{"$project": {"_id": 1}},
                                     {"$unionWith": {"coll": "odd", "pipeline": [
                                         {"$project": {"_id": 1}}]}}]))
    assert sorted(d["_id"] for d in union) == sorted([0, 1, 2] + [d["_id"] for d in odd])
    # $graphLookup walks the view: from each key to the odd documents of its group.
    src.create_collection("chain", viewOn="src", pipeline=[
        {"$project": {"next": {"$add": ["$_id", 2]}}}])
    got = list(src.keys.aggregate([
        {"$match": {"_id": 1}},
        {"$graphLookup": {"from": "chain", "startWith": "$k", "connectFromField": "next",
                          "connectToField": "_id", "as": "reached"}}]))
    assert sorted(d["_id"] for d in got[0]["reached"]) == [1, 3, 5, 7, 9]


def test_lookup_from_a_view_over_a_time_series_collection(db):
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    db.w.insert_many([{"t": base + datetime.timedelta(minutes=i), "m": i % 3, "v": i}
                      for i in range(30)])
    db.create_collection("big", viewOn="w", pipeline=[{"$match": {"v": {"$gte": 20}}}])
    db.sensors.insert_many([{"_id": m} for m in range(3)])
    got = list(db.sensors.aggregate([
        {"$lookup": {"from": "big", "localField": "_id", "foreignField": "m", "as": "r"}},
        {"$project": {"n": {"$size": "$r"}}}, {"$sort": {"_id": 1}}]))
    assert got == [{"_id": m, "n": len([i for i in range(20, 30) if i % 3 == m])}
                   for m in range(3)]


def test_find_projection_operators_on_a_view_are_errors(src):
    # find on a view becomes a $project, where "tags.$" is no positional projection but a field
    # path with a '$' component, as in MongoDB: 16410, never a silently different document.
    src.create_collection("v", viewOn="src", pipeline=[])
    code, _, msg = command_error(src, {"find": "v", "filter": {"tags": "a"},
                                       "projection": {"tags.$": 1}})
    assert code == 16410, msg
    code, _, _ = command_error(src, {"aggregate": "src", "pipeline": [
        {"$project": {"a.$b": 1}}], "cursor": {}})
    assert code == 16410
    code, _, _ = command_error(src, {"aggregate": "src", "pipeline": [
        {"$addFields": {"a.$b": 1}}], "cursor": {}})
    assert code == 16410
    code, _, _ = command_error(src, {"find": "v", "projection": {"tags": {"$elemMatch": {}}}})
    assert code == 168


# -- views with collations read by other pipelines ------------------------------------------
def lookup_from(view):
    return {"$lookup": {"from": view, "localField": "s", "foreignField": "s", "as": "m"}}


def graph_lookup_from(view):
    return {"$graphLookup": {"from": view, "startWith": "$s", "connectFromField": "s",
                             "connectToField": "s", "as": "m"}}


def nested_lookup_from(outer, view):
    return {"$lookup": {"from": outer, "pipeline": [lookup_from(view)], "as": "r"}}


def test_other_pipelines_read_a_view_under_its_collation_only(db):
    """As MongoDB's views_collation jstest has it: a $lookup, $graphLookup or $unionWith may read
    a view only when the operation's collation (its own, its collection's default, or the view
    it runs on) is the view's; otherwise OptionNotSupportedOnView (167)."""
    db.create_collection("plain")
    db.create_collection("ci_coll", collation={"locale": "en", "strength": 2})
    db.create_collection("uk_coll", collation={"locale": "uk"})
    for c in ("plain", "ci_coll", "uk_coll"):
        db[c].insert_many([{"_id": 1, "s": "abc"}, {"_id": 2, "s": "ABC"}, {"_id": 3, "s": "x"}])
    db.command({"create": "simple_view", "viewOn": "uk_coll"})  # no collation: simple
    db.command({"create": "ci_view", "viewOn": "plain",
                "collation": {"locale": "en", "strength": 2}})

    def run(coll, stages, **extra):
        return db.command({"aggregate": coll, "pipeline": stages, "cursor": {}, **extra})

    def fails(coll, stages, **extra):
        code, _, _ = command_error(db, {"aggregate": coll, "pipeline": stages, "cursor": {},
                                        **extra})
        return code == 167

    for stage in (lookup_from("simple_view"), graph_lookup_from("simple_view"),
                  nested_lookup_from("plain", "simple_view"), {"$unionWith": "simple_view"}):
        assert run("plain", [stage])["ok"] == 1
        assert run("uk_coll", [stage], collation={"locale": "simple"})["ok"] == 1
        assert fails("plain", [stage], collation={"locale": "en"})
        assert fails("uk_coll", [stage])  # the collection's default is uk
    for stage in (lookup_from("ci_view"), graph_lookup_from("ci_view"),
                  nested_lookup_from("ci_coll", "ci_view"), {"$unionWith": "ci_view"}):
        assert run("ci_coll", [stage])["ok"] == 1
        assert run("plain", [stage], collation={"locale": "en", "strength": 2})["ok"] == 1
        assert fails("plain", [stage])
        assert fails("ci_coll", [stage], collation={"locale": "en", "strength": 3})
    # Views on both sides: their collations must agree.
    assert fails("ci_view", [lookup_from("simple_view")])
    assert fails("simple_view", [lookup_from("ci_view")])
    # The view's pipeline and the join compare under the shared collation: "abc" meets "ABC".
    out = run("ci_coll", [{"$match": {"_id": 1}}, lookup_from("ci_view")])["cursor"]["firstBatch"]
    assert sorted(m["_id"] for m in out[0]["m"]) == [1, 2]


def test_views_reading_views_must_share_their_collation(db):
    db.create_collection("plain")
    db.command({"create": "fil_view", "viewOn": "plain", "collation": {"locale": "fil"}})
    db.command({"create": "simple_view", "viewOn": "plain"})

    def create_fails(**cmd):
        code, _, _ = command_error(db, {"create": "new_view", **cmd})
        return code == 167

    # Whatever the new view reads by viewOn, $lookup (nested too), $graphLookup or $unionWith.
    assert create_fails(viewOn="fil_view", collation={"locale": "zh"})
    for stage in (lookup_from("fil_view"), nested_lookup_from("plain", "fil_view"),
                  graph_lookup_from("simple_view"), {"$unionWith": "fil_view"},
                  {"$facet": {"f": [lookup_from("fil_view")]}}):
        assert create_fails(viewOn="plain", pipeline=[stage], collation={"locale": "zh"}), stage
    db.command({"create": "zh_view", "viewOn": "plain", "pipeline": [lookup_from("plain")],
                "collation": {"locale": "zh"}})
    # A view's own $lookup joins as it reads.
    db.plain.insert_many([{"_id": 1, "s": "a"}, {"_id": 2, "s": "a"}])
    assert [len(d["m"]) for d in db.zh_view.find()] == [2, 2]
    # collMod keeps the view's collation and checks the new definition the same way.
    code, _, _ = command_error(db, {"collMod": "zh_view", "viewOn": "plain",
                                    "pipeline": [lookup_from("simple_view")]})
    assert code == 167
    # A view that others read cannot come back with another collation.
    db.command({"create": "fil_view2", "viewOn": "fil_view", "collation": {"locale": "fil"}})
    db.command({"create": "reader", "viewOn": "plain", "pipeline": [graph_lookup_from("fil_view")],
                "collation": {"locale": "fil"}})
    db.drop_collection("fil_view")
    assert command_error(db, {"create": "fil_view", "viewOn": "plain"})[0] == 167
    assert command_error(db, {"create": "fil_view", "viewOn": "plain",
                              "collation": {"locale": "en"}})[0] == 167
    db.command({"create": "fil_view", "viewOn": "plain", "collation": {"locale": "fil"}})
