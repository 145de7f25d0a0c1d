"""dbHash: the MD5 of each collection's documents in _id order and of the database, as MongoDB
computes it to compare replica set members. Checked against MD5s computed here from the raw
documents the server returns."""

import datetime
import hashlib

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from conftest import command_error

RAW = CodecOptions(document_class=RawBSONDocument)
EMPTY_MD5 = hashlib.md5(b"").hexdigest()


def md5_of(coll):
    raw = coll.with_options(codec_options=RAW)
    h = hashlib.md5()
    for doc in raw.find().sort("_id", 1):
        h.update(doc.raw)
    return h.hexdigest()


def test_hashes_documents_in_id_order(db):
    db.a.insert_many([{"_id": i, "v": "x" * (i % 7), "n": i * 1.5} for i in range(300, 0, -1)])
    db.b.insert_many([{"_id": f"k{i}", "sub": {"i": i}} for i in range(50)])
    db.create_collection("empty")
    db.command({"create": "v", "viewOn": "a", "pipeline": []})
    reply = db.command("dbHash")
    # No views; their definitions (system.views) are replicated, so hashed.
    assert set(reply["collections"]) == {"a", "b", "empty", "system.views"}
    assert reply["collections"]["system.views"] == md5_of(db["system.views"])
    assert reply["collections"]["a"] == md5_of(db.a)
    assert reply["collections"]["b"] == md5_of(db.b)
    assert reply["collections"]["empty"] == EMPTY_MD5
    # The database's MD5 is over the collections' hex MD5s in name order.
    names = sorted(reply["collections"])
    expected = hashlib.md5("".join(reply["collections"][n] for n in names).encode()).hexdigest()
    assert reply["md5"] == expected
    infos = {c["name"]: c["info"]["uuid"] for c in db.list_collections() if "info" in c
             and "uuid" in c["info"]}
    assert {n: reply["uuids"][n] for n in ("a", "b", "empty")} == {
        n: infos[n] for n in ("a", "b", "empty")}
    assert reply["capped"] == [] and reply["fromCache"] == []
    assert reply["host"].endswith(":" + str(db.client.address[1]))
    assert reply["timeMillis"] >= 0


def test_same_documents_same_hash_whatever_the_insert_order(client, db):
    other = client[db.name + "_2"]
    try:
        docs = [{"_id": i, "v": i * i} for i in range(100)]
        db.c.insert_many(docs)
        other.c.insert_many(list(reversed(docs)))
        h1 = db.command("dbHash")["collections"]["c"]
        assert other.command("dbHash")["collections"]["c"] == h1
        other.c.update_one({"_id": 42}, {"$set": {"v": -1}})
        assert other.command("dbHash")["collections"]["c"] != h1
    finally:
        client.drop_database(other.name)


def test_time_series_buckets_are_hashed(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    t0 = datetime.datetime(2026, 1, 1)
    db.ts.insert_many([{"t": t0 + datetime.timedelta(minutes=i), "m": i % 4, "x": i}
                       for i in range(200)])
    reply = db.command("dbHash")
    assert "ts" not in reply["collections"]  # the view
    assert reply["collections"]["system.buckets.ts"] == md5_of(db["system.buckets.ts"])
    assert reply["collections"]["system.buckets.ts"] != EMPTY_MD5


def test_collections_option(db):
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 2})
    reply = db.command("dbHash", collections=["b", "missing"])
    assert set(reply["collections"]) == {"b"}
    assert reply["md5"] == hashlib.md5(reply["collections"]["b"].encode()).hexdigest()
    code, name, msg = command_error(db, {"dbHash": 1, "collections": ["a", 3]})
    assert (code, name) == (2, "BadValue") and "collections" in msg
    assert command_error(db, {"dbHash": 1, "collections": "a"})[0] == 14
    assert command_error(db, {"dbHash": 1, "bogus": 1})[0] == 40415
