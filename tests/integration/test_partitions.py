"""Partitions (issue 19): a primary cut off from the majority of its set steps down and refuses
writes; the majority elects another and goes on; when the cut-off member returns it follows the
new primary, catches up, and holds the same data — every write acknowledged with w: "majority"
is there. A partition is simulated by stopping processes (SIGSTOP/SIGCONT): a stopped member
neither sends nor answers, as a member behind a broken network. Compared with what MongoDB
documents for replica set elections and failover."""

import signal

from pymongo.errors import PyMongoError
from pymongo.write_concern import WriteConcern

from conftest import run_command
from test_replica_set import hello_of, start_set, wait_for
from test_replication_log import set_client, wait_same_hashes


def pause(members):
    for m in members:
        m.proc.send_signal(signal.SIGSTOP)


def resume(members):
    for m in members:
        m.proc.send_signal(signal.SIGCONT)


def primary_among(members):
    return next((m for m in members if hello_of(m).get("isWritablePrimary")), None)


def test_a_primary_cut_off_from_the_majority_steps_down(fresh_server):
    members = start_set(fresh_server)
    primary = primary_among(members)
    others = [m for m in members if m is not primary]
    direct = primary.client(directConnection=True)
    try:
        direct.p.docs.insert_one({"_id": "before"})
        pause(others)
        try:
            # Raft's leader steps down once it has not heard from a majority for an election
            # timeout; hello says so and writes are refused with NotWritablePrimary.
            wait_for(lambda: not hello_of(primary).get("isWritablePrimary"), 15,
                     what="the cut-off primary to step down")
            hello = hello_of(primary)
            assert hello["secondary"] is True and "primary" not in hello, hello
            reply = run_command(direct.p, {"insert": "docs", "documents": [{"_id": "during"}],
                                           "writeConcern": {"w": 1}})
            assert (reply["ok"], reply["code"], reply["codeName"]) == (
                0, 10107, "NotWritablePrimary"), reply
        finally:
            resume(others)
        # Healed: the set has a primary again, and the refused write is nowhere.
        new_primary = wait_for(lambda: primary_among(members), 30, what="a primary again")
        c = new_primary.client(directConnection=True)
        try:
            assert c.p.docs.find_one({"_id": "before"}) is not None
            assert c.p.docs.find_one({"_id": "during"}) is None
        finally:
            c.close()
    finally:
        direct.close()


def test_the_majority_goes_on_without_a_cut_off_primary(fresh_server):
    members = start_set(fresh_server)
    # A write the driver sends before it hears of the new primary goes to the stopped one, which
    # never answers: the socket timeout ends it (and the driver's retry) with an error.
    rs = set_client(members, retryWrites=True, socketTimeoutMS=10000)
    try:
        coll = rs.get_database("maj", write_concern=WriteConcern(w="majority")).events
        coll.insert_many([{"_id": i} for i in range(100)])
        old = primary_among(members)
        others = [m for m in members if m is not old]
        pause([old])
        try:
            new_primary = wait_for(lambda: primary_among(others), 30,
                                   what="the majority to elect a primary")
            # The driver finds the new primary on its own; its writes are acknowledged there.
            acknowledged = []
            for i in range(100, 300):
                try:
                    coll.insert_one({"_id": i})
                    acknowledged.append(i)
                except PyMongoError:  # the first attempts may still aim at the stopped one
                    pass
            assert len(acknowledged) >= 150, len(acknowledged)
            assert hello_of(new_primary)["isWritablePrimary"]
        finally:
            resume([old])
        # The old primary hears of the newer term, follows, and catches up.
        def follows():
            h = hello_of(old)
            return h.get("secondary") and h.get("primary") == f"127.0.0.1:{new_primary.port}"
        wait_for(follows, 30, what="the old primary to follow the new one")
        direct = old.client(directConnection=True)
        try:
            reply = run_command(direct.maj, {"insert": "events", "documents": [{"_id": "x"}]})
            assert reply["code"] == 10107, reply
        finally:
            direct.close()
        stored = {d["_id"] for d in coll.find({}, {"_id": 1})}
        assert set(range(100)) | set(acknowledged) <= stored
        wait_same_hashes([new_primary] + [m for m in members if m is not new_primary], "maj")
    finally:
        rs.close()
