"""The query language on a regular collection: filters (find, count, delete, aggregate $match),
update operators (update, findAndModify), positional paths and arrayFilters, pipeline-style
updates, and find projections.

Each table row is a small declarative case.  Expected results come from MongoDB 7.0's documented
semantics (the manual's examples where there is one), not from running this server.
"""

import datetime

import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from bson.son import SON
from bson.timestamp import Timestamp
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure, WriteError

from conftest import command_error

PAST = datetime.datetime(2001, 1, 1)


# -- filters --------------------------------------------------------------------------------------
# (name, documents, filter, expected _ids or an error code)
MIXED = [
    {"_id": 1, "a": 5, "b": 3},
    {"_id": 2, "a": 1, "b": 3},
    {"_id": 3, "a": 2},
    {"_id": 4, "a": None},
    {"_id": 5, "a": "x"},
    {"_id": 6, "a": [1, 7]},
]
STRINGS = [
    {"_id": 1, "s": "Apple"},
    {"_id": 2, "s": "apple\nbanana"},
    {"_id": 3, "s": "cherry"},
    {"_id": 4, "s": "a\nb"},
]
ARRAYS = [
    {"_id": 1, "t": ["a", "b", "c"], "r": [{"p": "x", "q": 1}, {"p": "y", "q": 9}]},
    {"_id": 2, "t": ["a", "c"], "r": [{"p": "x", "q": 9}]},
    {"_id": 3, "t": [], "r": []},
    {"_id": 4, "t": "a"},
]
TYPES = [
    {"_id": 1, "v": 1},
    {"_id": 2, "v": Int64(2)},
    {"_id": 3, "v": 2.5},
    {"_id": 4, "v": Decimal128("3")},
    {"_id": 5, "v": "s"},
    {"_id": 6, "v": None},
    {"_id": 7, "v": [1, "s"]},
    {"_id": 8, "v": {"o": 1}},
    {"_id": 9, "v": True},
    {"_id": 10, "v": PAST},
    {"_id": 11},
]
BITS = [
    {"_id": 1, "n": 54},  # 0b110110
    {"_id": 2, "n": 20},  # 0b010100
    {"_id": 3, "n": 2.5},
    {"_id": 4, "n": Binary(b"\x36")},
    {"_id": 5, "n": "54"},
]
PEOPLE = [
    {"_id": 1, "name": "ann", "age": 30, "tags": ["x"]},
    {"_id": 2, "name": "bob", "age": 17},
    {"_id": 3, "name": 5, "age": 40},
    {"_id": 4, "age": 50},
]

FILTER_CASES = [
    # $expr: aggregation expressions over the document, top level and nested in $and/$or/$nor.
    ("expr_fields", MIXED, {"$expr": {"$gt": ["$a", "$b"]}}, [1, 3, 4, 5, 6]),
    ("expr_eq", MIXED, {"$expr": {"$eq": ["$a", 1]}}, [2]),
    ("expr_in_or", MIXED, {"$or": [{"$expr": {"$eq": ["$a", 1]}}, {"_id": 3}]}, [2, 3]),
    ("expr_in_and", MIXED, {"$and": [{"b": 3}, {"$expr": {"$lt": ["$a", "$b"]}}]}, [2]),
    ("expr_in_nor", MIXED, {"$nor": [{"$expr": {"$eq": ["$b", 3]}}]}, [3, 4, 5, 6]),
    ("expr_with_query", MIXED, {"b": 3, "$expr": {"$gte": ["$a", 5]}}, [1]),
    # Missing sorts before every value in expressions, so {_id: 2} matches too.
    ("expr_now", [{"_id": 1, "d": PAST}, {"_id": 2}, {"_id": 3, "d": datetime.datetime(2100, 1, 1)}],
     {"$expr": {"$lt": ["$d", "$$NOW"]}}, [1, 2]),
    ("expr_truthy_missing", MIXED, {"$expr": "$b"}, [1, 2]),
    ("expr_eval_error", [{"_id": 1, "s": "x"}], {"$expr": {"$add": ["$s", 1]}}, 16554),
    ("expr_in_elemmatch", ARRAYS, {"r": {"$elemMatch": {"$expr": True}}}, 2),
    # $where needs server-side JavaScript: refused like mongod --noscripting.
    ("where", MIXED, {"$where": "this.a > 1"}, 2),
    # $jsonSchema
    ("schema_required", PEOPLE, {"$jsonSchema": {"required": ["name", "tags"]}}, [1]),
    ("schema_bsontype", PEOPLE,
     {"$jsonSchema": {"properties": {"name": {"bsonType": "string"}}}}, [1, 2, 4]),
    ("schema_type_number", PEOPLE,
     {"$jsonSchema": {"required": ["name"], "properties": {"name": {"type": "number"}}}}, [3]),
    ("schema_min_max", PEOPLE,
     {"$jsonSchema": {"properties": {"age": {"minimum": 18, "maximum": 40}}}}, [1, 3]),
    ("schema_exclusive", PEOPLE,
     {"$jsonSchema": {"properties": {"age": {"minimum": 30, "exclusiveMinimum": True,
                                             "maximum": 50, "exclusiveMaximum": True}}}}, [3]),
    ("schema_lengths", PEOPLE,
     {"$jsonSchema": {"properties": {"name": {"minLength": 3, "maxLength": 3}}}}, [1, 2, 3, 4]),
    ("schema_pattern", PEOPLE, {"$jsonSchema": {"properties": {"name": {"pattern": "^a"}}}},
     [1, 3, 4]),
    ("schema_enum", PEOPLE, {"$jsonSchema": {"properties": {"age": {"enum": [17, 50]}}}}, [2, 4]),
    ("schema_items", ARRAYS,
     {"$jsonSchema": {"properties": {"r": {"items": {"properties": {"q": {"maximum": 5}}}}}}},
     [3, 4]),
    ("schema_min_items", ARRAYS, {"$jsonSchema": {"properties": {"t": {"minItems": 2}}}},
     [1, 2, 4]),
    ("schema_max_items", ARRAYS, {"$jsonSchema": {"properties": {"t": {"maxItems": 0}}}}, [3, 4]),
    ("schema_unique", [{"_id": 1, "l": [1, 2]}, {"_id": 2, "l": [1, 1]}],
     {"$jsonSchema": {"properties": {"l": {"uniqueItems": True}}}}, [1]),
    ("schema_additional_false", PEOPLE,
     {"$jsonSchema": {"properties": {"_id": {}, "age": {}}, "additionalProperties": False}}, [4]),
    ("schema_additional_schema", PEOPLE,
     {"$jsonSchema": {"properties": {"_id": {}, "name": {}},
                      "additionalProperties": {"bsonType": "int"}}}, [2, 3, 4]),
    ("schema_pattern_properties", [{"_id": 1, "n_a": 1}, {"_id": 2, "n_a": "x"}, {"_id": 3}],
     {"$jsonSchema": {"patternProperties": {"^n_": {"bsonType": "int"}}}}, [1, 3]),
    ("schema_min_properties", PEOPLE, {"$jsonSchema": {"minProperties": 4}}, [1]),
    ("schema_max_properties", PEOPLE, {"$jsonSchema": {"maxProperties": 2}}, [4]),
    ("schema_anyof", PEOPLE,
     {"$jsonSchema": {"anyOf": [{"required": ["tags"]}, {"properties": {"age": {"maximum": 20}}}]}},
     [1, 2]),
    ("schema_allof", PEOPLE,
     {"$jsonSchema": {"allOf": [{"required": ["name"]}, {"properties": {"age": {"minimum": 20}}}]}},
     [1, 3]),
    ("schema_oneof", PEOPLE,
     {"$jsonSchema": {"oneOf": [{"required": ["name"]}, {"properties": {"age": {"minimum": 35}}}]}},
     [1, 2, 4]),
    ("schema_not", PEOPLE, {"$jsonSchema": {"not": {"required": ["name"]}}}, [4]),
    ("schema_described", PEOPLE,
     {"$jsonSchema": {"bsonType": "object", "title": "t", "description": "d",
                      "required": ["tags"]}}, [1]),
    ("schema_unknown_keyword", PEOPLE, {"$jsonSchema": {"foo": 1}}, 9),
    ("schema_unsupported_keyword", PEOPLE, {"$jsonSchema": {"format": "email"}}, 9),
    ("schema_bad_minimum", PEOPLE, {"$jsonSchema": {"minimum": "x"}}, 14),
    # $regex and its options i, m, s, x
    ("regex_plain", STRINGS, {"s": {"$regex": "^a"}}, [2, 4]),
    ("regex_i", STRINGS, {"s": {"$regex": "^a", "$options": "i"}}, [1, 2, 4]),
    ("regex_literal_i", STRINGS, {"s": Regex("^APP", "i")}, [1, 2]),
    ("regex_m", STRINGS, {"s": {"$regex": "^banana", "$options": "m"}}, [2]),
    ("regex_no_m", STRINGS, {"s": {"$regex": "^banana"}}, []),
    ("regex_s", STRINGS, {"s": {"$regex": "a.b", "$options": "s"}}, [4]),
    ("regex_no_s", STRINGS, {"s": {"$regex": "^a.b"}}, []),
    ("regex_x", STRINGS, {"s": {"$regex": "ch erry # comment", "$options": "x"}}, [3]),
    ("regex_in", STRINGS, {"s": {"$in": [Regex("^c"), "Apple"]}}, [1, 3]),
    ("regex_not", STRINGS, {"s": {"$not": Regex("a")}}, [1, 3]),
    ("regex_bad_option", STRINGS, {"s": {"$regex": "a", "$options": "q"}}, 51108),
    ("regex_bad_pattern", STRINGS, {"s": {"$regex": "("}}, 51091),
    # $mod: truncation toward zero, negative values
    ("mod", [{"_id": 1, "n": 8}, {"_id": 2, "n": 9}, {"_id": 3, "n": -8}, {"_id": 4, "n": 8.9},
             {"_id": 5, "n": "8"}], {"n": {"$mod": [4, 0]}}, [1, 3, 4]),
    ("mod_bad", MIXED, {"a": {"$mod": [0, 1]}}, 2),
    # $all, $elemMatch, $size
    ("all", ARRAYS, {"t": {"$all": ["a", "c"]}}, [1, 2]),
    ("all_scalar_field", ARRAYS, {"t": {"$all": ["a"]}}, [1, 2, 4]),
    ("all_empty", ARRAYS, {"t": {"$all": []}}, []),
    ("all_elemmatch", ARRAYS, {"r": {"$all": [{"$elemMatch": {"p": "x", "q": 9}}]}}, [2]),
    ("elemmatch_doc", ARRAYS, {"r": {"$elemMatch": {"p": "x", "q": {"$gt": 5}}}}, [2]),
    ("dotted_across_elements", ARRAYS, {"r.p": "x", "r.q": 9}, [1, 2]),
    ("elemmatch_value", [{"_id": 1, "v": [1, 15]}, {"_id": 2, "v": [5, 9]}],
     {"v": {"$elemMatch": {"$gt": 3, "$lt": 10}}}, [2]),
    ("range_any_elements", [{"_id": 1, "v": [1, 15]}, {"_id": 2, "v": [5, 9]}],
     {"v": {"$gt": 3, "$lt": 10}}, [1, 2]),
    ("size", ARRAYS, {"t": {"$size": 2}}, [2]),
    ("size_zero", ARRAYS, {"t": {"$size": 0}}, [3]),
    ("size_bad", ARRAYS, {"t": {"$size": -1}}, 2),
    # $bits*
    ("bits_all_set", BITS, {"n": {"$bitsAllSet": [1, 5]}}, [1, 4]),
    ("bits_all_set_mask", BITS, {"n": {"$bitsAllSet": 20}}, [1, 2, 4]),
    ("bits_any_set", BITS, {"n": {"$bitsAnySet": [0, 1]}}, [1, 4]),
    ("bits_all_clear", BITS, {"n": {"$bitsAllClear": [0, 3]}}, [1, 2, 4]),
    ("bits_any_clear", BITS, {"n": {"$bitsAnyClear": [1, 2]}}, [2]),
    ("bits_bad", BITS, {"n": {"$bitsAllSet": -1}}, 2),
    # $type: names, numbers, "number", arrays match by element type
    ("type_string", TYPES, {"v": {"$type": "string"}}, [5, 7]),
    ("type_2", TYPES, {"v": {"$type": 2}}, [5, 7]),
    ("type_number", TYPES, {"v": {"$type": "number"}}, [1, 2, 3, 4, 7]),
    ("type_long_18", TYPES, {"v": {"$type": 18}}, [2]),
    ("type_decimal", TYPES, {"v": {"$type": "decimal"}}, [4]),
    ("type_list", TYPES, {"v": {"$type": ["bool", "date"]}}, [9, 10]),
    ("type_null", TYPES, {"v": {"$type": "null"}}, [6]),
    ("type_object_3", TYPES, {"v": {"$type": 3}}, [8]),
    ("type_array", TYPES, {"v": {"$type": "array"}}, [7]),
    ("type_bad_name", TYPES, {"v": {"$type": "nope"}}, 2),
    # $comment is ignored
    ("comment", MIXED, {"a": 1, "$comment": "why"}, [2, 6]),
    ("comment_only", [{"_id": 1}], {"$comment": "all"}, [1]),
    # null and missing, type bracketing
    ("null_matches_missing", TYPES, {"v": None}, [6, 11]),
    ("ne_null", TYPES, {"v": {"$ne": None}}, [1, 2, 3, 4, 5, 7, 8, 9, 10]),
    ("exists_false", TYPES, {"v": {"$exists": False}}, [11]),
    ("gt_numbers_only", TYPES, {"v": {"$gt": 1}}, [2, 3, 4]),
    ("lt_strings_only", TYPES, {"v": {"$lt": "z"}}, [5, 7]),
    ("gte_null", TYPES, {"v": {"$gte": None}}, [6, 11]),
    # MinKey/MaxKey bounds span every type; a missing field compares as null.
    ("gt_minkey_everything", TYPES, {"v": {"$gt": MinKey()}}, list(range(1, 12))),
    ("lt_maxkey", TYPES, {"v": {"$lt": MaxKey()}}, list(range(1, 12))),
    ("eq_across_numeric_types", TYPES, {"v": {"$in": [2, 3]}}, [2, 4]),
    ("nin_includes_missing", TYPES, {"v": {"$nin": [1, "s"]}}, [2, 3, 4, 6, 8, 9, 10, 11]),
]


def _load(db, docs):
    coll = db["c"]
    coll.drop()
    if docs:
        coll.insert_many(docs)
    return coll


def _ids(cursor):
    return sorted(d["_id"] for d in cursor)


@pytest.mark.parametrize("name,docs,flt,expected", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(db, name, docs, flt, expected):
    coll = _load(db, docs)
    if isinstance(expected, int):
        code, _, _ = command_error(db, {"find": "c", "filter": flt})
        assert code == expected
        code, _, _ = command_error(db, {"count": "c", "query": flt})
        assert code == expected
        return
    assert _ids(coll.find(flt)) == expected
    assert coll.count_documents(flt) == len(expected)
    assert _ids(coll.aggregate([{"$match": flt}])) == expected
    # The same filter not first in the pipeline ($match after another stage).
    assert _ids(coll.aggregate([{"$sort": {"_id": -1}}, {"$match": flt}])) == expected


def test_expr_in_distinct_and_count(db):
    coll = _load(db, MIXED)
    assert sorted(coll.distinct("b", {"$expr": {"$gt": ["$a", "$b"]}})) == [3]
    assert db.command({"count": "c", "query": {"$expr": {"$eq": ["$b", 3]}}})["n"] == 2


def test_expr_in_update_and_delete_filters(db):
    coll = _load(db, MIXED)
    r = coll.update_many({"$expr": {"$gt": ["$a", "$b"]}, "b": 3}, {"$set": {"hit": True}})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert _ids(coll.find({"hit": True})) == [1]
    r = coll.delete_many({"$or": [{"$expr": {"$eq": ["$a", 1]}}, {"_id": 5}]})
    assert r.deleted_count == 2
    assert _ids(coll.find()) == [1, 3, 4, 6]
    doc = coll.find_one_and_update({"$expr": {"$eq": ["$a", 2]}}, {"$inc": {"a": 1}},
                                   return_document=ReturnDocument.AFTER)
    assert doc == {"_id": 3, "a": 3}
    # An evaluation error fails the write.
    with pytest.raises(OperationFailure) as e:
        coll.delete_many({"$expr": {"$add": ["$a", "x"]}})
    assert e.value.code == 16554


# -- updates --------------------------------------------------------------------------------------
# (name, documents, filter, update, options, expected documents or an error code)
NOW_CHECK = object()

UPDATE_CASES = [
    # positional $ (manual: "Update Values in an Array")
    ("positional", [{"_id": 1, "grades": [85, 80, 80]}], {"_id": 1, "grades": 80},
     {"$set": {"grades.$": 82}}, {}, [{"_id": 1, "grades": [85, 82, 80]}]),
    ("positional_embedded",
     [{"_id": 4, "grades": [{"grade": 80, "mean": 75}, {"grade": 85, "mean": 90}]}],
     {"_id": 4, "grades.grade": 85}, {"$set": {"grades.$.std": 6}}, {},
     [{"_id": 4, "grades": [{"grade": 80, "mean": 75}, {"grade": 85, "mean": 90, "std": 6}]}]),
    ("positional_elemmatch",
     [{"_id": 5, "grades": [{"grade": 80, "mean": 75}, {"grade": 90, "mean": 85}]}],
     {"_id": 5, "grades": {"$elemMatch": {"grade": {"$lte": 90}, "mean": {"$gt": 80}}}},
     {"$set": {"grades.$.std": 6}}, {},
     [{"_id": 5, "grades": [{"grade": 80, "mean": 75}, {"grade": 90, "mean": 85, "std": 6}]}]),
    ("positional_multi", [{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": [2, 1]}], {"a": 1},
     {"$inc": {"a.$": 10}}, {"multi": True},
     [{"_id": 1, "a": [11, 2]}, {"_id": 2, "a": [2, 11]}]),
    ("positional_no_array_in_query", [{"_id": 1, "a": [1]}], {"_id": 1}, {"$set": {"a.$": 2}}, {},
     2),
    ("positional_upsert", [], {"a": 1}, {"$set": {"a.$": 2}}, {"upsert": True}, 2),
    # $[] (manual: all elements)
    ("all_positional", [{"_id": 1, "grades": [85, 82, 80]}], {}, {"$inc": {"grades.$[]": 10}}, {},
     [{"_id": 1, "grades": [95, 92, 90]}]),
    ("all_positional_embedded", [{"_id": 1, "g": [{"v": 1}, {"v": 2}]}], {},
     {"$set": {"g.$[].w": 0}}, {}, [{"_id": 1, "g": [{"v": 1, "w": 0}, {"v": 2, "w": 0}]}]),
    ("all_positional_missing", [{"_id": 1}], {}, {"$set": {"g.$[]": 0}}, {}, 2),
    ("all_positional_not_array", [{"_id": 1, "g": 5}], {}, {"$set": {"g.$[]": 0}}, {}, 2),
    # The array must exist even when an upsert inserts (MongoDB's UpdateArrayNode).
    ("all_positional_upsert", [], {"_id": 7}, {"$set": {"g.$[]": 0, "x": 1}}, {"upsert": True}, 2),
    # $[<identifier>] with arrayFilters (manual examples)
    ("filtered", [{"_id": 1, "grades": [95, 92, 90]}, {"_id": 2, "grades": [98, 100, 102]}], {},
     {"$set": {"grades.$[element]": 100}},
     {"multi": True, "arrayFilters": [{"element": {"$gte": 100}}]},
     [{"_id": 1, "grades": [95, 92, 90]}, {"_id": 2, "grades": [98, 100, 100]}]),
    ("filtered_embedded",
     [{"_id": 1, "grades": [{"grade": 80, "mean": 75}, {"grade": 85, "mean": 90},
                            {"grade": 85, "mean": 85}]}], {},
     {"$inc": {"grades.$[elem].mean": -2}},
     {"arrayFilters": [{"elem.grade": {"$gte": 85}}]},
     [{"_id": 1, "grades": [{"grade": 80, "mean": 75}, {"grade": 85, "mean": 88},
                            {"grade": 85, "mean": 83}]}]),
    ("filtered_two_conditions",
     [{"_id": 1, "g": [{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 2}]}], {},
     {"$set": {"g.$[e].hit": True}}, {"arrayFilters": [{"e.a": 1, "e.b": {"$gt": 1}}]},
     [{"_id": 1, "g": [{"a": 1, "b": 1}, {"a": 1, "b": 2, "hit": True}, {"a": 2, "b": 2}]}]),
    ("filtered_or", [{"_id": 1, "g": [1, 5, 9]}], {}, {"$set": {"g.$[e]": 0}},
     {"arrayFilters": [{"$or": [{"e": 1}, {"e": 9}]}]}, [{"_id": 1, "g": [0, 5, 0]}]),
    ("filtered_nested",
     [{"_id": 1, "d": [{"q": [{"v": 1}, {"v": 7}]}, {"q": [{"v": 8}]}]}], {},
     {"$set": {"d.$[].q.$[x].big": True}}, {"arrayFilters": [{"x.v": {"$gt": 5}}]},
     [{"_id": 1, "d": [{"q": [{"v": 1}, {"v": 7, "big": True}]}, {"q": [{"v": 8, "big": True}]}]}]),
    ("filtered_with_positional",
     [{"_id": 1, "a": [{"k": 1, "l": [1, 5]}, {"k": 2, "l": [5, 6]}]}], {"a.k": 2},
     {"$set": {"a.$.l.$[y]": 0}}, {"arrayFilters": [{"y": 5}]},
     [{"_id": 1, "a": [{"k": 1, "l": [1, 5]}, {"k": 2, "l": [0, 6]}]}]),
    ("filtered_undefined_identifier", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[x]": 0}},
     {"arrayFilters": [{"y": 1}]}, 2),
    ("filtered_no_array_filters", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[x]": 0}}, {}, 2),
    ("filtered_unused_identifier", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[x]": 0}},
     {"arrayFilters": [{"x": 1}, {"y": 1}]}, 9),
    ("filtered_two_top_level_names", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[x]": 0}},
     {"arrayFilters": [{"x": 1, "y": 1}]}, 9),
    ("filtered_duplicate_identifier", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[x]": 0}},
     {"arrayFilters": [{"x": 1}, {"x": 2}]}, 9),
    ("filtered_empty_filter", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[x]": 0}},
     {"arrayFilters": [{}]}, 9),
    ("filtered_bad_identifier", [{"_id": 1, "a": [1]}], {}, {"$set": {"a.$[X]": 0}},
     {"arrayFilters": [{"X": 1}]}, 2),
    ("filtered_replacement", [{"_id": 1, "a": [1]}], {}, {"a": [2]}, {"arrayFilters": [{"x": 1}]},
     9),
    ("filtered_conflict", [{"_id": 1, "a": [1, 2]}], {}, {"$set": {"a.$[x]": 0, "a.$[y]": 1}},
     {"arrayFilters": [{"x": 1}, {"y": {"$lt": 2}}]}, 40),
    # pipeline-style updates
    ("pipeline_set_unset", [{"_id": 1, "a": 2, "b": 3}], {},
     [{"$set": {"total": {"$add": ["$a", "$b"]}}}, {"$unset": "a"}], {},
     [{"_id": 1, "b": 3, "total": 5}]),
    ("pipeline_addfields_project", [{"_id": 1, "a": 2, "b": 3}], {},
     [{"$addFields": {"c": {"$multiply": ["$a", 10]}}}, {"$project": {"c": 1}}], {},
     [{"_id": 1, "c": 20}]),
    ("pipeline_replace_root", [{"_id": 1, "in": {"_id": 1, "x": 5}}], {},
     [{"$replaceRoot": {"newRoot": "$in"}}], {}, [{"_id": 1, "x": 5}]),
    ("pipeline_replace_with", [{"_id": 1, "in": {"x": 5}}], {},
     [{"$replaceWith": {"$mergeObjects": [{"_id": "$_id"}, "$in"]}}], {}, [{"_id": 1, "x": 5}]),
    ("pipeline_multi", [{"_id": 1, "a": 1}, {"_id": 2, "a": 2}], {},
     [{"$set": {"a": {"$multiply": ["$a", 2]}}}], {"multi": True},
     [{"_id": 1, "a": 2}, {"_id": 2, "a": 4}]),
    ("pipeline_upsert", [], {"_id": 3, "k": 1}, [{"$set": {"v": {"$add": ["$k", 1]}}}],
     {"upsert": True}, [{"_id": 3, "k": 1, "v": 2}]),
    ("pipeline_now", [{"_id": 1}], {}, [{"$set": {"t": "$$NOW"}}], {}, NOW_CHECK),
    ("pipeline_group_refused", [{"_id": 1}], {}, [{"$group": {"_id": None}}], {}, 72),
    ("pipeline_unknown_stage", [{"_id": 1}], {}, [{"$nope": {}}], {}, 40324),
    ("pipeline_changes_id", [{"_id": 1}], {}, [{"$set": {"_id": 2}}], {}, 66),
    ("pipeline_with_array_filters", [{"_id": 1}], {}, [{"$set": {"a": 1}}],
     {"arrayFilters": [{"x": 1}]}, 9),
    # $push with modifiers (manual examples)
    ("push_each_sort_slice",
     [{"_id": 5, "quizzes": [{"wk": 1, "score": 10}, {"wk": 2, "score": 8}, {"wk": 3, "score": 5},
                             {"wk": 4, "score": 6}]}], {},
     {"$push": {"quizzes": {"$each": [{"wk": 5, "score": 8}, {"wk": 6, "score": 7},
                                      {"wk": 7, "score": 6}],
                            "$sort": {"score": -1}, "$slice": 3}}}, {},
     [{"_id": 5, "quizzes": [{"wk": 1, "score": 10}, {"wk": 2, "score": 8},
                             {"wk": 5, "score": 8}]}]),
    ("push_position", [{"_id": 1, "scores": [100]}], {},
     {"$push": {"scores": {"$each": [50, 60, 70], "$position": 0}}}, {},
     [{"_id": 1, "scores": [50, 60, 70, 100]}]),
    ("push_negative_position", [{"_id": 1, "scores": [100, 200]}], {},
     {"$push": {"scores": {"$each": [150], "$position": -1}}}, {},
     [{"_id": 1, "scores": [100, 150, 200]}]),
    ("push_slice_negative", [{"_id": 1, "s": [1, 2, 3]}], {},
     {"$push": {"s": {"$each": [4], "$slice": -2}}}, {}, [{"_id": 1, "s": [3, 4]}]),
    ("push_sort_values", [{"_id": 1, "s": [3, 1]}], {}, {"$push": {"s": {"$each": [2], "$sort": 1}}},
     {}, [{"_id": 1, "s": [1, 2, 3]}]),
    ("push_missing_creates", [{"_id": 1}], {}, {"$push": {"s": 1}}, {}, [{"_id": 1, "s": [1]}]),
    ("push_non_array", [{"_id": 1, "s": 1}], {}, {"$push": {"s": 2}}, {}, 2),
    # $pull, $pullAll, $pop, $addToSet
    ("pull_condition", [{"_id": 1, "votes": [3, 5, 6, 7, 7, 8]}], {},
     {"$pull": {"votes": {"$gte": 6}}}, {}, [{"_id": 1, "votes": [3, 5]}]),
    ("pull_in", [{"_id": 1, "fruits": ["apples", "pears", "oranges", "grapes"]}], {},
     {"$pull": {"fruits": {"$in": ["apples", "oranges"]}}}, {},
     [{"_id": 1, "fruits": ["pears", "grapes"]}]),
    ("pull_document", [{"_id": 1, "r": [{"item": "A", "score": 5}, {"item": "B", "score": 8}]}], {},
     {"$pull": {"r": {"score": 8, "item": "B"}}}, {}, [{"_id": 1, "r": [{"item": "A", "score": 5}]}]),
    ("pull_elemmatch", [{"_id": 1, "r": [{"a": [{"s": 8}]}, {"a": [{"s": 1}]}]}], {},
     {"$pull": {"r": {"a": {"$elemMatch": {"s": 8}}}}}, {}, [{"_id": 1, "r": [{"a": [{"s": 1}]}]}]),
    ("pull_all", [{"_id": 1, "scores": [0, 2, 5, 5, 1, 0]}], {}, {"$pullAll": {"scores": [0, 5]}},
     {}, [{"_id": 1, "scores": [2, 1]}]),
    ("pop_first", [{"_id": 1, "s": [8, 9, 10]}], {}, {"$pop": {"s": -1}}, {},
     [{"_id": 1, "s": [9, 10]}]),
    ("pop_last", [{"_id": 1, "s": [8, 9, 10]}], {}, {"$pop": {"s": 1}}, {}, [{"_id": 1, "s": [8, 9]}]),
    ("add_to_set_each", [{"_id": 1, "tags": ["a", "b"]}], {},
     {"$addToSet": {"tags": {"$each": ["b", "c", "c"]}}}, {}, [{"_id": 1, "tags": ["a", "b", "c"]}]),
    ("add_to_set_array_value", [{"_id": 1, "t": [1]}], {}, {"$addToSet": {"t": [2, 3]}}, {},
     [{"_id": 1, "t": [1, [2, 3]]}]),
    # $setOnInsert, $currentDate
    ("set_on_insert_upsert", [], {"_id": 1}, {"$set": {"a": 1}, "$setOnInsert": {"b": 2}},
     {"upsert": True}, [{"_id": 1, "a": 1, "b": 2}]),
    ("set_on_insert_update", [{"_id": 1}], {"_id": 1}, {"$set": {"a": 1}, "$setOnInsert": {"b": 2}},
     {"upsert": True}, [{"_id": 1, "a": 1}]),
    # $min / $max across types (BSON order: null < numbers < strings)
    ("min_number", [{"_id": 1, "v": 5}], {}, {"$min": {"v": 3}}, {}, [{"_id": 1, "v": 3}]),
    ("min_keeps", [{"_id": 1, "v": 5}], {}, {"$min": {"v": 7}}, {}, [{"_id": 1, "v": 5}]),
    ("min_null_lowest", [{"_id": 1, "v": 5}], {}, {"$min": {"v": None}}, {}, [{"_id": 1, "v": None}]),
    ("max_string_above_numbers", [{"_id": 1, "v": 5}], {}, {"$max": {"v": "a"}}, {},
     [{"_id": 1, "v": "a"}]),
    ("max_missing_sets", [{"_id": 1}], {}, {"$max": {"v": 2}}, {}, [{"_id": 1, "v": 2}]),
    ("max_dates", [{"_id": 1, "d": PAST}], {}, {"$max": {"d": datetime.datetime(2020, 1, 1)}}, {},
     [{"_id": 1, "d": datetime.datetime(2020, 1, 1)}]),
    # $mul, $inc
    ("mul", [{"_id": 1, "p": 10, "q": Int64(2)}], {}, {"$mul": {"p": 2.5, "q": 3}}, {},
     [{"_id": 1, "p": 25.0, "q": Int64(6)}]),
    ("mul_missing_zero", [{"_id": 1}], {}, {"$mul": {"p": 5}}, {}, [{"_id": 1, "p": 0}]),
    ("mul_non_number", [{"_id": 1, "p": "x"}], {}, {"$mul": {"p": 5}}, {}, 14),
    ("inc_missing", [{"_id": 1}], {}, {"$inc": {"a.b": 2}}, {}, [{"_id": 1, "a": {"b": 2}}]),
    # $rename
    ("rename", [{"_id": 1, "nick": "x", "n": {"first": "a"}}], {},
     {"$rename": {"nick": "alias", "n.first": "n.fname"}}, {},
     [{"_id": 1, "n": {"fname": "a"}, "alias": "x"}]),
    ("rename_missing_noop", [{"_id": 1}], {}, {"$rename": {"a": "b"}}, {}, [{"_id": 1}]),
    ("rename_positional", [{"_id": 1, "a": [1]}], {"a": 1}, {"$rename": {"a.$": "b"}}, {}, 2),
    # $bit (manual examples)
    ("bit_and", [{"_id": 1, "e": 13}], {}, {"$bit": {"e": {"and": 10}}}, {}, [{"_id": 1, "e": 8}]),
    ("bit_or", [{"_id": 2, "e": 3}], {}, {"$bit": {"e": {"or": 5}}}, {}, [{"_id": 2, "e": 7}]),
    ("bit_xor", [{"_id": 3, "e": 1}], {}, {"$bit": {"e": {"xor": 5}}}, {}, [{"_id": 3, "e": 4}]),
    ("bit_long", [{"_id": 1, "e": Int64(12)}], {}, {"$bit": {"e": {"and": 4}}}, {},
     [{"_id": 1, "e": Int64(4)}]),
    ("bit_double", [{"_id": 1, "e": 1.5}], {}, {"$bit": {"e": {"or": 1}}}, {}, 2),
    ("bit_bad_operand", [{"_id": 1, "e": 1}], {}, {"$bit": {"e": {"or": 1.5}}}, {}, 2),
    ("unknown_modifier", [{"_id": 1}], {}, {"$foo": {"a": 1}}, {}, 9),
]


def _update_command(flt, update, options):
    stmt = {"q": flt, "u": update}
    stmt.update(options)
    return {"update": "c", "updates": [stmt]}


@pytest.mark.parametrize("name,docs,flt,update,options,expected", UPDATE_CASES,
                         ids=[c[0] for c in UPDATE_CASES])
def test_update(db, name, docs, flt, update, options, expected):
    coll = _load(db, docs)
    reply = db.command(_update_command(flt, update, options))
    if isinstance(expected, int):
        assert "writeErrors" in reply, reply
        assert reply["writeErrors"][0]["code"] == expected, reply
        assert list(coll.find().sort("_id", 1)) == docs
        return
    assert "writeErrors" not in reply, reply
    got = list(coll.find().sort("_id", 1))
    if expected is NOW_CHECK:
        assert isinstance(got[0]["t"], datetime.datetime)
        age = datetime.datetime.utcnow() - got[0]["t"]
        assert abs(age.total_seconds()) < 60
        return
    assert got == expected


@pytest.mark.parametrize("name,docs,flt,update,options,expected",
                         [c for c in UPDATE_CASES if c[0] not in ("positional_multi",
                                                                  "pipeline_multi", "filtered")],
                         ids=[c[0] for c in UPDATE_CASES if c[0] not in (
                             "positional_multi", "pipeline_multi", "filtered")])
def test_find_and_modify(db, name, docs, flt, update, options, expected):
    """findAndModify applies the same update language to one document."""
    coll = _load(db, docs)
    cmd = SON([("findAndModify", "c"), ("query", flt), ("update", update), ("new", True)])
    if "arrayFilters" in options:
        cmd["arrayFilters"] = options["arrayFilters"]
    if options.get("upsert"):
        cmd["upsert"] = True
    if isinstance(expected, int):
        code, _, _ = command_error(db, cmd)
        assert code == expected
        return
    reply = db.command(cmd)
    got = list(coll.find().sort("_id", 1))
    if expected is NOW_CHECK:
        assert isinstance(reply["value"]["t"], datetime.datetime)
        return
    assert got == expected
    assert reply["value"] in expected


def test_current_date(db):
    coll = _load(db, [{"_id": 1}])
    coll.update_one({}, {"$currentDate": {"d": True, "ts": {"$type": "timestamp"},
                                          "d2": {"$type": "date"}}})
    doc = coll.find_one()
    assert isinstance(doc["d"], datetime.datetime)
    assert isinstance(doc["d2"], datetime.datetime)
    assert isinstance(doc["ts"], Timestamp)
    age = datetime.datetime.utcnow() - doc["d"]
    assert abs(age.total_seconds()) < 60
    reply = db.command(_update_command({}, {"$currentDate": {"d": {"$type": "x"}}}, {}))
    assert reply["writeErrors"][0]["code"] == 2


# -- find projections -----------------------------------------------------------------------------
GRADES = [
    {"_id": 1, "semester": 1, "grades": [70, 87, 90]},
    {"_id": 2, "semester": 1, "grades": [90, 88, 92]},
    {"_id": 3, "semester": 2, "grades": [85, 100, 90]},
]
SCHOOLS = [
    {"_id": 1, "zipcode": "63109",
     "students": [{"name": "john", "school": 102, "age": 10},
                  {"name": "jess", "school": 102, "age": 11},
                  {"name": "jeff", "school": 108, "age": 15}]},
    {"_id": 2, "zipcode": "63110", "students": [{"name": "ajax", "school": 100, "age": 7}]},
    {"_id": 3, "zipcode": "63109", "students": [{"name": "barney", "school": 102, "age": 7}]},
]
POSTS = [{"_id": 1, "c": [1, 2, 3, 4, 5], "x": 1}]
ITEMS = [{"_id": 1, "a": 2, "b": 3, "s": {"t": 4, "u": 5}}]

PROJECTION_CASES = [
    # positional $ (manual example)
    ("positional", GRADES, {"semester": 1, "grades": {"$gte": 85}}, {"grades.$": 1},
     [{"_id": 1, "grades": [87]}, {"_id": 2, "grades": [90]}]),
    ("positional_embedded", SCHOOLS, {"_id": 1, "students.school": 108}, {"students.$": 1, "_id": 0},
     [{"students": [{"name": "jeff", "school": 108, "age": 15}]}]),
    ("positional_true", GRADES, {"_id": 3, "grades": 100}, {"grades.$": True, "semester": 1},
     [{"_id": 3, "semester": 2, "grades": [100]}]),
    ("positional_no_match_in_array", GRADES, {"_id": 1}, {"grades.$": 1}, 51246),
    ("positional_scalar_kept", [{"_id": 1, "g": 5}], {"g": 5}, {"g.$": 1}, [{"_id": 1, "g": 5}]),
    # positional forms MongoDB's projection parser rejects (its codes)
    ("positional_twice", GRADES, {"grades": 90}, {"grades.$": 1, "semester.$": 1}, 31276),
    ("positional_exclusion", GRADES, {"grades": 90}, {"grades.$": 0}, 31395),
    ("positional_middle_of_path", SCHOOLS, {"students.school": 102}, {"students.$.name": 1},
     31394),
    ("positional_with_slice", GRADES, {"grades": 90}, {"grades.$": {"$slice": 1}}, 31271),
    ("positional_with_literal", GRADES, {"grades": 90}, {"grades.$": "x"}, 31308),
    ("positional_then_elem_match", SCHOOLS, {"students.school": 102},
     {"students.$": 1, "zipcode": {"$elemMatch": {"x": 1}}}, 31255),
    ("elem_match_then_positional", SCHOOLS, {"students.school": 102},
     {"zipcode": {"$elemMatch": {"x": 1}}, "students.$": 1}, 31256),
    # $elemMatch (manual example)
    ("elem_match", SCHOOLS, {"zipcode": "63109"}, {"students": {"$elemMatch": {"school": 102}}},
     [{"_id": 1, "students": [{"name": "john", "school": 102, "age": 10}]},
      {"_id": 3, "students": [{"name": "barney", "school": 102, "age": 7}]}]),
    ("elem_match_none", SCHOOLS, {"_id": 2}, {"students": {"$elemMatch": {"school": 102}}},
     [{"_id": 2}]),
    # $slice
    ("slice_first", POSTS, {}, {"c": {"$slice": 2}}, [{"_id": 1, "c": [1, 2], "x": 1}]),
    ("slice_last", POSTS, {}, {"c": {"$slice": -2}}, [{"_id": 1, "c": [4, 5], "x": 1}]),
    ("slice_skip_limit", POSTS, {}, {"c": {"$slice": [1, 2]}, "x": 0}, [{"_id": 1, "c": [2, 3]}]),
    ("slice_bad_limit", POSTS, {}, {"c": {"$slice": [1, 0]}}, 28724),
    # aggregation expressions in find projections
    ("expr_add", ITEMS, {}, {"total": {"$add": ["$a", "$b"]}, "_id": 0}, [{"total": 5}]),
    ("expr_field_path", ITEMS, {}, {"t": "$s.t"}, [{"_id": 1, "t": 4}]),
    ("expr_literal", ITEMS, {}, {"a": 1, "k": {"$literal": 1}}, [{"_id": 1, "a": 2, "k": 1}]),
    ("expr_string_literal", ITEMS, {}, {"_id": 0, "k": "text"}, [{"k": "text"}]),
    ("expr_nested_object", ITEMS, {}, {"_id": 0, "s": {"u": 1}}, [{"s": {"u": 5}}]),
    ("expr_cond", ITEMS, {}, {"_id": 0, "big": {"$cond": [{"$gt": ["$a", 1]}, "yes", "no"]}},
     [{"big": "yes"}]),
    ("expr_eval_error", ITEMS, {}, {"_id": 0, "x": {"$add": ["$s", 1]}}, 16554),
    ("expr_mixed_with_find_operator", POSTS, {}, {"c": {"$slice": 1}, "y": {"$add": [1, 1]}}, 2),
]


@pytest.mark.parametrize("name,docs,flt,proj,expected", PROJECTION_CASES,
                         ids=[c[0] for c in PROJECTION_CASES])
def test_projection(db, name, docs, flt, proj, expected):
    coll = _load(db, docs)
    if isinstance(expected, int):
        code, _, _ = command_error(db, {"find": "c", "filter": flt, "projection": proj})
        assert code == expected
        return
    assert list(coll.find(flt, proj).sort("_id", 1)) == expected
    # findAndModify's `fields` shapes the returned document the same way.
    reply = db.command(SON([("findAndModify", "c"), ("query", flt), ("sort", {"_id": 1}),
                            ("update", {"$set": {"zz": 1}}), ("fields", proj)]))
    assert reply["value"] == expected[0]


def test_expr_on_time_series(db):
    """$expr reaches measurements too: reads, deletes, and their evaluation errors."""
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
    t0 = datetime.datetime(2024, 1, 1)
    db.w.insert_many([{"t": t0 + datetime.timedelta(minutes=i), "m": i % 2, "a": i, "b": 5}
                      for i in range(10)])
    assert sorted(d["a"] for d in db.w.find({"$expr": {"$gt": ["$a", "$b"]}})) == [6, 7, 8, 9]
    got = db.w.aggregate([{"$match": {"$or": [{"$expr": {"$lt": ["$a", 2]}},
                                               {"m": 1, "a": {"$gt": 7}}]}}])
    assert sorted(d["a"] for d in got) == [0, 1, 9]
    with pytest.raises(OperationFailure) as e:
        db.w.delete_many({"$expr": {"$add": ["$m", "x"]}})
    assert e.value.code == 16554
    assert db.w.count_documents({}) == 10
    assert db.w.delete_many({"$expr": {"$gte": ["$a", 8]}}).deleted_count == 2
    assert sorted(d["a"] for d in db.w.find()) == list(range(8))
