"""The `let` option of find, aggregate, update, delete, findAndModify (and explain of them), the
`let` of $lookup and $merge, and the variables they define, as small declarative cases.

Each case names the collections to create (a list of documents, or {"timeseries": options,
"docs": [...]} for a time-series collection) and the command to run, then what to expect:
`expected` (the first batch, compared in order), `reply` (a subset of the reply's fields),
`error` (the code, at the top level or as the first writeError), `after` (a collection's
contents afterwards, sorted by _id) or `after_count`. Expected values follow MongoDB 7.0's
documented semantics (the manual's pages on the `let` options and on $lookup, and its
jstests/core/command_let_variables.js).
"""

import datetime

import pytest

from conftest import create_collections, run_command

T0 = datetime.datetime(2024, 1, 1, 0, 0)


def minutes(m):
    return T0 + datetime.timedelta(minutes=m)


C = [
    {"_id": 1, "name": "a", "v": 1},
    {"_id": 2, "name": "b", "v": 2},
    {"_id": 3, "name": "c", "v": 3},
]
D = [
    {"_id": 10, "k": 1},
    {"_id": 11, "k": 2},
    {"_id": 12, "k": "1"},
]
TS = {
    "timeseries": {"timeField": "t", "metaField": "m"},
    "docs": [
        {"t": minutes(0), "m": "x", "v": 1},
        {"t": minutes(1), "m": "x", "v": 2},
        {"t": minutes(2), "m": "y", "v": 3},
    ],
}


def agg(pipeline, let, coll="c"):
    cmd = {"aggregate": coll, "pipeline": pipeline, "cursor": {}}
    if let is not None:
        cmd["let"] = let
    return cmd


def project_x(let, x, extra=None):
    spec = {"_id": 1, "x": x}
    spec.update(extra or {})
    return agg([{"$project": spec}, {"$limit": 1}], let)


CASES = [
    # ---- aggregate: where the variables can be read ----
    {"id": "agg-match-expr", "colls": {"c": C},
     "cmd": agg([{"$match": {"$expr": {"$eq": ["$name", "$$target"]}}}], {"target": "b"}),
     "expected": [C[1]]},
    {"id": "agg-expression-value", "colls": {"c": C},
     "cmd": project_x({"k": {"$add": [2, 3]}}, "$$k"), "expected": [{"_id": 1, "x": 5}]},
    {"id": "agg-later-let-uses-earlier", "colls": {"c": C},
     "cmd": project_x({"a": 2, "b": {"$add": ["$$a", 3]}, "c": {"$multiply": ["$$a", "$$b"]}},
                      "$$c"),
     "expected": [{"_id": 1, "x": 10}]},
    {"id": "agg-let-reads-now", "colls": {"c": C},
     "cmd": project_x({"t": "$$NOW"}, {"$eq": ["$$t", "$$NOW"]}),
     "expected": [{"_id": 1, "x": True}]},
    {"id": "agg-variable-with-path", "colls": {"c": C},
     "cmd": project_x({"o": {"a": {"b": 7}}}, "$$o.a.b"), "expected": [{"_id": 1, "x": 7}]},
    {"id": "agg-literal-is-not-a-path", "colls": {"c": C},
     "cmd": project_x({"b": {"$literal": "$notAFieldPath"}}, "$$b"),
     "expected": [{"_id": 1, "x": "$notAFieldPath"}]},
    # $let may rebind $$CURRENT: field paths in its `in` then read the bound value.
    {"id": "agg-let-rebinds-current", "colls": {"c": [{"_id": 1, "a": {"v": 5}, "v": 1}]},
     "cmd": agg([{"$project": {"x": {"$let": {"vars": {"CURRENT": "$a"},
                                               "in": ["$v", "$$CURRENT.v", "$$ROOT.v"]}}}}],
                None),
     "expected": [{"_id": 1, "x": [5, 5, 1]}]},
    {"id": "command-let-current-not-supported", "colls": {"c": C},
     "cmd": project_x({"CURRENT": {"a": 1}}, "$a"), "error": 115},
    {"id": "agg-inner-let-shadows", "colls": {"c": C},
     "cmd": project_x({"v": "OUTER"}, {"$let": {"vars": {"v": "INNER"}, "in": "$$v"}},
                      {"y": "$$v"}),
     "expected": [{"_id": 1, "x": "INNER", "y": "OUTER"}]},
    {"id": "agg-map-as-shadows", "colls": {"c": C},
     "cmd": project_x({"this": 99, "n": 5},
                      {"$map": {"input": [1, 2], "as": "n", "in": {"$add": ["$$n", "$$this"]}}}),
     "expected": [{"_id": 1, "x": [100, 101]}]},
    {"id": "agg-group-accumulator", "colls": {"c": C},
     "cmd": agg([{"$group": {"_id": "$$key", "s": {"$sum": {"$multiply": ["$v", "$$k"]}}}}],
                {"k": 10, "key": "all"}),
     "expected": [{"_id": "all", "s": 60}]},
    {"id": "agg-facet-sub-pipeline", "colls": {"c": C},
     "cmd": agg([{"$facet": {"f": [{"$match": {"$expr": {"$gt": ["$v", "$$min"]}}},
                                   {"$count": "n"}]}}], {"min": 1}),
     "expected": [{"f": [{"n": 2}]}]},
    {"id": "agg-unionwith-sub-pipeline", "colls": {"c": C, "d": D},
     "cmd": agg([{"$match": {"_id": 1}},
                 {"$unionWith": {"coll": "d", "pipeline": [
                     {"$match": {"$expr": {"$eq": ["$k", "$$want"]}}},
                     {"$project": {"tag": "$$tag"}}]}}],
                {"want": 2, "tag": "t"}),
     "expected": [C[0], {"_id": 11, "tag": "t"}]},
    {"id": "agg-redact", "colls": {"c": C},
     "cmd": agg([{"$redact": {"$cond": [{"$eq": ["$v", "$$keep"]}, "$$KEEP", "$$PRUNE"]}}],
                {"keep": 3}),
     "expected": [C[2]]},
    {"id": "agg-set-window-fields", "colls": {"c": C},
     "cmd": agg([{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
                 "s": {"$sum": {"$add": ["$v", "$$plus"]}}}}}, {"$project": {"s": 1}}],
                {"plus": 1}),
     "expected": [{"_id": 1, "s": 9}, {"_id": 2, "s": 9}, {"_id": 3, "s": 9}]},
    {"id": "agg-let-null-is-no-let", "colls": {"c": C},
     "cmd": agg([{"$match": {"_id": 1}}], None) | {"let": None}, "expected": [C[0]]},
    {"id": "agg-let-empty", "colls": {"c": C},
     "cmd": agg([{"$match": {"_id": 1}}], {}), "expected": [C[0]]},
    {"id": "agg-let-get-field-of-literal", "colls": {"c": C},
     "cmd": project_x({"g": {"$getField": {"field": "a.b", "input": {"$literal": {"a.b": 4}}}}},
                      "$$g"),
     "expected": [{"_id": 1, "x": 4}]},
    {"id": "agg-search-meta-is-missing", "colls": {"c": C},
     "cmd": project_x(None, "$$SEARCH_META"), "expected": [{"_id": 1}]},
    {"id": "agg-collectionless-documents",
     "cmd": {"aggregate": 1, "pipeline": [{"$documents": [{"a": "$$v"}]}], "cursor": {},
             "let": {"v": {"$concat": ["x", "y"]}}},
     "expected": [{"a": "xy"}]},

    # ---- aggregate: errors ----
    {"id": "agg-undefined-variable", "colls": {"c": C},
     "cmd": project_x({"other": 1}, "$$nope"), "error": 17276},
    {"id": "agg-undefined-without-let", "colls": {"c": C},
     "cmd": agg([{"$match": {"$expr": {"$eq": ["$name", "$$target"]}}}], None), "error": 17276},
    {"id": "agg-let-not-object", "colls": {"c": C},
     "cmd": agg([], 1), "error": 14},
    {"id": "agg-let-array", "colls": {"c": C},
     "cmd": agg([], [1]), "error": 14},
    {"id": "agg-let-uppercase-name", "colls": {"c": C},
     "cmd": agg([], {"Bad": 1}), "error": 9},
    {"id": "agg-let-root", "colls": {"c": C}, "cmd": agg([], {"ROOT": 1}), "error": 9},
    {"id": "agg-let-remove", "colls": {"c": C}, "cmd": agg([], {"REMOVE": 1}), "error": 9},
    {"id": "agg-let-now", "colls": {"c": C}, "cmd": agg([], {"NOW": 1}), "error": 4738901},
    {"id": "agg-let-cluster-time", "colls": {"c": C},
     "cmd": agg([], {"CLUSTER_TIME": 1}), "error": 4738901},
    {"id": "agg-let-is-mr", "colls": {"c": C}, "cmd": agg([], {"IS_MR": 1}), "error": 4738901},
    {"id": "agg-let-js-scope", "colls": {"c": C},
     "cmd": agg([], {"JS_SCOPE": 1}), "error": 4738901},
    {"id": "agg-let-bad-character", "colls": {"c": C},
     "cmd": agg([], {"a-b": 1}), "error": 9},
    {"id": "agg-let-digit-first", "colls": {"c": C}, "cmd": agg([], {"1a": 1}), "error": 9},
    {"id": "agg-let-empty-name", "colls": {"c": C}, "cmd": agg([], {"": 1}), "error": 9},
    {"id": "agg-let-field-path", "colls": {"c": C},
     "cmd": agg([], {"a": "$_id"}), "error": 4890500},
    {"id": "agg-let-root-variable", "colls": {"c": C},
     "cmd": agg([], {"a": "$$ROOT"}), "error": 4890500},
    {"id": "agg-let-nested-field-path", "colls": {"c": C},
     "cmd": agg([], {"a": {"$add": ["$v", 1]}}), "error": 4890500},
    {"id": "agg-let-get-field-of-document", "colls": {"c": C},
     "cmd": agg([], {"a": {"$getField": "name"}}), "error": 4890500},
    {"id": "agg-let-undefined-variable", "colls": {"c": C},
     "cmd": agg([], {"a": "$$oops"}), "error": 17276},
    {"id": "agg-let-later-variable", "colls": {"c": C},
     "cmd": agg([], {"a": "$$b", "b": 1}), "error": 17276},
    {"id": "agg-cluster-time-unavailable", "colls": {"c": C},
     "cmd": project_x(None, "$$CLUSTER_TIME"), "error": 51144},
    {"id": "agg-inner-let-bad-name", "colls": {"c": C},
     "cmd": project_x(None, {"$let": {"vars": {"Bad": 1}, "in": 1}}), "error": 9},

    # ---- $lookup ----
    {"id": "lookup-uncorrelated-reads-command-let", "colls": {"c": C, "d": D},
     "cmd": agg([{"$match": {"_id": {"$lte": 2}}},
                 {"$lookup": {"from": "d", "as": "j", "pipeline": [
                     {"$match": {"$expr": {"$eq": ["$k", "$$want"]}}}]}}], {"want": 2}),
     "expected": [dict(C[0], j=[D[1]]), dict(C[1], j=[D[1]])]},
    {"id": "lookup-inner-let-shadows-lookup-let", "colls": {"c": C, "d": D[:1]},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": "$v"}, "pipeline": [
         {"$project": {"_id": 0,
                       "inner": {"$let": {"vars": {"x": "in"}, "in": "$$x"}},
                       "outer": "$$x"}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"inner": "in", "outer": 1}]},
                  {"_id": 2, "j": [{"inner": "in", "outer": 2}]},
                  {"_id": 3, "j": [{"inner": "in", "outer": 3}]}]},
    {"id": "lookup-map-as-shadows-lookup-let", "colls": {"c": C[:1], "d": D[:1]},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": "$v"}, "pipeline": [
         {"$project": {"_id": 0,
                       "m": {"$map": {"input": [1, 2], "as": "x", "in": {"$add": ["$$x", 10]}}},
                       "f": {"$filter": {"input": [5, 6], "as": "x",
                                         "cond": {"$eq": ["$$x", 6]}}},
                       "o": "$$x"}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"m": [11, 12], "f": [6], "o": 1}]}]},
    {"id": "lookup-let-shadows-command-let", "colls": {"c": C[:2], "d": D[:1]},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": "$v"}, "pipeline": [
         {"$project": {"_id": 0, "y": "$$x", "z": "$$z"}}]}},
                 {"$project": {"j": 1, "cmd": "$$x"}}], {"x": "cmd", "z": "zz"}),
     "expected": [{"_id": 1, "j": [{"y": 1, "z": "zz"}], "cmd": "cmd"},
                  {"_id": 2, "j": [{"y": 2, "z": "zz"}], "cmd": "cmd"}]},
    {"id": "lookup-let-expression-reads-command-let", "colls": {"c": C[:2], "d": D[:1]},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": {"$add": ["$v", "$$base"]}},
                              "pipeline": [{"$project": {"_id": 0, "y": "$$x"}}]}},
                 {"$project": {"j": 1}}], {"base": 100}),
     "expected": [{"_id": 1, "j": [{"y": 101}]}, {"_id": 2, "j": [{"y": 102}]}]},
    {"id": "lookup-nested-reads-outer-let", "colls": {"c": C[:2], "d": D[:1]},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"a": "$v"}, "pipeline": [
         {"$lookup": {"from": "d", "as": "inner", "pipeline": [
             {"$project": {"_id": 0, "a2": {"$multiply": ["$$a", 2]}}}]}},
         {"$project": {"_id": 0, "inner": 1}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"inner": [{"a2": 2}]}]},
                  {"_id": 2, "j": [{"inner": [{"a2": 4}]}]}]},
    {"id": "lookup-correlated-expr-eq", "colls": {"c": C, "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"kv": "$v"}, "pipeline": [
         {"$match": {"$expr": {"$eq": ["$k", "$$kv"]}}}, {"$project": {"_id": 0, "k": 1}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"k": 1}]}, {"_id": 2, "j": [{"k": 2}]},
                  {"_id": 3, "j": []}]},
    {"id": "lookup-correlated-expr-eq-and-command-let", "colls": {"c": C, "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"kv": "$v"}, "pipeline": [
         {"$match": {"$expr": {"$and": [{"$eq": ["$k", "$$kv"]}, {"$ne": ["$k", "$$skip"]}]}}},
         {"$project": {"_id": 0, "k": 1}}]}},
                 {"$project": {"j": 1}}], {"skip": 2}),
     "expected": [{"_id": 1, "j": [{"k": 1}]}, {"_id": 2, "j": []}, {"_id": 3, "j": []}]},
    {"id": "lookup-combined-form-with-let", "colls": {"c": C, "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "localField": "v", "foreignField": "k", "as": "j",
                              "let": {"n": "$name"},
                              "pipeline": [{"$project": {"_id": 0, "k": 1, "n": "$$n"}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"k": 1, "n": "a"}]}, {"_id": 2, "j": [{"k": 2, "n": "b"}]},
                  {"_id": 3, "j": []}]},
    {"id": "lookup-documents-reads-lookup-let", "colls": {"c": C[:2]},
     "cmd": agg([{"$lookup": {"as": "j", "let": {"x": "$v"}, "pipeline": [
         {"$documents": [{"a": "$$x"}, {"a": {"$add": ["$$x", 10]}}]}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"a": 1}, {"a": 11}]}, {"_id": 2, "j": [{"a": 2}, {"a": 12}]}]},
    {"id": "lookup-undefined-variable", "colls": {"c": C, "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": "$v"},
                              "pipeline": [{"$project": {"y": "$$nope"}}]}}], None),
     "error": 17276},
    {"id": "lookup-let-bad-name", "colls": {"c": C, "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"X": "$v"}, "pipeline": []}}],
                None),
     "error": 9},
    {"id": "lookup-let-variable-out-of-scope-after", "colls": {"c": C, "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": "$v"}, "pipeline": []}},
                 {"$project": {"y": "$$x"}}], None),
     "error": 17276},

    # ---- $merge ----
    {"id": "merge-let-in-when-matched", "colls": {"c": C, "out": [{"_id": 1}, {"_id": 2}]},
     "cmd": agg([{"$match": {"_id": {"$lte": 2}}},
                 {"$merge": {"into": "out", "let": {"f": 10, "nv": "$v"},
                             "whenMatched": [{"$set": {"w": {"$multiply": ["$$nv", "$$f"]}}}],
                             "whenNotMatched": "discard"}}], None),
     "expected": [], "after": {"out": [{"_id": 1, "w": 10}, {"_id": 2, "w": 20}]}},
    {"id": "merge-new-default", "colls": {"c": C, "out": [{"_id": 3, "old": True}]},
     "cmd": agg([{"$merge": {"into": "out", "whenMatched": [{"$set": {"n": "$$new.name"}}],
                             "whenNotMatched": "discard"}}], None),
     "expected": [], "after": {"out": [{"_id": 3, "old": True, "n": "c"}]}},

    {"id": "merge-pipeline-reads-command-let", "colls": {"c": C, "out": [{"_id": 2}]},
     "cmd": agg([{"$merge": {"into": "out", "whenMatched": [{"$set": {"g": "$$g"}}],
                             "whenNotMatched": "discard"}}], {"g": 5}),
     "expected": [], "after": {"out": [{"_id": 2, "g": 5}]}},
    {"id": "merge-let-bad-name", "colls": {"c": C},
     "cmd": agg([{"$merge": {"into": "out", "let": {"Bad": 1},
                             "whenMatched": [{"$set": {"g": 1}}]}}], None),
     "error": 9},

    # ---- find ----
    {"id": "find-expr-filter", "colls": {"c": C},
     "cmd": {"find": "c", "filter": {"$expr": {"$eq": ["$name", "$$t"]}}, "let": {"t": "c"}},
     "expected": [C[2]]},
    {"id": "find-projection-expression", "colls": {"c": C},
     "cmd": {"find": "c", "filter": {}, "projection": {"_id": "$$a"}, "limit": 1,
             "let": {"a": {"$add": [2, 3]}}},
     "expected": [{"_id": 5}]},
    {"id": "find-projection-and-filter", "colls": {"c": C},
     "cmd": {"find": "c", "filter": {"$expr": {"$gte": ["$v", "$$lo"]}},
             "projection": {"name": 1, "scaled": {"$multiply": ["$v", "$$lo"]}},
             "sort": {"_id": -1}, "let": {"lo": 2}},
     "expected": [{"_id": 3, "name": "c", "scaled": 6}, {"_id": 2, "name": "b", "scaled": 4}]},
    {"id": "find-undefined", "colls": {"c": C},
     "cmd": {"find": "c", "filter": {"$expr": {"$eq": ["$name", "$$t"]}}, "let": {"u": 1}},
     "error": 17276},
    {"id": "find-let-field-path", "colls": {"c": C},
     "cmd": {"find": "c", "filter": {}, "let": {"a": "$_id"}}, "error": 4890500},
    {"id": "find-let-not-object", "colls": {"c": C},
     "cmd": {"find": "c", "filter": {}, "let": "x"}, "error": 14},

    # ---- update ----
    {"id": "update-pipeline-and-query", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [
         {"q": {"$expr": {"$eq": ["$name", "$$target"]}}, "u": [{"$set": {"name": "$$nn"}}]}],
         "let": {"target": "b", "nn": "B"}},
     "reply": {"n": 1, "nModified": 1},
     "after": {"c": [C[0], {"_id": 2, "name": "B", "v": 2}, C[2]]}},
    {"id": "update-operator-style-query-let", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [
         {"q": {"$expr": {"$gt": ["$v", "$$lo"]}}, "u": {"$inc": {"v": 10}}, "multi": True}],
         "let": {"lo": 1}},
     "reply": {"n": 2, "nModified": 2},
     "after": {"c": [C[0], {"_id": 2, "name": "b", "v": 12}, {"_id": 3, "name": "c", "v": 13}]}},
    {"id": "update-several-statements-share-let", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [
         {"q": {"_id": 1}, "u": [{"$set": {"tag": "$$tag"}}]},
         {"q": {"_id": 3}, "u": [{"$set": {"tag": {"$concat": ["$$tag", "$name"]}}}]}],
         "let": {"tag": "T"}},
     "reply": {"n": 2, "nModified": 2},
     "after": {"c": [dict(C[0], tag="T"), C[1], dict(C[2], tag="Tc")]}},
    {"id": "update-upsert-with-let", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [
         {"q": {"_id": 7}, "u": [{"$set": {"made": "$$m"}}], "upsert": True}],
         "let": {"m": "yes"}},
     "reply": {"n": 1, "nModified": 0},
     "after": {"c": C + [{"_id": 7, "made": "yes"}]}},
    {"id": "update-undefined-in-query", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [
         {"q": {"$expr": {"$eq": ["$name", "$$target"]}}, "u": [{"$set": {"x": 1}}]}],
         "let": {"cat": 1}},
     "error": 17276},
    {"id": "update-undefined-in-pipeline", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [{"q": {}, "u": [{"$set": {"x": "$$nn"}}]}],
             "let": {"cat": 1}},
     "error": 17276},
    {"id": "update-bad-let-name", "colls": {"c": C},
     "cmd": {"update": "c", "updates": [{"q": {}, "u": {"$set": {"x": 1}}}], "let": {"A": 1}},
     "error": 9},

    # ---- delete ----
    {"id": "delete-with-let", "colls": {"c": C},
     "cmd": {"delete": "c", "deletes": [
         {"q": {"$expr": {"$eq": ["$name", "$$t"]}}, "limit": 0}], "let": {"t": "a"}},
     "reply": {"n": 1}, "after": {"c": C[1:]}},
    {"id": "delete-undefined", "colls": {"c": C},
     "cmd": {"delete": "c", "deletes": [
         {"q": {"$expr": {"$eq": ["$name", "$$t"]}}, "limit": 1}]},
     "error": 17276},
    {"id": "delete-let-field-path", "colls": {"c": C},
     "cmd": {"delete": "c", "deletes": [{"q": {}, "limit": 1}], "let": {"t": "$name"}},
     "error": 4890500},

    # ---- findAndModify ----
    {"id": "find-and-modify-pipeline-update", "colls": {"c": C},
     "cmd": {"findAndModify": "c", "query": {"$expr": {"$eq": ["$name", "$$t"]}},
             "update": [{"$project": {"name": "$$nn"}}, {"$addFields": {"s": "$$s"}}],
             "new": True, "let": {"t": "b", "nn": "bee", "s": "sus"}},
     "reply": {"value": {"_id": 2, "name": "bee", "s": "sus"}}},
    {"id": "find-and-modify-remove", "colls": {"c": C},
     "cmd": {"findAndModify": "c", "query": {"$expr": {"$eq": ["$v", "$$v"]}}, "remove": True,
             "let": {"v": 3}},
     "reply": {"value": C[2]}, "after": {"c": C[:2]}},
    {"id": "find-and-modify-fields-expression", "colls": {"c": C},
     "cmd": {"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"z": 1}},
             "fields": {"name": 1, "lbl": "$$lbl"}, "let": {"lbl": "L"}},
     "reply": {"value": {"_id": 1, "name": "a", "lbl": "L"}}},
    {"id": "find-and-modify-undefined", "colls": {"c": C},
     "cmd": {"findAndModify": "c", "query": {"$expr": {"$eq": ["$v", "$$v"]}}, "remove": True},
     "error": 17276},

    # ---- time-series collections ----
    {"id": "ts-aggregate-match-expr", "colls": {"ts": TS},
     "cmd": agg([{"$match": {"$expr": {"$gt": ["$v", "$$min"]}}},
                 {"$project": {"_id": 0, "v": 1}}, {"$sort": {"v": 1}}], {"min": 1}, "ts"),
     "expected": [{"v": 2}, {"v": 3}]},
    {"id": "ts-aggregate-meta-time-and-expr", "colls": {"ts": TS},
     "cmd": agg([{"$match": {"m": "x", "t": {"$gte": minutes(0), "$lt": minutes(10)},
                             "$expr": {"$eq": ["$v", "$$want"]}}},
                 {"$project": {"_id": 0, "m": 1, "v": 1}}], {"want": 2}, "ts"),
     "expected": [{"m": "x", "v": 2}]},
    {"id": "ts-aggregate-later-match", "colls": {"ts": TS},
     "cmd": agg([{"$sort": {"t": 1}}, {"$match": {"$expr": {"$eq": ["$m", "$$mm"]}}},
                 {"$project": {"_id": 0, "v": 1}}], {"mm": "y"}, "ts"),
     "expected": [{"v": 3}]},
    {"id": "ts-group-key-variable", "colls": {"ts": TS},
     "cmd": agg([{"$group": {"_id": "$$k", "n": {"$sum": 1}, "lo": {"$min": "$t"}}}],
                {"k": "all"}, "ts"),
     "expected": [{"_id": "all", "n": 3, "lo": minutes(0)}]},
    {"id": "ts-group-meta-sum-variable", "colls": {"ts": TS},
     "cmd": agg([{"$group": {"_id": "$m", "s": {"$sum": "$$two"}}}, {"$sort": {"_id": 1}}],
                {"two": 2}, "ts"),
     "expected": [{"_id": "x", "s": 4}, {"_id": "y", "s": 2}]},
    {"id": "ts-group-date-trunc-variable-unit", "colls": {"ts": TS},
     "cmd": agg([{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "$$u"}},
                             "n": {"$count": {}}}}], {"u": "hour"}, "ts"),
     "expected": [{"_id": T0, "n": 3}]},
    {"id": "ts-find-with-let", "colls": {"ts": TS},
     "cmd": {"find": "ts", "filter": {"$expr": {"$eq": ["$m", "$$mm"]}},
             "projection": {"_id": 0, "v": 1, "w": {"$add": ["$v", "$$d"]}}, "sort": {"t": 1},
             "let": {"mm": "x", "d": 100}},
     "expected": [{"v": 1, "w": 101}, {"v": 2, "w": 102}]},
    {"id": "ts-lookup-from-timeseries", "colls": {"c": C[:2], "ts": TS},
     "cmd": agg([{"$lookup": {"from": "ts", "as": "j", "let": {"want": "$v"}, "pipeline": [
         {"$match": {"$expr": {"$eq": ["$v", "$$want"]}}}, {"$project": {"_id": 0, "m": 1}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"m": "x"}]}, {"_id": 2, "j": [{"m": "x"}]}]},
    {"id": "ts-lastpoint-with-let", "colls": {"ts": TS},
     "cmd": agg([{"$sort": {"m": 1, "t": -1}},
                 {"$group": {"_id": "$m", "last": {"$first": "$v"}, "tag": {"$first": "$$tag"}}},
                 {"$sort": {"_id": 1}}], {"tag": "T"}, "ts"),
     "expected": [{"_id": "x", "last": 2, "tag": "T"}, {"_id": "y", "last": 3, "tag": "T"}]},
    {"id": "ts-lookup-uncorrelated-command-let", "colls": {"c": C[:1], "ts": TS},
     "cmd": agg([{"$lookup": {"from": "ts", "as": "j", "pipeline": [
         {"$match": {"m": "x", "$expr": {"$gte": ["$v", "$$lo"]}}},
         {"$project": {"_id": 0, "v": 1}}]}},
                 {"$project": {"j": 1}}], {"lo": 2}),
     "expected": [{"_id": 1, "j": [{"v": 2}]}]},
    {"id": "ts-unionwith-command-let", "colls": {"c": C[:1], "ts": TS},
     "cmd": agg([{"$project": {"_id": 0, "v": 1}},
                 {"$unionWith": {"coll": "ts", "pipeline": [
                     {"$match": {"$expr": {"$eq": ["$v", "$$want"]}}},
                     {"$project": {"_id": 0, "v": 1, "w": "$$want"}}]}}], {"want": 3}),
     "expected": [{"v": 1}, {"v": 3, "w": 3}]},
    {"id": "lookup-facet-reads-lookup-let", "colls": {"c": C[:2], "d": D},
     "cmd": agg([{"$lookup": {"from": "d", "as": "j", "let": {"x": "$v"}, "pipeline": [
         {"$facet": {"eq": [{"$match": {"$expr": {"$eq": ["$k", "$$x"]}}}, {"$count": "n"}],
                     "all": [{"$count": "n"}]}}]}},
                 {"$project": {"j": 1}}], None),
     "expected": [{"_id": 1, "j": [{"eq": [{"n": 1}], "all": [{"n": 3}]}]},
                  {"_id": 2, "j": [{"eq": [{"n": 1}], "all": [{"n": 3}]}]}]},
    {"id": "ts-delete-with-let", "colls": {"ts": TS},
     "cmd": {"delete": "ts", "deletes": [
         {"q": {"$expr": {"$eq": ["$v", "$$x"]}}, "limit": 0}], "let": {"x": 2}},
     "reply": {"n": 1}, "after_count": {"ts": 2}},
    {"id": "ts-undefined-variable", "colls": {"ts": TS},
     "cmd": agg([{"$match": {"$expr": {"$eq": ["$v", "$$nope"]}}}], {"x": 1}, "ts"),
     "error": 17276},

    # ---- explain ----
    {"id": "explain-find", "colls": {"c": C},
     "cmd": {"explain": {"find": "c", "filter": {"$expr": {"$eq": ["$name", "$$t"]}},
                         "let": {"t": "a"}}},
     "reply": {"ok": 1.0}},
    {"id": "explain-aggregate", "colls": {"c": C},
     "cmd": {"explain": agg([{"$match": {"$expr": {"$eq": ["$name", "$$t"]}}},
                             {"$project": {"x": "$$t"}}], {"t": "a"})},
     "reply": {"ok": 1.0}},
    {"id": "explain-update", "colls": {"c": C},
     "cmd": {"explain": {"update": "c", "updates": [
         {"q": {"$expr": {"$eq": ["$name", "$$t"]}}, "u": [{"$set": {"x": "$$t"}}]}],
         "let": {"t": "a"}}},
     "reply": {"ok": 1.0}, "after": {"c": C}},
    {"id": "explain-delete", "colls": {"c": C},
     "cmd": {"explain": {"delete": "c", "deletes": [
         {"q": {"$expr": {"$eq": ["$name", "$$t"]}}, "limit": 1}], "let": {"t": "a"}}},
     "reply": {"ok": 1.0}, "after": {"c": C}},
    {"id": "explain-find-and-modify", "colls": {"c": C},
     "cmd": {"explain": {"findAndModify": "c", "query": {"$expr": {"$eq": ["$name", "$$t"]}},
                         "remove": True, "let": {"t": "a"}}},
     "reply": {"ok": 1.0}, "after": {"c": C}},
    {"id": "explain-timeseries-aggregate", "colls": {"ts": TS},
     "cmd": {"explain": agg([{"$match": {"$expr": {"$eq": ["$v", "$$v"]}}}], {"v": 1}, "ts"),
             "verbosity": "executionStats"},
     "reply": {"ok": 1.0}},
    {"id": "explain-undefined-variable", "colls": {"c": C},
     "cmd": {"explain": {"find": "c", "filter": {"$expr": {"$eq": ["$name", "$$t"]}}}},
     "error": 17276},
    {"id": "explain-bad-let", "colls": {"c": C},
     "cmd": {"explain": {"find": "c", "filter": {}, "let": {"NOW": 1}}}, "error": 4738901},
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_let_case(db, case):
    create_collections(db, case.get("colls", {}))
    reply = run_command(db, case["cmd"])
    if "error" in case:
        code = reply.get("code")
        if reply.get("ok") == 1 and reply.get("writeErrors"):
            code = reply["writeErrors"][0]["code"]
        assert code == case["error"], reply
    else:
        assert reply.get("ok") == 1, reply
        assert not reply.get("writeErrors"), reply
        if "expected" in case:
            cursor = reply["cursor"]
            assert cursor["firstBatch"] == case["expected"]
            assert cursor["id"] == 0
        for key, want in case.get("reply", {}).items():
            assert reply.get(key) == want, reply
    for coll, want in case.get("after", {}).items():
        assert list(db[coll].find().sort("_id", 1)) == want
    for coll, n in case.get("after_count", {}).items():
        assert db[coll].count_documents({}) == n


def test_let_rand_is_evaluated_once(db):
    # Each `let` expression is evaluated once, before any document is read.
    db.c.insert_many([{"_id": i} for i in range(5)])
    reply = db.command({"find": "c", "filter": {}, "projection": {"_id": 0, "r": "$$r"},
                        "let": {"r": {"$rand": {}}}})
    values = {d["r"] for d in reply["cursor"]["firstBatch"]}
    assert len(values) == 1
    assert 0 <= values.pop() < 1


def test_let_values_survive_getmore(db):
    # The variables stay with the cursor: later batches still read them.
    db.c.insert_many([{"_id": i, "v": i} for i in range(10)])
    cur = db.c.aggregate([{"$match": {"$expr": {"$gte": ["$v", "$$lo"]}}},
                          {"$project": {"w": {"$add": ["$v", "$$d"]}}}],
                         let={"lo": 4, "d": 1000}, batchSize=2)
    assert [d["w"] for d in cur] == [1004, 1005, 1006, 1007, 1008, 1009]
