"""Initial sync (issue 19): a member whose data is gone — its dbpath wiped, as MongoDB's manual
has users resync a member — comes back empty while the set's log has moved past what Raft
still keeps; it copies the primary's data, read in one snapshot, while writes go on, then
follows the log, and serves secondary reads with the same dbHash as the others."""

import datetime
import os
import shutil
import threading

from bson import Timestamp
from pymongo.errors import PyMongoError
from pymongo.read_preferences import ReadPreference
from pymongo.write_concern import WriteConcern

from conftest import run_command
from test_replica_set import hello_of, start_set, wait_for
from test_replication_log import set_client, wait_same_hashes

T0 = datetime.datetime(2026, 12, 1)


def test_a_wiped_member_copies_the_data_and_serves_secondary_reads(fresh_server):
    members = start_set(fresh_server)
    wiped = members[2]
    rs = set_client(members, retryWrites=True)
    try:
        db = rs.get_database("sync", write_concern=WriteConcern(w="majority"))
        db.create_collection("weather", timeseries={"timeField": "t", "metaField": "s"})
        db.weather.insert_many([{"t": T0 + datetime.timedelta(minutes=m), "s": s, "v": float(m)}
                                for m in range(200) for s in ("a", "b", "c")])
        db.weather.create_index([("s", 1), ("v", -1)])
        db.docs.create_index("k", unique=True)
        db.command("create", "big", viewOn="docs", pipeline=[{"$match": {"k": {"$gte": 100}}}])
        db.docs.insert_many([{"_id": i, "k": i, "pad": "x" * 50} for i in range(500)])
        db.docs.update_many({"k": {"$lt": 10}}, {"$set": {"changed": True}})
        wait_same_hashes(members, "sync")

        assert wiped.stop() == 0
        shutil.rmtree(wiped.dbpath)
        os.makedirs(wiped.dbpath)
        # More Raft entries than Raft keeps behind its snapshots (every 1,024 entries, 2,048
        # kept): the wiped member cannot be given the log from its start. One writer waiting for
        # each commit, so that no two transactions share an entry.
        for i in range(3600):
            db.docs.insert_one({"_id": 1000 + i, "k": 1000 + i})

        # Writes go on while the member copies and catches up.
        stop = threading.Event()
        written = []

        def writer():
            i = 0
            while not stop.is_set():
                try:
                    db.docs.insert_one({"_id": 10000 + i, "k": 10000 + i})
                    db.weather.insert_one({"t": T0 + datetime.timedelta(hours=10, seconds=i),
                                           "s": "d", "v": 1.0})
                    written.append(i)
                except PyMongoError:
                    pass
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            wiped.start(port=wiped.port)
            wait_for(lambda: hello_of(wiped).get("secondary"), 60,
                     what="the wiped member to become a secondary")
            wait_for(lambda: len(written) > 20, 30, what="writes during the sync")
        finally:
            stop.set()
            t.join()
        log = wiped.log_text()
        assert '"Initial sync done"' in log
        wait_same_hashes(members, "sync", timeout=60)

        c = wiped.client(directConnection=True,
                         read_preference=ReadPreference.SECONDARY)
        try:
            sync = c.sync
            assert sync.docs.count_documents({}) == 500 + 3600 + len(written)
            assert sync.docs.count_documents({"changed": True}) == 10
            assert sync.big.count_documents({}) == 400 + 3600 + len(written)
            assert sync.weather.count_documents({"s": {"$in": ["a", "b", "c"]}}) == 600
            assert sync.weather.count_documents({"s": "d"}) == len(written)
            assert sync.weather.find_one({"s": "b", "v": 150.0})["t"] == \
                T0 + datetime.timedelta(minutes=150)
            names = {i["name"] for i in sync.docs.list_indexes()}
            assert names == {"_id_", "k_1"}
            assert any(i.get("unique") for i in sync.docs.list_indexes() if i["name"] == "k_1")
            assert "s_1_v_-1" in {i["name"] for i in sync.weather.list_indexes()}
            info = {x["name"]: x for x in sync.list_collections()}
            assert info["weather"]["type"] == "timeseries"
            assert info["big"]["type"] == "view"
            # The same uuids as on the primary: the oplog's entries name collections by them.
            p = members[0].client(directConnection=True)
            try:
                theirs = {x["name"]: x["info"].get("uuid") for x in p.sync.list_collections()}
            finally:
                p.close()
            assert {n: x["info"].get("uuid") for n, x in info.items()} == theirs
            # Its oplog starts where the copy stood, not at the set's beginning.
            first = c.local["oplog.rs"].find_one(sort=[("$natural", 1)])
            assert first["op"] != "n" or first["o"].get("msg") != "initiating set"
        finally:
            c.close()
    finally:
        rs.close()


def test_the_copy_command_refuses_what_is_not_its_input(fresh_server, client):
    # On a standalone there is no set to copy for, as with every replica set command.
    reply = run_command(client.admin, {"hgCloneSnapshot": 1, "from": Timestamp(1, 1)})
    assert (reply["ok"], reply["code"], reply["codeName"]) == (0, 76, "NoReplicationEnabled")
    members = start_set(fresh_server, n=1)
    c = members[0].client()
    try:
        reply = run_command(c.admin, {"hgCloneSnapshot": 1, "from": "yesterday"})
        assert (reply["ok"], reply["code"], reply["codeName"]) == (0, 14, "TypeMismatch"), reply
        assert "from" in reply["errmsg"]
        reply = run_command(c.admin, {"hgCloneSnapshot": 1, "from": Timestamp(1, 1), "to": 2})
        assert (reply["ok"], reply["code"]) == (0, 40415), reply
        assert "to" in reply["errmsg"]
        reply = run_command(c.sync, {"hgCloneSnapshot": 1, "from": Timestamp(1, 1)})
        assert (reply["ok"], reply["code"]) == (0, 13), reply  # admin only
        # What it gives: the oplog first, then the catalog, then the documents.
        c.sync.docs.insert_one({"_id": 1})
        first = c.admin.command("hgCloneSnapshot", 1, **{"from": Timestamp(1, 1)})
        assert first["cursor"]["firstBatch"] == []
        more = c.admin.command("getMore", first["cursor"]["id"],
                               collection="$cmd.hgCloneSnapshot")["cursor"]
        kinds = [next(iter(p)) for p in more["nextBatch"]]
        assert kinds[0] == "oplog" and "collection" in kinds and kinds[-1] in ("ns", "txn")
        assert {"ns": "sync.docs", "d": {"_id": 1}} in more["nextBatch"]
        assert more["id"] == 0
    finally:
        c.close()
