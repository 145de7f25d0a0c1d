"""Collections clustered by _id (create with clusteredIndex), compared with MongoDB 7.0's
documented answers: the create option and its errors, listCollections/listIndexes, createIndexes
and dropIndexes on the clustered index, collMod expireAfterSeconds, TTL by _id dates, and the
natural order (_id order) of reads, writes and restarts."""

import datetime
import time

import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId

from conftest import command_error, run_command

CLUSTERED = {"key": {"_id": 1}, "unique": True}


def create(db, name, **options):
    return run_command(db, {"create": name, **options})


def options_of(db, name):
    (info,) = list(db.list_collections(filter={"name": name}))
    return info


def test_create_shows_the_spec_in_list_collections_and_list_indexes(db):
    assert create(db, "c", clusteredIndex=CLUSTERED)["ok"] == 1
    info = options_of(db, "c")
    assert info["type"] == "collection"
    assert info["options"] == {
        "clusteredIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True}
    }
    assert list(info["options"]["clusteredIndex"]) == ["v", "key", "name", "unique"]
    # A clustered collection has no separate _id index to describe.
    assert "idIndex" not in info
    assert list(db.c.list_indexes()) == [
        {"v": 2, "key": {"_id": 1}, "name": "_id_", "unique": True, "clustered": True}
    ]


def test_create_keeps_a_given_name_and_expire_after_seconds(db):
    create(db, "c", clusteredIndex={**CLUSTERED, "name": "by_id", "v": 2}, expireAfterSeconds=3600)
    options = options_of(db, "c")["options"]
    assert options["clusteredIndex"]["name"] == "by_id"
    assert options["expireAfterSeconds"] == 3600
    assert isinstance(options["expireAfterSeconds"], Int64)
    (idx,) = list(db.c.list_indexes())
    assert idx["name"] == "by_id" and idx["clustered"] is True


def test_create_again_with_the_same_options_is_ok_and_different_options_exist(db):
    create(db, "c", clusteredIndex=CLUSTERED, expireAfterSeconds=10)
    assert create(db, "c", clusteredIndex=CLUSTERED, expireAfterSeconds=10)["ok"] == 1
    assert command_error(db, {"create": "c", "clusteredIndex": CLUSTERED})[0] == 48
    assert command_error(db, {"create": "c"})[0] == 48


@pytest.mark.parametrize(
    "spec, code, message",
    [
        ({"key": {"_id": 1}}, 40414, "'create.clusteredIndex.unique' is missing"),
        ({"unique": True}, 40414, "'create.clusteredIndex.key' is missing"),
        ({"key": {"_id": 1}, "unique": False}, 5979700, "requires unique: true"),
        ({"key": {"a": 1}, "unique": True}, 197, "only supported for key: {_id: 1}"),
        ({"key": {"_id": -1}, "unique": True}, 197, "only supported for key: {_id: 1}"),
        ({"key": {"_id": 1}, "unique": True, "v": 1}, 5979704, "cannot create a clusteredIndex with v=1"),
        ({"key": {"_id": 1}, "unique": True, "foo": 1}, 40415, "'create.clusteredIndex.foo' is an unknown field"),
        ({"key": "_id", "unique": True}, 14, "clusteredIndex.key"),
        (True, 5979703, "legacy format"),
        ("yes", 14, "clusteredIndex"),
    ],
)
def test_create_refuses_bad_cluster_specs(db, spec, code, message):
    got = command_error(db, {"create": "c", "clusteredIndex": spec})
    assert got[0] == code, got
    assert message in got[2]
    assert "c" not in db.list_collection_names()


def test_create_accepts_key_one_in_any_number_type(db):
    create(db, "c", clusteredIndex={"key": {"_id": 1.0}, "unique": 1})
    assert options_of(db, "c")["options"]["clusteredIndex"]["unique"] is True


def test_create_options_that_cannot_go_with_clustering(db):
    assert command_error(db, {"create": "c", "clusteredIndex": CLUSTERED, "viewOn": "x"})[0] == 6026500
    assert command_error(db, {"create": "c", "clusteredIndex": CLUSTERED, "autoIndexId": False})[0] == 6026501
    code, _, msg = command_error(
        db, {"create": "c", "clusteredIndex": CLUSTERED, "idIndex": {"key": {"_id": 1}, "name": "_id_"}}
    )
    assert (code, "idIndex" in msg) == (72, True)
    code, _, msg = command_error(
        db, {"create": "c", "clusteredIndex": CLUSTERED, "timeseries": {"timeField": "t"}}
    )
    assert code == 72 and "'timeseries' is not allowed with 'clusteredIndex'" in msg
    assert db.list_collection_names() == []


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "only supported on time-series collections or when the 'clusteredIndex'"),
        ({"clusteredIndex": False}, "requires clustering to be enabled"),
    ],
)
def test_expire_after_seconds_needs_clustering(db, options, message):
    code, _, msg = command_error(db, {"create": "c", "expireAfterSeconds": 5, **options})
    assert code == 72 and message in msg


@pytest.mark.parametrize("value, code", [(-1, 72), (2**62, 72), ("10", 14)])
def test_create_refuses_bad_expire_after_seconds(db, value, code):
    got = command_error(db, {"create": "c", "clusteredIndex": CLUSTERED, "expireAfterSeconds": value})
    assert got[0] == code, got


def test_find_reads_in_id_order_in_both_directions_and_across_batches(db):
    create(db, "c", clusteredIndex=CLUSTERED)
    now = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    oid = ObjectId()
    ids = [5, "b", 1.5, now, oid, "a", -3, None, {"x": 1}]
    db.c.insert_many([{"_id": i} for i in ids])
    # MongoDB's canonical order: null, numbers, strings, objects, ObjectId, dates.
    expected = [None, -3, 1.5, 5, "a", "b", {"x": 1}, oid, now.replace(tzinfo=None)]
    assert [d["_id"] for d in db.c.find().batch_size(2)] == expected
    assert [d["_id"] for d in db.c.find().hint([("$natural", -1)])] == expected[::-1]
    assert [d["_id"] for d in db.c.aggregate([{"$match": {}}])] == expected


def test_writes_without_sort_take_the_smallest_id_first(db):
    create(db, "c", clusteredIndex=CLUSTERED)
    db.c.insert_many([{"_id": i, "k": 1} for i in (30, 10, 20)])
    db.c.update_one({"k": 1}, {"$set": {"hit": True}})
    assert db.c.find_one({"hit": True})["_id"] == 10
    db.c.delete_one({"k": 1})
    assert [d["_id"] for d in db.c.find()] == [20, 30]


def test_duplicate_ids_are_refused(db):
    create(db, "c", clusteredIndex=CLUSTERED)
    db.c.insert_one({"_id": 42})
    # 42, 42.0 and NumberLong(42) are one _id.
    reply = run_command(db, {"insert": "c", "documents": [{"_id": Int64(42)}, {"_id": 42.0}]})
    assert [e["code"] for e in reply["writeErrors"]] == [11000]
    assert reply["n"] == 0
    assert db.c.count_documents({}) == 1


def test_create_indexes_on_the_clustered_key_is_a_no_op(db):
    create(db, "c", clusteredIndex=CLUSTERED)
    for spec in (
        {"key": {"_id": 1}, "name": "_id_1"},
        {"key": {"_id": 1}, "name": "x", "clustered": True, "unique": True},
    ):
        reply = run_command(db, {"createIndexes": "c", "indexes": [spec]})
        assert reply["ok"] == 1
        assert (reply["numIndexesBefore"], reply["numIndexesAfter"]) == (0, 0)
        assert reply["note"] == "all indexes already exist"
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]
    reply = run_command(db, {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
    assert (reply["numIndexesBefore"], reply["numIndexesAfter"]) == (0, 1)
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_", "a_1"]


@pytest.mark.parametrize(
    "coll, spec, code",
    [
        ("c", {"key": {"_id": 1}, "name": "x", "clustered": True}, 67),
        ("c", {"key": {"_id": 1}, "name": "x", "clustered": False, "unique": True}, 6492800),
        ("c", {"key": {"_id": 1}, "name": "x", "clustered": True, "unique": True, "sparse": True}, 197),
        ("c", {"key": {"a": 1}, "name": "a", "clustered": True, "unique": True}, 6243700),
        ("plain", {"key": {"_id": 1}, "name": "x", "clustered": True, "unique": True}, 6243700),
        ("new_coll", {"key": {"_id": 1}, "name": "x", "clustered": True, "unique": True}, 6100900),
        ("c", {"key": {"a": 1}, "name": "_id_"}, 6100906),
        ("c", {"key": {"_id": 1}, "name": "y", "unique": False}, 6100909),
    ],
)
def test_create_indexes_clustered_option_errors(db, coll, spec, code):
    create(db, "c", clusteredIndex=CLUSTERED)
    create(db, "plain")
    got = command_error(db, {"createIndexes": coll, "indexes": [spec]})
    assert got[0] == code, got
    assert "new_coll" not in db.list_collection_names()


def test_the_clustered_index_cannot_be_dropped_or_hidden(db):
    create(db, "c", clusteredIndex={**CLUSTERED, "name": "by_id"})
    db.c.create_index("a")
    for index in ("by_id", {"_id": 1}, ["a_1", "by_id"]):
        assert command_error(db, {"dropIndexes": "c", "index": index})[0] == 5979800
    assert command_error(db, {"dropIndexes": "c", "index": "_id_"})[0] == 27
    assert command_error(db, {"collMod": "c", "index": {"name": "by_id", "hidden": True}})[0] == 6011800
    reply = run_command(db, {"dropIndexes": "c", "index": "*"})
    assert reply["nIndexesWas"] == 1
    assert [i["name"] for i in db.c.list_indexes()] == ["by_id"]


def test_coll_mod_expire_after_seconds(db):
    create(db, "c", clusteredIndex=CLUSTERED)
    assert run_command(db, {"collMod": "c", "expireAfterSeconds": 500})["ok"] == 1
    assert options_of(db, "c")["options"]["expireAfterSeconds"] == 500
    assert run_command(db, {"collMod": "c", "expireAfterSeconds": "off"})["ok"] == 1
    assert "expireAfterSeconds" not in options_of(db, "c")["options"]
    code, _, msg = command_error(db, {"collMod": "c", "expireAfterSeconds": "on"})
    assert code == 72 and "Accepted value is 'off'" in msg
    assert command_error(db, {"collMod": "c", "expireAfterSeconds": -5})[0] == 72
    assert command_error(db, {"collMod": "c", "expireAfterSeconds": [5]})[0] == 14
    # The clustered index itself takes no TTL: the collection's setting is the one.
    code, _, msg = command_error(
        db, {"collMod": "c", "index": {"keyPattern": {"_id": 1}, "expireAfterSeconds": 5}}
    )
    assert code == 72 and "clusteredIndex cannot be a TTL index" in msg
    create(db, "plain")
    code, _, msg = command_error(db, {"collMod": "plain", "expireAfterSeconds": 5})
    assert code == 72 and "only supported on collections clustered by _id" in msg
    assert "expireAfterSeconds" not in options_of(db, "plain")["options"]


def test_ttl_expires_documents_whose_id_is_an_old_date(fresh_server):
    s = fresh_server.new(extra_args=["--setParameter", "ttlMonitorSleepSecs=1"])
    c = s.client()
    try:
        db = c.ttl
        create(db, "c", clusteredIndex=CLUSTERED, expireAfterSeconds=60)
        now = datetime.datetime.now(datetime.timezone.utc)
        old = now - datetime.timedelta(hours=1)
        docs = [
            {"_id": old, "what": "old date"},
            {"_id": old - datetime.timedelta(days=400), "what": "older date"},
            {"_id": now + datetime.timedelta(hours=1), "what": "future date"},
            {"_id": datetime.datetime(1969, 7, 20), "what": "before 1970"},
            {"_id": ObjectId.from_datetime(old), "what": "old ObjectId"},
            {"_id": "yesterday", "what": "string"},
            {"_id": 7, "what": "number"},
        ]
        db.c.insert_many(docs)
        deadline = time.time() + 20
        while time.time() < deadline and db.c.count_documents({}) > 5:
            time.sleep(0.3)
        # Only dates from 1970 to now - expireAfterSeconds expire, as in MongoDB.
        assert sorted(d["what"] for d in db.c.find()) == [
            "before 1970",
            "future date",
            "number",
            "old ObjectId",
            "string",
        ]
        # Turned off, nothing more expires.
        run_command(db, {"collMod": "c", "expireAfterSeconds": "off"})
        db.c.insert_one({"_id": old, "what": "old date again"})
        time.sleep(2.5)
        assert db.c.count_documents({"what": "old date again"}) == 1
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_restart_keeps_clustering_options_and_order(fresh_server):
    s = fresh_server.new()
    c = s.client()
    create(c.r, "c", clusteredIndex={**CLUSTERED, "name": "cl"}, expireAfterSeconds=99)
    c.r.c.insert_many([{"_id": i} for i in (3, 1, 2)])
    c.close()
    assert s.shutdown_command() == 0
    s2 = fresh_server.new(dbpath=s.dbpath)
    c = s2.client()
    try:
        assert options_of(c.r, "c")["options"]["clusteredIndex"]["name"] == "cl"
        assert options_of(c.r, "c")["options"]["expireAfterSeconds"] == 99
        assert [d["_id"] for d in c.r.c.find()] == [1, 2, 3]
        assert [i["name"] for i in c.r.c.list_indexes()] == ["cl"]
    finally:
        c.close()
    assert s2.shutdown_command() == 0
