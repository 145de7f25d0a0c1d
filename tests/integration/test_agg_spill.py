"""Memory limits and spilling of blocking stages ($sort, $group, $bucketAuto, $setWindowFields,
find's sort), with MongoDB 7.0's server parameters set small so that a few hundred kilobytes
exceed them.

Cases are declarative: a pipeline over the shared data set, and the expected output computed in
Python from the documented semantics (or, for $bucketAuto, compared with the in-memory run).
Each case runs three ways: in memory (default 100 MB limits), spilling (small limits with
allowDiskUse), and with allowDiskUse: false (292 QueryExceededMemoryLimitNoDiskUseAllowed).
"""

import os
import random
import statistics

import pytest
from pymongo.errors import OperationFailure

from conftest import command_error

SMALL = 32 * 1024
DEFAULT = 100 * 1024 * 1024
LIMIT_PARAMS = [
    "internalQueryMaxBlockingSortMemoryUsageBytes",
    "internalDocumentSourceGroupMaxMemoryBytes",
    "internalDocumentSourceSetWindowFieldsMaxMemoryBytes",
    "internalDocumentSourceBucketAutoMaxMemoryBytes",
    "internalDocumentSourceDensifyMaxMemoryBytes",
]


def make_docs(n=2000, seed=7):
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        d = {"_id": i, "k": rng.randrange(40), "v": rng.randrange(1000),
             "pad": "x" * rng.randrange(50, 150)}
        if rng.random() < 0.1:
            del d["k"]  # a missing group key groups as null
        docs.append(d)
    return docs


DOCS = make_docs()


def set_params(client, **params):
    client.admin.command({"setParameter": 1, **params})


def set_limits(client, value):
    set_params(client, **{p: value for p in LIMIT_PARAMS})


@pytest.fixture
def coll(db):
    db.data.insert_many(DOCS)
    return db.data


@pytest.fixture(autouse=True)
def restore_params(client):
    yield
    set_limits(client, DEFAULT)
    set_params(client, allowDiskUseByDefault=True)


def spill_dir(server):
    return os.path.join(server.dbpath, "_tmp")


def spill_files(server):
    d = spill_dir(server)
    return os.listdir(d) if os.path.isdir(d) else []


# -- expected values from the documented semantics ---------------------------------------------
def by_key():
    groups = {}
    for d in DOCS:
        groups.setdefault(d.get("k"), []).append(d)
    return groups


def key_order(k):
    return (0, 0) if k is None else (1, k)  # null sorts before numbers


def expected_group():
    out = []
    for k, ds in sorted(by_key().items(), key=lambda kv: key_order(kv[0])):
        vs = [d["v"] for d in ds]
        out.append({"_id": k, "n": len(ds), "sum": sum(vs), "min": min(vs), "max": max(vs),
                    "first": ds[0]["_id"], "last": ds[-1]["_id"], "ids": [d["_id"] for d in ds],
                    "avg": round(sum(vs) / len(vs), 6),
                    "sd": round(statistics.pstdev(vs), 6),
                    "top2": [d["_id"] for d in sorted(ds, key=lambda d: -d["v"])[:2]],
                    "last3": [d["_id"] for d in ds[-3:]],
                    "min2": sorted(vs)[:2]})
    return out


def expected_sort(limit=None, skip=0):
    # Stable: equal keys keep insertion (natural) order. k missing sorts as null, first.
    ordered = sorted(DOCS, key=lambda d: (key_order(d.get("k")), -d["v"]))
    ids = [d["_id"] for d in ordered][skip:]
    return ids if limit is None else ids[:limit]


def expected_densify():
    # Generated documents per k: the grid from the partition's smallest v in steps of 100, below
    # its largest v, minus the values already present.
    out = []
    for k, ds in sorted(by_key().items(), key=lambda kv: key_order(kv[0])):
        vals = {d["v"] for d in ds}
        n = sum(1 for g in range(min(vals), max(vals), 100) if g not in vals)
        if n:
            out.append({"_id": k, "n": n})
    return out


GROUP = [{"$group": {
    "_id": "$k", "n": {"$count": {}}, "sum": {"$sum": "$v"}, "min": {"$min": "$v"},
    "max": {"$max": "$v"}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"},
    "ids": {"$push": "$_id"}, "avg": {"$avg": "$v"}, "sd": {"$stdDevPop": "$v"},
    "top2": {"$topN": {"n": 2, "sortBy": {"v": -1}, "output": "$_id"}},
    "last3": {"$lastN": {"n": 3, "input": "$_id"}},
    "min2": {"$minN": {"n": 2, "input": "$v"}}}},
    {"$set": {"avg": {"$round": ["$avg", 6]}, "sd": {"$round": ["$sd", 6]}}}]

CASES = [
    # (id, pipeline, expected output or a function of it, limit params that matter)
    ("group_accumulators", GROUP, expected_group()),
    ("sort_two_keys", [{"$sort": {"k": 1, "v": -1}}, {"$project": {"_id": 1}}],
     [{"_id": i} for i in expected_sort()]),
    ("sort_skip_limit_large_k", [{"$sort": {"k": 1, "v": -1}}, {"$skip": 10}, {"$limit": 900},
                                 {"$project": {"_id": 1}}],
     [{"_id": i} for i in expected_sort(900, 10)]),
    ("sort_by_count", [{"$sortByCount": "$v"}, {"$sort": {"count": -1, "_id": 1}},
                       {"$limit": 3}],
     sorted([{"_id": v, "count": sum(1 for d in DOCS if d["v"] == v)}
             for v in {d["v"] for d in DOCS}], key=lambda d: (-d["count"], d["_id"]))[:3]),
    ("bucket_auto", [{"$bucketAuto": {"groupBy": "$v", "buckets": 6,
                                      "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}}}}],
     None),
    ("bucket_auto_granularity", [{"$bucketAuto": {"groupBy": "$v", "buckets": 4,
                                                  "granularity": "E12"}}], None),
    ("densify_partition", [{"$densify": {"field": "v", "partitionByFields": ["k"],
                                         "range": {"step": 100, "bounds": "partition"}}},
                           {"$match": {"_id": {"$exists": False}}},
                           {"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}],
     expected_densify()),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_spilling_matches_memory_and_semantics(client, server, coll, case):
    _, pipeline, expected = case
    in_memory = list(coll.aggregate(pipeline, allowDiskUse=False))
    if expected is not None:
        assert in_memory == expected
    set_limits(client, SMALL)
    spilled = list(coll.aggregate(pipeline, allowDiskUse=True))
    assert spilled == in_memory
    omitted = list(coll.aggregate(pipeline))  # allowDiskUseByDefault is true
    assert omitted == in_memory
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline, allowDiskUse=False))
    assert e.value.code == 292
    assert e.value.details["codeName"] == "QueryExceededMemoryLimitNoDiskUseAllowed"
    assert spill_files(server) == []


def query_metrics(client):
    return client.admin.command("serverStatus")["metrics"]["query"]


def test_server_status_counts_spills(client, coll):
    before = query_metrics(client)
    list(coll.aggregate([{"$sort": {"v": 1}}], allowDiskUse=True))
    mid = query_metrics(client)
    assert mid["sort"]["spillToDisk"] == before["sort"]["spillToDisk"]  # fits in 100 MB
    assert mid["sort"]["totalKeysSorted"] == before["sort"]["totalKeysSorted"] + len(DOCS)
    assert mid["sort"]["totalBytesSorted"] > before["sort"]["totalBytesSorted"]
    set_limits(client, SMALL)
    list(coll.aggregate([{"$sort": {"v": 1}}], allowDiskUse=True))
    list(coll.aggregate(GROUP, allowDiskUse=True))
    after = query_metrics(client)
    assert after["sort"]["spillToDisk"] > mid["sort"]["spillToDisk"]
    assert after["group"]["spills"] > mid["group"]["spills"]


def test_allow_disk_use_by_default_false(client, coll):
    set_limits(client, SMALL)
    set_params(client, allowDiskUseByDefault=False)
    for pipeline in (GROUP, [{"$sort": {"v": 1}}]):
        with pytest.raises(OperationFailure) as e:
            list(coll.aggregate(pipeline))
        assert e.value.code == 292
        assert len(list(coll.aggregate(pipeline, allowDiskUse=True))) > 0
    with pytest.raises(OperationFailure) as e:
        list(coll.find({}, sort=[("v", 1)]))
    assert e.value.code == 292


def test_top_k_sort_does_not_need_disk(client, server, coll):
    # $sort + $limit keeps only the first k documents: 5 documents fit in 32 KB.
    set_limits(client, SMALL)
    got = list(coll.aggregate([{"$sort": {"k": 1, "v": -1}}, {"$limit": 5},
                               {"$project": {"_id": 1}}], allowDiskUse=False))
    assert [d["_id"] for d in got] == expected_sort(5)
    got = list(coll.find({}, {"_id": 1}, sort=[("k", 1), ("v", -1)], skip=2, limit=5,
                         allow_disk_use=False))
    assert [d["_id"] for d in got] == expected_sort(5, 2)


def test_find_sort_allow_disk_use(client, coll):
    set_limits(client, SMALL)
    got = list(coll.find({}, {"_id": 1}, sort=[("k", 1), ("v", -1)], allow_disk_use=True))
    assert [d["_id"] for d in got] == expected_sort()
    got = list(coll.find({}, {"_id": 1}, sort=[("k", 1), ("v", -1)]))  # default: may spill
    assert [d["_id"] for d in got] == expected_sort()
    code, name, _ = command_error(coll.database, {"find": coll.name, "sort": {"v": 1},
                                                  "allowDiskUse": False})
    assert (code, name) == (292, "QueryExceededMemoryLimitNoDiskUseAllowed")


@pytest.mark.parametrize("pipeline", [
    [{"$sort": {"v": 1}}],
    [{"$group": {"_id": "$_id", "p": {"$push": "$pad"}}}],
    [{"$bucketAuto": {"groupBy": "$_id", "buckets": 3, "output": {"p": {"$push": "$pad"}}}}],
], ids=["sort", "group", "bucketAuto"])
def test_spill_files_live_with_the_cursor(client, server, coll, pipeline):
    set_limits(client, SMALL)
    assert spill_files(server) == []
    cursor = coll.aggregate(pipeline, allowDiskUse=True, batchSize=1)
    next(cursor)
    assert len(spill_files(server)) >= 1  # held while the cursor is open
    rest = list(cursor)  # exhausting the cursor destroys it
    assert len(rest) > 0
    assert spill_files(server) == []
    cursor = coll.aggregate(pipeline, allowDiskUse=True, batchSize=1)
    next(cursor)
    assert len(spill_files(server)) >= 1
    cursor.close()  # killCursors
    assert spill_files(server) == []


def test_find_cursor_holds_its_spill_file(client, server, coll):
    set_limits(client, SMALL)
    cursor = coll.find({}, sort=[("v", 1)], batch_size=2, allow_disk_use=True)
    first = next(cursor)
    assert first["v"] == min(d["v"] for d in DOCS)
    assert len(spill_files(server)) == 1
    cursor.close()
    assert spill_files(server) == []


def test_window_stage_limit(client, coll):
    pipeline = [{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"_id": 1},
                                      "output": {"c": {"$count": {}}}}}, {"$limit": 1}]
    assert len(list(coll.aggregate(pipeline, allowDiskUse=False))) == 1
    set_limits(client, SMALL)
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline, allowDiskUse=False))
    assert e.value.code == 292
    assert e.value.details["codeName"] == "QueryExceededMemoryLimitNoDiskUseAllowed"


def test_window_stage_spills_partition_by_partition(client, server, coll):
    pipeline = [{"$setWindowFields": {
        "partitionBy": "$k", "sortBy": {"v": 1},
        "output": {"run": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
                   "rank": {"$rank": {}},
                   "top": {"$topN": {"n": 2, "sortBy": {"v": -1}, "output": "$_id"}}}}},
        {"$project": {"pad": 0}}, {"$sort": {"_id": 1}}]
    in_memory = list(coll.aggregate(pipeline, allowDiskUse=False))
    # Expected from the semantics: running sums and ranks in v order within each k.
    for k, ds in by_key().items():
        ordered = sorted(ds, key=lambda d: (d["v"], d["_id"]))
        total = 0
        want = {}
        for i, d in enumerate(ordered):
            total += d["v"]
            rank = i + 1 if i == 0 or ordered[i - 1]["v"] != d["v"] else want[ordered[i - 1]["_id"]][1]
            want[d["_id"]] = (total, rank)
        top = [d["_id"] for d in sorted(ds, key=lambda d: -d["v"])[:2]]
        for d in in_memory:
            if d.get("k") == k and (k is not None or "k" not in d):
                assert (d["run"], d["rank"]) == want[d["_id"]]
                assert d["top"] == top
    # Each partition (about 50 documents, 200 for the null k) fits in 96 KB; the whole input
    # (about 500 KB) does not.
    set_params(client, internalDocumentSourceSetWindowFieldsMaxMemoryBytes=96 * 1024)
    assert list(coll.aggregate(pipeline, allowDiskUse=True)) == in_memory
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(pipeline, allowDiskUse=False))
    assert e.value.code == 292
    # One partition over the limit keeps its documents in a spill file while it is output.
    whole = [{"$setWindowFields": {"sortBy": {"v": 1}, "output": {
        "r": {"$rank": {}}, "prev": {"$shift": {"output": "$_id", "by": -1}},
        "last": {"$last": "$_id", "window": {"documents": [0, 2]}},
        "avg": {"$avg": "$v", "window": {"documents": [-3, 3]}}}}},
        {"$project": {"pad": 0}}]
    set_limits(client, DEFAULT)
    whole_in_memory = list(coll.aggregate(whole, allowDiskUse=False))
    set_params(client, internalDocumentSourceSetWindowFieldsMaxMemoryBytes=96 * 1024)
    cursor = coll.aggregate(whole, allowDiskUse=True, batchSize=5)
    first = [next(cursor) for _ in range(5)]
    assert len(spill_files(server)) >= 2  # the sorted input and the partition
    assert first + list(cursor) == whole_in_memory
    assert spill_files(server) == []


def test_parameters_defaults_and_validation(client):
    reply = client.admin.command({"getParameter": 1, "allowDiskUseByDefault": 1,
                                  **{p: 1 for p in LIMIT_PARAMS}})
    assert reply["allowDiskUseByDefault"] is True
    for p in LIMIT_PARAMS:
        assert reply[p] == DEFAULT
    set_params(client, internalDocumentSourceGroupMaxMemoryBytes=12345)
    reply = client.admin.command({"getParameter": 1,
                                  "internalDocumentSourceGroupMaxMemoryBytes": 1})
    assert reply["internalDocumentSourceGroupMaxMemoryBytes"] == 12345
    code, _, _ = command_error(client.admin, {"setParameter": 1,
                                              "internalQueryMaxBlockingSortMemoryUsageBytes": 0})
    assert code == 2


def test_startup_parameters_and_stale_files(fresh_server):
    probe = fresh_server.new()
    dbpath = probe.dbpath
    probe.stop()
    os.makedirs(os.path.join(dbpath, "_tmp"), exist_ok=True)
    with open(os.path.join(dbpath, "_tmp", "extsort-1-0"), "w") as f:
        f.write("left by a crash")
    s = fresh_server.new(dbpath=dbpath, extra_args=[
        "--setParameter", "internalQueryMaxBlockingSortMemoryUsageBytes=2000",
        "--setParameter", "allowDiskUseByDefault=false"])
    assert not os.path.exists(os.path.join(dbpath, "_tmp", "extsort-1-0"))
    c = s.client()
    reply = c.admin.command({"getParameter": 1, "allowDiskUseByDefault": 1,
                             "internalQueryMaxBlockingSortMemoryUsageBytes": 1})
    assert reply["allowDiskUseByDefault"] is False
    assert reply["internalQueryMaxBlockingSortMemoryUsageBytes"] == 2000
    c.t.c.insert_many([{"_id": i, "pad": "y" * 100} for i in range(100)])
    with pytest.raises(OperationFailure) as e:
        list(c.t.c.aggregate([{"$sort": {"pad": 1, "_id": -1}}]))
    assert e.value.code == 292
    got = list(c.t.c.aggregate([{"$sort": {"pad": 1, "_id": -1}}], allowDiskUse=True))
    assert [d["_id"] for d in got] == list(range(99, -1, -1))
    c.close()
