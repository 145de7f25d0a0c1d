"""Collections, databases and CRUD commands, checked against MongoDB 7.0's replies."""

import datetime
import bson
import pytest
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.son import SON
from bson.timestamp import Timestamp
from pymongo import ReturnDocument
from pymongo.errors import BulkWriteError, DuplicateKeyError
from pymongo.write_concern import WriteConcern

import wire
from conftest import command_error, run_command

MAX_BSON = 16 * 1024 * 1024


def names(db, **kwargs):
    return sorted(db.list_collection_names(**kwargs))


# -- collections and databases ---------------------------------------------------
def test_create_and_list_collections(db):
    assert db.command({"create": "a"})["ok"] == 1
    db.command({"create": "b"})
    r = db.command({"listCollections": 1})
    assert r["ok"] == 1
    cursor = r["cursor"]
    assert cursor["id"] == 0
    assert cursor["ns"] == f"{db.name}.$cmd.listCollections"
    by_name = {c["name"]: c for c in cursor["firstBatch"]}
    assert set(by_name) == {"a", "b"}
    a = by_name["a"]
    assert a["type"] == "collection"
    assert a["options"] == {}
    assert a["info"]["readOnly"] is False
    assert "uuid" in a["info"]
    assert a["idIndex"]["key"] == {"_id": 1}
    assert a["idIndex"]["name"] == "_id_"
    assert a["idIndex"]["v"] == 2


def test_list_collections_filter_and_name_only(db):
    for n in ("alpha", "beta", "gamma"):
        db.create_collection(n)
    r = db.command({"listCollections": 1, "filter": {"name": "beta"}})
    assert [c["name"] for c in r["cursor"]["firstBatch"]] == ["beta"]
    r = db.command({"listCollections": 1, "filter": {"name": {"$in": ["alpha", "gamma"]}}})
    assert sorted(c["name"] for c in r["cursor"]["firstBatch"]) == ["alpha", "gamma"]
    r = db.command({"listCollections": 1, "nameOnly": True})
    for c in r["cursor"]["firstBatch"]:
        assert set(c) == {"name", "type"}
        assert c["type"] == "collection"
    assert names(db) == ["alpha", "beta", "gamma"]


def test_list_collections_batch_size(db):
    for i in range(5):
        db.create_collection(f"c{i}")
    r = db.command({"listCollections": 1, "cursor": {"batchSize": 2}})
    cursor = r["cursor"]
    assert len(cursor["firstBatch"]) == 2
    assert cursor["id"] != 0
    seen = [c["name"] for c in cursor["firstBatch"]]
    while cursor["id"] != 0:
        r = db.command({"getMore": cursor["id"], "collection": "$cmd.listCollections"})
        cursor = r["cursor"]
        seen += [c["name"] for c in cursor["nextBatch"]]
    assert sorted(seen) == [f"c{i}" for i in range(5)]


def test_insert_creates_collection_implicitly(db):
    db.implicit.insert_one({"x": 1})
    assert "implicit" in db.list_collection_names()


def test_drop_collection(db):
    db.c.insert_one({"x": 1})
    r = db.command({"drop": "c"})
    assert r["ok"] == 1
    assert r["ns"] == f"{db.name}.c"
    assert "c" not in db.list_collection_names()
    assert db.c.find_one() is None


def test_drop_missing_collection_is_ok(db):
    # MongoDB 7.0 (SERVER-43894): dropping a non-existent collection succeeds.
    r = run_command(db, {"drop": "never_created"})
    assert r["ok"] == 1


def test_rename_collection(client, db):
    db.src.insert_many([{"_id": i} for i in range(3)])
    r = client.admin.command({"renameCollection": f"{db.name}.src", "to": f"{db.name}.dst"})
    assert r["ok"] == 1
    assert names(db) == ["dst"]
    assert db.dst.count_documents({}) == 3


def test_rename_collection_target_exists(client, db):
    db.a.insert_one({"_id": "a"})
    db.b.insert_one({"_id": "b"})
    code, name, _ = command_error(
        client.admin, {"renameCollection": f"{db.name}.a", "to": f"{db.name}.b"}
    )
    assert (code, name) == (48, "NamespaceExists")
    client.admin.command(
        {"renameCollection": f"{db.name}.a", "to": f"{db.name}.b", "dropTarget": True}
    )
    assert list(db.b.find()) == [{"_id": "a"}]
    assert names(db) == ["b"]


def test_rename_missing_collection(client, db):
    db.other.insert_one({})
    code, name, _ = command_error(
        client.admin, {"renameCollection": f"{db.name}.nope", "to": f"{db.name}.x"}
    )
    assert (code, name) == (26, "NamespaceNotFound")


def test_rename_collection_across_databases(client, db):
    other = client[db.name + "_o"]
    try:
        db.src.insert_many([{"_id": i} for i in range(4)])
        client.admin.command({"renameCollection": f"{db.name}.src", "to": f"{other.name}.moved"})
        assert other.moved.count_documents({}) == 4
        assert "src" not in db.list_collection_names()
    finally:
        client.drop_database(other.name)


def test_list_and_drop_databases(client, db):
    db.c.insert_one({"x": 1})
    r = client.admin.command("listDatabases")
    assert r["ok"] == 1
    entry = next(d for d in r["databases"] if d["name"] == db.name)
    assert isinstance(entry["sizeOnDisk"], (int, float, Int64))
    assert entry["empty"] is False
    assert "totalSize" in r and "totalSizeMb" in r
    r = client.admin.command({"listDatabases": 1, "nameOnly": True})
    assert db.name in [d["name"] for d in r["databases"]]
    assert all(set(d) == {"name"} for d in r["databases"])
    r = client.admin.command({"listDatabases": 1, "filter": {"name": db.name}})
    assert [d["name"] for d in r["databases"]] == [db.name]

    assert db.command("dropDatabase")["ok"] == 1
    assert db.name not in client.list_database_names()
    assert db.c.find_one() is None


def test_drop_missing_database_is_ok(client):
    assert client["t_never_existed_db"].command("dropDatabase")["ok"] == 1


def test_db_stats(db):
    db.a.insert_many([{"i": i} for i in range(10)])
    db.b.insert_one({"i": 0})
    r = db.command("dbStats")
    assert r["ok"] == 1
    assert r["db"] == db.name
    assert r["collections"] == 2
    assert r["views"] == 0
    assert r["objects"] == 11
    assert r["indexes"] == 2
    for k in ("avgObjSize", "dataSize", "storageSize", "indexSize", "totalSize", "scaleFactor"):
        assert k in r, k
    assert r["dataSize"] > 0


def test_coll_stats(db):
    db.c.insert_many([{"i": i, "s": "x" * 100} for i in range(20)])
    r = db.command({"collStats": "c"})
    assert r["ok"] == 1
    assert r["ns"] == f"{db.name}.c"
    assert r["count"] == 20
    assert r["size"] >= 20 * 100
    assert r["avgObjSize"] >= 100
    assert r["nindexes"] == 1
    assert "_id_" in r["indexSizes"]
    assert "storageSize" in r and "totalIndexSize" in r


# -- insert ---------------------------------------------------------------------------
def _dup_errmsg(db, coll, value_repr):
    return (
        f"E11000 duplicate key error collection: {db.name}.{coll} index: _id_ dup key: "
        f"{{ _id: {value_repr} }}"
    )


def test_insert_reply(db):
    r = db.command({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})
    assert r["ok"] == 1
    assert r["n"] == 2
    assert "writeErrors" not in r


def test_insert_ordered_stops_at_first_error(db):
    r = db.command(
        {"insert": "c", "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}], "ordered": True}
    )
    assert r["ok"] == 1
    assert r["n"] == 1
    assert len(r["writeErrors"]) == 1
    we = r["writeErrors"][0]
    assert we["index"] == 1
    assert we["code"] == 11000
    assert we["keyPattern"] == {"_id": 1}
    assert we["keyValue"] == {"_id": 1}
    assert sorted(d["_id"] for d in db.c.find()) == [1]
    assert we["errmsg"] == _dup_errmsg(db, "c", "1")


def test_insert_unordered_continues(db):
    r = db.command(
        {
            "insert": "c",
            "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}, {"_id": 2}, {"_id": 3}],
            "ordered": False,
        }
    )
    assert r["ok"] == 1
    assert r["n"] == 3
    assert [(e["index"], e["code"]) for e in r["writeErrors"]] == [(1, 11000), (3, 11000)]
    assert sorted(d["_id"] for d in db.c.find()) == [1, 2, 3]


def test_duplicate_key_errmsg_for_string_id(db):
    db.c.insert_one({"_id": "k"})
    r = db.command({"insert": "c", "documents": [{"_id": "k"}]})
    assert r["writeErrors"][0]["errmsg"] == _dup_errmsg(db, "c", '"k"')


def test_pymongo_duplicate_key_errors(db):
    db.c.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError) as ei:
        db.c.insert_one({"_id": 1})
    assert ei.value.code == 11000
    with pytest.raises(BulkWriteError) as ei:
        db.c.insert_many([{"_id": 2}, {"_id": 1}, {"_id": 3}])
    details = ei.value.details
    assert details["nInserted"] == 1
    assert details["writeErrors"][0]["index"] == 1
    assert details["writeErrors"][0]["code"] == 11000


def test_server_generates_object_id_first(db):
    r = db.command({"insert": "c", "documents": [{"x": 1}, {"x": 2}]})
    assert r["n"] == 2
    docs = list(db.c.find({}, sort=[("x", 1)]))
    assert [d["x"] for d in docs] == [1, 2]
    for d in docs:
        assert isinstance(d["_id"], ObjectId)
        assert list(d.keys())[0] == "_id"
    assert docs[0]["_id"] != docs[1]["_id"]


def test_id_moved_to_front(db):
    db.command({"insert": "c", "documents": [SON([("a", 1), ("_id", 5), ("b", 2)])]})
    # The server stores _id as the first field.
    doc = db.c.find_one({"_id": 5})
    assert list(doc.keys()) == ["_id", "a", "b"]


def test_array_id_rejected(db):
    r = db.command({"insert": "c", "documents": [{"_id": [1, 2]}]})
    assert r["ok"] == 1
    assert r["n"] == 0
    we = r["writeErrors"][0]
    assert we["index"] == 0
    assert we["code"] == 2
    assert "can't use an array for _id" in we["errmsg"]
    assert db.c.count_documents({}) == 0


def test_dollar_prefixed_top_level_field_allowed_on_insert(db):
    # Since MongoDB 5.0 inserts accept $-prefixed field names at any level.
    r = db.command({"insert": "c", "documents": [{"_id": 1, "$price": 50, "q": {"$inc": True}}]})
    assert r["n"] == 1
    assert "writeErrors" not in r
    got = db.command({"find": "c", "filter": {"_id": 1}})["cursor"]["firstBatch"]
    assert got == [{"_id": 1, "$price": 50, "q": {"$inc": True}}]


def test_sixteen_mib_document_rejected(server, db):
    big = {"_id": 1, "s": ""}
    overhead = len(bson.encode(big))
    big["s"] = "x" * (MAX_BSON - overhead + 1)
    assert len(bson.encode(big)) == MAX_BSON + 1
    s = wire.connect(server.port, timeout=120)
    try:
        reply = wire.command(
            s, {"insert": "big", "$db": db.name}, sequences=[("documents", [big])]
        )
        assert reply["ok"] == 1
        assert reply["n"] == 0
        we = reply["writeErrors"][0]
        assert we["index"] == 0
        assert "object to insert too large" in we["errmsg"]
        # Exactly 16 MiB is allowed.
        big["s"] = big["s"][:-1]
        reply = wire.command(
            s, {"insert": "big", "$db": db.name}, sequences=[("documents", [big])]
        )
        assert reply["ok"] == 1 and reply["n"] == 1, reply
    finally:
        s.close()
    assert db.big.count_documents({}) == 1
    # mongod's fixDocumentForInsert reports the oversize document as BadValue.
    assert we["code"] == 2


# -- find -----------------------------------------------------------------------------
@pytest.fixture
def people(db):
    docs = [
        {"_id": 1, "name": "ann", "age": 31, "city": "oslo", "tags": ["a", "b"], "n": {"x": 1}},
        {"_id": 2, "name": "bob", "age": 25, "city": "rome", "tags": ["b"], "n": {"x": 2}},
        {"_id": 3, "name": "cid", "age": 40, "city": "oslo", "tags": []},
        {"_id": 4, "name": "dee", "age": 25, "city": "lima", "n": {"x": 3}},
        {"_id": 5, "name": "eve", "age": None, "city": "rome"},
        {"_id": 6, "name": "fay", "city": "oslo", "age": "unknown"},
    ]
    db.people.insert_many(docs)
    return db.people


def ids(cursor):
    return [d["_id"] for d in cursor]


@pytest.mark.parametrize(
    "flt,expected",
    [
        ({"age": 25}, [2, 4]),
        ({"age": {"$eq": 31}}, [1]),
        ({"age": {"$ne": 25}}, [1, 3, 5, 6]),
        ({"age": {"$gt": 25}}, [1, 3]),
        ({"age": {"$gte": 25}}, [1, 2, 3, 4]),
        ({"age": {"$lt": 31}}, [2, 4]),
        ({"age": {"$lte": 31}}, [1, 2, 4]),
        ({"age": {"$gt": 25, "$lt": 40}}, [1]),
        ({"city": {"$in": ["rome", "lima"]}}, [2, 4, 5]),
        ({"city": {"$nin": ["rome", "lima"]}}, [1, 3, 6]),
        ({"$and": [{"city": "oslo"}, {"age": {"$gt": 30}}]}, [1, 3]),
        ({"$or": [{"city": "lima"}, {"age": 40}]}, [3, 4]),
        ({"$nor": [{"city": "oslo"}, {"age": 25}]}, [5]),
        ({"age": {"$not": {"$gt": 25}}}, [2, 4, 5, 6]),
        ({"n": {"$exists": True}}, [1, 2, 4]),
        ({"n": {"$exists": False}}, [3, 5, 6]),
        ({"age": None}, [5]),
        ({"n": None}, [3, 5, 6]),
        ({"age": {"$type": "string"}}, [6]),
        ({"age": {"$type": 2}}, [6]),
        ({"age": {"$type": "number"}}, [1, 2, 3, 4]),
        ({"age": {"$type": ["null", "string"]}}, [5, 6]),
        ({"tags": "b"}, [1, 2]),
        ({"tags": {"$size": 0}}, [3]),
        ({"n.x": {"$gte": 2}}, [2, 4]),
        ({"name": Regex("^[a-c]")}, [1, 2, 3]),
        ({"name": {"$regex": "E$", "$options": "i"}}, [4, 5]),
        ({"tags": {"$all": ["a", "b"]}}, [1]),
        ({"_id": {"$in": []}}, []),
    ],
)
def test_find_filters(people, flt, expected):
    assert sorted(ids(people.find(flt))) == expected


def test_comparisons_are_type_bracketed(people):
    # $gt on a number never matches strings or null.
    assert sorted(ids(people.find({"age": {"$gt": 0}}))) == [1, 2, 3, 4]
    assert ids(people.find({"age": {"$gt": "a"}})) == [6]


def test_numeric_equality_across_types(db):
    db.c.insert_many(
        [
            {"_id": 1, "v": 1},
            {"_id": 2, "v": 1.0},
            {"_id": 3, "v": Int64(1)},
            {"_id": 4, "v": Decimal128("1.0")},
            {"_id": 5, "v": "1"},
        ]
    )
    assert sorted(ids(db.c.find({"v": 1}))) == [1, 2, 3, 4]


def test_find_projection(people):
    assert people.find_one({"_id": 1}, {"name": 1}) == {"_id": 1, "name": "ann"}
    assert people.find_one({"_id": 1}, {"name": 1, "_id": 0}) == {"name": "ann"}
    assert people.find_one({"_id": 2}, {"tags": 0, "n": 0, "city": 0}) == {
        "_id": 2,
        "name": "bob",
        "age": 25,
    }
    assert people.find_one({"_id": 1}, {"n.x": 1, "_id": 0}) == {"n": {"x": 1}}


def test_find_sort_multi_key(people):
    got = list(people.find({}, {"_id": 1}, sort=[("city", 1), ("_id", -1)]))
    assert [d["_id"] for d in got] == [4, 6, 3, 1, 5, 2]
    got = list(people.find({"age": {"$type": "number"}}, sort=[("age", -1), ("name", 1)]))
    assert ids(got) == [3, 1, 2, 4]


def test_find_skip_limit(people):
    assert ids(people.find({}, sort=[("_id", 1)], skip=2, limit=3)) == [3, 4, 5]
    assert ids(people.find({}, sort=[("_id", 1)], skip=10)) == []
    assert ids(people.find({}, sort=[("_id", 1)], limit=1)) == [1]


def test_find_missing_collection_is_empty(db):
    r = db.command({"find": "nothing_here"})
    assert r["ok"] == 1
    assert r["cursor"] == {"firstBatch": [], "id": 0, "ns": f"{db.name}.nothing_here"}


@pytest.fixture
def thousand(db):
    db.big.insert_many([{"_id": i, "v": i % 7} for i in range(1000)])
    return db


def test_find_default_first_batch_is_101(thousand):
    db = thousand
    r = db.command({"find": "big", "filter": {}, "sort": {"_id": 1}})
    cursor = r["cursor"]
    assert cursor["ns"] == f"{db.name}.big"
    assert len(cursor["firstBatch"]) == 101
    assert cursor["id"] != 0
    assert isinstance(cursor["id"], (int, Int64))
    got = [d["_id"] for d in cursor["firstBatch"]]
    while cursor["id"] != 0:
        r = db.command({"getMore": cursor["id"], "collection": "big"})
        cursor = r["cursor"]
        assert cursor["ns"] == f"{db.name}.big"
        got += [d["_id"] for d in cursor["nextBatch"]]
    assert got == list(range(1000))


def test_get_more_batch_size(thousand):
    db = thousand
    r = db.command({"find": "big", "sort": {"_id": 1}, "batchSize": 300})
    cursor = r["cursor"]
    assert len(cursor["firstBatch"]) == 300
    sizes = []
    while cursor["id"] != 0:
        cursor = db.command({"getMore": cursor["id"], "collection": "big", "batchSize": 300})[
            "cursor"
        ]
        sizes.append(len(cursor["nextBatch"]))
    assert sizes == [300, 300, 100]


def test_batch_size_zero_opens_empty_batch(thousand):
    db = thousand
    cursor = db.command({"find": "big", "batchSize": 0})["cursor"]
    assert cursor["firstBatch"] == []
    assert cursor["id"] != 0
    cursor = db.command({"getMore": cursor["id"], "collection": "big", "batchSize": 5})["cursor"]
    assert len(cursor["nextBatch"]) == 5


def test_limit_across_batches(thousand):
    db = thousand
    cursor = db.command({"find": "big", "sort": {"_id": 1}, "limit": 150})["cursor"]
    assert len(cursor["firstBatch"]) == 101
    cursor = db.command({"getMore": cursor["id"], "collection": "big"})["cursor"]
    assert len(cursor["nextBatch"]) == 49
    assert cursor["id"] == 0


def test_single_batch(thousand):
    db = thousand
    cursor = db.command({"find": "big", "batchSize": 10, "singleBatch": True})["cursor"]
    assert len(cursor["firstBatch"]) == 10
    assert cursor["id"] == 0


def test_pymongo_iterates_all_batches(thousand):
    assert sum(1 for _ in thousand.big.find({}, batch_size=64)) == 1000
    assert len(list(thousand.big.find({"v": 3}))) == len([i for i in range(1000) if i % 7 == 3])


def test_kill_cursors(thousand):
    db = thousand
    cid = db.command({"find": "big", "batchSize": 2})["cursor"]["id"]
    bogus = Int64(123456789)
    r = db.command({"killCursors": "big", "cursors": [Int64(cid), bogus]})
    assert r["ok"] == 1
    assert r["cursorsKilled"] == [cid]
    assert r["cursorsNotFound"] == [bogus]
    assert r["cursorsAlive"] == []
    assert r["cursorsUnknown"] == []
    code, name, _ = command_error(db, {"getMore": Int64(cid), "collection": "big"})
    assert (code, name) == (43, "CursorNotFound")


def test_get_more_unknown_cursor(db):
    code, name, msg = command_error(db, {"getMore": Int64(987654321), "collection": "c"})
    assert (code, name) == (43, "CursorNotFound")
    assert "987654321" in msg


# -- counting and distinct --------------------------------------------------------------
def test_count_command(people):
    db = people.database
    r = db.command({"count": "people"})
    assert r["n"] == 6 and r["ok"] == 1
    assert db.command({"count": "people", "query": {"city": "oslo"}})["n"] == 3
    assert db.command({"count": "people", "query": {"city": "oslo"}, "limit": 2})["n"] == 2
    assert db.command({"count": "people", "skip": 4})["n"] == 2
    assert db.command({"count": "missing_coll"})["n"] == 0


def test_count_documents_and_estimate(people):
    assert people.count_documents({}) == 6
    assert people.count_documents({"age": 25}) == 2
    assert people.count_documents({"age": 25}, skip=1) == 1
    assert people.count_documents({}, limit=4) == 4
    assert people.count_documents({"city": "nowhere"}) == 0
    assert people.estimated_document_count() == 6


def test_distinct(people):
    assert sorted(people.distinct("city")) == ["lima", "oslo", "rome"]
    # Arrays are unwound: distinct returns their elements.
    assert sorted(people.distinct("tags")) == ["a", "b"]
    assert sorted(people.distinct("city", {"age": 25})) == ["lima", "rome"]
    r = people.database.command({"distinct": "people", "key": "n.x"})
    assert sorted(r["values"]) == [1, 2, 3]
    assert r["ok"] == 1


# -- update -------------------------------------------------------------------------------
def test_update_operators(db):
    db.c.insert_many([{"_id": 1, "a": 1, "b": 2}, {"_id": 2, "a": 1}])
    r = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 5}}}]})
    assert (r["ok"], r["n"], r["nModified"]) == (1, 1, 1)
    r = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 5}}}]})
    assert (r["n"], r["nModified"]) == (1, 0)  # matched but unchanged
    db.c.update_one({"_id": 1}, {"$unset": {"b": ""}, "$inc": {"a": 2, "c": 1}})
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "a": 7, "c": 1}


def test_update_replacement_keeps_id(db):
    db.c.insert_one({"_id": 1, "a": 1, "b": 2})
    r = db.c.replace_one({"_id": 1}, {"z": 9})
    assert r.matched_count == 1 and r.modified_count == 1
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "z": 9}


def test_update_multi(db):
    db.c.insert_many([{"_id": i, "g": i % 2} for i in range(10)])
    r = db.command(
        {"update": "c", "updates": [{"q": {"g": 0}, "u": {"$set": {"hit": True}}, "multi": True}]}
    )
    assert (r["n"], r["nModified"]) == (5, 5)
    assert db.c.count_documents({"hit": True}) == 5
    r = db.c.update_one({"g": 1}, {"$set": {"one": True}})
    assert r.modified_count == 1
    assert db.c.count_documents({"one": True}) == 1


def test_upsert_returns_upserted_id(db):
    r = db.command(
        {"update": "c", "updates": [{"q": {"_id": 42}, "u": {"$set": {"x": 1}}, "upsert": True}]}
    )
    assert r["n"] == 1
    assert r["nModified"] == 0
    assert r["upserted"] == [{"index": 0, "_id": 42}]
    assert db.c.find_one({"_id": 42}) == {"_id": 42, "x": 1}
    r = db.command(
        {"update": "c", "updates": [{"q": {"k": "v"}, "u": {"$set": {"x": 2}}, "upsert": True}]}
    )
    oid = r["upserted"][0]["_id"]
    assert isinstance(oid, ObjectId)
    # The equality fields of the query become part of the new document.
    assert db.c.find_one({"_id": oid}) == {"_id": oid, "k": "v", "x": 2}
    res = db.c.update_one({"k": "w"}, {"$inc": {"n": 1}}, upsert=True)
    assert res.upserted_id is not None and res.matched_count == 0


def test_update_second_statement_index_in_upserted(db):
    db.c.insert_one({"_id": 1})
    r = db.command(
        {
            "update": "c",
            "updates": [
                {"q": {"_id": 1}, "u": {"$set": {"a": 1}}},
                {"q": {"_id": 2}, "u": {"$set": {"a": 2}}, "upsert": True},
            ],
        }
    )
    assert r["n"] == 2
    assert r["nModified"] == 1
    assert r["upserted"] == [{"index": 1, "_id": 2}]


# -- delete --------------------------------------------------------------------------------
def test_delete_limit(db):
    db.c.insert_many([{"_id": i, "g": i % 3} for i in range(9)])
    r = db.command({"delete": "c", "deletes": [{"q": {"g": 0}, "limit": 1}]})
    assert (r["ok"], r["n"]) == (1, 1)
    r = db.command({"delete": "c", "deletes": [{"q": {"g": 1}, "limit": 0}]})
    assert r["n"] == 3
    assert db.c.count_documents({}) == 5
    assert db.c.delete_many({}).deleted_count == 5
    assert db.c.delete_one({}).deleted_count == 0


# -- findAndModify --------------------------------------------------------------------------
def test_find_and_modify_reply(db):
    db.c.insert_one({"_id": 1, "n": 0})
    r = db.command({"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"n": 1}}})
    assert r["ok"] == 1
    assert r["value"] == {"_id": 1, "n": 0}
    assert r["lastErrorObject"]["n"] == 1
    assert r["lastErrorObject"]["updatedExisting"] is True
    r = db.command(
        {"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"n": 1}}, "new": True}
    )
    assert r["value"] == {"_id": 1, "n": 2}
    r = db.command({"findAndModify": "c", "query": {"_id": 99}, "update": {"$inc": {"n": 1}}})
    assert r["value"] is None
    assert r["lastErrorObject"] == {"n": 0, "updatedExisting": False}


def test_find_and_modify_upsert_reply(db):
    r = db.command(
        {
            "findAndModify": "c",
            "query": {"_id": 7},
            "update": {"$set": {"a": 1}},
            "upsert": True,
            "new": True,
        }
    )
    assert r["value"] == {"_id": 7, "a": 1}
    leo = r["lastErrorObject"]
    assert leo["n"] == 1
    assert leo["updatedExisting"] is False
    assert leo["upserted"] == 7


def test_find_one_and_update_variants(db):
    db.c.insert_many([{"_id": 1, "v": 10}, {"_id": 2, "v": 20}])
    before = db.c.find_one_and_update({"_id": 1}, {"$inc": {"v": 1}})
    assert before == {"_id": 1, "v": 10}
    after = db.c.find_one_and_update(
        {"_id": 1}, {"$inc": {"v": 1}}, return_document=ReturnDocument.AFTER
    )
    assert after == {"_id": 1, "v": 12}
    # sort picks which document is modified.
    top = db.c.find_one_and_update(
        {}, {"$set": {"top": True}}, sort=[("v", -1)], return_document=ReturnDocument.AFTER
    )
    assert top == {"_id": 2, "v": 20, "top": True}
    up = db.c.find_one_and_update(
        {"_id": 3}, {"$set": {"v": 30}}, upsert=True, return_document=ReturnDocument.AFTER
    )
    assert up == {"_id": 3, "v": 30}
    assert db.c.find_one_and_update({"_id": 4}, {"$set": {"v": 1}}, upsert=True) is None
    projected = db.c.find_one_and_update(
        {"_id": 3}, {"$set": {"w": 1}}, projection={"w": 1, "_id": 0},
        return_document=ReturnDocument.AFTER,
    )
    assert projected == {"w": 1}


def test_find_one_and_replace_and_delete(db):
    db.c.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}])
    assert db.c.find_one_and_replace({"_id": 1}, {"r": True}) == {"_id": 1, "v": 1}
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "r": True}
    r = db.command({"findAndModify": "c", "query": {"_id": 2}, "remove": True})
    assert r["value"] == {"_id": 2, "v": 2}
    assert r["lastErrorObject"] == {"n": 1}
    assert db.c.find_one_and_delete({"_id": 2}) is None
    assert db.c.count_documents({}) == 1


# -- aggregate ------------------------------------------------------------------------------
def test_aggregate_pipeline(db):
    db.sales.insert_many(
        [
            {"_id": 1, "item": "a", "qty": 2, "price": 10},
            {"_id": 2, "item": "b", "qty": 1, "price": 20},
            {"_id": 3, "item": "a", "qty": 5, "price": 10},
            {"_id": 4, "item": "c", "qty": 3, "price": 5},
            {"_id": 5, "item": "b", "qty": 4, "price": 20},
        ]
    )
    got = list(
        db.sales.aggregate(
            [
                {"$match": {"qty": {"$gte": 2}}},
                {"$group": {"_id": "$item", "total": {"$sum": "$qty"}, "n": {"$sum": 1}}},
                {"$sort": {"total": -1}},
            ]
        )
    )
    assert got == [
        {"_id": "a", "total": 7, "n": 2},
        {"_id": "b", "total": 4, "n": 1},
        {"_id": "c", "total": 3, "n": 1},
    ]
    got = list(
        db.sales.aggregate(
            [
                {"$sort": {"_id": 1}},
                {"$skip": 1},
                {"$limit": 2},
                {"$project": {"_id": 0, "item": 1, "value": {"$multiply": ["$qty", "$price"]}}},
            ]
        )
    )
    assert got == [{"item": "b", "value": 20}, {"item": "a", "value": 50}]
    assert list(db.sales.aggregate([{"$match": {"item": "b"}}, {"$count": "howMany"}])) == [
        {"howMany": 2}
    ]


def test_aggregate_reply_shape_and_batches(thousand):
    db = thousand
    r = db.command({"aggregate": "big", "pipeline": [{"$sort": {"_id": 1}}], "cursor": {}})
    assert r["ok"] == 1
    assert r["cursor"]["ns"] == f"{db.name}.big"
    assert len(r["cursor"]["firstBatch"]) == 101
    r = db.command(
        {"aggregate": "big", "pipeline": [{"$match": {"v": 0}}], "cursor": {"batchSize": 0}}
    )
    assert r["cursor"]["firstBatch"] == [] and r["cursor"]["id"] != 0
    cid = r["cursor"]["id"]
    r = db.command({"getMore": cid, "collection": "big"})
    assert len(r["cursor"]["nextBatch"]) == len(range(0, 1000, 7))


def test_aggregate_group_null_id_and_empty_input(db):
    db.c.insert_many([{"x": 1}, {"x": 2}, {"x": 3}])
    assert list(db.c.aggregate([{"$group": {"_id": None, "s": {"$sum": "$x"}}}])) == [
        {"_id": None, "s": 6}
    ]
    assert list(db.empty.aggregate([{"$group": {"_id": None, "s": {"$sum": "$x"}}}])) == []
    assert list(db.empty.aggregate([{"$count": "n"}])) == []


# -- write concern -----------------------------------------------------------------------
def test_write_concern_journaled(db):
    r = db.command(
        {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": 1, "j": True}}
    )
    assert r["ok"] == 1 and r["n"] == 1
    assert "writeConcernError" not in r
    coll = db.get_collection("c", write_concern=WriteConcern(w=1, j=True))
    coll.insert_one({"_id": 2})
    coll.update_one({"_id": 2}, {"$set": {"a": 1}})
    coll.delete_one({"_id": 1})
    assert list(db.c.find()) == [{"_id": 2, "a": 1}]


def test_write_concern_majority_on_standalone(db):
    r = db.command(
        {"insert": "c", "documents": [{"_id": 1}], "writeConcern": {"w": "majority"}}
    )
    assert r["ok"] == 1 and r["n"] == 1


def test_unacknowledged_write(db):
    coll = db.get_collection("c", write_concern=WriteConcern(w=0))
    coll.insert_one({"_id": 1})
    # A later acknowledged command on the same client sees it (same socket order).
    assert db.c.find_one({"_id": 1}) == {"_id": 1}


# -- BSON comparison order ------------------------------------------------------------------
def test_sort_follows_bson_type_order(db):
    when = datetime.datetime(2020, 1, 2, 3, 4, 5)
    values = [
        (1, MinKey()),
        (2, None),
        (4, 1),
        (5, 2.5),
        (6, Int64(3)),
        (7, Decimal128("3.5")),
        (8, "a"),
        (9, "b"),
        (10, {"a": 1}),
        (11, Binary(b"\x01")),
        (12, ObjectId("5f0000000000000000000000")),
        (13, False),
        (14, True),
        (15, when),
        (16, Timestamp(1, 1)),
        (17, Regex("x")),
        (18, MaxKey()),
    ]
    docs = [{"_id": i, "v": v} for i, v in values] + [{"_id": 3}]  # 3: missing sorts as null
    import random

    random.Random(7).shuffle(docs)
    db.c.insert_many(docs)
    asc = [d["_id"] for d in db.c.find({}, {"_id": 1}, sort=[("v", 1), ("_id", 1)])]
    assert asc == list(range(1, 19))
    desc = [d["_id"] for d in db.c.find({}, {"_id": 1}, sort=[("v", -1), ("_id", -1)])]
    assert desc == list(range(18, 0, -1))
