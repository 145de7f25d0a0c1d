"""Updates of time-series measurements as MongoDB 8.0 makes them (arbitrary updates): any filter,
any field, updateOne and updateMany, replacement and pipeline updates, upserts. The measurements
an update changes leave their bucket (which keeps the others under its _id) and are written into
new buckets; n and nModified count measurements. With the server parameter
hourglassTimeseriesArbitraryUpdates set to false the server answers as MongoDB 7.0 (metaField-only
updates; test_timeseries.py holds those rules)."""

import datetime
import threading
import time

import pytest
from bson.objectid import ObjectId
from pymongo.errors import OperationFailure, WriteError
from pymongo.write_concern import WriteConcern

from tsbuckets import columns
from test_timeseries import at, buckets, check_bucket_invariants, create_ts

TIME_MSG = "'t' must be present and contain a valid BSON UTC datetime value"


def contents(coll, **filt):
    """The measurements, without _id, sorted by (t, v) for comparison."""
    docs = list(coll.find(filt, {"_id": 0}))
    return sorted(docs, key=lambda d: (d["t"], repr(d.get("v")), repr(sorted(d.items()))))


def check_all_buckets(db, name="ts", **kw):
    for b in buckets(db, name):
        check_bucket_invariants(b, **kw)


def test_update_many_of_a_measurement_field_changes_each_once(db):
    # 4,000 measurements of 4 series over 3 hours: many buckets, and the updated measurements go
    # into new buckets that a later part of the scan must not update again.
    coll = create_ts(db)
    coll.insert_many([{"t": at(i * 3), "m": i % 4, "v": i} for i in range(4000)])
    before = len(buckets(db))
    r = coll.update_many({"v": {"$gte": 100}}, {"$inc": {"v": 100000}})
    assert (r.matched_count, r.modified_count) == (3900, 3900)
    got = sorted(d["v"] for d in coll.find())
    assert got == sorted(list(range(100)) + [i + 100000 for i in range(100, 4000)])
    assert coll.count_documents({}) == 4000
    check_all_buckets(db)
    # Each bucket holds one series, and every measurement of a bucket is within its span.
    for b in buckets(db):
        assert {d % 4 for d in (v - 100000 if v >= 100000 else v for v in columns(b)["v"])} == {
            b["meta"]}
    assert len(buckets(db)) >= before


def test_update_counts_measurements_and_a_no_op_changes_nothing(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": i % 2} for i in range(10)])
    stored = buckets(db)
    r = coll.update_many({"v": 1}, {"$set": {"v": 1}})
    assert (r.matched_count, r.modified_count) == (5, 0)
    assert buckets(db) == stored
    r = coll.update_many({"v": 1}, {"$set": {"w": "x"}})
    assert (r.matched_count, r.modified_count) == (5, 5)
    assert coll.count_documents({"w": "x"}) == 5
    assert coll.count_documents({"w": {"$exists": False}, "v": 0}) == 5
    r = coll.update_many({"v": 7}, {"$set": {"w": "y"}})
    assert (r.matched_count, r.modified_count) == (0, 0)


def test_update_one_changes_exactly_one_measurement(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": 1} for i in range(5)])
    r = coll.update_one({"v": 1}, {"$set": {"v": 2}})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert sorted(d["v"] for d in coll.find()) == [1, 1, 1, 1, 2]
    r = coll.update_one({"v": 3}, {"$set": {"v": 4}})
    assert (r.matched_count, r.modified_count) == (0, 0)


def test_update_of_the_meta_moves_measurements_to_that_series(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": {"s": "a"}, "v": i} for i in range(6)])
    # A filter on a measurement field and a meta change: the matched ones change series.
    r = coll.update_many({"v": {"$lt": 3}}, {"$set": {"m.s": "b", "m.k": 1}})
    assert (r.matched_count, r.modified_count) == (3, 3)
    # Bucket metas are normalized (fields sorted), and so is the meta of what is read back.
    assert sorted(d["v"] for d in coll.find({"m": {"k": 1, "s": "b"}})) == [0, 1, 2]
    assert sorted(d["v"] for d in coll.find({"m.s": "a"})) == [3, 4, 5]
    metas = sorted(repr(b["meta"]) for b in buckets(db))
    assert metas == [repr({"k": 1, "s": "b"}), repr({"s": "a"})]  # normalized: fields sorted
    # Removing the meta puts measurements in a bucket without one.
    coll.update_many({"v": 5}, {"$unset": {"m": ""}})
    assert [d for d in coll.find({"m": {"$exists": False}}, {"_id": 0})] == [{"t": at(5), "v": 5}]
    assert any("meta" not in b for b in buckets(db))


def test_update_of_the_time_field_moves_measurements_in_time(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(4)])
    later = at(5 * 86400)
    r = coll.update_many({"v": {"$gte": 2}}, {"$set": {"t": later}})
    assert r.modified_count == 2
    assert contents(coll) == [{"t": at(0), "m": "a", "v": 0}, {"t": at(1), "m": "a", "v": 1},
                              {"t": later, "m": "a", "v": 2}, {"t": later, "m": "a", "v": 3}]
    check_all_buckets(db)
    assert [b["control"]["max"]["t"] for b in buckets(db)] == [at(1), later]
    # The time field must stay a date: BadValue, as an insert answers, and nothing changes.
    for bad in ({"$set": {"t": "noon"}}, {"$unset": {"t": ""}}):
        with pytest.raises(WriteError) as e:
            coll.update_many({}, bad)
        assert e.value.code == 2 and TIME_MSG in str(e.value)
    assert coll.count_documents({"t": {"$type": "date"}}) == 4


def test_replacement_keeps_the_id_and_must_keep_a_time(db):
    coll = create_ts(db)
    coll.insert_many([{"_id": i, "t": at(i), "m": "a", "v": i} for i in range(3)])
    r = coll.replace_one({"v": 1}, {"t": at(1), "m": "b", "w": "new"})
    assert (r.matched_count, r.modified_count) == (1, 1)
    assert coll.find_one({"w": "new"}) == {"_id": 1, "t": at(1), "m": "b", "w": "new"}
    with pytest.raises(WriteError) as e:
        coll.replace_one({"v": 2}, {"m": "b"})
    assert e.value.code == 2
    assert coll.find_one({"_id": 2})["v"] == 2
    # A replacement cannot be multi, as on any collection.
    r = db.command({"update": "ts", "updates": [{"q": {}, "u": {"x": 1}, "multi": True}]})
    assert [e["code"] for e in r["writeErrors"]] == [9]


def test_pipeline_update(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(4)])
    r = coll.update_many({"v": {"$in": [1, 3]}},
                         [{"$set": {"double": {"$multiply": ["$v", 2]}}}, {"$unset": "m"}])
    assert r.modified_count == 2
    assert contents(coll) == [{"t": at(0), "m": "a", "v": 0}, {"t": at(1), "v": 1, "double": 2},
                              {"t": at(2), "m": "a", "v": 2}, {"t": at(3), "v": 3, "double": 6}]


def test_array_filters_and_the_positional_operator_on_measurements(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(0), "m": "a", "xs": [1, 5, 9]}, {"t": at(1), "m": "a", "xs": [7]}])
    r = coll.update_many({}, {"$set": {"xs.$[big]": 0}}, array_filters=[{"big": {"$gte": 5}}])
    assert r.modified_count == 2
    assert [d["xs"] for d in coll.find().sort("t", 1)] == [[1, 0, 0], [0]]
    coll.update_many({"xs": 1}, {"$set": {"xs.$": 100}})
    assert [d["xs"] for d in coll.find().sort("t", 1)] == [[100, 0, 0], [0]]


def test_upserts_insert_a_measurement(db):
    coll = create_ts(db)
    coll.insert_one({"t": at(0), "m": "a", "v": 0})
    # Nothing matches: the filter's equalities and the update make the measurement.
    r = db.command({"update": "ts", "updates": [
        {"q": {"m": "b", "t": at(10)}, "u": {"$set": {"v": 1}}, "upsert": True}]})
    assert r["n"] == 1 and r["nModified"] == 0
    [up] = r["upserted"]
    assert up["index"] == 0 and isinstance(up["_id"], ObjectId)
    assert coll.find_one({"m": "b"}) == {"_id": up["_id"], "t": at(10), "m": "b", "v": 1}
    # A replacement upsert takes the filter's _id.
    r = coll.replace_one({"_id": 42}, {"t": at(20), "m": "c"}, upsert=True)
    assert r.upserted_id == 42
    assert coll.find_one({"_id": 42}) == {"_id": 42, "t": at(20), "m": "c"}
    # Something matches: no insert (multi too).
    r = coll.update_many({"m": "a"}, {"$set": {"v": 5}}, upsert=True)
    assert (r.matched_count, r.modified_count, r.upserted_id) == (1, 1, None)
    # Without a time, the measurement cannot be inserted: BadValue.
    with pytest.raises(WriteError) as e:
        coll.update_one({"m": "z"}, {"$set": {"v": 1}}, upsert=True)
    assert e.value.code == 2 and TIME_MSG in str(e.value)
    assert coll.count_documents({}) == 3


def test_updates_of_a_collection_without_meta(db):
    coll = create_ts(db, meta=None)
    coll.insert_many([{"t": at(i), "v": i} for i in range(5)])
    r = coll.update_many({"v": {"$gt": 2}}, {"$set": {"big": True}})
    assert r.modified_count == 2
    assert sorted(d["v"] for d in coll.find({"big": True})) == [3, 4]
    check_all_buckets(db)


def test_updated_measurements_must_suit_the_bucket_indexes(db):
    # An index on a measurement field cannot take an array there (5930501, as an insert).
    coll = create_ts(db)
    coll.create_index("v")
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(3)])
    with pytest.raises(WriteError) as e:
        coll.update_many({"v": 1}, {"$set": {"v": [1, 2]}})
    assert e.value.code == 5930501
    assert sorted(d["v"] for d in coll.find()) == [0, 1, 2]
    coll.update_many({"v": 1}, {"$set": {"v": 10}})
    assert [d["v"] for d in coll.find({"v": {"$gte": 10}}).hint("v_1")] == [10]


def test_ordered_and_unordered_statements(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(3)])
    bad = {"q": {"v": 0}, "u": {"$set": {"t": 1}}}
    good = {"q": {"v": 1}, "u": {"$set": {"w": 1}}}
    r = db.command({"update": "ts", "updates": [bad, good], "ordered": True})
    assert r["n"] == 0 and [e["code"] for e in r["writeErrors"]] == [2]
    assert coll.count_documents({"w": 1}) == 0
    r = db.command({"update": "ts", "updates": [bad, good], "ordered": False})
    assert r["n"] == 1 and [e["index"] for e in r["writeErrors"]] == [0]
    assert coll.count_documents({"w": 1}) == 1


def test_version_1_buckets_stay_version_1(db_v1):
    coll = create_ts(db_v1)
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(6)])
    coll.update_many({"v": {"$gte": 3}}, {"$set": {"w": 1}})
    assert {b["control"]["version"] for b in buckets(db_v1)} == {1}
    assert sorted(d["v"] for d in coll.find({"w": 1})) == [3, 4, 5]
    check_all_buckets(db_v1)


def test_updates_race_inserts_into_the_same_buckets(db):
    # Inserts keep appending to the series' open buckets while updates rewrite them: no
    # acknowledged measurement is lost, and each one present when an update ran is changed once.
    coll = create_ts(db).with_options(write_concern=WriteConcern(w=1))
    coll.insert_many([{"t": at(i), "m": i % 2, "v": 0, "seq": i} for i in range(400)])
    stop = threading.Event()
    inserted = []
    errors = []

    def writer():
        i = 400
        try:
            while not stop.is_set() and i < 3400:
                coll.insert_many([{"t": at(i + k), "m": (i + k) % 2, "v": 0, "seq": i + k}
                                  for k in range(10)])
                inserted.extend(range(i, i + 10))
                i += 10
        except Exception as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(5):
            coll.update_many({"seq": {"$lt": 400}}, {"$inc": {"v": 1}})
    finally:
        stop.set()
        t.join()
    assert not errors
    seqs = sorted(d["seq"] for d in coll.find())
    assert seqs == list(range(400)) + inserted
    assert sorted({d["v"] for d in coll.find({"seq": {"$lt": 400}})}) == [5]
    assert coll.count_documents({"seq": {"$gte": 400}, "v": 0}) == len(inserted)
    check_all_buckets(db)


def test_updates_survive_a_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    coll = create_ts(c.tsup).with_options(write_concern=WriteConcern(j=True))
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(10)])
    coll.update_many({"v": {"$gte": 5}}, {"$set": {"m": "b", "w": True}})
    coll.update_one({"m": "z", "t": at(99)}, {"$set": {"v": 99}}, upsert=True)
    c.close()
    s.kill()
    s.start()
    c = s.client()
    try:
        coll = c.tsup.ts
        assert sorted(d["v"] for d in coll.find({"m": "b", "w": True})) == [5, 6, 7, 8, 9]
        assert sorted(d["v"] for d in coll.find({"m": "a"})) == [0, 1, 2, 3, 4]
        assert coll.find_one({"m": "z"})["v"] == 99
        # The series keep taking measurements after the restart.
        coll.insert_one({"t": at(11), "m": "b", "v": 11})
        assert coll.count_documents({"m": "b"}) == 6
        check_all_buckets(c.tsup)
    finally:
        c.close()


def test_explain_of_an_arbitrary_update(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(5)])
    exp = db.command("explain", {"update": "ts", "updates": [
        {"q": {"v": {"$lt": 2}}, "u": {"$set": {"w": 1}}, "multi": True}]},
        verbosity="executionStats")
    stage = exp["executionStats"]["executionStages"]
    assert stage["stage"] == "TS_MODIFY" and stage["opType"] == "updateMany"
    assert stage["residualFilter"] == {"v": {"$lt": 2}}
    assert (stage["nMeasurementsMatched"], stage["nMeasurementsUpdated"]) == (2, 2)
    assert coll.count_documents({"w": 1}) == 0  # explain changes nothing


def test_parameter_false_answers_as_mongodb_7_0(client, db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": "a", "v": i} for i in range(3)])
    client.admin.command({"setParameter": 1, "hourglassTimeseriesArbitraryUpdates": False})
    try:
        with pytest.raises(WriteError) as e:
            coll.update_many({"v": 1}, {"$set": {"w": 1}})
        assert e.value.code == 72
        with pytest.raises(WriteError) as e:
            coll.update_one({"m": "a"}, {"$set": {"m": "b"}})
        assert e.value.code == 72
        # The metaField-only update still works.
        assert coll.update_many({"m": "a"}, {"$set": {"m": "b"}}).modified_count == 3
    finally:
        client.admin.command({"setParameter": 1, "hourglassTimeseriesArbitraryUpdates": True})
    assert client.admin.command({"getParameter": 1, "hourglassTimeseriesArbitraryUpdates": 1})[
        "hourglassTimeseriesArbitraryUpdates"] is True
    assert coll.update_many({"v": 1}, {"$set": {"w": 1}}).modified_count == 1


# -- findAndModify (MongoDB 8.0) ------------------------------------------------------------
def test_find_and_modify_remove_returns_the_measurement(db):
    coll = create_ts(db)
    coll.insert_many([{"_id": i, "t": at(i), "m": "a", "v": i} for i in range(4)])
    r = db.command({"findAndModify": "ts", "query": {"v": {"$gte": 2}}, "remove": True})
    assert r["lastErrorObject"] == {"n": 1}
    gone = r["value"]
    assert gone["v"] in (2, 3) and gone == {"_id": gone["v"], "t": at(gone["v"]), "m": "a",
                                            "v": gone["v"]}
    assert sorted(d["v"] for d in coll.find()) == sorted({0, 1, 2, 3} - {gone["v"]})
    # Nothing matches: null, nothing deleted; a projection shapes the value.
    assert coll.find_one_and_delete({"v": 99}) is None
    assert coll.find_one_and_delete({"v": 0}, projection={"_id": 0, "v": 1}) == {"v": 0}
    assert coll.count_documents({}) == 2


def test_find_and_modify_update_returns_old_or_new(db):
    coll = create_ts(db)
    coll.insert_many([{"_id": i, "t": at(i), "m": "a", "v": i} for i in range(3)])
    old = coll.find_one_and_update({"_id": 1}, {"$inc": {"v": 10}})
    assert old == {"_id": 1, "t": at(1), "m": "a", "v": 1}
    new = coll.find_one_and_update({"_id": 1}, {"$inc": {"v": 10}}, return_document=True)
    assert new == {"_id": 1, "t": at(1), "m": "a", "v": 21}
    # A no-op update returns the measurement as it is.
    same = coll.find_one_and_update({"_id": 2}, {"$set": {"v": 2}}, return_document=True)
    assert same["v"] == 2
    r = db.command({"findAndModify": "ts", "query": {"_id": 0}, "update": {"$set": {"w": 1}},
                    "new": True, "fields": {"w": 1, "_id": 0}})
    assert r["lastErrorObject"] == {"n": 1, "updatedExisting": True}
    assert r["value"] == {"w": 1}
    # Replacement.
    rep = coll.find_one_and_replace({"_id": 2}, {"t": at(2), "m": "b"}, return_document=True)
    assert rep == {"_id": 2, "t": at(2), "m": "b"}
    assert sorted(d["_id"] for d in coll.find()) == [0, 1, 2]


def test_find_and_modify_upsert(db):
    coll = create_ts(db)
    r = db.command({"findAndModify": "ts", "query": {"m": "x", "t": at(5)},
                    "update": {"$set": {"v": 1}}, "upsert": True, "new": True})
    assert r["lastErrorObject"]["n"] == 1 and r["lastErrorObject"]["updatedExisting"] is False
    up = r["lastErrorObject"]["upserted"]
    assert r["value"] == {"_id": up, "t": at(5), "m": "x", "v": 1}
    assert coll.find_one({"_id": up}) == r["value"]
    # Without new: null, as for any collection.
    assert coll.find_one_and_update({"m": "y", "t": at(6)}, {"$set": {"v": 2}},
                                    upsert=True) is None
    assert coll.count_documents({}) == 2


def test_find_and_modify_with_a_sort(db):
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": i % 2, "v": (i * 7) % 10} for i in range(10)])
    # The latest measurement goes.
    gone = coll.find_one_and_delete({}, sort=[("t", -1)])
    assert gone["t"] == at(9)
    assert coll.count_documents({}) == 9 and coll.count_documents({"t": at(9)}) == 0
    # The smallest v of series 1 is updated, and only it.
    first = min((d for d in coll.find({"m": 1})), key=lambda d: d["v"])
    new = coll.find_one_and_update({"m": 1}, {"$set": {"picked": True}}, sort=[("v", 1)],
                                   return_document=True)
    assert (new["t"], new["v"], new["picked"]) == (first["t"], first["v"], True)
    assert coll.count_documents({"picked": True}) == 1
    # Ties on the sort key: one of them, once.
    coll.insert_many([{"t": at(50), "m": 5, "v": 1}, {"t": at(50), "m": 5, "v": 1}])
    coll.find_one_and_update({"m": 5}, {"$inc": {"v": 1}}, sort=[("t", 1)])
    assert sorted(d["v"] for d in coll.find({"m": 5})) == [1, 2]
    # Nothing matches: null, and an upsert inserts.
    assert coll.find_one_and_update({"m": 9}, {"$set": {"v": 0}}, sort=[("t", 1)]) is None
    up = coll.find_one_and_update({"m": 9, "t": at(60)}, {"$set": {"v": 0}}, sort=[("t", 1)],
                                  upsert=True, return_document=True)
    assert up["m"] == 9 and coll.count_documents({"m": 9}) == 1


# -- finding the buckets as reads do --------------------------------------------------------
def many_hours(db, hours=48):
    coll = create_ts(db)
    coll.insert_many([{"t": at(h * 3600 + k * 60), "m": s, "v": k}
                      for h in range(hours) for s in "ab" for k in range(3)])
    return coll


def modify_explain(db, inner):
    return db.command("explain", inner, verbosity="executionStats")


def test_writes_with_a_time_range_read_only_those_buckets(db):
    coll = many_hours(db)
    total = db["system.buckets.ts"].count_documents({})
    window = {"t": {"$gte": at(10 * 3600), "$lt": at(12 * 3600)}}
    for inner in ({"update": "ts", "updates": [{"q": window, "u": {"$set": {"w": 1}},
                                                "multi": True}]},
                  {"delete": "ts", "deletes": [{"q": window, "limit": 0}]}):
        e = modify_explain(db, inner)
        scan = e["executionStats"]["executionStages"]["inputStage"]
        assert scan["stage"] == "CLUSTERED_IXSCAN" and "minRecord" in scan
        assert e["executionStats"]["totalDocsExamined"] < total / 4
    r = coll.update_many(window, {"$set": {"w": 1}})
    assert r.modified_count == 2 * 2 * 3
    assert coll.count_documents({"w": 1}) == 12
    assert coll.delete_many(window).deleted_count == 12
    assert coll.count_documents({}) == 48 * 6 - 12


def test_writes_on_one_series_use_the_series_index(db):
    coll = many_hours(db)
    e = modify_explain(db, {"update": "ts", "updates": [
        {"q": {"m": "a", "v": 1}, "u": {"$set": {"w": 1}}, "multi": True}]})
    scan = e["executionStats"]["executionStages"]["inputStage"]
    assert scan["stage"] == "FETCH" and scan["inputStage"]["stage"] == "IXSCAN"
    assert e["executionStats"]["totalDocsExamined"] == db["system.buckets.ts"].count_documents(
        {"meta": "a"})
    assert coll.update_many({"m": "a", "v": 1}, {"$set": {"w": 1}}).modified_count == 48
    assert coll.count_documents({"w": 1, "m": "a"}) == 48


def test_hints_of_time_series_writes(db):
    coll = many_hours(db, hours=2)
    coll.create_index("v")
    r = db.command({"update": "ts", "updates": [
        {"q": {"v": 2}, "u": {"$set": {"w": 1}}, "multi": True, "hint": "v_1"}]})
    assert r["nModified"] == 4
    e = modify_explain(db, {"delete": "ts", "deletes": [
        {"q": {"v": 2}, "limit": 0, "hint": {"v": 1}}]})
    assert e["executionStats"]["executionStages"]["inputStage"]["stage"] == "FETCH"
    assert coll.delete_many({"v": 2}, hint="v_1").deleted_count == 4
    # A hint naming no index: BadValue, as for reads.
    r = db.command({"update": "ts", "updates": [
        {"q": {}, "u": {"$set": {"w": 2}}, "multi": True, "hint": "nope"}]})
    assert [e["code"] for e in r["writeErrors"]] == [2]
    assert coll.count_documents({"w": 2}) == 0


def test_meta_updates_through_filters_that_read_only_the_meta(db):
    # $expr and $jsonSchema reading the metaField: MongoDB 7.0 refuses them (72); 8.0's updates
    # take any filter.
    coll = create_ts(db)
    coll.insert_many([{"t": at(i), "m": {"s": "a" if i < 3 else "b"}, "v": i} for i in range(5)])
    r = coll.update_many({"$expr": {"$eq": ["$m.s", "a"]}}, {"$set": {"m.s": "c"}})
    assert (r.matched_count, r.modified_count) == (3, 3)
    r = coll.update_many({"$jsonSchema": {"required": ["m"], "properties": {
        "m": {"properties": {"s": {"enum": ["b"]}}}}}}, {"$set": {"m.k": 1}})
    assert r.modified_count == 2
    assert sorted((d["v"], d["m"].get("s"), d["m"].get("k")) for d in coll.find()) == [
        (0, "c", None), (1, "c", None), (2, "c", None), (3, "b", 1), (4, "b", 1)]


def test_acknowledged_updates_survive_kill(fresh_server):
    # Updates with j: true run while the server is killed: after recovery no measurement is lost
    # or doubled (a changed measurement leaves its bucket and enters a new one in one
    # transaction), and every acknowledged update is there. A multi-update is not atomic: the
    # one running at the kill may have changed some measurements and not others.


    s = fresh_server.new()
    c = s.client()
    coll = create_ts(c.tsupkill).with_options(write_concern=WriteConcern(j=True))
    coll.insert_many([{"t": at(i), "m": i % 4, "seq": i, "v": 0} for i in range(2000)])
    acked = []
    stop = threading.Event()

    def updater():
        while not stop.is_set():
            try:
                coll.update_many({"seq": {"$lt": 1000}}, {"$inc": {"v": 1}})
            except Exception:
                return
            acked.append(1)

    th = threading.Thread(target=updater)
    th.start()
    deadline = time.monotonic() + 20
    while len(acked) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.03)  # into the middle of another update
    s.kill()
    stop.set()
    th.join(30)
    c.close()
    assert len(acked) >= 3
    s.start()
    c = s.client()
    try:
        db = c.tsupkill
        docs = list(db.ts.find({}, {"_id": 0, "seq": 1, "v": 1}))
        assert sorted(d["seq"] for d in docs) == list(range(2000))
        n = len(acked)
        assert {d["v"] for d in docs if d["seq"] < 1000} <= {n, n + 1}
        assert {d["v"] for d in docs if d["seq"] >= 1000} == {0}
        check_all_buckets(db)
    finally:
        c.close()


def test_bad_input_of_the_new_writes(client, db):
    coll = create_ts(db)
    coll.insert_one({"t": at(0), "m": "a", "v": 1})
    name = "hourglassTimeseriesArbitraryUpdates"
    with pytest.raises(OperationFailure) as e:
        client.admin.command({"setParameter": 1, name: "yes"})
    assert e.value.code == 2
    assert client.admin.command({"getParameter": 1, name: 1})[name] is True
    # findAndModify's sort is checked as a find's is.
    for sort, code in (({"t": "x"}, 15975), (5, 14)):
        with pytest.raises(OperationFailure) as e:
            db.command({"findAndModify": "ts", "query": {}, "sort": sort, "remove": True})
        assert e.value.code == code
    # An update's unknown operator, a replacement with multi, an upsert with a bad time.
    r = db.command({"update": "ts", "updates": [
        {"q": {}, "u": {"$nope": {"v": 1}}, "multi": True},
        {"q": {}, "u": {"v": 2}, "multi": True},
        {"q": {"m": "z", "t": "noon"}, "u": {"$set": {"v": 1}}, "upsert": True}],
        "ordered": False})
    assert [e["code"] for e in r["writeErrors"]] == [9, 9, 2]
    assert coll.count_documents({}) == 1 and coll.find_one()["v"] == 1
