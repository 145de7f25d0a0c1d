"""Secondary indexes on time-series collections (spec/timeseries.md section 7, MongoDB 7.0):
createIndexes / listIndexes / dropIndexes on the view in the user's terms, the bucket specs on
system.buckets.X, every rejection with its code, index maintenance by bucket writes (appends
that widen control.min/max, updates, deletes), persistence across restarts, and reads that use
the indexes (hint by the user's key or name, fewer buckets read)."""

import datetime
import threading
import time

import pytest
from bson.son import SON

from conftest import command_error, run_command

T0 = datetime.datetime(2024, 1, 1)


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def create_ts(db, name="ts", meta=True, **extra):
    ts = {"timeField": "t"}
    if meta:
        ts["metaField"] = "m"
    db.command({"create": name, "timeseries": ts, **extra})
    return db[name]


def create_index(db, spec, coll="ts"):
    return db.command({"createIndexes": coll, "indexes": [spec]})


def listed(db, coll="ts"):
    return [(i["name"], dict(i["key"])) for i in db[coll].list_indexes()]


def bucket_specs(db, coll="ts"):
    return {i["name"]: i for i in db["system.buckets." + coll].list_indexes()}


def read_counters(client):
    return dict(client.admin.command("serverStatus")["hourglass"]["timeseries"])


# -- create -> list on the view, list on the buckets ------------------------------------
CREATE_CASES = [
    # (user key, extra options, name listed, bucket key)
    ({"t": 1}, {}, "t_1", {"control.min.t": 1, "control.max.t": 1}),
    ({"t": -1}, {}, "t_-1", {"control.max.t": -1, "control.min.t": -1}),
    ({"m": 1, "t": -1}, {}, "m_1_t_-1", {"meta": 1, "control.max.t": -1, "control.min.t": -1}),
    ({"m.sensor": 1}, {}, "m.sensor_1", {"meta.sensor": 1}),
    ({"m": "hashed"}, {}, "m_hashed", {"meta": "hashed"}),
    ({"v": 1}, {}, "v_1", {"control.min.v": 1, "control.max.v": 1}),
    ({"v": -1, "t": 1}, {}, "v_-1_t_1",
     {"control.max.v": -1, "control.min.v": -1, "control.min.t": 1, "control.max.t": 1}),
    ({"t": 1}, {"name": "by_time", "hidden": True}, "by_time",
     {"control.min.t": 1, "control.max.t": 1}),
    ({"t": 1}, {"sparse": True}, "t_1", {"control.min.t": 1, "control.max.t": 1}),
    ({"m": 1}, {"unique": False}, "m_1", {"meta": 1}),
    ({"t": 1}, {"partialFilterExpression": {"m": "a"}}, "t_1",
     {"control.min.t": 1, "control.max.t": 1}),
    ({"t": 1}, {"expireAfterSeconds": 60, "partialFilterExpression": {"m": "a"}}, "t_1",
     {"control.min.t": 1}),
]


@pytest.mark.parametrize("key,extra,name,bucket_key", CREATE_CASES,
                         ids=[c[2] + str(sorted(c[1])) for c in CREATE_CASES])
def test_create_lists_user_spec_on_view_and_bucket_spec_on_buckets(db, key, extra, name,
                                                                   bucket_key):
    create_ts(db)
    r = create_index(db, {"key": SON(key), **extra})
    assert r["ok"] == 1
    assert (r["numIndexesBefore"], r["numIndexesAfter"]) == (1, 2)
    assert r["createdCollectionAutomatically"] is False
    assert listed(db) == [("m_1_t_1", {"m": 1, "t": 1}), (name, key)]
    view_spec = [i for i in db.ts.list_indexes() if i["name"] == name][0]
    for opt, value in extra.items():
        if opt != "name":
            assert view_spec[opt] == value, view_spec
    b = bucket_specs(db)[name]
    assert list(b["key"].items()) == list(bucket_key.items())
    if "partialFilterExpression" in extra:
        assert b["partialFilterExpression"] == {"meta": "a"}
    # The original spec is kept where MongoDB keeps it: measurement keys and partial filters.
    measurement = any(f not in ("t", "m") and not f.startswith("m.") for f in key)
    assert ("originalSpec" in b) == (measurement or "partialFilterExpression" in extra)


def test_default_index_lists_on_view_and_buckets(db):
    create_ts(db)
    assert listed(db) == [("m_1_t_1", {"m": 1, "t": 1})]
    # As MongoDB lists it on the buckets (its name is the user's).
    assert [(i["name"], list(i["key"].items())) for i in db["system.buckets.ts"].list_indexes()] \
        == [("m_1_t_1", [("meta", 1), ("control.min.t", 1), ("control.max.t", 1)])]
    create_ts(db, "nometa", meta=False)
    assert listed(db, "nometa") == []


def test_collection_without_meta_field(client, db):
    create_ts(db, meta=False)
    db.ts.insert_many([{"t": at(3600 * h + i), "v": i} for h in range(6) for i in range(10)])
    r = create_index(db, {"key": {"t": -1}})
    assert (r["numIndexesBefore"], r["numIndexesAfter"]) == (0, 1)
    # {m: 1} names a measurement here.
    create_index(db, {"key": {"m": 1}})
    assert listed(db) == [("t_-1", {"t": -1}), ("m_1", {"m": 1})]
    assert list(bucket_specs(db)["m_1"]["key"]) == ["control.min.m", "control.max.m"]
    # {t: -1} is {control.max.t: -1, control.min.t: -1}: a lower time bound bounds its first
    # field, where the default scan narrows by time only with both bounds.
    before = read_counters(client)["bucketsRead"]
    assert db.ts.count_documents({"t": {"$gte": at(5 * 3600)}}) == 10
    assert read_counters(client)["bucketsRead"] - before == 1
    assert db.ts.count_documents({"t": {"$lt": at(3600)}}, hint=[("t", -1)]) == 10


# -- rejections -----------------------------------------------------------------------------
REJECT_CASES = [
    ({"key": {"m": 1}, "unique": True}, 72),
    ({"key": {"v": "text"}}, 72),
    ({"key": {"m": "text"}}, 72),
    ({"key": {"v": 1}, "sparse": True}, 72),
    ({"key": {"m": 1, "v": 1}, "sparse": True}, 72),
    ({"key": {"t": 1}, "partialFilterExpression": {"m": 1}, "collation": {"locale": "simple"}},
     85),
    ({"key": {"t": "hashed"}}, 67),
    ({"key": {"t": "2dsphere"}}, 67),
    ({"key": {"v": "hashed"}}, 67),
    ({"key": {"v": "2d"}}, 67),
    ({"key": {}}, 67),
    ({"key": {"v": 1}, "expireAfterSeconds": 10}, 72),
    ({"key": {"t": 1}, "expireAfterSeconds": 10}, 72),
    ({"key": {"t": 1}, "expireAfterSeconds": 10, "partialFilterExpression": {"v": 1}}, 72),
    ({"key": {"t": 1, "m": 1}, "expireAfterSeconds": 10, "partialFilterExpression": {"m": 1}},
     67),
    ({"key": {"t": 1}, "partialFilterExpression": {"v": {"$ne": 1}}}, 5916301),
    ({"key": {"t": 1}, "partialFilterExpression": {"v": {"$regex": "^a"}}}, 5916301),
]


@pytest.mark.parametrize("spec,code", REJECT_CASES, ids=[str(c[0]) for c in REJECT_CASES])
def test_rejections(db, spec, code):
    create_ts(db)
    got, _, _ = command_error(db, {"createIndexes": "ts", "indexes": [spec]})
    assert got == code
    assert listed(db) == [("m_1_t_1", {"m": 1, "t": 1})]  # nothing was created


def test_rejection_messages(db):
    create_ts(db)
    cases = [
        ({"key": {"m": 1}, "unique": True},
         "Unique indexes are not supported on time-series collections"),
        ({"key": {"v": "text"}}, "Text indexes are not supported on time-series collections"),
        ({"key": {"v": 1}, "sparse": True},
         "Sparse indexes are not supported on time-series measurements"),
    ]
    for spec, msg in cases:
        _, _, errmsg = command_error(db, {"createIndexes": "ts", "indexes": [spec]})
        assert errmsg == msg


def test_same_spec_is_idempotent_and_conflicts_are_reported(db):
    create_ts(db)
    assert create_index(db, {"key": {"v": 1}})["numIndexesAfter"] == 2
    again = create_index(db, {"key": {"v": 1}})
    assert again["note"] == "all indexes already exist"
    assert (again["numIndexesBefore"], again["numIndexesAfter"]) == (2, 2)
    # The default {m: 1, t: 1} index already exists under its default name.
    assert create_index(db, {"key": {"m": 1, "t": 1}})["note"] == "all indexes already exist"
    assert command_error(db, {"createIndexes": "ts",
                              "indexes": [{"key": {"v": 1}, "name": "other"}]})[0] == 85
    assert command_error(db, {"createIndexes": "ts",
                              "indexes": [{"key": {"w": 1}, "name": "v_1"}]})[0] == 86
    assert command_error(db, {"createIndexes": "ts", "indexes": [
        {"key": {"v": 1}, "partialFilterExpression": {"m": "x"}}]})[0] == 85


# -- drop -----------------------------------------------------------------------------------
DROP_CASES = [
    # (index argument, remaining names, error code)
    ("v_1", ["m_1_t_1", "t_-1"], None),
    ({"v": 1}, ["m_1_t_1", "t_-1"], None),
    ({"t": -1}, ["m_1_t_1", "v_1"], None),
    ({"m": 1, "t": 1}, ["v_1", "t_-1"], None),
    ("m_1_t_1", ["v_1", "t_-1"], None),
    (["v_1", "t_-1"], ["m_1_t_1"], None),
    ("*", [], None),
    ({"t": 1}, None, 27),
    ({"t": "hashed"}, None, 27),
    ({"control.min.v": 1, "control.max.v": 1}, None, 27),
    ("nope", None, 27),
    (["v_1", "nope"], None, 27),
]


@pytest.mark.parametrize("index,remaining,code", DROP_CASES, ids=[str(c[0]) for c in DROP_CASES])
def test_drop_indexes(db, index, remaining, code):
    create_ts(db)
    create_index(db, {"key": {"v": 1}})
    create_index(db, {"key": {"t": -1}})
    if code is not None:
        assert command_error(db, {"dropIndexes": "ts", "index": index})[0] == code
        assert [n for n, _ in listed(db)] == ["m_1_t_1", "v_1", "t_-1"]
        return
    r = db.command({"dropIndexes": "ts", "index": index})
    assert r["nIndexesWas"] == 3
    assert [n for n, _ in listed(db)] == remaining
    assert sorted(bucket_specs(db)) == sorted(remaining)


def test_default_index_can_be_dropped_and_recreated(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": i % 3, "v": i} for i in range(30)])
    db.command({"dropIndexes": "ts", "index": {"m": 1, "t": 1}})
    assert listed(db) == []
    assert db.ts.count_documents({"m": 1}) == 10
    db.ts.insert_many([{"t": at(100 + i), "m": i % 3, "v": i} for i in range(30)])
    assert db.ts.count_documents({"m": 1}) == 20
    create_index(db, {"key": {"m": 1, "t": 1}})
    assert listed(db) == [("m_1_t_1", {"m": 1, "t": 1})]
    b = bucket_specs(db)["m_1_t_1"]
    assert list(b["key"].items()) == [("meta", 1), ("control.min.t", 1), ("control.max.t", 1)]
    assert db.ts.count_documents({"m": 1}) == 20
    assert db.ts.count_documents({"m": 1}, hint=[('m', 1), ('t', 1)]) == 20


# -- collMod index ----------------------------------------------------------------------------
COLLMOD_CASES = [
    # (index argument, error code)
    ({"keyPattern": {"v": 1}, "hidden": True}, None),
    ({"name": "v_1", "hidden": True}, None),
    ({"keyPattern": {"m": 1, "t": 1}, "hidden": True}, None),
    ({"keyPattern": {"v": 1}, "hidden": False}, None),
    ({"keyPattern": {"control.min.v": 1, "control.max.v": 1}, "hidden": True}, 27),
    ({"name": "nope", "hidden": True}, 27),
    ({"keyPattern": {"v": 1}, "expireAfterSeconds": 10}, 72),
    ({"keyPattern": {"v": 1}, "prepareUnique": True}, 72),
    ({"keyPattern": {"v": 1}, "unique": True}, 72),
    ({"keyPattern": {"v": 1}}, 72),
]


@pytest.mark.parametrize("index,code", COLLMOD_CASES, ids=[str(c[0]) for c in COLLMOD_CASES])
def test_collmod_index(db, index, code):
    create_ts(db)
    create_index(db, {"key": {"v": 1}})
    r = run_command(db, {"collMod": "ts", "index": index})
    if code is not None:
        assert r["code"] == code, r
        return
    assert r["ok"] == 1, r
    assert (r["hidden_old"], r["hidden_new"]) == (False, index["hidden"])
    view = {i["name"]: i for i in db.ts.list_indexes()}
    buckets = bucket_specs(db)
    name = index.get("name") or ("m_1_t_1" if "m" in index["keyPattern"] else "v_1")
    assert view[name].get("hidden", False) == index["hidden"]
    assert buckets[name].get("hidden", False) == index["hidden"]


def test_hidden_indexes_are_not_used(client, db):
    create_ts(db)
    db.ts.insert_many([{"t": at(j), "m": s, "v": s * 100 + j} for s in range(10) for j in range(5)])
    create_index(db, {"key": {"v": 1}})

    def reads(filter_):
        before = read_counters(client)["bucketsRead"]
        n = db.ts.count_documents(filter_)
        return n, read_counters(client)["bucketsRead"] - before

    # {v: 1} is {control.min.v: 1, control.max.v: 1}: an upper bound on v bounds its first field.
    assert reads({"v": {"$lte": 4}}) == (5, 1)
    assert reads({"v": {"$gte": 900, "$lte": 1000}}) == (5, 1)
    assert reads({"m": 3}) == (5, 1)
    db.command({"collMod": "ts", "index": {"name": "v_1", "hidden": True}})
    db.command({"collMod": "ts", "index": {"keyPattern": {"m": 1, "t": 1}, "hidden": True}})
    assert reads({"v": {"$lte": 4}}) == (5, 10)
    assert reads({"m": 3}) == (5, 10)
    for hint in ("v_1", "m_1_t_1"):
        assert command_error(db, {"find": "ts", "filter": {}, "hint": hint})[0] == 2
    db.command({"collMod": "ts", "index": {"keyPattern": {"v": 1}, "hidden": False}})
    assert reads({"v": {"$lte": 4}}) == (5, 1)


def test_partial_index_on_a_measurement(client, db):
    create_ts(db)
    # 20 sensors, one bucket each, v = 10 * sensor + j.
    db.ts.insert_many([{"t": at(j), "m": s, "v": 10 * s + j} for s in range(20) for j in range(10)])
    create_index(db, {"key": {"t": 1}, "partialFilterExpression": {"v": {"$gt": 150}}})
    view_spec = [i for i in db.ts.list_indexes() if i["name"] == "t_1"][0]
    assert view_spec["partialFilterExpression"] == {"v": {"$gt": 150}}
    assert bucket_specs(db)["t_1"]["partialFilterExpression"] == {
        "control.max.v": {"$_internalExprGt": 150}}
    query = {"v": {"$gt": 150}, "t": {"$lt": at(3600)}}

    def run():
        before = read_counters(client)["bucketsRead"]
        got = sorted(d["v"] for d in db.ts.find(query))
        return got, read_counters(client)["bucketsRead"] - before

    got, reads = run()
    assert got == list(range(151, 200))
    assert reads == 5  # the buckets of sensors 15..19 only
    # An append widens sensor 0's control.max.v past 150: its bucket joins the index.
    db.ts.insert_one({"t": at(20), "m": 0, "v": 500})
    got, reads = run()
    assert got == list(range(151, 200)) + [500]
    assert reads == 6
    assert sorted(d["v"] for d in db.ts.find(query, hint="t_1")) == got


# -- maintenance ----------------------------------------------------------------------------
def hinted_buckets(db, filter_, hint):
    """Bucket _ids found through the index `hint` of the bucket collection, and by a scan."""
    buckets = db["system.buckets.ts"]
    via_index = sorted(b["_id"] for b in buckets.find(filter_, hint=hint))
    via_scan = sorted(b["_id"] for b in buckets.find(filter_, hint=[('$natural', 1)]))
    return via_index, via_scan


def test_appends_that_widen_min_max_keep_the_index_right(db):
    create_ts(db)
    # One open bucket per sensor; measurements appended one by one widen control.min/max.v.
    for i in range(20):
        db.ts.insert_one({"t": at(i), "m": "a", "v": 50 + (i if i % 2 else -i)})
    create_index(db, {"key": {"v": 1}})
    for i in range(20, 40):
        db.ts.insert_one({"t": at(i), "m": "a", "v": 50 + (i if i % 2 else -i)})
    db.ts.insert_one({"t": at(41), "m": "b", "v": 1000})
    for lo, hi in [(85, 200), (-100, 15), (999, 1001), (60, 70)]:
        via_index, via_scan = hinted_buckets(
            db, {"control.max.v": {"$gte": lo}, "control.min.v": {"$lte": hi}}, "v_1")
        assert via_index == via_scan
        assert via_scan  # every range holds some bucket
    # Through the view, hinted by the user's key and by name: every measurement is found.
    expected = sorted(d["v"] for d in db.ts.find({"v": {"$gte": 85}}, hint=[('$natural', 1)]))
    assert expected == [85, 87, 89, 1000]
    for hint in ([("v", 1)], "v_1"):
        got = sorted(d["v"] for d in db.ts.find({"v": {"$gte": 85}}, hint=hint))
        assert got == expected


def test_index_build_racing_inserts_misses_no_bucket(client, db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": i % 7, "v": i} for i in range(2000)])
    errors = []
    done = threading.Event()

    def writer():
        i = 2000
        try:
            while not done.is_set() and i < 6000:
                db.ts.insert_many([{"t": at(i + k), "m": (i + k) % 7, "v": i + k}
                                   for k in range(20)])
                i += 20
        except Exception as e:  # reported below
            errors.append(e)

    th = threading.Thread(target=writer)
    th.start()
    try:
        create_index(db, {"key": {"v": -1}})
        create_index(db, {"key": {"m": 1, "v": 1}})
        db.command({"dropIndexes": "ts", "index": "m_1_t_1"})  # the series index, under writes
    finally:
        done.set()
        th.join(60)
    assert not errors
    total = db.ts.count_documents({})
    assert db.ts.count_documents({"v": {"$gte": 0}}, hint="v_-1") == total
    for m in range(7):
        assert (db.ts.count_documents({"m": m, "v": {"$gte": 0}}, hint="m_1_v_1")
                == db.ts.count_documents({"m": m}, hint=[("$natural", 1)]))
    for lo in (0, 1999, 2500, 4000):
        via_index, via_scan = hinted_buckets(db, {"control.max.v": {"$gte": lo}}, "v_-1")
        assert via_index == via_scan


def test_updates_and_deletes_keep_the_index_right(db):
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": i % 4, "v": i} for i in range(80)])
    create_index(db, {"key": {"m": 1}})
    create_index(db, {"key": {"v": -1}})
    db.ts.update_many({"m": 1}, {"$set": {"m": 7}})
    db.ts.delete_many({"m": 2})
    db.ts.delete_many({"v": {"$lt": 10}})  # partial bucket rewrites
    for filter_, hint in [({"meta": 7}, "m_1"), ({"meta": 1}, "m_1"), ({"meta": 2}, "m_1"),
                          ({"control.max.v": {"$gte": 0}}, "v_-1")]:
        via_index, via_scan = hinted_buckets(db, filter_, hint)
        assert via_index == via_scan
    # m == 1 were v = 1, 5, 9, ...: three of them had v < 10.
    assert db.ts.count_documents({"m": 7}, hint=[('m', 1)]) == 20 - 3
    assert db.ts.count_documents({"m": 2}, hint="m_1") == 0
    # v in 10..19 except m == 2 (10, 14, 18).
    assert db.ts.count_documents({"v": {"$lt": 20}}, hint=[('v', -1)]) == 10 - 3


def test_hint_errors(db):
    create_ts(db)
    for hint in ({"v": 1}, "v_1", {"control.min.v": 1, "control.max.v": 1}):
        code, _, _ = command_error(db, {"find": "ts", "filter": {}, "hint": hint})
        assert code == 2
    assert list(db.ts.find({}, hint=[('$natural', 1)])) == []


# -- reads use the index --------------------------------------------------------------------
def test_index_on_measurement_reads_fewer_buckets(client, db):
    create_ts(db)
    # 40 buckets (one per sensor), v rising with the sensor: each bucket has a narrow v range.
    db.ts.insert_many([{"t": at(j), "m": s, "v": s * 100 + j} for s in range(40)
                       for j in range(10)])
    query = {"v": {"$gte": 3500, "$lte": 3605}}
    expected = sorted(d["v"] for d in db.ts.find(query))
    assert expected == list(range(3500, 3510)) + list(range(3600, 3606))
    before = read_counters(client)
    assert sorted(d["v"] for d in db.ts.find(query)) == expected
    scan_reads = read_counters(client)["bucketsRead"] - before["bucketsRead"]
    assert scan_reads == 40
    create_index(db, {"key": {"v": 1}})
    before = read_counters(client)
    assert sorted(d["v"] for d in db.ts.find(query)) == expected
    index_reads = read_counters(client)["bucketsRead"] - before["bucketsRead"]
    assert index_reads == 2
    # Explain shows the index in bucket terms, as a query on the bucket collection would.
    plan = db.command({"explain": {"find": "ts", "filter": query}, "verbosity": "executionStats"})
    cursor = plan["stages"][0]["$cursor"]
    fetch = cursor["queryPlanner"]["winningPlan"]
    assert fetch["stage"] == "FETCH"
    ixscan = fetch["inputStage"]
    assert ixscan["stage"] == "IXSCAN"
    assert ixscan["indexName"] == "v_1"
    assert ixscan["keyPattern"] == {"control.min.v": 1, "control.max.v": 1}
    stats = cursor["executionStats"]
    assert stats["totalDocsExamined"] == 2
    assert stats["executionStages"]["docsExamined"] == 2
    assert stats["totalKeysExamined"] == stats["executionStages"]["inputStage"]["keysExamined"]
    assert stats["totalKeysExamined"] >= 2
    # Hidden indexes are not used.
    db.command({"dropIndexes": "ts", "index": "v_1"})
    create_index(db, {"key": {"v": 1}, "hidden": True})
    before = read_counters(client)
    assert sorted(d["v"] for d in db.ts.find(query)) == expected
    assert read_counters(client)["bucketsRead"] - before["bucketsRead"] == 40


def test_hint_by_user_key_uses_that_index(client, db):
    create_ts(db)
    db.ts.insert_many([{"t": at(j * 60), "m": s, "v": j} for s in range(10) for j in range(30)])
    create_index(db, {"key": {"m": 1, "v": 1}})
    query = {"m": 4, "v": {"$gte": 10}}
    before = read_counters(client)
    got = sorted(d["v"] for d in db.ts.find(query, hint=[('m', 1), ('v', 1)]))
    assert got == list(range(10, 30))
    assert read_counters(client)["bucketsRead"] - before["bucketsRead"] == 1
    got = sorted(d["v"] for d in db.ts.aggregate([{"$match": query}], hint="m_1_v_1"))
    assert got == list(range(10, 30))


# -- persistence ----------------------------------------------------------------------------
def test_indexes_survive_restart_and_stay_maintained(fresh_server):
    s = fresh_server.new()
    c = s.client()
    db = c.tsidx
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(10)])
    create_index(db, {"key": {"v": -1}})
    create_index(db, {"key": {"t": 1}, "partialFilterExpression": {"m": "a"}})
    before = list(db.ts.list_indexes())
    c.close()
    s.stop()
    s.start()
    c = s.client()
    try:
        db = c.tsidx
        assert list(db.ts.list_indexes()) == before
        db.ts.insert_many([{"t": at(20 + i), "m": "a", "v": 100 + i} for i in range(5)])
        assert db.ts.count_documents({"v": {"$gte": 100}}, hint=[('v', -1)]) == 5
        via_index, via_scan = hinted_buckets(db, {"control.max.v": {"$gte": 100}}, "v_-1")
        assert via_index == via_scan != []
    finally:
        c.close()


def test_acknowledged_writes_are_indexed_after_kill(fresh_server):
    s = fresh_server.new()
    c = s.client()
    db = c.tskill
    create_ts(db)
    db.ts.insert_one({"t": at(0), "m": "a", "v": 0})
    create_index(db, {"key": {"v": 1}})
    coll = db.ts.with_options(write_concern=__import__("pymongo").WriteConcern(j=True))
    for i in range(1, 50):
        coll.insert_one({"t": at(i), "m": "a" if i % 2 else "b", "v": i})
    s.kill()
    c.close()
    s.start()
    c = s.client()
    try:
        db = c.tskill
        assert db.ts.count_documents({"v": {"$gte": 25}}, hint="v_1") == 25
        via_index, via_scan = hinted_buckets(db, {"control.max.v": {"$gte": 49}}, "v_1")
        assert via_index == via_scan != []
    finally:
        c.close()


def test_ttl_index_expires_whole_buckets_of_matching_series(fresh_server):
    # Spec 9: a partial TTL index on the time field expires the series its filter selects, whole
    # buckets at a time once their span (bucketMaxSpanSeconds, here 3600) has expired.
    s = fresh_server.new(extra_args=["--setParameter", "ttlMonitorSleepSecs=1"])
    c = s.client()
    try:
        db = c.ttlidx
        create_ts(db)
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        db.ts.insert_many([
            {"t": now - datetime.timedelta(hours=5), "m": "a", "v": 1},
            {"t": now - datetime.timedelta(hours=5), "m": "b", "v": 2},  # not selected: kept
            # Expired itself (65 > 10 minutes), but its bucket (start >= now - 66 minutes) may hold
            # measurements up to start + 60 minutes, which are not: kept.
            {"t": now - datetime.timedelta(minutes=65), "m": "a", "v": 3},
            {"t": now, "m": "a", "v": 4},
        ])
        create_index(db, {"key": {"t": 1}, "expireAfterSeconds": 600,
                          "partialFilterExpression": {"m": "a"}})
        deadline = time.monotonic() + 30
        while db.ts.count_documents({"v": 1}) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sorted(d["v"] for d in db.ts.find()) == [2, 3, 4]
        time.sleep(2.5)
        assert sorted(d["v"] for d in db.ts.find()) == [2, 3, 4]
        spec = [i for i in db.ts.list_indexes() if i["name"] == "t_1"][0]
        assert spec["expireAfterSeconds"] == 600
        assert spec["partialFilterExpression"] == {"m": "a"}
    finally:
        c.close()


# -- reIndex --------------------------------------------------------------------------------
def test_reindex(db):
    create_ts(db)
    code, _, msg = command_error(db, {"reIndex": "ts"})
    assert (code, msg) == (166, "can't re-index a view")  # a time-series collection is a view
    assert command_error(db, {"reIndex": "missing"})[0] == 26
    db.plain.insert_many([{"a": i % 5} for i in range(50)])
    db.plain.create_index("a")
    specs = list(db.plain.list_indexes())
    r = run_command(db, {"reIndex": "plain"})
    assert r["ok"] == 1, r
    assert (r["nIndexesWas"], r["nIndexes"]) == (2, 2)
    assert sorted(i["name"] for i in r["indexes"]) == ["_id_", "a_1"]
    assert list(db.plain.list_indexes()) == specs
    assert db.plain.count_documents({"a": 3}, hint="a_1") == 10
    # The bucket collection is a collection: its user indexes are rebuilt.
    db.ts.insert_many([{"t": at(i), "m": i % 2, "v": i} for i in range(20)])
    create_index(db, {"key": {"v": 1}})
    r = run_command(db, {"reIndex": "system.buckets.ts"})
    assert (r["ok"], r["nIndexesWas"], r["nIndexes"]) == (1, 2, 2)
    assert db.ts.count_documents({"v": {"$gte": 15}}, hint="v_1") == 5
    assert db.ts.count_documents({"m": 1}) == 10


def test_meta_subfield_reads_find_series_that_appear_or_change_after_the_first(client, db):
    """A read whose meta condition cannot bound the series index (a subfield of the metaField)
    tests each series once, from the list of series the first such read makes by walking the
    index and every bucket write extends: series that appear, change meta or lose their buckets
    after it read as a scan of the buckets would."""
    create_ts(db)
    db.ts.insert_many([{"t": at(i), "m": {"host": f"h{k}", "rack": k % 2}, "v": 10 * k + i}
                       for k in range(3) for i in range(3)])
    assert sorted(d["v"] for d in db.ts.find({"m.host": "h1"})) == [10, 11, 12]
    # A series written after that first read.
    db.ts.insert_one({"t": at(5), "m": {"host": "h9", "rack": 1}, "v": 95})
    assert [d["v"] for d in db.ts.find({"m.host": "h9"})] == [95]
    assert sorted(d["v"] for d in db.ts.find({"m.rack": 1})) == [10, 11, 12, 95]
    # A series whose buckets are all deleted, then written again.
    assert db.ts.delete_many({"m.host": "h0"}).deleted_count == 3
    assert db.ts.count_documents({"m.host": "h0"}) == 0
    db.ts.insert_one({"t": at(7), "m": {"host": "h0", "rack": 0}, "v": 7})
    assert [d["v"] for d in db.ts.find({"m.host": "h0"})] == [7]
    # Measurements moved to another series by an update of their meta.
    assert db.ts.update_many({"m.host": "h2"}, {"$set": {"m.host": "h3"}}).modified_count == 3
    assert db.ts.count_documents({"m.host": "h2"}) == 0
    assert sorted(d["v"] for d in db.ts.find({"m.host": "h3"})) == [20, 21, 22]
    # The newest measurement of each series (the last-point read walks series the same way).
    got = list(db.ts.aggregate([{"$match": {"m.rack": 1}}, {"$sort": {"m": 1, "t": -1}},
                                {"$group": {"_id": "$m", "v": {"$first": "$v"}}}]))
    assert sorted(g["v"] for g in got) == [12, 95]
    # Every answer agrees with the measurements read whole and filtered here.
    every = list(db.ts.find())
    assert len(every) == 8
    for field, value in [("host", "h1"), ("rack", 0), ("rack", 1), ("host", "h3")]:
        assert (sorted(d["v"] for d in db.ts.find({f"m.{field}": value})) ==
                sorted(d["v"] for d in every if d["m"][field] == value)), (field, value)


# -- indexes created on the bucket collection itself (restores, tools) ---------------------
def test_raw_bucket_indexes(client, db):
    create_ts(db)
    rows = [{"t": at(60 * i), "m": {"a": i % 3}, "x": i} for i in range(60)]
    db.ts.insert_many(rows)
    buckets = db["system.buckets.ts"]
    raw = [{"control.min.x": 1}, {"data.x": 1}, {"meta": 1},
           {"meta.a": 1, "control.max.t": -1}, {"control.min.x": 1, "control.max.x": 1}]
    for key in raw:
        r = create_index(db, {"key": key, "name": "raw_" + "_".join(key)}, "system.buckets.ts")
        assert r["ok"] == 1, r
    names = {n: k for n, k in listed(db, "system.buckets.ts")}
    for key in raw:
        assert names["raw_" + "_".join(key)] == key
    # The time-series collection lists only what has a form in the user's terms: the default
    # index, {m: 1} (meta) and {x: 1} (control.min.x with control.max.x), never control.min.x
    # alone or a data column; $indexStats alike.
    user_keys = [k for _, k in listed(db)]
    for key in ({"m": 1, "t": 1}, {"m": 1}, {"x": 1}):
        assert key in user_keys, user_keys
    assert not any(f.startswith(("control", "data", "meta")) for k in user_keys for f in k)
    assert len(user_keys) == len(names) - 2  # data.x and control.min.x alone have no user form
    stats = list(db.ts.aggregate([{"$indexStats": {}}]))
    assert sorted((s["key"] for s in stats), key=str) == sorted(user_keys, key=str)
    assert len(list(buckets.aggregate([{"$indexStats": {}}]))) == 1 + len(raw)
    # Writes after the indexes keep them right, and reads through them see every bucket.
    more = [{"t": at(60 * i), "m": {"a": i % 3}, "x": i} for i in range(60, 90)]
    db.ts.insert_many(more)
    every = rows + more
    for a in range(3):
        got = list(buckets.find({"meta.a": a}).hint("raw_meta.a_control.max.t"))
        scanned = list(buckets.find({"meta.a": a}).hint([("$natural", 1)]))
        assert got and sorted(b["_id"] for b in got) == sorted(b["_id"] for b in scanned)
        assert all(b["meta"]["a"] == a for b in got)
    # Explain of reads of the buckets, as of any collection's.
    for verbosity in ("queryPlanner", "executionStats"):
        r = db.command("explain", {"find": "system.buckets.ts", "filter": {"meta.a": 1},
                                   "hint": "raw_meta.a_control.max.t"}, verbosity=verbosity)
        ixscan = r["queryPlanner"]["winningPlan"]["inputStage"]
        assert (ixscan["stage"], ixscan["indexName"]) == ("IXSCAN", "raw_meta.a_control.max.t")
        if verbosity == "executionStats":
            assert r["executionStats"]["nReturned"] == buckets.count_documents({"meta.a": 1})
    r = db.command("explain", {"count": "system.buckets.ts", "query": {}})
    assert r["queryPlanner"]["namespace"].endswith("system.buckets.ts")
    got = list(buckets.find({"control.min.x": {"$gte": 60}}).hint("raw_control.min.x"))
    scanned = list(buckets.find({"control.min.x": {"$gte": 60}}).hint([("$natural", 1)]))
    assert got and sorted(b["_id"] for b in got) == sorted(b["_id"] for b in scanned)
    assert db.ts.count_documents({"x": {"$gte": 50}}) == len([r for r in every if r["x"] >= 50])
    assert sorted(d["x"] for d in db.ts.find({"x": {"$gte": 80}})) == list(range(80, 90))


def test_bad_raw_bucket_index_specs_fail_as_on_a_collection(db):
    create_ts(db)
    db.create_collection("plain")
    for spec in ({"key": {"meta": "nope"}, "name": "bad"}, {"key": {}, "name": "empty"},
                 {"key": {"meta": 1}, "name": "u", "bogus": 1}):
        got = command_error(db, {"createIndexes": "system.buckets.ts", "indexes": [spec]})
        want = command_error(db, {"createIndexes": "plain", "indexes": [spec]})
        assert got[0] == want[0], (spec, got, want)
    assert len(listed(db, "system.buckets.ts")) == 1


def test_id_index_on_a_clustered_bucket_collection_is_a_no_op(db):
    create_ts(db)
    before = listed(db, "system.buckets.ts")
    r = create_index(db, {"key": {"_id": 1}, "name": "_id_1"}, "system.buckets.ts")
    assert r["ok"] == 1
    assert r["numIndexesBefore"] == r["numIndexesAfter"]
    assert listed(db, "system.buckets.ts") == before


def check_series_shaped_index(db, name, key):
    """The raw bucket index `name` is kept in step with the buckets (plain keys: an index read
    hinted to it finds exactly the buckets a collection scan finds)."""
    buckets = db["system.buckets.ts"]
    for a in range(3):
        got = list(buckets.find({"meta": a}).hint(name))
        scanned = list(buckets.find({"meta": a}).hint([("$natural", 1)]))
        assert got and sorted(b["_id"] for b in got) == sorted(b["_id"] for b in scanned)
    field = list(key)[1]
    got = [b[field.split(".")[0]][field.split(".")[1]][field.split(".")[2]]
           for b in buckets.find({"meta": 1}).hint(name)]
    assert got == sorted(got)


def test_second_series_shaped_bucket_index(fresh_server):
    """A {meta: 1, control.min.<f>: 1} index created on the buckets beside the series index (or
    after it was dropped) is an index like any other, as in MongoDB, also after a restart."""
    s = fresh_server.new()
    c = s.client()
    db = c.t
    try:
        create_ts(db)
        rows = [{"t": at(60 * i), "m": i % 3, "x": 100 - i} for i in range(90)]
        db.ts.insert_many(rows)
        second = {"meta": 1, "control.min.x": 1}
        assert create_index(db, {"key": second, "name": "series_like"},
                            "system.buckets.ts")["ok"] == 1
        # The default one again under another name: IndexOptionsConflict, as for any index.
        code, _, _ = command_error(db, {"createIndexes": "system.buckets.ts", "indexes": [
            {"key": {"meta": 1, "control.min.t": 1, "control.max.t": 1}, "name": "again"}]})
        assert code == 85
        db.ts.insert_many([{"t": at(60 * i), "m": i % 3, "x": 100 - i} for i in range(90, 120)])
        check_series_shaped_index(db, "series_like", second)
        # Without the series index, its key pattern created on the buckets is a user index too.
        db.ts.drop_index("m_1_t_1")
        default = {"meta": 1, "control.min.t": 1}
        assert create_index(db, {"key": default, "name": "raw_default"},
                            "system.buckets.ts")["ok"] == 1
        assert ("raw_default", {"m": 1, "t": 1}) in listed(db)
        check_series_shaped_index(db, "raw_default", default)
    finally:
        c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    try:
        db = c.t
        db.ts.insert_many([{"t": at(60 * i), "m": i % 3, "x": 100 - i} for i in range(120, 150)])
        check_series_shaped_index(db, "series_like", {"meta": 1, "control.min.x": 1})
        check_series_shaped_index(db, "raw_default", {"meta": 1, "control.min.t": 1})
        assert db.ts.count_documents({"m": 2}) == 50
        assert sorted(d["x"] for d in db.ts.find({"m": 1, "t": {"$lt": at(60 * 10)}})) == \
            [93, 96, 99]
    finally:
        c.close()


def test_an_array_in_an_indexed_measurement_field_is_refused(db):
    """An index on a measurement keeps the bucket's bounds of it (control.min/max.f); a bucket
    whose bounds hold an array cannot be indexed, and MongoDB refuses such a measurement with
    Location5930501 "Indexed measurement field contains an array value" -- at the insert, before
    it is acknowledged, whether the commit writes its bucket or only journals it."""
    from pymongo.errors import BulkWriteError, OperationFailure, WriteError
    ts = create_ts(db)
    create_index(db, {"key": {"v": 1}, "name": "v_1"})
    create_index(db, {"key": {"m": 1, "o.a": -1}, "name": "m_1_o.a_-1"})
    with pytest.raises(WriteError) as e:
        ts.insert_one({"t": at(0), "m": 1, "v": [1, 2]})
    assert e.value.code == 5930501
    assert e.value.details["errmsg"] == "Indexed measurement field contains an array value"
    # An array on the way to an indexed path counts; one elsewhere, or under an indexed field
    # (an object holding an array is a scalar bound), does not; nor does an array meta.
    with pytest.raises(WriteError) as e:
        ts.insert_one({"t": at(0), "m": 1, "o": [{"a": 1}]})
    assert e.value.code == 5930501
    ts.insert_one({"_id": "obj", "t": at(1), "m": 1, "v": {"a": [1]}, "o": {"b": [1]}})
    ts.insert_one({"_id": "other", "t": at(2), "m": [1, 2], "w": [1, 2], "v": 3})
    # Unordered, many rows to one bucket (written at the commit) and to many (journaled): only the
    # array rows fail, with their index.
    for series in (1, None):
        docs = [{"_id": f"{series}-{i}", "t": at(10 + i), "m": series if series else i,
                 "v": [i] if i % 25 == 7 else i} for i in range(100)]
        with pytest.raises(BulkWriteError) as e:
            ts.insert_many(docs, ordered=False)
        errs = e.value.details["writeErrors"]
        assert [x["index"] for x in errs] == [7, 32, 57, 82]
        assert {x["code"] for x in errs} == {5930501}
        assert e.value.details["nInserted"] == 96
    assert ts.count_documents({}) == 2 + 2 * 96
    assert ts.count_documents({"v": {"$gte": 50}}) == 2 * 48
    # A bucket with an array bound inserted directly is refused the same way.
    with pytest.raises(WriteError) as e:
        db["system.buckets.ts"].insert_one({
            "control": {"version": 1, "min": {"t": at(0), "v": [1]}, "max": {"t": at(0), "v": [1]}},
            "meta": 5, "data": {"t": {"0": at(0)}, "v": {"0": [1]}}})
    assert e.value.code == 5930501
    # An index on a field that already holds an array in some bucket is not built.
    ts2 = create_ts(db, name="ts2")
    ts2.insert_many([{"t": at(0), "m": 1, "x": [1, 2]}, {"t": at(1), "m": 2, "x": 3}])
    with pytest.raises(OperationFailure) as e:
        create_index(db, {"key": {"x": 1}, "name": "x_1"}, coll="ts2")
    assert e.value.code == 5930501 and e.value.details["codeName"] == "Location5930501"
    assert "x_1" not in [name for name, _ in listed(db, "ts2")]
    assert ts2.count_documents({}) == 2


def test_a_meta_an_index_cannot_hold_is_refused_at_insert(db):
    """A meta whose bucket no index on the meta can key (an array under a hashed component:
    16766; arrays on two paths of one compound index: 171) is refused at the insert, as on
    MongoDB, and the collection stays readable: the measurements of other series are written."""
    from pymongo.errors import BulkWriteError
    ts = create_ts(db)
    create_index(db, {"key": {"m.h": "hashed"}, "name": "h"})
    create_index(db, {"key": {"m.a": 1, "m.b": 1}, "name": "ab"})
    docs = [{"_id": 0, "t": at(0), "m": {"h": [1, 2]}},
            {"_id": 1, "t": at(1), "m": {"a": [1], "b": [2]}},
            {"_id": 2, "t": at(2), "m": {"a": [1], "b": 2, "h": 1}},
            {"_id": 3, "t": at(3), "m": {"h": [1, 2]}},  # the same series again
            {"_id": 4, "t": at(4), "m": {"h": 5}}]
    with pytest.raises(BulkWriteError) as e:
        ts.insert_many(docs, ordered=False)
    errs = [(x["index"], x["code"]) for x in e.value.details["writeErrors"]]
    assert errs == [(0, 16766), (1, 171), (3, 16766)]
    assert sorted(d["_id"] for d in ts.find()) == [2, 4]
    assert ts.count_documents({"m.h": 5}) == 1
