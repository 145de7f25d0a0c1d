"""Aggregation stages over other collections ($lookup, $unionWith, $graphLookup, $out, $merge)
and $bucketAuto / $redact, as small declarative cases run through pymongo.

Each case names the collections to create (a list of documents, or {"timeseries": options,
"docs": [...]} for a time-series collection), the collection aggregated ("src" unless `source`
says otherwise), the pipeline, and then either the expected output (`expected`, compared in
order, or after sorting by `sort_by`) or the expected error code (`error`). `after` lists the
contents expected in collections afterwards (read sorted by _id), for $out and $merge.
Expected values follow MongoDB 7.0's documented semantics.
"""

import datetime

import pytest

from conftest import command_error, create_collections

T0 = datetime.datetime(2024, 1, 1, 0, 0)


def hours(h):
    return T0 + datetime.timedelta(hours=h)


EMPLOYEES = [
    {"_id": 1, "name": "Dev"},
    {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
    {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
    {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
    {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
    {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
]

ORDERS = [
    {"_id": 1, "item": "almonds", "price": 12, "quantity": 2},
    {"_id": 2, "item": "pecans", "price": 20, "quantity": 1},
    {"_id": 3},
]
INVENTORY = [
    {"_id": 1, "sku": "almonds", "instock": 120},
    {"_id": 2, "sku": "bread", "instock": 80},
    {"_id": 3, "sku": "cashews", "instock": 60},
    {"_id": 4, "sku": "pecans", "instock": 70},
    {"_id": 5, "sku": None},
    {"_id": 6},
]

SENSORS = {
    "timeseries": {"timeField": "t", "metaField": "s"},
    "docs": [
        {"_id": 1, "t": hours(0), "s": "a", "v": 1},
        {"_id": 2, "t": hours(1), "s": "b", "v": 2},
        {"_id": 3, "t": hours(2), "s": "a", "v": 3},
    ],
}

TARGET = [{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}]
MERGE_INPUT = [{"_id": 1, "a": 10}, {"_id": 3, "a": 30}]


def merge_case(name, spec, after=None, error=None):
    case = {
        "id": "merge-" + name,
        "colls": {"src": MERGE_INPUT, "tgt": TARGET},
        "pipeline": [{"$merge": dict({"into": "tgt"}, **spec)}],
    }
    if error is not None:
        case["error"] = error
    else:
        case["expected"] = []
        case["after"] = {"tgt": after}
    return case


CASES = [
    # ---- $lookup, equality form ----
    {
        "id": "lookup-equality-docs-example",
        "colls": {"src": ORDERS, "inventory": INVENTORY},
        "pipeline": [
            {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku",
                         "as": "inv"}},
            {"$project": {"ids": "$inv._id"}},
        ],
        # A missing localField matches foreign documents whose field is null or missing.
        "expected": [{"_id": 1, "ids": [1]}, {"_id": 2, "ids": [4]}, {"_id": 3, "ids": [5, 6]}],
    },
    {
        "id": "lookup-local-array-matches-any-element",
        "colls": {"src": [{"_id": 1, "k": ["bread", "pecans"]}, {"_id": 2, "k": []}],
                  "inventory": INVENTORY},
        "pipeline": [
            {"$lookup": {"from": "inventory", "localField": "k", "foreignField": "sku",
                         "as": "inv"}},
            {"$project": {"ids": "$inv._id"}},
        ],
        # An empty local array matches like null (MongoDB looks up null when it finds no value).
        "expected": [{"_id": 1, "ids": [2, 4]}, {"_id": 2, "ids": [5, 6]}],
    },
    {
        "id": "lookup-foreign-array-field",
        "colls": {"src": [{"_id": 1, "x": 2}],
                  "f": [{"_id": 1, "xs": [1, 2]}, {"_id": 2, "xs": [3]}, {"_id": 3, "xs": 2}]},
        "pipeline": [
            {"$lookup": {"from": "f", "localField": "x", "foreignField": "xs", "as": "j"}},
            {"$project": {"ids": "$j._id"}},
        ],
        "expected": [{"_id": 1, "ids": [1, 3]}],
    },
    {
        "id": "lookup-missing-foreign-collection",
        "colls": {"src": [{"_id": 1, "a": 1}]},
        "pipeline": [{"$lookup": {"from": "nothing", "localField": "a", "foreignField": "a",
                                  "as": "j"}}],
        "expected": [{"_id": 1, "a": 1, "j": []}],
    },
    {
        "id": "lookup-dotted-as",
        "colls": {"src": [{"_id": 1, "a": 1, "o": {"keep": True}}], "f": [{"_id": 7, "a": 1}]},
        "pipeline": [{"$lookup": {"from": "f", "localField": "a", "foreignField": "a",
                                  "as": "o.j"}}],
        "expected": [{"_id": 1, "a": 1, "o": {"keep": True, "j": [{"_id": 7, "a": 1}]}}],
    },
    # ---- $lookup, pipeline and combined forms ----
    {
        "id": "lookup-pipeline-let",
        "colls": {
            "src": [{"_id": 1, "item": "almonds", "ordered": 2},
                    {"_id": 2, "item": "pecans", "ordered": 200}],
            "warehouses": [{"_id": 1, "stock_item": "almonds", "instock": 120},
                           {"_id": 2, "stock_item": "pecans", "instock": 80},
                           {"_id": 3, "stock_item": "almonds", "instock": 1},
                           {"_id": 4, "stock_item": "pecans", "instock": 300}],
        },
        "pipeline": [
            {"$lookup": {
                "from": "warehouses",
                "let": {"order_item": "$item", "order_qty": "$ordered"},
                "pipeline": [
                    {"$match": {"$expr": {"$and": [
                        {"$eq": ["$stock_item", "$$order_item"]},
                        {"$gte": ["$instock", "$$order_qty"]}]}}},
                    {"$project": {"stock_item": 0}},
                ],
                "as": "stockdata"}},
        ],
        "expected": [
            {"_id": 1, "item": "almonds", "ordered": 2, "stockdata": [{"_id": 1, "instock": 120}]},
            {"_id": 2, "item": "pecans", "ordered": 200, "stockdata": [{"_id": 4, "instock": 300}]},
        ],
    },
    {
        # $expr equality compares whole values: an array equals only the same array, null
        # equals only null, and a missing variable equals only a missing field.
        "id": "lookup-correlated-expr-eq-semantics",
        "colls": {"src": [{"_id": "one", "v": 1}, {"_id": "arr", "v": [1, 2]},
                          {"_id": "null", "v": None}, {"_id": "missing"}],
                  "f": [{"_id": 1, "k": [1, 2]}, {"_id": 2, "k": 1}, {"_id": 3, "k": None},
                        {"_id": 4}, {"_id": 5, "k": 1.0}]},
        "pipeline": [{"$lookup": {"from": "f", "let": {"v": "$v"}, "as": "j", "pipeline": [
            {"$match": {"$expr": {"$and": [{"$eq": ["$k", "$$v"]}, {"$ne": ["$_id", 99]}]}}}]}},
                     {"$project": {"ids": "$j._id"}}],
        "expected": [{"_id": "one", "ids": [2, 5]}, {"_id": "arr", "ids": [1]},
                     {"_id": "null", "ids": [3]}, {"_id": "missing", "ids": [4]}],
    },
    {
        "id": "lookup-pipeline-uncorrelated",
        "colls": {"src": [{"_id": 1}, {"_id": 2}], "f": [{"_id": 1, "v": 5}, {"_id": 2, "v": 6}]},
        "pipeline": [{"$lookup": {"from": "f", "pipeline": [{"$match": {"v": {"$gt": 5}}}],
                                  "as": "j"}}],
        "expected": [{"_id": 1, "j": [{"_id": 2, "v": 6}]}, {"_id": 2, "j": [{"_id": 2, "v": 6}]}],
    },
    {
        "id": "lookup-let-variable-path-in-project",
        "colls": {"src": [{"_id": 1, "o": {"x": 4}}], "f": [{"_id": 1}]},
        "pipeline": [{"$lookup": {"from": "f", "let": {"v": "$o"},
                                  "pipeline": [{"$project": {"y": {"$add": ["$$v.x", 1]}}}],
                                  "as": "j"}}],
        "expected": [{"_id": 1, "o": {"x": 4}, "j": [{"_id": 1, "y": 5}]}],
    },
    {
        "id": "lookup-combined-form",
        "colls": {"src": [{"_id": 1, "k": "x", "min": 2}],
                  "f": [{"_id": 1, "k": "x", "v": 1}, {"_id": 2, "k": "x", "v": 5},
                        {"_id": 3, "k": "y", "v": 9}]},
        "pipeline": [{"$lookup": {"from": "f", "localField": "k", "foreignField": "k",
                                  "let": {"m": "$min"},
                                  "pipeline": [{"$match": {"$expr": {"$gt": ["$v", "$$m"]}}}],
                                  "as": "j"}},
                     {"$project": {"ids": "$j._id"}}],
        "expected": [{"_id": 1, "ids": [2]}],
    },
    {
        "id": "lookup-from-timeseries",
        "colls": {"src": [{"_id": "a"}, {"_id": "b"}, {"_id": "c"}], "sensors": SENSORS},
        "pipeline": [{"$lookup": {"from": "sensors", "localField": "_id", "foreignField": "s",
                                  "as": "m"}},
                     {"$project": {"vs": "$m.v"}}],
        "expected": [{"_id": "a", "vs": [1, 3]}, {"_id": "b", "vs": [2]}, {"_id": "c", "vs": []}],
    },
    {
        "id": "lookup-uncorrelated-time-filter-on-timeseries",
        "colls": {"src": [{"_id": 0}], "sensors": SENSORS},
        "pipeline": [{"$lookup": {"from": "sensors", "as": "m", "pipeline": [
            {"$match": {"t": {"$gte": hours(1)}}}, {"$project": {"_id": 0, "v": 1}}]}}],
        "expected": [{"_id": 0, "m": [{"v": 2}, {"v": 3}]}],
    },
    {
        "id": "lookup-combined-leading-match",
        "colls": {"src": [{"_id": "a"}], "sensors": SENSORS},
        "pipeline": [{"$lookup": {"from": "sensors", "localField": "_id", "foreignField": "s",
                                  "as": "m", "pipeline": [{"$match": {"v": {"$gt": 1}}},
                                                          {"$project": {"_id": 1}}]}}],
        "expected": [{"_id": "a", "m": [{"_id": 3}]}],
    },
    {
        "id": "lookup-pipeline-from-timeseries",
        "colls": {"src": [{"_id": "a"}], "sensors": SENSORS},
        "pipeline": [{"$lookup": {"from": "sensors", "let": {"s": "$_id"},
                                  "pipeline": [{"$match": {"$expr": {"$eq": ["$s", "$$s"]}}},
                                               {"$group": {"_id": None, "sum": {"$sum": "$v"}}}],
                                  "as": "m"}}],
        "expected": [{"_id": "a", "m": [{"_id": None, "sum": 4}]}],
    },
    {
        "id": "lookup-documents-without-from",
        "colls": {"src": [{"_id": 1, "k": 2}]},
        "pipeline": [{"$lookup": {"let": {"k": "$k"}, "as": "j", "pipeline": [
            {"$documents": [{"x": 1}, {"x": 2}]},
            {"$match": {"$expr": {"$eq": ["$x", "$$k"]}}}]}}],
        "expected": [{"_id": 1, "k": 2, "j": [{"x": 2}]}],
    },
    {"id": "lookup-err-no-from", "pipeline": [{"$lookup": {"as": "x", "pipeline": []}}],
     "error": 9},
    {"id": "lookup-err-from-object",
     "pipeline": [{"$lookup": {"from": {"db": "x", "coll": "y"}, "as": "j", "pipeline": []}}],
     "error": 9},
    {
        "id": "lookup-nested-with-outer-variable",
        "colls": {"src": [{"_id": 1, "k": 2}], "a": [{"_id": 10}], "b": [{"_id": 20, "k": 2},
                                                                     {"_id": 21, "k": 3}]},
        "pipeline": [{"$lookup": {"from": "a", "let": {"outer": "$k"}, "as": "j", "pipeline": [
            {"$lookup": {"from": "b", "as": "inner", "pipeline": [
                {"$match": {"$expr": {"$eq": ["$k", "$$outer"]}}}]}}]}}],
        "expected": [{"_id": 1, "k": 2, "j": [{"_id": 10, "inner": [{"_id": 20, "k": 2}]}]}],
    },
    {
        "id": "lookup-inside-facet",
        "colls": {"src": [{"_id": 1, "k": 1}], "f": [{"_id": 5, "k": 1}]},
        "pipeline": [{"$facet": {"x": [{"$lookup": {"from": "f", "localField": "k",
                                                    "foreignField": "k", "as": "j"}},
                                       {"$project": {"n": {"$size": "$j"}}}]}}],
        "expected": [{"x": [{"_id": 1, "n": 1}]}],
    },
    {"id": "lookup-err-no-as", "pipeline": [{"$lookup": {"from": "f", "localField": "a",
                                                         "foreignField": "b"}}], "error": 9},
    {"id": "lookup-err-local-without-foreign",
     "pipeline": [{"$lookup": {"from": "f", "localField": "a", "as": "x"}}], "error": 9},
    {"id": "lookup-err-unknown-arg",
     "pipeline": [{"$lookup": {"from": "f", "as": "x", "pipeline": [], "nope": 1}}], "error": 9},
    {"id": "lookup-err-pipeline-not-array",
     "pipeline": [{"$lookup": {"from": "f", "as": "x", "pipeline": {}}}], "error": 14},
    {"id": "lookup-err-let-not-object",
     "pipeline": [{"$lookup": {"from": "f", "as": "x", "let": 1, "pipeline": []}}], "error": 9},
    {"id": "lookup-err-field-not-string",
     "pipeline": [{"$lookup": {"from": "f", "as": "x", "localField": 1, "foreignField": "a"}}],
     "error": 9},
    {"id": "lookup-err-out-inside",
     "pipeline": [{"$lookup": {"from": "f", "as": "x", "pipeline": [{"$out": "y"}]}}],
     "error": 51047},
    {"id": "lookup-err-bad-let-name",
     "pipeline": [{"$lookup": {"from": "f", "as": "x", "let": {"Up": 1}, "pipeline": []}}],
     "error": 9},
    {"id": "lookup-err-undefined-variable",
     "pipeline": [{"$lookup": {"from": "f", "as": "x",
                               "pipeline": [{"$project": {"a": "$$nope"}}]}}],
     "error": 17276},
    # ---- $unionWith ----
    {
        "id": "unionwith-string",
        "colls": {"src": [{"_id": 1}], "other": [{"_id": 2}, {"_id": 3}]},
        "pipeline": [{"$unionWith": "other"}],
        "expected": [{"_id": 1}, {"_id": 2}, {"_id": 3}],
    },
    {
        "id": "unionwith-pipeline",
        "colls": {"src": [{"_id": 1, "v": 1}], "other": [{"_id": 2, "v": 2}, {"_id": 3, "v": 3}]},
        "pipeline": [{"$unionWith": {"coll": "other", "pipeline": [{"$match": {"v": 3}},
                                                                   {"$set": {"from": "o"}}]}},
                     {"$sort": {"_id": -1}}],
        "expected": [{"_id": 3, "v": 3, "from": "o"}, {"_id": 1, "v": 1}],
    },
    {
        "id": "unionwith-missing-and-timeseries",
        "colls": {"src": [{"_id": 0, "v": 0}], "sensors": SENSORS},
        "pipeline": [{"$unionWith": "nothing"}, {"$unionWith": "sensors"},
                     {"$project": {"_id": 0, "v": 1}}],
        "expected": [{"v": 0}, {"v": 1}, {"v": 2}, {"v": 3}],
    },
    {
        "id": "unionwith-documents-without-coll",
        "colls": {"src": [{"_id": 1}]},
        "pipeline": [{"$unionWith": {"pipeline": [{"$documents": [{"x": 1}]}]}}],
        "expected": [{"_id": 1}, {"x": 1}],
    },
    {
        "id": "unionwith-timeseries-time-filter",
        "colls": {"src": [], "sensors": SENSORS},
        "pipeline": [{"$unionWith": {"coll": "sensors", "pipeline": [
            {"$match": {"t": {"$lt": hours(2)}, "s": "a"}}, {"$project": {"_id": 0, "v": 1}}]}}],
        "expected": [{"v": 1}],
    },
    {"id": "unionwith-err-type", "pipeline": [{"$unionWith": 1}], "error": 9},
    {"id": "unionwith-err-no-coll", "pipeline": [{"$unionWith": {"pipeline": []}}], "error": 9},
    {"id": "unionwith-err-no-coll-not-documents",
     "pipeline": [{"$unionWith": {"pipeline": [{"$match": {}}]}}], "error": 9},
    {"id": "unionwith-err-coll-type", "pipeline": [{"$unionWith": {"coll": 1}}], "error": 14},
    {"id": "unionwith-err-unknown", "pipeline": [{"$unionWith": {"coll": "x", "y": 1}}],
     "error": 40415},
    {"id": "unionwith-err-merge-inside",
     "pipeline": [{"$unionWith": {"coll": "x", "pipeline": [{"$merge": "y"}]}}], "error": 31441},
    # ---- $graphLookup ----
    {
        "id": "graphlookup-docs-example",
        "colls": {"src": EMPLOYEES},
        "pipeline": [
            {"$graphLookup": {"from": "src", "startWith": "$reportsTo",
                              "connectFromField": "reportsTo", "connectToField": "name",
                              "as": "hierarchy"}},
            {"$project": {"n": {"$size": "$hierarchy"}}},
        ],
        "expected": [{"_id": 1, "n": 0}, {"_id": 2, "n": 1}, {"_id": 3, "n": 2},
                     {"_id": 4, "n": 2}, {"_id": 5, "n": 3}, {"_id": 6, "n": 3}],
    },
    {
        "id": "graphlookup-maxdepth-depthfield",
        "colls": {"src": [{"_id": 5, "reportsTo": "Ron"}], "emp": EMPLOYEES},
        "pipeline": [
            {"$graphLookup": {"from": "emp", "startWith": "$reportsTo",
                              "connectFromField": "reportsTo", "connectToField": "name",
                              "as": "h", "maxDepth": 1, "depthField": "level"}},
            {"$unwind": "$h"},
            {"$project": {"name": "$h.name", "level": "$h.level"}},
            {"$sort": {"level": 1}},
        ],
        "expected": [{"_id": 5, "name": "Ron", "level": 0}, {"_id": 5, "name": "Eliot", "level": 1}],
    },
    {
        "id": "graphlookup-restrict-and-array-start",
        "colls": {"src": [{"_id": 0, "start": ["Asya", "Dan"]}], "emp": EMPLOYEES},
        "pipeline": [
            {"$graphLookup": {"from": "emp", "startWith": "$start",
                              "connectFromField": "reportsTo", "connectToField": "name",
                              "as": "h", "restrictSearchWithMatch": {"_id": {"$ne": 3}}}},
            {"$project": {"names": "$h.name"}},
            {"$unwind": "$names"},
            {"$sort": {"names": 1}},
        ],
        # Ron (3) is excluded, so Asya's chain stops; Dan's goes Andrew → Eliot → Dev.
        "expected": [{"_id": 0, "names": n} for n in ["Andrew", "Asya", "Dan", "Dev", "Eliot"]],
    },
    {
        "id": "graphlookup-cycle-terminates",
        "colls": {"src": [{"_id": 0, "start": "a"}],
                  "g": [{"_id": 1, "n": "a", "next": "b"}, {"_id": 2, "n": "b", "next": "a"}]},
        "pipeline": [{"$graphLookup": {"from": "g", "startWith": "$start", "connectFromField": "next",
                                       "connectToField": "n", "as": "h", "depthField": "d"}},
                     {"$unwind": "$h"}, {"$sort": {"h.d": 1}},
                     {"$project": {"_id": 0, "n": "$h.n", "d": "$h.d"}}],
        "expected": [{"n": "a", "d": 0}, {"n": "b", "d": 1}],
    },
    {
        "id": "graphlookup-array-connect-from",
        "colls": {"src": [{"_id": 0, "start": 1}],
                  "g": [{"_id": 1, "to": [2, 3]}, {"_id": 2}, {"_id": 3, "to": 4}, {"_id": 4}]},
        "pipeline": [{"$graphLookup": {"from": "g", "startWith": "$start", "connectFromField": "to",
                                       "connectToField": "_id", "as": "h"}},
                     {"$project": {"n": {"$size": "$h"}}}],
        "expected": [{"_id": 0, "n": 4}],
    },
    {"id": "graphlookup-err-missing", "pipeline": [{"$graphLookup": {"from": "e", "as": "h"}}],
     "error": 40105},
    {"id": "graphlookup-err-maxdepth-type",
     "pipeline": [{"$graphLookup": {"from": "e", "as": "h", "startWith": 1, "connectFromField": "a",
                                    "connectToField": "b", "maxDepth": "1"}}], "error": 40100},
    {"id": "graphlookup-err-maxdepth-negative",
     "pipeline": [{"$graphLookup": {"from": "e", "as": "h", "startWith": 1, "connectFromField": "a",
                                    "connectToField": "b", "maxDepth": -1}}], "error": 40101},
    {"id": "graphlookup-err-unknown", "pipeline": [{"$graphLookup": {"from": "e", "x": 1}}],
     "error": 40104},
    {"id": "graphlookup-err-no-from", "pipeline": [{"$graphLookup": {"as": "h"}}], "error": 9},
    {"id": "graphlookup-err-not-object", "pipeline": [{"$graphLookup": "e"}], "error": 9},
    {"id": "graphlookup-err-as-type",
     "pipeline": [{"$graphLookup": {"from": "e", "as": 1, "startWith": 1,
                                    "connectFromField": "a", "connectToField": "b"}}],
     "error": 40103},
    {"id": "graphlookup-err-from-type",
     "pipeline": [{"$graphLookup": {"from": 1, "as": "h", "startWith": 1, "connectFromField": "a",
                                    "connectToField": "b"}}], "error": 9},
    {"id": "graphlookup-err-restrict-type",
     "pipeline": [{"$graphLookup": {"from": "e", "as": "h", "startWith": 1, "connectFromField": "a",
                                    "connectToField": "b", "restrictSearchWithMatch": 1}}],
     "error": 40185},
    # ---- $out ----
    {
        "id": "out-new-collection",
        "colls": {"src": [{"_id": 1, "v": 1}, {"_id": 2, "v": 2}]},
        "pipeline": [{"$match": {"v": 2}}, {"$out": "dest"}],
        "expected": [],
        "after": {"dest": [{"_id": 2, "v": 2}]},
    },
    {
        "id": "out-replaces-existing",
        "colls": {"src": [{"_id": 1, "v": 1}], "dest": [{"_id": 9, "old": True},
                                                        {"_id": 1, "old": True}]},
        "pipeline": [{"$out": {"db": None, "coll": "dest"}}],
        "expected": [],
        "after": {"dest": [{"_id": 1, "v": 1}]},
    },
    {
        "id": "out-failure-leaves-target",
        "colls": {"src": [{"_id": 1}, {"_id": 2}], "dest": [{"_id": "kept"}]},
        "pipeline": [{"$project": {"_id": {"$literal": 7}}}, {"$out": "dest"}],
        "error": 11000,
        "after": {"dest": [{"_id": "kept"}]},
    },
    {
        "id": "out-timeseries",
        "colls": {"src": [{"_id": 1, "t": hours(1), "m": "x", "v": 1},
                          {"_id": 2, "t": hours(2), "m": "y", "v": 2}]},
        "pipeline": [{"$out": {"db": None, "coll": "tsout",
                               "timeseries": {"timeField": "t", "metaField": "m"}}}],
        "expected": [],
        "after": {"tsout": [{"_id": 1, "t": hours(1), "m": "x", "v": 1},
                            {"_id": 2, "t": hours(2), "m": "y", "v": 2}]},
    },
    {
        "id": "out-into-existing-timeseries-keeps-options",
        "colls": {"src": [{"_id": 7, "t": hours(5), "s": "z", "v": 70}], "sensors": SENSORS},
        "pipeline": [{"$out": "sensors"}],
        "expected": [],
        "after": {"sensors": [{"_id": 7, "t": hours(5), "s": "z", "v": 70}]},
    },
    {
        "id": "out-err-timeseries-options-differ",
        "colls": {"src": [{"_id": 7, "t": hours(5)}], "sensors": SENSORS},
        "pipeline": [{"$out": {"db": None, "coll": "sensors", "timeseries": {"timeField": "t"}}}],
        "error": 7406103,
        "after_count": {"sensors": 3},
    },
    {
        "id": "out-err-timeseries-over-collection",
        "colls": {"src": [{"_id": 7, "t": hours(5)}], "plain": [{"_id": 1}]},
        "pipeline": [{"$out": {"db": None, "coll": "plain", "timeseries": {"timeField": "t"}}}],
        "error": 7268700,
        "after": {"plain": [{"_id": 1}]},
    },
    {"id": "out-err-object-without-db", "pipeline": [{"$out": {"coll": "x"}}], "error": 40414},
    {"id": "out-err-not-last", "pipeline": [{"$out": "x"}, {"$match": {}}], "error": 40601},
    {"id": "out-err-type", "pipeline": [{"$out": 1}], "error": 16990},
    {"id": "out-err-system", "pipeline": [{"$out": "system.x"}], "error": 17385},
    {"id": "out-err-internal-db", "pipeline": [{"$out": {"db": "admin", "coll": "x"}}],
     "error": 31321},
    {"id": "out-err-unknown-field", "pipeline": [{"$out": {"coll": "x", "bad": 1}}],
     "error": 40415},
    {"id": "out-err-in-facet", "pipeline": [{"$facet": {"a": [{"$out": "x"}]}}], "error": 40600},
    # ---- $merge: every whenMatched / whenNotMatched mode ----
    merge_case("default-merge-insert", {},
               [{"_id": 1, "a": 10, "b": 1}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}]),
    merge_case("replace-insert", {"whenMatched": "replace", "whenNotMatched": "insert"},
               [{"_id": 1, "a": 10}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}]),
    merge_case("keepexisting-insert", {"whenMatched": "keepExisting"},
               [{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}]),
    merge_case("merge-discard", {"whenMatched": "merge", "whenNotMatched": "discard"},
               [{"_id": 1, "a": 10, "b": 1}, {"_id": 2, "a": 2, "b": 2}]),
    merge_case("replace-discard", {"whenMatched": "replace", "whenNotMatched": "discard"},
               [{"_id": 1, "a": 10}, {"_id": 2, "a": 2, "b": 2}]),
    merge_case("pipeline-insert",
               {"whenMatched": [{"$set": {"b": {"$add": ["$b", "$$new.a"]}}}]},
               [{"_id": 1, "a": 1, "b": 11}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}]),
    merge_case("pipeline-let-discard",
               {"let": {"na": "$a"}, "whenMatched": [{"$set": {"c": "$$na"}}],
                "whenNotMatched": "discard"},
               [{"_id": 1, "a": 1, "b": 1, "c": 10}, {"_id": 2, "a": 2, "b": 2}]),
    # keepExisting and fail go only with whenNotMatched: insert.
    merge_case("err-keepexisting-discard", {"whenMatched": "keepExisting",
                                            "whenNotMatched": "discard"}, error=51181),
    merge_case("pipeline-discard", {"whenMatched": [{"$set": {"b": "$$new.a"}}],
                                    "whenNotMatched": "discard"},
               [{"_id": 1, "a": 1, "b": 10}, {"_id": 2, "a": 2, "b": 2}]),
    merge_case("err-fail-discard", {"whenMatched": "fail", "whenNotMatched": "discard"},
               error=51181),
    merge_case("replace-fail", {"whenMatched": "replace", "whenNotMatched": "fail"}, error=13113),
    merge_case("err-fail-fail", {"whenMatched": "fail", "whenNotMatched": "fail"}, error=51181),
    merge_case("err-keepexisting-fail", {"whenMatched": "keepExisting", "whenNotMatched": "fail"},
               error=51181),
    merge_case("merge-fail-when-not-matched", {"whenMatched": "merge", "whenNotMatched": "fail"},
               error=13113),
    merge_case("pipeline-fail-when-not-matched",
               {"whenMatched": [{"$set": {"x": 1}}], "whenNotMatched": "fail"}, error=13113),
    merge_case("err-let-new-not-root", {"let": {"new": "$a"}, "whenMatched": []}, error=51273),
    merge_case("err-duplicate-on-field", {"on": ["a", "a"]}, error=31465),
    merge_case("err-into-empty", {"into": ""}, error=5786800),
    merge_case("err-into-object-without-coll", {"into": {"db": "x"}}, error=5786801),
    merge_case("err-into-system", {"into": "system.x"}, error=31319),
    merge_case("err-into-internal-db", {"into": {"db": "config", "coll": "x"}}, error=31320),
    merge_case("fail-when-matched", {"whenMatched": "fail"}, error=11000),
    merge_case("fail-when-not-matched", {"whenNotMatched": "fail"}, error=13113),
    merge_case("err-on-without-unique-index", {"on": "a"}, error=51183),
    merge_case("err-bad-when-matched", {"whenMatched": "upsert"}, error=2),
    merge_case("err-bad-when-not-matched", {"whenNotMatched": "upsert"}, error=2),
    merge_case("err-let-without-pipeline", {"let": {"x": 1}}, error=51199),
    merge_case("err-on-empty-array", {"on": []}, error=51187),
    {
        "id": "merge-replace-fail-all-matched",
        "colls": {"src": [{"_id": 1, "a": 10}], "tgt": TARGET},
        "pipeline": [{"$merge": {"into": "tgt", "whenMatched": "replace",
                                 "whenNotMatched": "fail"}}],
        "expected": [],
        "after": {"tgt": [{"_id": 1, "a": 10}, {"_id": 2, "a": 2, "b": 2}]},
    },
    {
        "id": "merge-into-object-form",
        "colls": {"src": [{"_id": 1, "a": 1}]},
        "pipeline": [{"$merge": {"into": {"db": None, "coll": "fresh2"}}}],
        "expected": [],
        "after": {"fresh2": [{"_id": 1, "a": 1}]},
    },
    {
        "id": "merge-string-into-new-collection",
        "colls": {"src": [{"_id": 1, "a": 1}]},
        "pipeline": [{"$merge": "fresh"}],
        "expected": [],
        "after": {"fresh": [{"_id": 1, "a": 1}]},
    },
    {
        "id": "merge-generates-missing-id",
        "colls": {"src": [{"_id": 1, "a": 1}]},
        "pipeline": [{"$project": {"_id": 0, "a": 1}}, {"$merge": "fresh"},],
        "expected": [],
        "after_count": {"fresh": 1},
    },
    {"id": "merge-err-into-missing", "pipeline": [{"$merge": {"on": "_id"}}], "error": 40414},
    {"id": "merge-err-type", "pipeline": [{"$merge": 1}], "error": 14},
    {"id": "merge-err-into-type", "pipeline": [{"$merge": {"into": 1}}], "error": 51178},
    {"id": "merge-err-not-last", "pipeline": [{"$merge": "x"}, {"$limit": 1}], "error": 40601},
    {"id": "merge-err-into-timeseries", "colls": {"src": [{"_id": 1}], "sensors": SENSORS},
     "pipeline": [{"$merge": "sensors"}], "error": 166},
    # ---- $bucketAuto ----
    {
        "id": "bucketauto-even",
        "colls": {"src": [{"_id": i, "p": 10 * i} for i in range(1, 9)]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 4}}],
        "expected": [{"_id": {"min": 10, "max": 30}, "count": 2},
                     {"_id": {"min": 30, "max": 50}, "count": 2},
                     {"_id": {"min": 50, "max": 70}, "count": 2},
                     {"_id": {"min": 70, "max": 80}, "count": 2}],
    },
    {
        "id": "bucketauto-missing-is-null-and-output",
        "colls": {"src": [{"_id": 1}, {"_id": 2, "p": 5}, {"_id": 3, "p": 7}, {"_id": 4, "p": 9}]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 2,
                                      "output": {"ids": {"$push": "$_id"}}}}],
        "expected": [{"_id": {"min": None, "max": 7}, "ids": [1, 2]},
                     {"_id": {"min": 7, "max": 9}, "ids": [3, 4]}],
    },
    {
        # Accumulators with options ($topN, $maxN) work in $bucketAuto's output as in $group.
        "id": "bucketauto-output-n-accumulators",
        "colls": {"src": [{"_id": i, "p": 10 * i} for i in range(1, 9)]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 2, "output": {
            "top": {"$topN": {"n": 2, "sortBy": {"p": -1}, "output": "$p"}},
            "ids": {"$maxN": {"n": 2, "input": "$_id"}}}}}],
        "expected": [{"_id": {"min": 10, "max": 50}, "top": [40, 30], "ids": [4, 3]},
                     {"_id": {"min": 50, "max": 80}, "top": [80, 70], "ids": [8, 7]}],
    },
    {
        "id": "bucketauto-more-buckets-than-docs",
        "colls": {"src": [{"_id": 1, "p": 1}, {"_id": 2, "p": 2}]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 5}}],
        "expected": [{"_id": {"min": 1, "max": 2}, "count": 1},
                     {"_id": {"min": 2, "max": 2}, "count": 1}],
    },
    {
        "id": "bucketauto-granularity-r5",
        "colls": {"src": [{"_id": i, "p": p} for i, p in enumerate([1, 3, 7, 12, 30])]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 2, "granularity": "R5"}}],
        "expected": [{"_id": {"min": 0.63, "max": 10.0}, "count": 3},
                     {"_id": {"min": 10.0, "max": 40.0}, "count": 2}],
    },
    {
        "id": "bucketauto-granularity-powersof2",
        "colls": {"src": [{"_id": i, "p": i} for i in range(1, 11)]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 2, "granularity": "POWERSOF2"}}],
        "expected": [{"_id": {"min": 0.5, "max": 8}, "count": 7},
                     {"_id": {"min": 8, "max": 16}, "count": 3}],
    },
    {
        # MongoDB's R80 series has 103 and 109 below 115 (not the textbook 1.03, 1.06, 1.09...).
        "id": "bucketauto-granularity-r80-series",
        "colls": {"src": [{"_id": 1, "p": 104}, {"_id": 2, "p": 200}]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 2, "granularity": "R80"}}],
        "expected": [{"_id": {"min": 103.0, "max": 109.0}, "count": 1},
                     {"_id": {"min": 109.0, "max": 206.0}, "count": 1}],
    },
    {
        "id": "bucketauto-granularity-zero-max",
        "colls": {"src": [{"_id": 1, "p": 0}, {"_id": 2, "p": 0}, {"_id": 3, "p": 3}]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 2, "granularity": "1-2-5"}}],
        # The first bucket's max rounds to 0, so it becomes the next value rounded down.
        "expected": [{"_id": {"min": 0, "max": 2.0}, "count": 2},
                     {"_id": {"min": 2.0, "max": 5.0}, "count": 1}],
    },
    {
        "id": "bucketauto-missing-accumulator-is-null",
        "colls": {"src": [{"_id": 1, "p": 1}]},
        "pipeline": [{"$bucketAuto": {"groupBy": "$p", "buckets": 1,
                                      "output": {"f": {"$first": "$nope"}}}}],
        "expected": [{"_id": {"min": 1, "max": 1}, "f": None}],
    },
    {"id": "bucketauto-err-spec", "pipeline": [{"$bucketAuto": 1}], "error": 40240},
    {"id": "bucketauto-err-groupby-object",
     "pipeline": [{"$bucketAuto": {"groupBy": {"a": "$a"}, "buckets": 1}}], "error": 40239},
    {"id": "bucketauto-err-required", "pipeline": [{"$bucketAuto": {"groupBy": "$a"}}],
     "error": 40246},
    {"id": "bucketauto-err-buckets", "pipeline": [{"$bucketAuto": {"groupBy": "$a", "buckets": 0}}],
     "error": 40243},
    {"id": "bucketauto-err-granularity",
     "pipeline": [{"$bucketAuto": {"groupBy": "$a", "buckets": 1, "granularity": "R7"}}],
     "error": 40257},
    {"id": "bucketauto-err-granularity-nonnumeric", "colls": {"src": [{"a": "x"}]},
     "pipeline": [{"$bucketAuto": {"groupBy": "$a", "buckets": 1, "granularity": "E6"}}],
     "error": 40258},
    {"id": "bucketauto-err-granularity-negative", "colls": {"src": [{"a": -2}]},
     "pipeline": [{"$bucketAuto": {"groupBy": "$a", "buckets": 1, "granularity": "E6"}}],
     "error": 40260},
    # ---- $redact ----
    {
        "id": "redact-descend-prune",
        "colls": {"src": [
            {"_id": 1, "level": 1, "sub": {"level": 5, "x": 1}, "arr": [{"level": 0}, {"level": 9}, 4],
             "plain": {"y": 2}},
            {"_id": 2, "level": 7},
        ]},
        "pipeline": [{"$redact": {"$cond": {"if": {"$gt": [{"$ifNull": ["$level", 0]}, 3]},
                                            "then": "$$PRUNE", "else": "$$DESCEND"}}}],
        "expected": [{"_id": 1, "level": 1, "arr": [{"level": 0}, 4], "plain": {"y": 2}}],
    },
    {
        "id": "redact-keep",
        "colls": {"src": [{"_id": 1, "keep": True, "sub": {"keep": False}}, {"_id": 2}]},
        "pipeline": [{"$redact": {"$cond": [{"$eq": ["$keep", True]}, "$$KEEP", "$$PRUNE"]}}],
        "expected": [{"_id": 1, "keep": True, "sub": {"keep": False}}],
    },
    {"id": "redact-err-bad-result", "colls": {"src": [{"_id": 1}]},
     "pipeline": [{"$redact": "keep"}], "error": 17053},
]


def _fill_db(pipeline, dbname):
    """{"db": None} in $out/$merge targets means the test's own database."""
    for stage in pipeline:
        for spec in stage.values():
            if isinstance(spec, dict) and isinstance(spec.get("into"), dict):
                spec = spec["into"]
            if isinstance(spec, dict) and spec.get("db", "") is None:
                spec["db"] = dbname
    return pipeline


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_stage_case(db, case):
    create_collections(db, case.get("colls", {}))
    pipeline = _fill_db([dict((k, v) for k, v in s.items()) for s in case["pipeline"]], db.name)
    cmd = {"aggregate": case.get("source", "src"), "pipeline": pipeline, "cursor": {}}
    if "error" in case:
        code, _, msg = command_error(db, cmd)
        assert code == case["error"], msg
    else:
        reply = db.command(cmd)
        cursor = reply["cursor"]
        got = cursor["firstBatch"]
        assert cursor["id"] == 0
        assert got == case["expected"]
    for coll, want in case.get("after", {}).items():
        assert list(db[coll].find().sort("_id", 1)) == want
    for coll, n in case.get("after_count", {}).items():
        assert db[coll].count_documents({}) == n


def test_out_result_is_a_plain_collection_and_temp_is_gone(db):
    db.src.insert_many([{"_id": i} for i in range(1200)])  # several write batches
    db.command({"aggregate": "src", "pipeline": [{"$out": "dest"}], "cursor": {}})
    assert db.dest.count_documents({}) == 1200
    assert sorted(db.list_collection_names()) == ["dest", "src"]


def test_out_to_other_database(client, db):
    other = client[db.name + "_o"]
    try:
        db.src.insert_one({"_id": 1})
        db.command({"aggregate": "src", "pipeline": [{"$out": {"db": other.name, "coll": "d"}}],
                    "cursor": {}})
        assert list(other.d.find()) == [{"_id": 1}]
    finally:
        client.drop_database(other.name)


def test_out_timeseries_is_timeseries(db):
    db.src.insert_one({"t": T0, "v": 1})
    db.command({"aggregate": "src", "cursor": {},
                "pipeline": [{"$out": {"db": db.name, "coll": "ts",
                                       "timeseries": {"timeField": "t"}}}]})
    info = {c["name"]: c for c in db.list_collections()}
    assert info["ts"]["type"] == "timeseries"
    assert [d["v"] for d in db.ts.find()] == [1]


def test_out_timeseries_missing_time_field(db):
    db.src.insert_one({"v": 1})
    code, _, _ = command_error(db, {"aggregate": "src", "cursor": {}, "pipeline": [
        {"$out": {"db": db.name, "coll": "ts", "timeseries": {"timeField": "t"}}}]})
    assert code == 2


def test_lookup_through_cursor_batches(db):
    """A $lookup stream continues across getMore (the cursor keeps the collection access)."""
    db.src.insert_many([{"_id": i, "k": i % 3} for i in range(50)])
    db.f.insert_many([{"_id": i, "k": i} for i in range(3)])
    docs = list(db.src.aggregate([{"$lookup": {"from": "f", "localField": "k",
                                               "foreignField": "k", "as": "j"}}], batchSize=7))
    assert len(docs) == 50
    assert all(d["j"] == [{"_id": d["k"], "k": d["k"]}] for d in docs)


def test_pymongo_aggregate_helpers_run_out_and_merge(db):
    """Drivers send $out/$merge pipelines through their usual aggregate helper."""
    db.src.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}])
    assert list(db.src.aggregate([{"$match": {"v": 2}}, {"$out": "o"}])) == []
    assert list(db.o.find()) == [{"_id": 2, "v": 2}]
    assert list(db.src.aggregate([{"$merge": {"into": "o", "whenMatched": "keepExisting"}}])) == []
    assert list(db.o.find().sort("_id", 1)) == [{"_id": 1, "v": 1}, {"_id": 2, "v": 2}]


def test_lookup_result_over_16mb_fails(db):
    """MongoDB refuses a $lookup whose matches for one document exceed the BSON limit (4568)."""
    big = "x" * (1024 * 1024)
    db.f.insert_many([{"_id": i, "k": 1, "pad": big} for i in range(17)])
    db.src.insert_one({"_id": 0, "k": 1})
    code, _, _ = command_error(db, {"aggregate": "src", "cursor": {}, "pipeline": [
        {"$lookup": {"from": "f", "localField": "k", "foreignField": "k", "as": "j"}}]})
    assert code == 4568


def test_out_into_existing_timeseries_keeps_its_options(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m",
                                           "granularity": "hours"})
    db.ts.insert_one({"t": T0, "m": "old", "v": 0})
    db.src.insert_many([{"t": hours(1), "m": "new", "v": 1}, {"t": hours(2), "m": "new", "v": 2}])
    db.command({"aggregate": "src", "cursor": {}, "pipeline": [{"$project": {"_id": 0}},
                                                                {"$out": "ts"}]})
    info = {c["name"]: c for c in db.list_collections()}
    assert info["ts"]["options"]["timeseries"]["granularity"] == "hours"
    assert sorted(d["v"] for d in db.ts.find()) == [1, 2]


def test_out_runs_with_batch_size_zero(db):
    """$out and $merge write during the aggregate command itself, even with batchSize 0."""
    db.src.insert_many([{"_id": 1}, {"_id": 2}])
    reply = db.command({"aggregate": "src", "pipeline": [{"$out": "o"}],
                        "cursor": {"batchSize": 0}})
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["firstBatch"] == []
    assert db.o.count_documents({}) == 2
    db.command({"aggregate": "src", "pipeline": [{"$merge": "m"}], "cursor": {"batchSize": 0}})
    assert db.m.count_documents({}) == 2
