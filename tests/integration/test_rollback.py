"""Rollback (issue 19): a primary that acknowledged writes with w: 1 and lost its role before they
replicated undoes them when it rejoins its set, as MongoDB's members do — every document those
writes touched goes back to what the set holds, and what the rollback removed or overwrote is
kept in <dbpath>/rollback/<collection uuid>/removed.<time>.bson. Compared with what MongoDB
documents in "Rollbacks During Replica Set Failover". The deposed primary is made by cutting it
off from the other members (the test-only fail point hgPartitionMember cuts its Raft
connections; its clients still reach it) while it takes w: 1 writes and the others elect
another; stopping processes would not do, for what a primary sent waits in a stopped member's
socket and replicates when it resumes."""

import datetime
import glob
import os

import bson
from pymongo.write_concern import WriteConcern

from conftest import run_command

from test_partitions import primary_among
from test_replica_set import hello_of, host_of, start_set, wait_for
from test_replication_log import set_client, wait_same_hashes

T0 = datetime.datetime(2026, 12, 1, 0, 0, 0)


def minutes(n):
    return T0 + datetime.timedelta(minutes=n)


def rollback_files(server, uuid):
    return sorted(glob.glob(os.path.join(server.dbpath, "rollback", str(uuid), "removed.*.bson")))


def decoded(paths):
    docs = []
    for p in paths:
        with open(p, "rb") as f:
            docs.extend(bson.decode_all(f.read()))
    return docs


def partition(client, on):
    """Cuts (or restores) the member's links to the rest of its set; returns once cut."""
    before = client.admin.command("configureFailPoint", "hgPartitionMember",
                                  mode="alwaysOn" if on else "off")["count"]
    if on:  # its loop has seen it twice: every connection made before is shut
        client.admin.command("waitForFailPoint", "hgPartitionMember", timesEntered=before + 2,
                             maxTimeMS=10000)


def follows(old, new, members, db):
    """Waits until the old primary follows the new one and every member holds the same `db`."""
    wait_for(lambda: hello_of(old).get("primary") == host_of(new) and
             hello_of(old).get("secondary"), 30, what="the old primary to follow")
    wait_same_hashes([new] + [m for m in members if m is not new], db)


def set_and_primary(fresh_server):
    """A set of three: its members, its primary, the two others, a direct client of the primary."""
    members = start_set(fresh_server)
    old = primary_among(members)
    return members, old, [m for m in members if m is not old], old.client(directConnection=True)


def collection_uuid(client, db, name):
    info = client[db].command("listCollections", filter={"name": name})["cursor"]["firstBatch"]
    return info[0]["info"]["uuid"]


def test_a_deposed_primary_rolls_back_what_never_replicated(fresh_server):
    members, old, others, direct = set_and_primary(fresh_server)
    rs = set_client(members)
    try:
        majority = rs.get_database("rb", write_concern=WriteConcern(w="majority"))
        majority.create_collection("weather", timeseries={"timeField": "t", "metaField": "s"})
        majority.docs.insert_many([{"_id": i, "v": 0, "pad": "x" * 20} for i in range(10)])
        majority.weather.insert_many(
            [{"t": minutes(m), "s": s, "temp": float(m)} for m in range(30) for s in ("a", "b")])
        wait_same_hashes([old] + others, "rb")
        docs_uuid = collection_uuid(direct, "rb", "docs")
        held = {d["_id"]: d for d in direct.rb.docs.find()}

        # Cut off, the primary still takes w: 1 writes for an election timeout.
        partition(direct, True)
        try:
            w1 = direct.get_database("rb", write_concern=WriteConcern(w=1))
            w1.docs.insert_many([{"_id": 100 + i} for i in range(5)])
            w1.docs.update_one({"_id": 1}, {"$set": {"v": 1}})  # logged as a $v: 2 diff
            w1.docs.replace_one({"_id": 2}, {"other": True})
            w1.docs.delete_one({"_id": 3})
            w1.weather.insert_many(  # appends to the two buckets, and a new series' bucket
                [{"t": minutes(30 + m), "s": s, "temp": -1.0}
                 for m in range(5) for s in ("a", "b", "c")])
            wait_for(lambda: not hello_of(old).get("isWritablePrimary"), 15,
                     what="the cut-off primary to step down")
            # The others elect one of them, which takes majority writes.
            new = wait_for(lambda: primary_among(others), 30, what="a new primary")
            fresh = new.client(directConnection=True)
            maj = fresh.get_database("rb", write_concern=WriteConcern(w="majority"))
            maj.docs.insert_one({"_id": 200})
            maj.docs.update_one({"_id": 4}, {"$set": {"v": 4}})
            maj.weather.insert_many(
                [{"t": minutes(40 + m), "s": s, "temp": 99.0} for m in range(3) for s in ("a", "b")])
            fresh.close()
        finally:
            partition(direct, False)

        # The old primary follows the new one, rolls back, and holds what the set holds.
        follows(old, new, members, "rb")
        mine = {d["_id"]: d for d in direct.rb.docs.find()}
        assert set(mine) == set(held) | {200}
        assert mine[1] == held[1] and mine[2] == held[2] and mine[3] == held[3]
        assert mine[4]["v"] == 4
        temps = sorted(d["temp"] for d in direct.rb.weather.find({}, {"temp": 1}))
        assert -1.0 not in temps and temps.count(99.0) == 6 and len(temps) == 66
        assert direct.rb.weather.count_documents({"s": "c"}) == 0

        # What the rollback removed or overwrote, as the old primary held it, is in its files.
        kept = decoded(rollback_files(old, docs_uuid))
        assert sorted(d["_id"] for d in kept) == [1, 2, 100, 101, 102, 103, 104]
        by_id = {d["_id"]: d for d in kept}
        assert by_id[1]["v"] == 1 and by_id[2] == {"_id": 2, "other": True}
        buckets = [d for d in decoded(glob.glob(os.path.join(old.dbpath, "rollback", "*",
                                                            "removed.*.bson")))
                   if "control" in d]
        assert {b["meta"] for b in buckets} == {"a", "b", "c"}
        assert '"Rollback summary"' in old.log_text()
        # No write the set acknowledged with w: "majority" is lost anywhere.
        for m in members:
            c = m.client(directConnection=True)
            try:
                assert c.rb.docs.count_documents({}) == 11
            finally:
                c.close()
    finally:
        rs.close()
        direct.close()


def test_collections_a_deposed_primary_created_are_dropped_by_its_rollback(fresh_server):
    # A first insert creates its collection: a primary cut off just then holds a creation the
    # set never saw. As mongod, the rollback drops the collection, its documents kept in a file.
    members, old, others, direct = set_and_primary(fresh_server)
    try:
        direct.get_database("cr", write_concern=WriteConcern(w="majority")).kept.insert_one(
            {"_id": 0})
        partition(direct, True)
        try:
            w1 = direct.get_database("cr", write_concern=WriteConcern(w=1))
            w1.fresh.insert_many([{"_id": i, "mine": True} for i in range(3)])  # implicit
            w1.create_collection("made")
            w1.kept.insert_one({"_id": 1})
            fresh_uuid = collection_uuid(direct, "cr", "fresh")
            new = wait_for(lambda: primary_among(others), 30, what="a new primary")
            c = new.client(directConnection=True)
            try:
                # The set creates a collection of the same name, its own.
                c.get_database("cr", write_concern=WriteConcern(w="majority")).fresh.insert_one(
                    {"_id": "set"})
                set_uuid = collection_uuid(c, "cr", "fresh")
            finally:
                c.close()
        finally:
            partition(direct, False)
        follows(old, new, members, "cr")
        names = set(direct.cr.list_collection_names())
        assert names == {"kept", "fresh"}, names
        assert collection_uuid(direct, "cr", "fresh") == set_uuid != fresh_uuid
        assert list(direct.cr.fresh.find()) == [{"_id": "set"}]
        assert [d["_id"] for d in direct.cr.kept.find()] == [0]
        kept = decoded(rollback_files(old, fresh_uuid))
        assert sorted(d["_id"] for d in kept) == [0, 1, 2] and all(d["mine"] for d in kept)
        assert '"Rollback summary"' in old.log_text()
        assert hello_of(old).get("secondary") is True
    finally:
        direct.close()


def test_rollback_data_files_can_be_turned_off(fresh_server):
    members, old, others, direct = set_and_primary(fresh_server)
    try:
        direct.admin.command("setParameter", 1, createRollbackDataFiles=False)
        direct.get_database("off", write_concern=WriteConcern(w="majority")).docs.insert_one(
            {"_id": 0})
        partition(direct, True)
        try:
            direct.get_database("off", write_concern=WriteConcern(w=1)).docs.insert_one(
                {"_id": 1})
            new = wait_for(lambda: primary_among(others), 30, what="a new primary")
            c = new.client(directConnection=True)
            c.get_database("off", write_concern=WriteConcern(w="majority")).docs.insert_one(
                {"_id": 2})
            c.close()
        finally:
            partition(direct, False)
        wait_same_hashes([new] + [m for m in members if m is not new], "off")
        assert sorted(d["_id"] for d in direct.off.docs.find()) == [0, 2]
        assert not os.path.exists(os.path.join(old.dbpath, "rollback"))
        assert '"Rollback summary"' in old.log_text()
    finally:
        direct.close()


def test_a_primary_killed_with_unreplicated_writes_rolls_them_back_when_it_returns(fresh_server):
    members, old, others, direct = set_and_primary(fresh_server)
    direct.get_database("k", write_concern=WriteConcern(w="majority")).docs.insert_many(
        [{"_id": i, "v": 0} for i in range(10)])
    partition(direct, True)
    # Journaled here (j: true), never replicated: after the kill they are on its disk only.
    w1 = direct.get_database("k", write_concern=WriteConcern(w=1, j=True))
    w1.docs.insert_many([{"_id": 100 + i} for i in range(5)])
    w1.docs.update_one({"_id": 0}, {"$set": {"v": 1}})
    direct.close()
    old.kill()
    new = wait_for(lambda: primary_among(others), 30, what="a new primary")
    c = new.client(directConnection=True)
    try:
        c.get_database("k", write_concern=WriteConcern(w="majority")).docs.insert_one({"_id": 200})
    finally:
        c.close()
    # Restarted, it learns the set's log from the new primary and undoes its own tail.
    old.start(port=old.port)
    follows(old, new, members, "k")
    direct = old.client(directConnection=True)
    try:
        assert sorted(d["_id"] for d in direct.k.docs.find()) == list(range(10)) + [200]
        assert direct.k.docs.find_one({"_id": 0})["v"] == 0
        uuid = collection_uuid(direct, "k", "docs")
        kept = decoded(rollback_files(old, uuid))
        assert sorted(d["_id"] for d in kept) == [0, 100, 101, 102, 103, 104]
    finally:
        direct.close()


def test_create_rollback_data_files_takes_only_a_boolean(client):
    # mongod's parameter: on by default, settable at runtime; a string is refused by name.
    assert client.admin.command("getParameter", 1, createRollbackDataFiles=1)[
        "createRollbackDataFiles"] is True
    reply = run_command(client.admin, {"setParameter": 1, "createRollbackDataFiles": "no"})
    assert (reply["ok"], reply["code"], reply["codeName"]) == (0, 2, "BadValue"), reply
    assert "createRollbackDataFiles" in reply["errmsg"]
    assert client.admin.command("getParameter", 1, createRollbackDataFiles=1)[
        "createRollbackDataFiles"] is True
