"""Secondary indexes on regular collections: createIndexes, listIndexes, dropIndexes, collMod,
index maintenance by writes, unique/sparse/partial/hidden/hashed/multikey/TTL indexes.

Expected values follow MongoDB 7.0's documented behaviour (index docs, error codes)."""

import time

import pytest
from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import DuplicateKeyError, OperationFailure

from conftest import command_error, run_command


def create(db, coll, *specs):
    return db.command({"createIndexes": coll, "indexes": list(specs)})


def index_specs(coll):
    return {ix["name"]: ix for ix in coll.list_indexes()}


def find_ids(coll, flt, **kw):
    return sorted(d["_id"] for d in coll.find(flt, **kw))


# --- createIndexes / listIndexes -----------------------------------------------------------


def test_create_single_field_index_reply_and_listing(db):
    db.c.insert_many([{"_id": i, "a": i} for i in range(10)])
    reply = create(db, "c", {"key": {"a": 1}, "name": "a_1"})
    assert reply["numIndexesBefore"] == 1
    assert reply["numIndexesAfter"] == 2
    assert reply["createdCollectionAutomatically"] is False
    assert "note" not in reply
    listed = list(db.c.list_indexes())
    assert [dict(ix) for ix in listed] == [
        {"v": 2, "key": {"_id": 1}, "name": "_id_"},
        {"v": 2, "key": {"a": 1}, "name": "a_1"},
    ]


def test_default_names_compound_and_descending(db):
    names = db.c.create_indexes(
        [IndexModel([("a", ASCENDING), ("b", DESCENDING)]), IndexModel([("x.y", 1)])]
    )
    assert names == ["a_1_b_-1", "x.y_1"]
    reply = create(db, "c", {"key": {"h": "hashed"}})
    assert reply["numIndexesAfter"] == 4
    assert index_specs(db.c)["h_hashed"]["key"] == {"h": "hashed"}


def test_options_listed_as_given(db):
    create(
        db,
        "c",
        {"key": {"u": 1}, "name": "u", "unique": True},
        {"key": {"s": 1}, "name": "s", "sparse": True},
        {"key": {"p": 1}, "name": "p", "partialFilterExpression": {"p": {"$gt": 5}}},
        {"key": {"h": 1}, "name": "h", "hidden": True},
        {"key": {"t": 1}, "name": "t", "expireAfterSeconds": 3600},
    )
    specs = index_specs(db.c)
    assert dict(specs["u"]) == {"v": 2, "key": {"u": 1}, "name": "u", "unique": True}
    assert specs["s"]["sparse"] is True
    assert specs["p"]["partialFilterExpression"] == {"p": {"$gt": 5}}
    assert specs["h"]["hidden"] is True
    assert specs["t"]["expireAfterSeconds"] == 3600


def test_created_collection_automatically(db):
    reply = create(db, "newcoll", {"key": {"a": 1}, "name": "a_1"})
    assert reply["createdCollectionAutomatically"] is True
    assert reply["numIndexesBefore"] == 1 and reply["numIndexesAfter"] == 2
    assert "newcoll" in db.list_collection_names()


def test_identical_spec_is_idempotent(db):
    create(db, "c", {"key": {"a": 1}, "name": "a_1"})
    reply = create(db, "c", {"key": {"a": 1}, "name": "a_1"})
    assert reply["note"] == "all indexes already exist"
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] == 2
    reply = create(db, "c", {"key": {"_id": 1}, "name": "_id_"})
    assert reply["note"] == "all indexes already exist"


@pytest.mark.parametrize(
    "second,code",
    [
        ({"key": {"a": 1}, "name": "a_1", "unique": True}, 85),  # same name, other options
        ({"key": {"a": 1}, "name": "other"}, 85),  # same key, other name
        ({"key": {"b": 1}, "name": "a_1"}, 86),  # same name, other key
    ],
    ids=["options", "name", "key"],
)
def test_conflicting_specs(db, second, code):
    create(db, "c", {"key": {"a": 1}, "name": "a_1"})
    got, name, _ = command_error(db, {"createIndexes": "c", "indexes": [second]})
    assert got == code
    assert name == {85: "IndexOptionsConflict", 86: "IndexKeySpecsConflict"}[code]


@pytest.mark.parametrize(
    "spec,code",
    [
        ({"key": {"a": "text"}}, 115),
        ({"key": {"a": 1, "b.$**": 1}}, 115),  # compound wildcard (test_wildcard_indexes.py)
        ({"key": {"a": 1}, "collation": {"locale": "fr", "strength": 9}}, 9),
        ({"key": {"a": 1}, "collation": "fr"}, 14),
        ({"key": {"a": "nope"}}, 67),
        ({"key": {"a": True}}, 67),
        ({"key": {"a": 0}}, 67),
        ({"key": {}}, 67),
        ({"name": "x"}, 9),
        ({"key": {"a": 1}, "bogus": 1}, 197),
        ({"key": {"a": 1}, "sparse": True, "partialFilterExpression": {"a": 1}}, 67),
        ({"key": {"a": "hashed"}, "unique": True}, 67),
        ({"key": {"a": 1}, "expireAfterSeconds": -1}, 72),
        ({"key": {"a": 1}, "partialFilterExpression": 5}, 14),
    ],
)
def test_bad_specs(db, spec, code):
    got, _, _ = command_error(db, {"createIndexes": "c", "indexes": [spec]})
    assert got == code
    # Nothing was created.
    if "c" in db.list_collection_names():
        assert list(index_specs(db.c)) == ["_id_"]


# --- unique --------------------------------------------------------------------------------


def test_unique_index_rejects_duplicates_on_insert_and_update(db):
    db.c.create_index("email", unique=True)
    db.c.insert_one({"_id": 1, "email": "a@x"})
    with pytest.raises(DuplicateKeyError) as ei:
        db.c.insert_one({"_id": 2, "email": "a@x"})
    err = ei.value.details
    assert err["code"] == 11000
    assert err["keyPattern"] == {"email": 1}
    assert err["keyValue"] == {"email": "a@x"}
    assert "index: email_1 dup key" in err["errmsg"]
    db.c.insert_one({"_id": 3, "email": "b@x"})
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"_id": 3}, {"$set": {"email": "a@x"}})
    with pytest.raises(DuplicateKeyError):
        db.c.find_one_and_update({"_id": 3}, {"$set": {"email": "a@x"}})
    # The failed writes changed nothing; freeing the key lets it be reused.
    assert db.c.find_one({"_id": 3})["email"] == "b@x"
    db.c.delete_one({"_id": 1})
    db.c.update_one({"_id": 3}, {"$set": {"email": "a@x"}})
    assert db.c.count_documents({"email": "a@x"}) == 1


def test_unique_treats_missing_as_null(db):
    db.c.create_index("k", unique=True)
    db.c.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 2})


def test_unique_sparse_allows_many_missing(db):
    db.c.create_index("k", unique=True, sparse=True)
    db.c.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3, "k": 1}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 4, "k": 1})


def test_unique_partial_only_constrains_matching_docs(db):
    db.c.create_index("k", unique=True, partialFilterExpression={"active": True})
    db.c.insert_many([{"k": 1, "active": False}, {"k": 1, "active": False}, {"k": 1, "active": True}])
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"k": 1, "active": True})


def test_unique_build_with_duplicates_leaves_no_index(db):
    db.c.insert_many([{"_id": i, "a": i % 500} for i in range(1200)])
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index("a", unique=True)
    assert ei.value.code == 11000
    assert list(index_specs(db.c)) == ["_id_"]
    # Writes go on normally, and a later non-unique build works.
    db.c.insert_one({"_id": 5000, "a": 1})
    db.c.create_index("a")
    assert db.c.count_documents({"a": 1}) == 4


def test_compound_unique(db):
    db.c.create_index([("a", 1), ("b", 1)], unique=True)
    db.c.insert_many([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 1}])
    with pytest.raises(DuplicateKeyError) as ei:
        db.c.insert_one({"a": 1, "b": 2})
    assert ei.value.details["keyValue"] == {"a": 1, "b": 2}
    assert ei.value.details["keyPattern"] == {"a": 1, "b": 1}


def test_unique_numeric_equivalence(db):
    # 1, 1.0 and NumberLong(1) are the same key.
    db.c.create_index("n", unique=True)
    db.c.insert_one({"n": 1})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"n": 1.0})


# --- multikey ------------------------------------------------------------------------------


def test_multikey_queries_find_array_elements(db):
    db.c.create_index("tags")
    db.c.insert_many(
        [
            {"_id": 1, "tags": ["a", "b"]},
            {"_id": 2, "tags": ["b", "c"]},
            {"_id": 3, "tags": "a"},
            {"_id": 4, "tags": []},
            {"_id": 5},
        ]
    )
    assert find_ids(db.c, {"tags": "a"}) == [1, 3]
    assert find_ids(db.c, {"tags": {"$in": ["c", "a"]}}) == [1, 2, 3]
    assert find_ids(db.c, {"tags": {"$gt": "a"}}) == [1, 2]
    db.c.update_one({"_id": 2}, {"$pull": {"tags": "b"}})
    assert find_ids(db.c, {"tags": "b"}) == [1]


def test_multikey_range_on_array_elements_keeps_documents(db):
    # {$gt: 5, $lt: 10} may be satisfied by different elements: bounds must not drop the doc.
    db.c.create_index("v")
    db.c.insert_many([{"_id": 1, "v": [2, 12]}, {"_id": 2, "v": [7]}, {"_id": 3, "v": 20}])
    assert find_ids(db.c, {"v": {"$gt": 5, "$lt": 10}}) == [1, 2]


def test_parallel_arrays_rejected(db):
    db.c.create_index([("a", 1), ("b", 1)])
    db.c.insert_one({"a": [1, 2], "b": 1})
    db.c.insert_one({"a": 1, "b": [1, 2]})
    with pytest.raises(OperationFailure) as ei:
        db.c.insert_one({"_id": "bad", "a": [1, 2], "b": [3, 4]})
    assert ei.value.code == 171
    assert db.c.count_documents({"_id": "bad"}) == 0
    with pytest.raises(OperationFailure) as ei:
        db.c.update_one({"b": [1, 2]}, {"$set": {"a": [5, 6]}})
    assert ei.value.code == 171


def test_parallel_arrays_fail_build(db):
    db.c.insert_one({"a": [1], "b": [2]})
    with pytest.raises(OperationFailure) as ei:
        db.c.create_index([("a", 1), ("b", 1)])
    assert ei.value.code == 171
    assert list(index_specs(db.c)) == ["_id_"]


def test_nested_array_paths(db):
    db.c.create_index("a.b")
    db.c.insert_many(
        [
            {"_id": 1, "a": [{"b": 1}, {"b": 2}]},
            {"_id": 2, "a": {"b": [2, 3]}},
            {"_id": 3, "a": [{"c": 1}]},
        ]
    )
    assert find_ids(db.c, {"a.b": 2}) == [1, 2]
    assert find_ids(db.c, {"a.b": {"$gte": 3}}) == [2]


# --- sparse / partial / hashed -------------------------------------------------------------


def test_sparse_index_queries_stay_correct(db):
    db.c.create_index("s", sparse=True)
    db.c.insert_many([{"_id": 1, "s": 1}, {"_id": 2}, {"_id": 3, "s": None}])
    assert find_ids(db.c, {"s": 1}) == [1]
    assert find_ids(db.c, {"s": None}) == [2, 3]
    assert find_ids(db.c, {"s": {"$gte": 0}}) == [1]


def test_partial_index_queries_stay_correct(db):
    db.c.create_index("p", partialFilterExpression={"p": {"$gt": 5}})
    db.c.insert_many([{"_id": i, "p": i} for i in range(10)])
    assert find_ids(db.c, {"p": {"$gt": 5}}) == [6, 7, 8, 9]
    assert find_ids(db.c, {"p": 2}) == [2]


def test_hashed_index(db):
    db.c.create_index([("h", "hashed")])
    db.c.insert_many([{"_id": i, "h": i % 3} for i in range(9)])
    assert find_ids(db.c, {"h": 1}) == [1, 4, 7]
    assert find_ids(db.c, {"h": 1.0}) == [1, 4, 7]
    with pytest.raises(OperationFailure) as ei:
        db.c.insert_one({"h": [1, 2]})
    assert ei.value.code == 16766


# --- maintenance ---------------------------------------------------------------------------


def test_index_follows_writes(db):
    db.c.create_index("a")
    db.c.insert_many([{"_id": i, "a": i} for i in range(20)])
    db.c.update_many({"a": {"$lt": 5}}, {"$inc": {"a": 100}})
    db.c.delete_many({"a": {"$gte": 15, "$lt": 100}})
    db.c.replace_one({"_id": 10}, {"a": -1})
    db.c.find_one_and_update({"_id": 11}, {"$set": {"a": -2}})
    db.c.find_one_and_delete({"_id": 12})
    assert find_ids(db.c, {"a": {"$gte": 100}}) == [0, 1, 2, 3, 4]
    assert find_ids(db.c, {"a": {"$lt": 0}}) == [10, 11]
    assert find_ids(db.c, {"a": 12}) == []
    assert find_ids(db.c, {"a": {"$gte": 5, "$lt": 15}}) == [5, 6, 7, 8, 9, 13, 14]
    # A full index scan (hint) sees exactly the live documents.
    assert len(list(db.c.find({}, hint="a_1"))) == db.c.count_documents({})


def test_upsert_maintains_index(db):
    db.c.create_index("k", unique=True)
    db.c.update_one({"k": 7}, {"$set": {"v": 1}}, upsert=True)
    assert find_ids(db.c, {"k": 7}) != []
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"k": 7})


# --- dropIndexes ---------------------------------------------------------------------------


def test_drop_by_name_key_list_and_star(db):
    db.c.create_indexes(
        [IndexModel([("a", 1)]), IndexModel([("b", -1)]), IndexModel([("c", 1)]), IndexModel([("d", 1)])]
    )
    reply = db.command({"dropIndexes": "c", "index": "a_1"})
    assert reply["nIndexesWas"] == 5
    db.command({"dropIndexes": "c", "index": {"b": -1}})
    assert list(index_specs(db.c)) == ["_id_", "c_1", "d_1"]
    db.command({"dropIndexes": "c", "index": ["c_1"]})
    reply = db.command({"dropIndexes": "c", "index": "*"})
    assert reply["nIndexesWas"] == 2
    assert list(index_specs(db.c)) == ["_id_"]
    # The data is untouched, and the name can be reused.
    db.c.insert_one({"a": 1})
    db.c.create_index("a")
    assert db.c.count_documents({"a": 1}) == 1


@pytest.mark.parametrize(
    "index,code",
    [("_id_", 72), ({"_id": 1}, 72), ("nope", 27), ({"zz": 1}, 27), (["a_1", "nope"], 27), (["_id_"], 72)],
)
def test_drop_errors(db, index, code):
    db.c.create_index("a")
    got, _, _ = command_error(db, {"dropIndexes": "c", "index": index})
    assert got == code
    assert "a_1" in index_specs(db.c)


# --- collMod -------------------------------------------------------------------------------


def test_collmod_hidden_and_ttl(db):
    db.c.create_index("a", name="a_1")
    db.c.create_index("t", expireAfterSeconds=100)
    reply = db.command({"collMod": "c", "index": {"name": "a_1", "hidden": True}})
    assert reply["hidden_old"] is False and reply["hidden_new"] is True
    assert index_specs(db.c)["a_1"]["hidden"] is True
    reply = db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "hidden": False}})
    assert "hidden" not in index_specs(db.c)["a_1"]
    assert reply["hidden_old"] is True and reply["hidden_new"] is False
    reply = db.command({"collMod": "c", "index": {"keyPattern": {"t": 1}, "expireAfterSeconds": 5}})
    assert reply["expireAfterSeconds_old"] == 100 and reply["expireAfterSeconds_new"] == 5
    assert index_specs(db.c)["t_1"]["expireAfterSeconds"] == 5
    code, _, _ = command_error(db, {"collMod": "c", "index": {"name": "nope", "hidden": True}})
    assert code == 27
    code, _, _ = command_error(db, {"collMod": "c", "index": {"name": "_id_", "hidden": True}})
    assert code == 2
    code, _, _ = command_error(db, {"collMod": "c", "index": {"name": "a_1"}})
    assert code == 72


# --- durability and TTL --------------------------------------------------------------------


def test_indexes_survive_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    try:
        coll = c.dur.c
        coll.create_index("a", unique=True)
        coll.create_index([("m", 1)])
        coll.insert_many([{"_id": i, "a": i, "m": [i, i + 1]} for i in range(50)])
    finally:
        c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    try:
        coll = c.dur.c
        assert list(index_specs(coll)) == ["_id_", "a_1", "m_1"]
        with pytest.raises(DuplicateKeyError):
            coll.insert_one({"a": 3})
        assert find_ids(coll, {"m": 5}) == [4, 5]
        plan = coll.find({"m": 5}).explain()["queryPlanner"]["winningPlan"]
        assert plan["inputStage"]["isMultiKey"] is True
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_ttl_index_expires_documents(fresh_server):
    import datetime

    s = fresh_server.new(extra_args=["--setParameter", "ttlMonitorSleepSecs=1"])
    c = s.client()
    try:
        coll = c.ttl.c
        coll.create_index("at", expireAfterSeconds=1)
        now = datetime.datetime.now(datetime.timezone.utc)
        old = now - datetime.timedelta(hours=1)
        coll.insert_many(
            [
                {"_id": "old", "at": old},
                {"_id": "old_array", "at": [now + datetime.timedelta(days=1), old]},
                {"_id": "future", "at": now + datetime.timedelta(days=1)},
                {"_id": "not_a_date", "at": "yesterday"},
                {"_id": "missing"},
            ]
        )
        deadline = time.time() + 20
        while time.time() < deadline and coll.count_documents({"_id": {"$in": ["old", "old_array"]}}):
            time.sleep(0.3)
        assert sorted(d["_id"] for d in coll.find()) == ["future", "missing", "not_a_date"]
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_build_during_concurrent_writes_misses_nothing(db, client):
    """Writes keep going while an index is built; afterwards the index holds every document."""
    import threading

    db.c.insert_many([{"_id": i, "a": i % 50} for i in range(5000)])
    stop = threading.Event()
    errors = []

    def writer(base):
        coll = client[db.name].c
        i = 0
        try:
            while not stop.is_set():
                coll.insert_many([{"_id": base + i + j, "a": (i + j) % 50} for j in range(20)])
                coll.update_one({"_id": base + i}, {"$set": {"a": 99}})
                i += 20
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(b,)) for b in (1_000_000, 2_000_000)]
    for t in threads:
        t.start()
    try:
        for _ in range(3):
            db.c.create_index("a")
            db.c.drop_index("a_1")
        db.c.create_index("a")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    for v in (0, 7, 49, 99):
        expected = sorted(d["_id"] for d in db.c.find({"a": v}).hint([("$natural", 1)]))
        assert sorted(d["_id"] for d in db.c.find({"a": v}).hint("a_1")) == expected
    assert len(list(db.c.find({}, {"_id": 1}).hint("a_1"))) == db.c.count_documents({})


def test_concurrent_identical_builds_make_one_index(db, client):
    import threading

    db.c.insert_many([{"a": i} for i in range(5000)])
    results, errors = [], []

    def build():
        try:
            results.append(client[db.name].command({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [ix["name"] for ix in db.c.list_indexes()] == ["_id_", "a_1"]
    assert sum(1 for r in results if r["numIndexesAfter"] == 2) == 3


def test_index_entries_survive_kill(fresh_server):
    """Index entries are written in the documents' transactions: after kill -9 and recovery the
    index agrees with the collection."""
    from pymongo import WriteConcern

    s = fresh_server.new()
    c = s.client()
    try:
        coll = c.crash.get_collection("c", write_concern=WriteConcern(j=True))
        coll.create_index("a")
        coll.create_index("u", unique=True)
        coll.insert_many([{"_id": i, "a": [i % 7, 100 + i % 7], "u": i} for i in range(300)])
        coll.delete_many({"_id": {"$lt": 50}})
        coll.update_many({"_id": {"$gte": 250}}, {"$set": {"a": 999}})
    finally:
        c.close()
    s.kill()
    s.start()
    c = s.client()
    try:
        coll = c.crash.c
        assert [ix["name"] for ix in coll.list_indexes()] == ["_id_", "a_1", "u_1"]
        for v in (3, 103, 999):
            expected = sorted(d["_id"] for d in coll.find({"a": v}).hint([("$natural", 1)]))
            assert sorted(d["_id"] for d in coll.find({"a": v}).hint("a_1")) == expected
        assert len(expected) == 50
        with pytest.raises(DuplicateKeyError):
            coll.insert_one({"u": 120})
        coll.insert_one({"u": 10})  # its document was deleted before the kill
        assert coll.find({"a": 3}).explain()["queryPlanner"]["winningPlan"]["inputStage"]["isMultiKey"]
    finally:
        c.close()
    assert s.shutdown_command() == 0


def test_at_most_64_indexes_per_collection(db):
    # MongoDB allows 64 indexes per collection, _id_ included; one more fails with 67.
    db.c.insert_one({"x": 1})
    db.c.create_indexes([IndexModel([("f%d" % i, ASCENDING)]) for i in range(63)])
    assert len(list(db.c.list_indexes())) == 64
    code, name, msg = command_error(
        db, {"createIndexes": "c", "indexes": [{"key": {"g": 1}, "name": "g_1"}]})
    assert (code, name) == (67, "CannotCreateIndex")
    assert "too many indexes" in msg
    assert len(list(db.c.list_indexes())) == 64
