"""Collections with a default collation and indexes with a collation, as MongoDB has them: the
collection's collation applies to every read and write that names none and to the indexes created
without one (the `_id` index too); an index keys its strings by their collation keys, so a unique
index refuses strings its collation deems equal, and a read uses an index's bounds on strings (and
its order) only under the index's own collation. Expected answers are the collations' own (ICU's,
as MongoDB's), written out here."""

import re

import pytest
from pymongo.collation import Collation
from pymongo.errors import DuplicateKeyError, OperationFailure

from conftest import command_error

CI = {"locale": "en", "strength": 2}  # case-insensitive
CI_SPEC = {"locale": "en", "caseLevel": False, "caseFirst": "off", "strength": 2,
           "numericOrdering": False, "alternate": "non-ignorable", "maxVariable": "punct",
           "normalization": False, "backwards": False, "version": "57.1"}


def winning_plan(cursor):
    return cursor.explain()["queryPlanner"]["winningPlan"]


def stages(plan):
    out = [plan["stage"]]
    while "inputStage" in plan:
        plan = plan["inputStage"]
        out.append(plan["stage"])
    return out


def ixscan(plan):
    """The index scan of a plan (IXSCAN, or COUNT_SCAN for a count over keys)."""
    while "indexName" not in plan:
        assert "inputStage" in plan, plan
        plan = plan["inputStage"]
    return plan


@pytest.fixture
def ci(db):
    """A collection whose default collation is case-insensitive English."""
    db.create_collection("ci", collation=CI)
    return db.ci


def test_default_collation_is_listed_and_taken_by_indexes(db, ci):
    info = next(db.list_collections(filter={"name": "ci"}))
    assert info["options"]["collation"] == CI_SPEC
    assert info["idIndex"]["collation"] == CI_SPEC
    ci.create_index("a")
    ci.create_index("b", collation={"locale": "simple"})
    ci.create_index([("c", 1)], collation={"locale": "fr"})
    specs = {s["name"]: s for s in ci.list_indexes()}
    assert specs["_id_"]["collation"] == CI_SPEC
    assert specs["a_1"]["collation"] == CI_SPEC  # inherited
    assert "collation" not in specs["b_1"]  # the simple collation is not listed
    assert specs["c_1"]["collation"]["locale"] == "fr"
    assert specs["c_1"]["collation"]["strength"] == 3  # normalized: every field
    # A regular collection without one lists none, nor do its indexes.
    db.plain.create_index("a")
    assert all("collation" not in s for s in db.plain.list_indexes())
    assert "collation" not in next(db.list_collections(filter={"name": "plain"}))["options"]


def test_create_again_with_the_same_collation_is_ok_another_is_namespace_exists(db, ci):
    db.command({"create": "ci", "collation": {"locale": "en", "strength": 2, "caseLevel": False}})
    for other in ({"locale": "en"}, {"locale": "simple"}, {"locale": "fr", "strength": 2}):
        assert command_error(db, {"create": "ci", "collation": other})[0] == 48, other
    assert command_error(db, {"create": "ci"})[0] == 48


def test_unique_indexes_refuse_strings_the_collation_deems_equal(ci):
    ci.create_index("email", unique=True)
    ci.insert_one({"_id": "abc", "email": "Ann@Example.com"})
    with pytest.raises(DuplicateKeyError) as e:
        ci.insert_one({"_id": 2, "email": "ann@example.COM"})
    d = e.value.details
    assert d["code"] == 11000
    assert d["keyPattern"] == {"email": 1}
    assert d["collation"] == CI_SPEC
    assert d["hexEncoded"] == [True]
    assert re.fullmatch(r"[0-9a-f]+", d["keyValue"]["email"])  # the collation key, in hex
    assert "index: email_1 collation: { locale: \"en\", caseLevel: false," in d["errmsg"]
    assert re.search(r'dup key: \{ email: "CollationKey\(0x[0-9a-f]+\)" \}', d["errmsg"])
    # The `_id` index has the collection's collation too.
    with pytest.raises(DuplicateKeyError) as e:
        ci.insert_one({"_id": "ABC", "email": "other@example.com"})
    assert e.value.details["keyPattern"] == {"_id": 1}
    # Strength 2 tells accents apart: these are other keys.
    ci.insert_one({"_id": "abç", "email": "ánn@example.com"})
    assert sorted(d["_id"] for d in ci.find()) == ["abc", "abç"]
    # An update into a taken key fails; the document is unchanged.
    with pytest.raises(DuplicateKeyError):
        ci.update_one({"_id": "abç"}, {"$set": {"email": "ANN@EXAMPLE.COM"}})
    assert ci.find_one({"_id": "abç"})["email"] == "ánn@example.com"


def test_reads_and_writes_without_a_collation_take_the_collection_default(db, ci):
    ci.insert_many([{"_id": 1, "s": "Apple"}, {"_id": 2, "s": "apple"},
                    {"_id": 3, "s": "BANANA"}, {"_id": 4, "s": "cherry"}])
    assert sorted(d["_id"] for d in ci.find({"s": "APPLE"})) == [1, 2]
    assert ci.count_documents({"s": "banana"}) == 1
    assert sorted(ci.distinct("s", {"s": {"$ne": "cherry"}}), key=str.lower)[0].lower() == "apple"
    assert len(ci.distinct("s")) == 3  # Apple and apple are one value
    assert [d["_id"] for d in ci.aggregate([{"$match": {"s": "Banana"}}])] == [3]
    # Sorted in the collation's order (bytes would put "BANANA" first).
    assert [d["s"].lower() for d in ci.find({}, sort=[("s", 1), ("_id", 1)])] == [
        "apple", "apple", "banana", "cherry"]
    # A read naming another collation uses that one.
    assert list(ci.find({"s": "APPLE"}, collation=Collation("simple"))) == []
    assert ci.count_documents({"s": "apple"}, collation=Collation("simple")) == 1
    # Writes too.
    assert ci.update_many({"s": "APPLE"}, {"$set": {"u": True}}).modified_count == 2
    assert ci.find_one_and_update({"s": "CHERRY"}, {"$set": {"v": 1}})["_id"] == 4
    assert ci.delete_many({"s": "banana"}).deleted_count == 1
    assert ci.delete_many({"s": "APPLE"}, collation=Collation("simple")).deleted_count == 0
    assert sorted(d["_id"] for d in ci.find({"u": True})) == [1, 2]


def test_a_view_does_not_inherit_the_collection_default(db, ci):
    ci.insert_many([{"_id": 1, "s": "Apple"}, {"_id": 2, "s": "apple"}])
    db.command({"create": "v", "viewOn": "ci", "pipeline": []})
    # MongoDB: a view's default collation is its own (simple here), not its collection's.
    assert [d["_id"] for d in db.v.find({"s": "apple"})] == [2]
    assert db.v.count_documents({"s": "APPLE"}) == 0


def test_index_bounds_on_strings_only_under_the_index_collation(ci):
    ci.create_index("s")
    ci.insert_many([{"_id": i, "s": s} for i, s in enumerate(["Hello", "hello", "World", 5])])
    plan = winning_plan(ci.find({"s": "HELLO"}))
    scan = ixscan(plan)
    assert scan["indexName"] == "s_1"
    assert re.fullmatch(r"\[CollationKey\(0x[0-9a-f]+\), CollationKey\(0x[0-9a-f]+\)\]",
                        scan["indexBounds"]["s"][0])
    assert sorted(d["_id"] for d in ci.find({"s": "HELLO"})) == [0, 1]
    # Under another collation the index cannot bound strings...
    plan = winning_plan(ci.find({"s": "HELLO"}, collation=Collation("simple")))
    assert "IXSCAN" not in stages(plan)
    assert list(ci.find({"s": "hello"}, collation=Collation("simple"))) == [{"_id": 1, "s": "hello"}]
    # ...but bounds numbers, whose order no collation changes.
    scan = ixscan(winning_plan(ci.find({"s": 5}, collation=Collation("simple"))))
    assert scan["indexBounds"]["s"] == ["[5, 5]"]
    assert [d["_id"] for d in ci.find({"s": 5}, collation=Collation("simple"))] == [3]
    # A hinted index under another collation scans all of it and still answers right.
    got = ci.find({"s": "hello"}, collation=Collation("simple")).hint("s_1")
    assert [d["_id"] for d in got] == [1]
    # A range on strings, under the index's collation.
    scan = ixscan(winning_plan(ci.find({"s": {"$gt": "hello"}})))
    assert scan["indexBounds"]["s"][0].startswith("(CollationKey(0x")
    assert scan["indexBounds"]["s"][0].endswith(", {})")
    assert [d["_id"] for d in ci.find({"s": {"$gt": "hello"}})] == [2]


def test_index_order_serves_sorts_only_under_its_collation(ci):
    ci.create_index("s")
    ci.insert_many([{"_id": i, "s": s} for i, s in enumerate(["banana", "Apple", "cherry"])])
    same = ci.find({}, sort=[("s", 1)]).hint("s_1")
    assert "SORT" not in stages(winning_plan(same))
    assert [d["s"] for d in same.clone()] == ["Apple", "banana", "cherry"]
    other = ci.find({}, sort=[("s", 1)], collation=Collation("simple")).hint("s_1")
    assert "SORT" in stages(winning_plan(other))
    assert [d["s"] for d in other.clone()] == ["Apple", "banana", "cherry"]  # bytes: "A" < "b"
    desc = ci.find({}, sort=[("s", -1)], collation=Collation("simple"))
    assert [d["s"] for d in desc] == ["cherry", "banana", "Apple"]


def test_one_key_pattern_under_two_collations_is_two_indexes(db):
    c = db.two
    c.insert_many([{"_id": 1, "x": "côte"}, {"_id": 2, "x": "COTE"}, {"_id": 3, "x": "coté"}])
    c.create_index([("x", 1)], name="x_fr", collation={"locale": "fr"})
    c.create_index([("x", 1)], name="x_ci", collation={"locale": "en", "strength": 1})
    assert sorted(s["name"] for s in c.list_indexes()) == ["_id_", "x_ci", "x_fr"]
    # Same key and collation under another name: 85; same name, another collation: 86.
    cmd = {"createIndexes": "two", "indexes": [
        {"key": {"x": 1}, "name": "x_fr2", "collation": {"locale": "fr"}}]}
    assert command_error(db, cmd)[0] == 85
    cmd = {"createIndexes": "two", "indexes": [
        {"key": {"x": 1}, "name": "x_fr", "collation": {"locale": "de"}}]}
    assert command_error(db, cmd)[0] == 86
    # Each read uses the index of its own collation.
    got = c.find({"x": "cote"}, collation=Collation("en", strength=1))
    assert ixscan(winning_plan(got))["indexName"] == "x_ci"
    assert sorted(d["_id"] for d in got.clone()) == [1, 2, 3]
    got = c.find({"x": "côte"}, collation=Collation("fr"))
    assert ixscan(winning_plan(got))["indexName"] == "x_fr"
    assert [d["_id"] for d in got.clone()] == [1]
    # A hint by key pattern that names both is refused; by name it works.
    code, _, msg = command_error(db, {"find": "two", "filter": {}, "hint": {"x": 1}})
    assert code == 2 and "must hint by index name" in msg
    assert len(list(c.find({}).hint("x_fr"))) == 3
    # So is a drop by that key pattern (AmbiguousIndexKeyPattern).
    assert command_error(db, {"dropIndexes": "two", "index": {"x": 1}})[0] == 181
    c.drop_index("x_fr")
    db.command({"dropIndexes": "two", "index": {"x": 1}})
    assert [s["name"] for s in c.list_indexes()] == ["_id_"]


def test_collated_index_reads_values_from_documents(ci):
    # Its keys are collation keys, not the strings: projections, distinct and counts still
    # answer with the documents' values.
    ci.create_index("s")
    ci.insert_many([{"_id": 1, "s": "Résumé"}, {"_id": 2, "s": "RÉSUMÉ"}, {"_id": 3, "s": "x"}])
    got = list(ci.find({"s": "résumé"}, {"s": 1, "_id": 0}).sort("s", 1))
    assert sorted(d["s"] for d in got) == ["RÉSUMÉ", "Résumé"]
    assert ci.count_documents({"s": "résumé"}) == 2
    values = ci.distinct("s")
    assert len(values) == 2 and "x" in values  # Résumé and RÉSUMÉ are one value at strength 2
    assert [v for v in values if v != "x"][0] in ("Résumé", "RÉSUMÉ")


def test_hashed_and_wildcard_indexes_under_a_collation(ci):
    ci.create_index([("h", "hashed")])
    ci.create_index([("w.$**", 1)])
    ci.insert_many([{"_id": 1, "h": "Key", "w": {"x": "Deep"}}, {"_id": 2, "h": "other", "w": {}}])
    plan = winning_plan(ci.find({"h": "KEY"}))
    assert ixscan(plan)["indexName"] == "h_hashed"
    assert [d["_id"] for d in ci.find({"h": "KEY"})] == [1]
    plan = winning_plan(ci.find({"w.x": "deep"}))
    assert ixscan(plan)["indexName"] == "w.$**_1"
    assert [d["_id"] for d in ci.find({"w.x": "deep"})] == [1]


def test_partial_index_only_under_its_collation(ci):
    ci.create_index("s", partialFilterExpression={"k": "yes"})
    ci.insert_many([{"_id": 1, "s": "A", "k": "YES"}, {"_id": 2, "s": "a", "k": "no"}])
    # The partial filter compares under the index's collation: "YES" is in the index.
    plan = winning_plan(ci.find({"s": "a", "k": "yes"}))
    assert ixscan(plan)["indexName"] == "s_1"
    assert [d["_id"] for d in ci.find({"s": "a", "k": "yes"})] == [1]
    # Under the simple collation, the index's content says nothing about the read's filter.
    plan = winning_plan(ci.find({"s": "a", "k": "yes"}, collation=Collation("simple")))
    assert "IXSCAN" not in stages(plan)
    assert list(ci.find({"s": "A", "k": "YES"}, collation=Collation("simple"))) == [
        {"_id": 1, "s": "A", "k": "YES"}]


def test_explain_plans_under_the_collation(db, ci):
    ci.create_index("s")
    ci.insert_many([{"_id": 1, "s": "A"}, {"_id": 2, "s": "b"}])

    def scan_of(inner):
        plan = db.command({"explain": inner, "verbosity": "queryPlanner"})
        if "stages" in plan:
            plan = plan["stages"][0]["$cursor"]
        return ixscan(plan["queryPlanner"]["winningPlan"])

    for inner in ({"count": "ci", "query": {"s": "a"}},
                  {"distinct": "ci", "key": "_id", "query": {"s": "a"}},
                  {"update": "ci", "updates": [{"q": {"s": "a"}, "u": {"$set": {"x": 1}}}]},
                  {"delete": "ci", "deletes": [{"q": {"s": "a"}, "limit": 1}]},
                  {"findAndModify": "ci", "query": {"s": "a"}, "remove": True},
                  {"aggregate": "ci", "pipeline": [{"$match": {"s": "a"}}, {"$project": {
                      "u": {"$toUpper": "$s"}}}], "cursor": {}}):
        scan = scan_of(inner)
        assert scan["indexName"] == "s_1", inner
        assert scan["indexBounds"]["s"][0].startswith("[CollationKey(0x"), inner
    # A statement's own collation is the one explained: the index cannot bound "a" under it.
    plan = db.command({"explain": {"delete": "ci", "deletes": [
        {"q": {"s": "a"}, "limit": 1, "collation": {"locale": "simple"}}]},
        "verbosity": "queryPlanner"})["queryPlanner"]["winningPlan"]
    assert "IXSCAN" not in stages(plan)
    # Executed, the counts are the collation's.
    stats = db.command({"explain": {"count": "ci", "query": {"s": "a"}},
                        "verbosity": "executionStats"})["executionStats"]
    assert stats["totalKeysExamined"] >= 1


def test_collations_survive_a_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    try:
        c.r.create_collection("ci", collation=CI)
        c.r.ci.create_index("e", unique=True)
        c.r.ci.insert_one({"_id": "k", "e": "Mail"})
    finally:
        c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    try:
        with pytest.raises(DuplicateKeyError):
            c.r.ci.insert_one({"e": "MAIL"})
        with pytest.raises(DuplicateKeyError):
            c.r.ci.insert_one({"_id": "K"})
        assert c.r.ci.find_one({"e": "mail"})["_id"] == "k"
        assert next(c.r.list_collections())["options"]["collation"] == CI_SPEC
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_clustered_collection_with_a_collation(db):
    # As MongoDB encodes a clustered collection's _id under its default collation: _id values
    # equal under it are duplicates, and _id reads compare under it.
    db.command({"create": "cl", "collation": CI, "clusteredIndex": {"key": {"_id": 1},
                                                                    "unique": True}})
    info = next(c for c in db.list_collections() if c["name"] == "cl")
    assert info["options"]["collation"]["strength"] == 2
    (clustered,) = [i for i in db.cl.list_indexes() if i.get("clustered")]
    assert clustered["collation"] == info["options"]["collation"]
    db.cl.insert_one({"_id": "abc", "v": 1})
    with pytest.raises(DuplicateKeyError):
        db.cl.insert_one({"_id": "ABC", "v": 2})
    assert [d["v"] for d in db.cl.find({"_id": "AbC"})] == [1]
    assert list(db.cl.find({"_id": "AbC"}, collation={"locale": "simple"})) == []
    db.cl.insert_many([{"_id": s} for s in ("b", "C", "a2")])
    assert [d["_id"] for d in db.cl.find({"_id": {"$type": "string"}}).sort("_id", 1)] == [
        "a2", "abc", "b", "C"]


def test_min_and_max_under_the_index_collation(db, ci):
    # As MongoDB: min/max bound a collated index under its collation when the read's is the
    # same; a string (or object) bound under another is Location51174. Numbers bound any.
    ci.insert_many([{"_id": i, "s": s, "n": i} for i, s in enumerate(["a", "B", "c", "D", "e"])])
    ci.create_index("s")
    ci.create_index("n", collation={"locale": "fr"})

    def find(**kw):
        return [d["s"] for d in db.command({"find": "ci", **kw})["cursor"]["firstBatch"]]

    assert find(hint="s_1", min={"s": "b"}, max={"s": "D"}) == ["B", "c"]
    assert find(hint="s_1", min={"s": "C"}) == ["c", "D", "e"]
    for cmd in ({"hint": "s_1", "min": {"s": "b"}, "collation": {"locale": "simple"}},
                {"hint": "n_1", "max": {"n": "x"}}):
        code, _, _ = command_error(db, {"find": "ci", **cmd})
        assert code == 51174, cmd
    assert find(hint="n_1", min={"n": 1}, max={"n": 3}) == ["B", "c"]
    assert find(hint="s_1", min={"s": "b"}, max={"s": "D"},
                collation={"locale": "en", "strength": 2}) == ["B", "c"]


def test_what_is_not_supported_yet_is_loud(db, ci):
    ci.create_index("s")
    ci.insert_one({"_id": 1, "s": "a"})
    for cmd in (
            {"createIndexes": "ci", "indexes": [{"key": {"s": "text"}, "name": "t"}]},
    ):
        assert command_error(db, cmd)[0] == 115, cmd
    # Time-series indexes take a collation, the metaField's and the measurements' alike.
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "k"})
    for f in ("m", "k"):
        db.command({"createIndexes": "ts", "indexes": [{"key": {f: 1}, "name": f,
                                                         "collation": CI}]})
    for inner in ({"find": "ts", "filter": {"s": "X"}, "collation": CI},
                  {"count": "ts", "query": {"s": "X"}, "collation": CI},
                  {"delete": "ts", "deletes": [{"q": {"s": "X"}, "limit": 0, "collation": CI}]}):
        assert db.command({"explain": inner})["ok"] == 1, inner
    # Bad collations are refused with the collation's own codes.
    assert command_error(db, {"create": "bad", "collation": {"locale": "en", "strength": 0}})[0] == 9
    assert command_error(db, {"create": "bad", "collation": {"strength": 2}})[0] == 4
    with pytest.raises(OperationFailure):
        db.create_collection("bad2", collation={"locale": "xx"})
