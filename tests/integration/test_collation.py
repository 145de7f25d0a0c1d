"""Collations on reads and writes of collections (MongoDB's `collation` option, ICU's orders): find
filters and sorts, count, update, delete, findAndModify and aggregates of $match/$sort/$group by a
constant. The expected orders are the languages' own (CLDR, as MongoDB's ICU collations give
them), written out here, not read back from the server."""

import datetime

import pytest
from pymongo.collation import Collation
from pymongo.errors import OperationFailure

from conftest import command_error

WORDS = ["cote", "côte", "coté", "côté", "Apple", "apple", "banana", "10", "9", "100",
         "Müller", "Muetze", "Mueller", "e-mail", "email"]


@pytest.fixture
def words(db):
    db.w.insert_many([{"_id": i, "s": s} for i, s in enumerate(WORDS)])
    db.w.create_index("s")  # an index orders strings by bytes: collated reads must not trust it
    return db.w


def ordered(coll, filt, collation, **kw):
    return [d["s"] for d in coll.find(filt, collation=collation, **kw).sort("s", 1)]


def test_french_canadian_orders_accents_from_the_end(words):
    got = ordered(words, {"s": {"$in": ["cote", "côte", "coté", "côté"]}}, Collation("fr_CA"))
    assert got == ["cote", "côte", "coté", "côté"]
    # English (and the simple collation) order by the first accent.
    assert ordered(words, {"s": {"$in": ["cote", "côte", "coté", "côté"]}}, Collation("en")) == [
        "cote", "coté", "côte", "côté"]


def test_german_phonebook_reads_umlauts_as_e(words):
    flt = {"s": {"$regex": "^M"}}
    assert ordered(words, flt, Collation("de@collation=phonebook")) == [
        "Mueller", "Müller", "Muetze"]
    assert ordered(words, flt, Collation("de")) == ["Mueller", "Muetze", "Müller"]


def test_numeric_ordering(words):
    flt = {"s": {"$in": ["10", "9", "100"]}}
    assert ordered(words, flt, Collation("en", numericOrdering=True)) == ["9", "10", "100"]
    assert ordered(words, flt, Collation("en")) == ["10", "100", "9"]
    # Range predicates compare under it too.
    got = ordered(words, {"s": {"$gt": "9", "$lt": "99"}}, Collation("en", numericOrdering=True))
    assert got == ["10"]


def test_strength_decides_equality(words):
    assert sorted(d["_id"] for d in words.find({"s": "APPLE"}, collation=Collation("en", strength=2))) == [4, 5]
    assert list(words.find({"s": "APPLE"}, collation=Collation("en", strength=3))) == []
    assert list(words.find({"s": "APPLE"})) == []  # no collation: bytes
    got = sorted(d["s"] for d in words.find({"s": "COTE"}, collation=Collation("fr", strength=1)))
    assert got == sorted(["cote", "côte", "coté", "côté"])
    assert [d["s"] for d in words.find({"s": {"$in": ["BANANA"]}},
                                       collation=Collation("en", strength=1))] == ["banana"]


def test_case_first_and_alternate(words):
    flt = {"s": {"$in": ["Apple", "apple"]}}
    assert ordered(words, flt, Collation("en", caseFirst="upper")) == ["Apple", "apple"]
    assert ordered(words, flt, Collation("en", caseFirst="lower")) == ["apple", "Apple"]
    shifted = Collation("en", alternate="shifted")
    assert sorted(d["s"] for d in words.find({"s": "email"}, collation=shifted)) == [
        "e-mail", "email"]


def test_japanese_kana(db):
    db.j.insert_many([{"s": s} for s in ["あ", "ア", "い"]])
    ja1 = Collation("ja", strength=1)
    assert sorted(d["s"] for d in db.j.find({"s": "あ"}, collation=ja1)) == ["あ", "ア"]
    # Japanese tells hiragana from katakana at the quaternary level only.
    assert sorted(d["s"] for d in db.j.find({"s": "あ"}, collation=Collation("ja"))) == ["あ", "ア"]
    assert [d["s"] for d in db.j.find({"s": "あ"}, collation=Collation("ja", strength=4))] == ["あ"]


def test_strings_inside_arrays_and_objects(db):
    db.n.insert_many([{"_id": 1, "tags": ["X", "b"]}, {"_id": 2, "o": {"k": "ABC"}},
                      {"_id": 3, "tags": ["a"]}])
    ci = Collation("en", strength=2)
    assert [d["_id"] for d in db.n.find({"tags": "x"}, collation=ci)] == [1]
    assert [d["_id"] for d in db.n.find({"o": {"k": "abc"}}, collation=ci)] == [2]
    # Sorting by an array takes its least element under the collation: "a" < "b".
    got = [d["_id"] for d in db.n.find({"tags": {"$exists": True}}, collation=ci).sort("tags", 1)]
    assert got == [3, 1]


def test_count_and_count_documents(words):
    ci = Collation("en", strength=2)
    assert words.count_documents({"s": "APPLE"}, collation=ci) == 2
    assert words.database.command({"count": "w", "query": {"s": "BANANA"},
                                   "collation": ci.document})["n"] == 1


def test_writes_under_a_collation(words):
    ci = Collation("en", strength=2)
    r = words.update_many({"s": "APPLE"}, {"$set": {"hit": 1}}, collation=ci)
    assert (r.matched_count, r.modified_count) == (2, 2)
    doc = words.find_one_and_update({"s": "APPLE"}, {"$inc": {"hit": 1}}, collation=ci,
                                    sort=[("s", -1)], return_document=True)
    # Descending under en tertiary: "Apple" after "apple", so it is the first one.
    assert doc["s"] == "Apple" and doc["hit"] == 2
    assert words.delete_one({"s": "BANANA"}, collation=ci).deleted_count == 1
    assert words.delete_many({"s": "COTE"}, collation=Collation("fr", strength=1)).deleted_count == 4
    assert words.count_documents({}) == len(WORDS) - 5
    # An upsert under a collation that matches nothing inserts.
    r = words.update_one({"s": "cherry"}, {"$set": {"n": 1}}, upsert=True, collation=ci)
    assert r.upserted_id is not None


def test_update_operators_compare_under_the_collation(db):
    ci = Collation("en", strength=2)
    db.u.insert_one({"_id": 1, "tags": ["Red", "blue"], "m": "Mango",
                     "items": [{"k": "A", "n": 1}, {"k": "b", "n": 2}]})
    db.u.update_one({"_id": 1}, {"$addToSet": {"tags": {"$each": ["RED", "green"]}}},
                    collation=ci)
    assert db.u.find_one()["tags"] == ["Red", "blue", "green"]  # RED is Red
    db.u.update_one({"_id": 1}, {"$pull": {"tags": "BLUE"}}, collation=ci)
    assert db.u.find_one()["tags"] == ["Red", "green"]
    db.u.update_one({"_id": 1}, {"$pull": {"tags": {"$in": ["GREEN"]}}}, collation=ci)
    db.u.update_one({"_id": 1}, {"$pullAll": {"tags": ["RED"]}}, collation=ci)
    assert db.u.find_one()["tags"] == []
    # $max of strings: under the collation "apple" < "Mango" < "zebra" whatever the case.
    db.u.update_one({"_id": 1}, {"$max": {"m": "apple"}}, collation=ci)
    assert db.u.find_one()["m"] == "Mango"  # bytes would put "apple" above "Mango"
    db.u.update_one({"_id": 1}, {"$max": {"m": "ZEBRA"}}, collation=ci)
    assert db.u.find_one()["m"] == "ZEBRA"
    db.u.update_one({"_id": 1}, {"$push": {"tags": {"$each": ["b", "A", "c"], "$sort": 1}}},
                    collation=ci)
    assert db.u.find_one()["tags"] == ["A", "b", "c"]
    db.u.update_one({"_id": 1}, {"$set": {"items.$[x].n": 0}},
                    array_filters=[{"x.k": "a"}], collation=ci)
    assert [i["n"] for i in db.u.find_one()["items"]] == [0, 2]
    db.u.update_one({"_id": 1}, [{"$set": {"same": {"$eq": ["$m", "zebra"]}}}], collation=ci)
    assert db.u.find_one()["same"] is True
    doc = db.u.find_one_and_update({"_id": 1}, {"$addToSet": {"tags": "C"}}, collation=ci,
                                   return_document=True)
    assert doc["tags"] == ["A", "b", "c"]
    # Without the collation, bytes.
    db.u.update_one({"_id": 1}, {"$addToSet": {"tags": "C"}})
    assert db.u.find_one()["tags"] == ["A", "b", "c", "C"]


def test_distinct_counts_equal_strings_once(words):
    got = words.distinct("s", {"s": {"$in": ["APPLE", "BANANA", "COTE"]}},
                         collation=Collation("fr", strength=1))
    assert len(got) == 3
    assert {g.lower()[0] for g in got} == {"a", "b", "c"}
    # Without a collation every spelling is its own value.
    assert sorted(words.distinct("s", {"s": {"$in": ["Apple", "apple"]}})) == ["Apple", "apple"]
    # Numbers order as numbers under numericOrdering.
    assert words.distinct("s", {"s": {"$in": ["10", "9", "100"]}},
                          collation=Collation("en", numericOrdering=True)) == ["9", "10", "100"]


def test_group_by_a_field_under_a_collation(words):
    got = list(words.aggregate([{"$match": {"s": {"$regex": "^[cC]"}}},
                                {"$group": {"_id": "$s", "n": {"$sum": 1}}}],
                               collation=Collation("fr", strength=1)))
    assert len(got) == 1 and got[0]["n"] == 4 and got[0]["_id"].lower().startswith("c")
    got = list(words.aggregate([{"$group": {"_id": {"w": "$s"}, "n": {"$sum": 1}}},
                                {"$match": {"_id.w": "APPLE"}}],
                               collation=Collation("en", strength=2)))
    assert [d["n"] for d in got] == [2]

def test_group_spilled_to_disk_merges_under_the_collation(client, db):
    db.many.insert_many([{"k": ["a", "A", "b", "B"][i % 4], "pad": "x" * 200}
                         for i in range(4000)])
    spills = lambda: client.admin.command("serverStatus")["metrics"]["query"]["group"]["spills"]
    before = spills()
    client.admin.command({"setParameter": 1, "internalDocumentSourceGroupMaxMemoryBytes": 100000})
    try:
        got = list(db.many.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1},
                                                  "p": {"$push": "$pad"}}},
                                      {"$project": {"n": 1}}, {"$sort": {"_id": 1}}],
                                     collation=Collation("en", strength=2), allowDiskUse=True))
    finally:
        client.admin.command({"setParameter": 1,
                              "internalDocumentSourceGroupMaxMemoryBytes": 104857600})
    assert spills() > before
    assert [(d["_id"].lower(), d["n"]) for d in got] == [("a", 2000), ("b", 2000)]


def test_aggregates_of_match_sort_and_constant_groups(words):
    ci = Collation("en", strength=2)
    got = list(words.aggregate([{"$match": {"s": "APPLE"}}, {"$sort": {"_id": -1}},
                                {"$project": {"s": 1}}], collation=ci))
    assert [d["_id"] for d in got] == [5, 4]
    got = list(words.aggregate([{"$match": {"s": {"$lte": "B"}}},
                                {"$group": {"_id": None, "n": {"$sum": 1}}}], collation=ci))
    # Digits order before letters; "banana" after "B".
    assert got == [{"_id": None, "n": 5}]


def test_expressions_compare_under_the_collation(db):
    db.e.insert_many([{"_id": 1, "s": "Apple", "t": "APPLE", "a": ["apple", "Banana"]},
                      {"_id": 2, "s": "cherry", "t": "Cherry", "a": ["CHERRY", "cherry"]}])
    ci = Collation("en", strength=2)
    proj = {"$project": {
        "eq": {"$eq": ["$s", "$t"]}, "cmp": {"$cmp": ["$s", "banana"]},
        "in": {"$in": ["APPLE", "$a"]}, "idx": {"$indexOfArray": ["$a", "BANANA"]},
        "union": {"$size": {"$setUnion": ["$a", []]}},
        "same": {"$setEquals": ["$a", ["APPLE", "banana"]]},
        "max": {"$max": ["$s", "BANANA"]}, "sorted": {"$sortArray": {"input": "$a", "sortBy": 1}},
        "min2": {"$minN": {"n": 1, "input": "$a"}}}}
    got = {d["_id"]: d for d in db.e.aggregate([proj, {"$sort": {"_id": 1}}], collation=ci)}
    assert got[1]["eq"] is True and got[2]["eq"] is True
    assert got[1]["cmp"] == -1 and got[2]["cmp"] == 1  # apple < banana < cherry
    assert got[1]["in"] is True and got[1]["idx"] == 1
    assert got[1]["union"] == 2 and got[2]["union"] == 1  # CHERRY and cherry are one member
    assert got[1]["same"] is True
    assert got[1]["max"] == "BANANA" and got[2]["max"] == "cherry"
    assert got[1]["sorted"] == ["apple", "Banana"] and got[1]["min2"] == ["apple"]
    # The simple collation compares bytes: "B" < "a", "APPLE" != "Apple".
    simple = {d["_id"]: d for d in db.e.aggregate([proj])}
    assert simple[1]["eq"] is False and simple[1]["in"] is False and simple[1]["idx"] == -1
    assert simple[2]["union"] == 2 and simple[1]["sorted"] == ["Banana", "apple"]
    # $expr in $match and in find.
    assert [d["_id"] for d in db.e.find({"$expr": {"$eq": ["$s", "$t"]}}, collation=ci)] == [1, 2]
    assert list(db.e.find({"$expr": {"$eq": ["$s", "$t"]}})) == []


def test_joins_and_sub_pipelines_compare_under_the_collation(db):
    db.orders.insert_many([{"_id": 1, "sku": "ABC"}, {"_id": 2, "sku": "xyz"}])
    db.items.insert_many([{"_id": "i1", "sku": "abc", "up": "ROOT"},
                          {"_id": "i2", "sku": "XYZ", "up": "i1"},
                          {"_id": "root", "sku": "none"}])
    ci = Collation("en", strength=2)
    lookup = {"$lookup": {"from": "items", "localField": "sku", "foreignField": "sku",
                          "as": "m"}}
    got = {d["_id"]: [m["_id"] for m in d["m"]]
           for d in db.orders.aggregate([lookup], collation=ci)}
    assert got == {1: ["i1"], 2: ["i2"]}
    assert all(not d["m"] for d in db.orders.aggregate([lookup]))  # bytes: no match
    with_pipeline = {"$lookup": {"from": "items", "let": {"s": "$sku"}, "as": "m", "pipeline": [
        {"$match": {"$expr": {"$eq": ["$sku", "$$s"]}}}]}}
    got = {d["_id"]: [m["_id"] for m in d["m"]]
           for d in db.orders.aggregate([with_pipeline], collation=ci)}
    assert got == {1: ["i1"], 2: ["i2"]}
    graph = {"$graphLookup": {"from": "items", "startWith": "$up", "connectFromField": "up",
                              "connectToField": "_id", "as": "chain"}}
    got = list(db.items.aggregate([{"$match": {"_id": "i2"}}, graph], collation=ci))
    assert sorted(c["_id"] for c in got[0]["chain"]) == ["i1", "root"]  # "ROOT" reaches "root"
    got = list(db.items.aggregate([{"$match": {"_id": "i2"}}, graph]))
    assert [c["_id"] for c in got[0]["chain"]] == ["i1"]
    union = [{"$match": {"sku": "ABC"}},
             {"$unionWith": {"coll": "items", "pipeline": [{"$match": {"sku": "ABC"}}]}}]
    assert sorted(str(d["_id"]) for d in db.orders.aggregate(union, collation=ci)) == ["1", "i1"]
    facet = [{"$facet": {"abc": [{"$match": {"sku": "abc"}}, {"$count": "n"}]}}]
    assert next(db.orders.aggregate(facet, collation=ci))["abc"] == [{"n": 1}]
    assert next(db.orders.aggregate(facet))["abc"] == []


def test_buckets_under_the_collation(db):
    db.bk.insert_many([{"s": v} for v in ["apple", "Banana", "cherry", "DATE", "egg"]])
    ci = Collation("en", strength=2)
    got = {b["_id"]: b["n"] for b in db.bk.aggregate([{"$bucket": {
        "groupBy": "$s", "boundaries": ["a", "c", "z"], "output": {"n": {"$sum": 1}}}}],
        collation=ci)}
    assert got == {"a": 2, "c": 3}  # Banana < c and DATE > c under the collation
    got = {b["_id"]: b["n"] for b in db.bk.aggregate([{"$bucket": {
        "groupBy": "$s", "boundaries": ["a", "c", "z"], "default": "~other",
        "output": {"n": {"$sum": 1}}}}])}
    assert got == {"a": 1, "c": 2, "~other": 2}  # bytes: "B" and "D" sort before "a"
    got = [(b["_id"]["min"], b["_id"]["max"]) for b in db.bk.aggregate(
        [{"$bucketAuto": {"groupBy": "$s", "buckets": 2}}], collation=ci)]
    # Sorted under the collation: apple Banana cherry | DATE egg (bytes start with "Banana").
    assert got == [("apple", "DATE"), ("DATE", "egg")]
    got = list(db.bk.aggregate([{"$bucketAuto": {"groupBy": "$s", "buckets": 2}}]))
    assert got[0]["_id"]["min"] == "Banana"


def test_windows_under_the_collation(db):
    db.wf.insert_many([{"_id": i, "p": p, "s": s} for i, (p, s) in enumerate(
        [("A", "pear"), ("a", "Apple"), ("A", "apple"), ("b", "Fig"), ("B", "fig")])])
    ci = Collation("en", strength=2)
    got = {d["_id"]: d for d in db.wf.aggregate([{"$setWindowFields": {
        "partitionBy": "$p", "sortBy": {"s": 1}, "output": {
            "rank": {"$rank": {}}, "n": {"$count": {}, "window": {"documents": [
                "unbounded", "unbounded"]}},
            "max": {"$max": "$s", "window": {"documents": [-1, 0]}},
            "set": {"$addToSet": "$s", "window": {"documents": ["unbounded", "unbounded"]}}}}}],
        collation=ci)}
    assert {i: got[i]["n"] for i in got} == {0: 3, 1: 3, 2: 3, 3: 2, 4: 2}  # A/a and b/B
    assert got[1]["rank"] == got[2]["rank"] == 1 and got[0]["rank"] == 3  # Apple ties apple
    assert got[0]["max"] == "pear"
    assert len(got[0]["set"]) == 2 and len(got[3]["set"]) == 1
    simple = {d["_id"]: d["n"] for d in db.wf.aggregate([{"$setWindowFields": {
        "partitionBy": "$p", "sortBy": {"s": 1}, "output": {"n": {"$count": {}, "window": {
            "documents": ["unbounded", "unbounded"]}}}}}])}
    assert simple == {0: 2, 1: 1, 2: 2, 3: 1, 4: 1}


def test_fill_and_densify_partitions_under_the_collation(db):
    db.fd.insert_many([{"_id": 1, "p": "A", "t": 1, "v": 10}, {"_id": 2, "p": "a", "t": 2},
                       {"_id": 3, "p": "B", "t": 1, "v": 5}, {"_id": 4, "p": "b", "t": 3}])
    ci = Collation("en", strength=2)
    fill = [{"$fill": {"partitionBy": "$p", "sortBy": {"t": 1},
                       "output": {"v": {"method": "locf"}}}}, {"$sort": {"_id": 1}}]
    assert [d.get("v") for d in db.fd.aggregate(fill, collation=ci)] == [10, 10, 5, 5]
    assert [d.get("v") for d in db.fd.aggregate(fill)] == [10, None, 5, None]
    densify = [{"$densify": {"field": "t", "partitionByFields": ["p"],
                             "range": {"step": 1, "bounds": "partition"}}}]
    got = list(db.fd.aggregate(densify, collation=ci))
    # One partition per letter: A/a fills nothing (1, 2), B/b fills t = 2.
    assert len(got) == 5
    assert len(list(db.fd.aggregate(densify))) == 4


def test_merge_matches_under_the_collation(db):
    ci = Collation("en", strength=2)
    db.create_collection("target", collation={"locale": "en", "strength": 2})
    db.target.insert_many([{"_id": "ABC", "n": 1}, {"_id": "xyz", "n": 2}])
    db.src.insert_many([{"_id": "abc", "n": 10}, {"_id": "new", "n": 3}])
    db.src.aggregate([{"$merge": {"into": "target", "whenMatched": "keepExisting"}}],
                     collation=ci)
    got = {d["_id"]: d["n"] for d in db.target.find()}
    assert got == {"ABC": 1, "xyz": 2, "new": 3}  # "abc" matched "ABC": nothing inserted
    # Another collation than the target's _id index: MongoDB cannot tell one match per key.
    code = command_error(db, {"aggregate": "src", "pipeline": [{"$merge": {"into": "target"}}],
                              "cursor": {}})[0]
    assert code == 51183
    # On other fields, a unique index of the aggregate's collation.
    db.tgt2.create_index("k", unique=True, collation={"locale": "en", "strength": 2})
    db.tgt2.insert_one({"_id": 1, "k": "Key", "v": 0})
    db.src2.insert_one({"_id": 9, "k": "KEY", "v": 5})
    db.src2.aggregate([{"$project": {"_id": 0}},
                       {"$merge": {"into": "tgt2", "on": "k", "whenMatched": "merge"}}],
                      collation=ci)
    assert list(db.tgt2.find({}, {"_id": 0})) == [{"k": "KEY", "v": 5}]
    code = command_error(db, {"aggregate": "src2", "pipeline": [
        {"$merge": {"into": "tgt2", "on": "k"}}], "cursor": {}})[0]
    assert code == 51183


def test_accumulators_compare_under_the_collation(db):
    db.g.insert_many([{"k": "a", "s": v} for v in ["pear", "Apple", "apple", "BANANA"]])
    ci = Collation("en", strength=2)
    got = next(db.g.aggregate([{"$group": {
        "_id": {"$toUpper": "$k"}, "min": {"$min": "$s"}, "max": {"$max": "$s"},
        "set": {"$addToSet": "$s"}, "top": {"$top": {"sortBy": {"s": 1}, "output": "$s"}},
        "maxN": {"$maxN": {"n": 2, "input": "$s"}}}}], collation=ci))
    assert got["min"] in ("Apple", "apple") and got["max"] == "pear"
    assert sorted(x.lower() for x in got["set"]) == ["apple", "banana", "pear"]
    assert got["top"] in ("Apple", "apple") and got["maxN"] == ["pear", "BANANA"]
    simple = next(db.g.aggregate([{"$group": {"_id": None, "min": {"$min": "$s"},
                                              "set": {"$addToSet": "$s"}}}]))
    assert simple["min"] == "Apple" and len(simple["set"]) == 4


@pytest.mark.parametrize("spec,code", [
    ({}, 4),                                      # locale missing
    ({"locale": 3}, 14),
    ({"locale": "en", "bogus": 1}, 9),
    ({"locale": "en", "strength": 6}, 9),
    ({"locale": "en", "strength": 1.5}, 2),
    ({"locale": "en", "caseFirst": "sideways"}, 9),
    ({"locale": "en", "numericOrdering": "yes"}, 14),
    ({"locale": "xx_US"}, 2),
    ({"locale": "en-US"}, 2),
    ({"locale": "simple", "strength": 2}, 9),
])
def test_bad_collations(db, spec, code):
    db.c.insert_one({"s": "a"})
    assert command_error(db, {"find": "c", "filter": {}, "collation": spec})[0] == code
    # Also where collations are not taken yet: the spec's own error comes first.
    assert command_error(db, {"distinct": "c", "key": "s", "collation": spec})[0] == code


def test_simple_collation_is_the_default(words):
    assert list(words.find({"s": "APPLE"}, collation=Collation("simple"))) == []
    assert [d["s"] for d in words.find({"s": {"$in": ["Apple", "apple"]}},
                                       collation=Collation("simple")).sort("s", 1)] == [
        "Apple", "apple"]


def test_min_max_strings_need_the_index_collation(db, words):
    # The index {s: 1} keys strings by their bytes: a string bound under another collation is
    # Location51174, as in MongoDB.
    ci = {"locale": "en", "strength": 2}
    cmd = {"find": "w", "filter": {"s": "a"}, "hint": {"s": 1}, "min": {"s": "a"}, "collation": ci}
    assert command_error(db, cmd)[0] == 51174


def test_return_key_of_a_collated_index_gives_its_collation_keys(db):
    # As MongoDB's: a collated index holds each string's sort key, and returnKey hands back those
    # bytes as the string (not UTF-8 in general: read here with surrogateescape).
    from bson.codec_options import CodecOptions
    ci = {"locale": "en", "strength": 2}
    db.rk.insert_many([{"_id": 1, "s": "abc"}, {"_id": 2, "s": "ABC"}, {"_id": 3, "s": "abd"},
                       {"_id": 4, "s": 7}])
    db.rk.create_index([("s", 1)], collation=ci)
    raw = db.get_collection("rk", codec_options=CodecOptions(
        unicode_decode_error_handler="surrogateescape"))
    keys = list(raw.find({}, collation=ci, return_key=True).hint([("s", 1)]))
    assert len(keys) == 4 and all(list(k) == ["s"] for k in keys)
    assert keys[0]["s"] == 7  # numbers before strings, and numbers are themselves
    strings = [k["s"] for k in keys[1:]]
    # "abc" and "ABC" share one key, "abd" sorts after it; none is the original text.
    assert strings[0] == strings[1] != strings[2]
    assert strings[0] < strings[2]
    assert not set(strings) & {"abc", "ABC", "abd"}


def test_time_series_commands_take_a_collation(db):
    # (tests/integration/test_timeseries_collation.py has the time-series rules in detail.)
    ci = {"locale": "en", "strength": 2}
    db.create_collection("ts", timeseries={"timeField": "t"})
    db.ts.insert_many([{"t": datetime.datetime(2024, 1, 1), "s": s} for s in ("a", "A", "b")])
    assert len(db.command({"find": "ts", "filter": {"s": "A"}, "collation": ci})[
        "cursor"]["firstBatch"]) == 2
    assert len(db.command({"distinct": "ts", "key": "s", "collation": ci})["values"]) == 2
    assert db.command({"count": "ts", "query": {"s": "A"}, "collation": ci})["n"] == 2
    groups = db.command({"aggregate": "ts", "pipeline": [{"$group": {"_id": "$s"}}],
                         "cursor": {}, "collation": ci})["cursor"]["firstBatch"]
    assert len(groups) == 2
    r = db.command({"delete": "ts", "deletes": [{"q": {"s": "A"}, "limit": 0, "collation": ci}]})
    assert r["n"] == 2
    assert [d["s"] for d in db.ts.find()] == ["b"]


def test_a_view_keeps_its_collation(db, words):
    # A view without a collation reads under the simple one; a read cannot override it (167).
    db.command({"create": "v", "viewOn": "w", "pipeline": [{"$match": {"_id": {"$lt": 6}}}]})
    ci = {"locale": "en", "strength": 2}
    for cmd in ({"find": "v", "filter": {"s": "APPLE"}, "collation": ci},
                {"aggregate": "v", "pipeline": [], "cursor": {}, "collation": ci},
                {"count": "v", "query": {}, "collation": ci},
                {"distinct": "v", "key": "s", "collation": ci}):
        code, name, msg = command_error(db, cmd)
        assert (code, name) == (167, "OptionNotSupportedOnView"), cmd
        assert "Cannot override a view's default collation" in msg
    assert db.v.count_documents({}) == 6


def test_views_with_a_collation(db, words):
    db.command({"create": "vc", "viewOn": "w", "pipeline": [], "collation": {"locale": "fr",
                                                                           "strength": 1}})
    info = db.command("listCollections", filter={"name": "vc"})["cursor"]["firstBatch"][0]
    assert info["type"] == "view"
    assert info["options"]["collation"] == {
        "locale": "fr", "caseLevel": False, "caseFirst": "off", "strength": 1,
        "numericOrdering": False, "alternate": "non-ignorable", "maxVariable": "punct",
        "normalization": False, "backwards": False, "version": "57.1"}
    view_doc = db["system.views"].find_one({"_id": db.name + ".vc"})
    assert view_doc["collation"]["locale"] == "fr"
    # Reads of the view compare under its collation, with or without repeating it.
    assert sorted(d["_id"] for d in db.vc.find({"s": "COTE"})) == [0, 1, 2, 3]
    assert db.vc.count_documents({"s": "COTE"}) == 4
    assert db.command({"count": "vc", "query": {"s": "APPLE"}})["n"] == 2
    # distinct over a view with a collation: strings it deems equal are one value.
    values = db.vc.distinct("s")
    assert len(values) == 11
    assert len([v for v in values if v.lower() == "apple"]) == 1
    assert len([v for v in values if v in ("cote", "côte", "coté", "côté")]) == 1
    assert "e-mail" in values and "email" in values  # punctuation counts (non-ignorable)
    fr1 = Collation("fr", strength=1)
    assert len(list(db.vc.find({"s": "cote"}, collation=fr1))) == 4
    # Another collation, or the simple one, is refused.
    for c in ({"locale": "en"}, {"locale": "simple"}):
        assert command_error(db, {"find": "vc", "filter": {}, "collation": c})[0] == 167
    # A view on it takes its collation; another one is refused.
    assert command_error(db, {"create": "vv", "viewOn": "vc", "pipeline": []})[0] == 167
    db.command({"create": "vv", "viewOn": "vc", "pipeline": [],
                "collation": {"locale": "fr", "strength": 1}})
    assert db.vv.count_documents({"s": "COTE"}) == 4
    # collMod keeps the collation.
    db.command({"collMod": "vc", "viewOn": "w", "pipeline": [{"$match": {"_id": {"$lt": 3}}}]})
    assert db.vc.count_documents({"s": "COTE"}) == 3
    # Other pipelines read the view only under its collation (OptionNotSupportedOnView).
    assert command_error(db, {"aggregate": "w", "pipeline": [
        {"$lookup": {"from": "vc", "localField": "s", "foreignField": "s", "as": "x"}}],
        "cursor": {}})[0] == 167
    # Expressions compare under it: one group per value the collation tells apart.
    groups = list(db.vc.aggregate([{"$group": {"_id": {"$substrCP": ["$s", 0, 4]}}}]))
    assert len([g for g in groups if g["_id"].lower() == "cote"]) == 1


def test_views_refuse_bad_collations(db, words):
    for collation, code in (({"locale": "xx"}, 2), (5, 14), ({"locale": "fr", "strength": 9}, 9)):
        cmd = {"create": "bad", "viewOn": "w", "pipeline": [], "collation": collation}
        assert command_error(db, cmd)[0] == code
    assert "bad" not in db.list_collection_names()
