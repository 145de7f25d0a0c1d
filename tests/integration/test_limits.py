"""mongod's limits with its numbers and codes: the nesting depth of stored documents (100
levels, Overflow 15), the 16 MB document, and a client that stalls mid-header holding only its own
connection."""

import datetime

import pytest
from pymongo.errors import OperationFailure, WriteError

import wire


def nested(levels, arrays=False):
    """{a: {a: ... {a: 1}}} with `levels` levels of fields ({a: 1} is one)."""
    value = 1
    for _ in range(levels - 1):
        value = [value] if arrays else {"a": value}
    return {"a": value}


@pytest.mark.parametrize("arrays", [False, True])
def test_documents_nest_at_most_100_levels(db, arrays):
    db.deep.insert_one({"_id": 1, **nested(99, arrays)})  # with _id: still 99 + 0 levels
    db.deep.insert_one({"_id": 2, "x": nested(99, arrays)})  # x at 1: 100 levels
    with pytest.raises(WriteError) as e:
        db.deep.insert_one({"_id": 3, "x": nested(100, arrays)})
    assert e.value.code == 15
    assert e.value.details["errmsg"] == \
        "cannot insert document because it exceeds 100 levels of nesting"
    # Empty documents and arrays add no level.
    db.deep.insert_one({"_id": 4, "x": nested(99, arrays), "y": {"e": {}}, "z": [[]]})
    assert sorted(d["_id"] for d in db.deep.find({}, {"_id": 1})) == [1, 2, 4]
    # An update may not make a document deeper than that either, and leaves it as it was.
    with pytest.raises(WriteError) as e:
        db.deep.update_one({"_id": 1}, {"$set": {"y": nested(100, arrays)}})
    assert e.value.code == 15
    assert e.value.details["errmsg"] == "Document exceeds maximum nesting depth of 100"
    assert "y" not in db.deep.find_one({"_id": 1})
    db.deep.update_one({"_id": 1}, {"$set": {"y": nested(99, arrays)}})
    assert db.deep.find_one({"_id": 1})["y"] == nested(99, arrays)


def test_time_series_measurements_nest_at_most_100_levels(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    now = datetime.datetime(2026, 1, 1)
    db.ts.insert_one({"t": now, "v": nested(99)})
    with pytest.raises(OperationFailure) as e:
        db.ts.insert_one({"t": now, "v": nested(100)})
    assert e.value.code == 15
    assert db.ts.count_documents({}) == 1


def test_sixteen_megabytes_is_the_largest_document(db):
    big = "x" * (16 * 1024 * 1024 - 100)
    db.big.insert_one({"_id": 1, "s": big})
    with pytest.raises(WriteError) as e:
        db.big.update_one({"_id": 1}, {"$set": {"t": "y" * 200}})
    assert e.value.code == 10334
    assert db.big.find_one({"_id": 1}, {"t": 1}) == {"_id": 1}


def test_a_stalled_header_holds_only_its_own_connection(server):
    stalled = [wire.connect(server.port) for _ in range(3)]
    msg, _ = wire.op_msg({"ping": 1, "$db": "admin"})
    for i, s in enumerate(stalled):
        s.sendall(msg[: 1 + i * 5])  # 1, 6 and 11 bytes of the 16-byte header
    fresh = wire.connect(server.port, timeout=10)
    try:
        assert wire.command(fresh, {"ping": 1, "$db": "admin"})["ok"] == 1
        # The stalled ones finish their message and are answered.
        for i, s in enumerate(stalled):
            s.sendall(msg[1 + i * 5:])
            s.settimeout(10)
            assert wire.read_message(s).doc["ok"] == 1
    finally:
        fresh.close()
        for s in stalled:
            s.close()
