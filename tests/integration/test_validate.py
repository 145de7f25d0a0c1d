"""The validate command (MongoDB 7.0's): the reply's shape and counts on healthy collections and
time-series collections (validated through their bucket collection), buckets written directly
into system.buckets.X that break the time-series rules (counted as non-compliant, with MongoDB's
warning, the collection still valid), and the errors of missing collections, views and options.
Missing and extra index entries cannot be made through commands: src/commands/ddl_validate_test.cc
makes them in the index tables and checks those reports."""
import copy
import datetime
import random

import pytest
from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId
from pymongo.errors import OperationFailure

from tsbuckets import compress, decompress

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 5, 1, tzinfo=UTC)

TS_WARNING = ("Detected one or more documents in this collection incompatible with time-series "
              "specifications. For more info, see logs with log id 6698300.")

REPLY_FIELDS = ["ns", "uuid", "nInvalidDocuments", "nNonCompliantDocuments", "nrecords",
                "nIndexes", "keysPerIndex", "indexDetails", "valid", "repaired", "warnings",
                "errors", "extraIndexEntries", "missingIndexEntries", "corruptRecords", "ok"]


def validate(db, name, **options):
    return db.command({"validate": name, **options})


def assert_clean(reply):
    assert reply["valid"] is True, reply
    assert reply["repaired"] is False
    assert reply["nInvalidDocuments"] == 0
    assert reply["nNonCompliantDocuments"] == 0
    assert reply["warnings"] == [] and reply["errors"] == [], reply
    assert reply["extraIndexEntries"] == [] and reply["missingIndexEntries"] == []
    assert reply["corruptRecords"] == []
    assert all(d == {"valid": True} for d in reply["indexDetails"].values()), reply
    assert "advice" not in reply


# --- regular collections ----------------------------------------------------------------------

def test_healthy_collection_with_several_indexes(db):
    rng = random.Random(3)
    docs = []
    for i in range(200):
        d = {"_id": i, "a": rng.randrange(50), "g": {"type": "Point",
                                                    "coordinates": [i % 90, i % 45]}}
        if i % 3 == 0:
            d["tags"] = ["x%d" % rng.randrange(5) for _ in range(i % 4)]  # arrays, some empty
        if i % 2 == 0:
            d["s"] = "v%d" % i
        docs.append(d)
    db.c.insert_many(docs)
    db.c.create_index("a")
    db.c.create_index("tags")
    db.c.create_index("s", sparse=True, unique=True)
    db.c.create_index([("a", 1), ("s", -1)], partialFilterExpression={"a": {"$gt": 25}},
                      name="partial")
    db.c.create_index([("g", "2dsphere")])
    db.c.create_index([("s", "hashed")])
    db.c.create_index([("$**", 1)], name="wild", wildcardProjection={"tags": 1})

    for options in ({}, {"full": True}, {"checkBSONConformance": True}, {"background": True}):
        reply = validate(db, "c", **options)
        assert list(reply) == REPLY_FIELDS, list(reply)
        assert_clean(reply)
        assert reply["ns"] == db.name + ".c"
        assert reply["nrecords"] == 200
        assert reply["nIndexes"] == 8
        keys = reply["keysPerIndex"]
        assert list(keys) == ["_id_", "a_1", "tags_1", "s_1", "partial", "g_2dsphere",
                              "s_hashed", "wild"]
        assert keys["_id_"] == 200 and keys["a_1"] == 200
        # An empty array keys as undefined, a missing field as null: one key each.
        assert keys["tags_1"] == sum(len(set(d["tags"])) or 1 if "tags" in d else 1 for d in docs)
        assert keys["s_1"] == 100  # sparse
        assert keys["partial"] == sum(1 for d in docs if d["a"] > 25)
        assert keys["s_hashed"] == 200
        assert keys["wild"] > 0
        assert keys["g_2dsphere"] >= 200

    # The shell helpers' route: pymongo's validate_collection.
    assert db.validate_collection("c", full=True)["valid"] is True
    uuid = next(db.list_collections(filter={"name": "c"}))["info"]["uuid"]
    assert validate(db, "c")["uuid"] == uuid


def test_empty_and_clustered_collections(db):
    db.create_collection("empty")
    reply = validate(db, "empty")
    assert_clean(reply)
    assert reply["nrecords"] == 0 and reply["keysPerIndex"] == {"_id_": 0}
    db.create_collection("cl", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.cl.insert_many([{"_id": "k%d" % i, "v": i} for i in range(30)])
    db.cl.create_index("v")
    reply = validate(db, "cl", full=True)
    assert_clean(reply)
    assert reply["nrecords"] == 30 and reply["keysPerIndex"]["v_1"] == 30


# --- time-series collections ------------------------------------------------------------------

def measurements(n=900, seed=7):
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        sensor = i % 4
        j = (i // 8) * 8 + (7 - i % 8)  # out of order within blocks
        d = {"t": T0 + datetime.timedelta(seconds=13 * j, milliseconds=sensor),
             "meta": {"sensor": sensor}, "w": rng.randrange(10000) / 8}
        kind = rng.randrange(5)
        if kind == 0:
            d["v"] = Int64(rng.randrange(100))
        elif kind == 1:
            d["v"] = rng.randrange(100)
        elif kind == 2:
            d["v"] = None
        if i % 3 == 0:
            d["o"] = {"x": rng.randrange(5), "y": "z" * rng.randrange(6)}
        if i % 5 == 0:
            d["a"] = [rng.randrange(9) for _ in range(rng.randrange(3))]
        docs.append(d)
    return docs


def create_ts(db, name):
    db.create_collection(name, timeseries={"timeField": "t", "metaField": "meta",
                                           "granularity": "minutes"})


def test_timeseries_collection_is_validated_through_its_buckets(db):
    create_ts(db, "ts")
    db.ts.insert_many(measurements())
    db.ts.create_index([("meta.sensor", 1), ("t", -1)])
    db.ts.create_index("w")
    buckets = list(db["system.buckets.ts"].find())
    assert len(buckets) > 4
    assert {b["control"]["version"] for b in buckets} <= {2, 3}
    # A mixed collection: the same buckets, every other one in the uncompressed layout.
    create_ts(db, "mixed")
    made = [decompress(copy.deepcopy(b), "t") if i % 2 else b for i, b in enumerate(buckets)]
    db["system.buckets.mixed"].insert_many(made)
    assert {b["control"]["version"] for b in db["system.buckets.mixed"].find()} >= {1, 2}

    for name, count in (("ts", len(buckets)), ("mixed", len(buckets))):
        for options in ({}, {"full": True}):
            reply = validate(db, name, **options)
            assert list(reply) == REPLY_FIELDS, list(reply)
            assert_clean(reply)
            assert reply["ns"] == db.name + ".system.buckets." + name
            assert reply["nrecords"] == count
            indexes = [i["name"] for i in db["system.buckets." + name].list_indexes()]
            assert list(reply["keysPerIndex"]) == indexes
            assert all(k == count for k in reply["keysPerIndex"].values()), reply
        # The bucket collection by its own name gives the same answer.
        direct = validate(db, "system.buckets." + name)
        assert direct["ns"] == reply["ns"] and direct["keysPerIndex"] == reply["keysPerIndex"]


def test_uncompressed_buckets_server(db_v1):
    """A server that writes version-1 buckets (open ones, and closed ones left as they are)."""
    create_ts(db_v1, "ts")
    db_v1.ts.insert_many(measurements(400))
    assert {b["control"]["version"] for b in db_v1["system.buckets.ts"].find()} == {1}
    reply = validate(db_v1, "ts", full=True)
    assert_clean(reply)
    assert reply["nrecords"] == db_v1["system.buckets.ts"].count_documents({})


def test_corrupt_buckets_are_non_compliant(db):
    create_ts(db, "src")
    db.src.insert_many(measurements(300))
    good = list(db["system.buckets.src"].find())
    assert len(good) >= 4

    def bound_changed(b):
        b = decompress(copy.deepcopy(b), "t")
        b["control"]["min"]["w"] = -1000.0  # below every value of w
        return b

    def max_time_changed(b):
        b = copy.deepcopy(b)
        b["control"]["max"]["t"] += datetime.timedelta(hours=1)
        return b

    def unsorted_v2(b):
        # Rows in reverse time order, labelled as the sorted layout.
        rows = decompress(copy.deepcopy(b), "t")
        n = len(rows["data"]["t"])
        order = sorted(range(n), key=lambda r: rows["data"]["t"][str(r)], reverse=True)
        rows["data"] = {f: {str(k): col[str(r)] for k, r in enumerate(order) if str(r) in col}
                        for f, col in rows["data"].items()}
        out = compress(rows, "t", 3)
        out["control"]["version"] = 2
        return out

    def unknown_version(b):
        b = decompress(copy.deepcopy(b), "t")
        b["control"]["version"] = 4
        return b

    def id_elsewhere(b):
        b = copy.deepcopy(b)
        raw = bytearray(b["_id"].binary)
        raw[3] ^= 1  # one second off the bucket's start
        b["_id"] = ObjectId(bytes(raw))
        return b

    def extra_bound(b):
        b = decompress(copy.deepcopy(b), "t")
        b["control"]["min"]["nothing"] = 1
        b["control"]["max"]["nothing"] = 1
        return b

    corruptions = [bound_changed, max_time_changed, unsorted_v2, unknown_version, id_elsewhere,
                   extra_bound]
    for k, corrupt in enumerate(corruptions):
        name = "bad%d" % k
        create_ts(db, name)
        bad = corrupt(good[0])
        # The server takes them: they pass the bucket collection's validator.
        db["system.buckets." + name].insert_many([bad] + good[1:])
        reply = validate(db, name, full=True)
        assert list(reply) == REPLY_FIELDS
        # As mongod 7.0: a warning and a count, the collection still valid.
        assert reply["valid"] is True, (corrupt.__name__, reply)
        assert reply["nNonCompliantDocuments"] == 1, (corrupt.__name__, reply)
        assert reply["warnings"] == [TS_WARNING], reply
        assert reply["errors"] == [] and reply["corruptRecords"] == []
        assert reply["nrecords"] == len(good)
        assert reply["missingIndexEntries"] == [] and reply["extraIndexEntries"] == []

    # Several bad buckets: one warning, each counted.
    create_ts(db, "many")
    db["system.buckets.many"].insert_many(
        [c(b) for c, b in zip(corruptions, good)] + good[len(corruptions):])
    reply = validate(db, "many")
    assert reply["nNonCompliantDocuments"] == min(len(corruptions), len(good))
    assert reply["warnings"] == [TS_WARNING] and reply["valid"] is True


def test_a_corrupt_column_is_refused_before_validate_sees_it(db):
    """Truncated BSONColumns and a control.count that disagrees with the columns never reach
    storage (the bucket collection's validator, 121), so validate cannot meet them through a
    command; its unit test (bucket_validation_test.cc) feeds them to the checks directly."""
    create_ts(db, "src")
    db.src.insert_many(measurements(100))
    b = next(db["system.buckets.src"].find({"control.version": {"$in": [2, 3]}}))
    create_ts(db, "t1")
    truncated = copy.deepcopy(b)
    truncated["data"]["w"] = Binary(bytes(truncated["data"]["w"])[:-3], 7)
    with pytest.raises(OperationFailure) as e:
        db["system.buckets.t1"].insert_one(truncated)
    assert e.value.code == 121
    miscounted = copy.deepcopy(b)
    miscounted["control"]["count"] += 1
    with pytest.raises(OperationFailure) as e:
        db["system.buckets.t1"].insert_one(miscounted)
    assert e.value.code == 121
    assert_clean(validate(db, "t1"))


# --- errors -----------------------------------------------------------------------------------

def test_missing_collection_and_views(db):
    with pytest.raises(OperationFailure) as e:
        validate(db, "nothing")
    assert e.value.code == 26
    assert e.value.details["errmsg"] == \
        "Collection '%s.nothing' does not exist to validate." % db.name
    db.base.insert_one({"_id": 1})
    db.create_collection("v", viewOn="base", pipeline=[])
    with pytest.raises(OperationFailure) as e:
        validate(db, "v")
    assert e.value.code == 166
    assert e.value.details["errmsg"] == "Cannot validate a view"
    with pytest.raises(OperationFailure) as e:
        db.command({"validate": 1})
    assert e.value.code == 73


@pytest.mark.parametrize("field,value", [("full", "yes"), ("background", "x"),
                                         ("checkBSONConformance", {}), ("repair", []),
                                         ("metadata", "true")])
def test_option_types(db, field, value):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as e:
        validate(db, "c", **{field: value})
    assert e.value.code == 14
    assert "validate." + field in e.value.details["errmsg"]


def test_unknown_and_unsupported_options(db):
    db.c.insert_one({})
    with pytest.raises(OperationFailure) as e:
        validate(db, "c", fix=True)
    assert e.value.code == 40415
    assert "validate.fix" in e.value.details["errmsg"]
    for options, code in (({"full": True, "background": True}, 72),
                          ({"full": True, "checkBSONConformance": False}, 72),
                          ({"repair": True, "background": True}, 72),
                          ({"repair": True, "checkBSONConformance": True}, 72),
                          ({"metadata": True, "full": True}, 72),
                          ({"repair": True}, 115),
                          ({"metadata": True}, 115)):
        with pytest.raises(OperationFailure) as e:
            validate(db, "c", **options)
        assert e.value.code == code, options
    # Off is off: these run.
    assert validate(db, "c", repair=False, metadata=False, background=False)["valid"] is True
