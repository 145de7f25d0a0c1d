"""fsync and fsyncUnlock (MongoDB 7.0 Database Commands → Administration): fsync writes every
committed write, measurements the bucket catalog holds in its journal included, to the data
files; the write lock (lock: true) is refused loudly, and there is never one to unlock."""

import datetime
import os

from conftest import command_error


def storage_size(db, coll):
    return db.command({"collStats": coll})["storageSize"]


def test_fsync_writes_the_data_files(client, db):
    # Random bytes, which block compression cannot shrink below half as hex.
    db.plain.insert_many([{"_id": i, "pad": os.urandom(100).hex()} for i in range(20000)])
    before = storage_size(db, "plain")
    r = client.admin.command({"fsync": 1})
    assert r["ok"] == 1 and r["numFiles"] == 1
    # The checkpoint put the documents in the table's file.
    assert storage_size(db, "plain") > before + 20000 * 100 // 2


def test_fsync_writes_journaled_measurements_to_their_buckets(client, db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    # Many series, one row each per request: the bucket catalog journals them.
    for step in range(3):
        db.ts.insert_many([{"t": base + datetime.timedelta(minutes=step), "m": s, "v": step}
                           for s in range(2000)])
    client.admin.command({"fsync": 1})
    # Nothing read the buckets before fsync, so only its flush can have put the 2,000 buckets
    # in the file its checkpoint wrote (an empty table's file is 4 KB).
    assert storage_size(db, "system.buckets.ts") > 2000 * 20
    assert db["system.buckets.ts"].estimated_document_count() == 2000
    assert db.ts.count_documents({}) == 6000


def test_fsync_refusals(client, db):
    code, name, _ = command_error(db, {"fsync": 1})
    assert (code, name) == (13, "Unauthorized")
    code, name, msg = command_error(client.admin, {"fsync": 1, "lock": True})
    assert (code, name) == (115, "CommandNotSupported"), msg
    code, name, msg = command_error(client.admin, {"fsyncUnlock": 1})
    assert (code, name) == (20, "IllegalOperation")
    assert msg == "fsyncUnlock called when not locked"
    code, _, _ = command_error(client.admin, {"fsync": 1, "bogus": 1})
    assert code == 40415
    code, _, _ = command_error(client.admin, {"fsyncUnlock": 1, "bogus": 1})
    assert code == 40415
    code, _, _ = command_error(client.admin, {"fsync": 1, "lock": "yes"})
    assert code == 14
    code, _, _ = command_error(db, {"fsyncUnlock": 1})
    assert code == 13
