"""Replica set members (--replSet): the states before and after replSetInitiate, hello's
topology fields as drivers read them, rs.status()/rs.conf(), step-down and freeze, restarts, and
drivers connecting with replicaSet=. Compared with what MongoDB documents for these commands
(replSetInitiate, replSetGetStatus, replSetGetConfig, replSetStepDown, replSetFreeze, hello).
A set's members are asked before a configuration names them (docs/replication.md)."""

import datetime
import signal
import socket
import subprocess
import threading
import time
import uuid

import bson
import pymongo
import pytest
from bson import ObjectId, Timestamp
from pymongo.read_preferences import SecondaryPreferred

import wire
from clienttools import isolated_env, mongosh_path
from conftest import command_error

SET = "rs0"


def member(fresh_server, name=SET, extra=()):
    return fresh_server.new(extra_args=["--replSet", name, *extra])


def host_of(server):
    return f"127.0.0.1:{server.port}"


def initiate(server, **fields):
    c = server.client()
    try:
        config = {"_id": SET, "members": [{"_id": 0, "host": host_of(server), **fields}]}
        return c.admin.command("replSetInitiate", config)
    finally:
        c.close()


def wait_for(predicate, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def wait_primary(server):
    c = server.client()
    try:
        return wait_for(lambda: (lambda h: h if h.get("isWritablePrimary") else None)(
            c.admin.command("hello")), what="the member to become primary")
    finally:
        c.close()


# -- a standalone --------------------------------------------------------------------------


@pytest.mark.parametrize("cmd,message", [
    ({"replSetInitiate": {}}, "This node was not started with replication enabled."),
    ({"replSetGetStatus": 1}, "not running with --replSet"),
    ({"replSetGetConfig": 1}, "not running with --replSet"),
    ({"replSetStepDown": 60}, "not running with --replSet"),
    ({"replSetFreeze": 10}, "not running with --replSet"),
])
def test_standalone_answers_no_replication_enabled(client, cmd, message):
    assert command_error(client.admin, cmd) == (76, "NoReplicationEnabled", message)


def test_standalone_hello_has_no_set_fields(client):
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True
    for field in ("setName", "hosts", "secondary", "isreplicaset", "primary", "me"):
        assert field not in hello


def test_replset_commands_are_admin_only(client):
    code, name, _ = command_error(client["test"], {"replSetGetStatus": 1})
    assert (code, name) == (13, "Unauthorized")


# -- before replSetInitiate ----------------------------------------------------------------


def test_member_before_initiate(fresh_server):
    s = member(fresh_server)
    c = s.client()
    hello = c.admin.command("hello")
    assert hello["isWritablePrimary"] is False
    assert hello["secondary"] is False
    assert hello["isreplicaset"] is True
    assert hello["info"] == "Does not have a valid replica set config"
    assert "setName" not in hello and "hosts" not in hello
    assert c.admin.command("isMaster")["ismaster"] is False
    # Writes need a primary; reads need one too, or secondaryOk on a secondary.
    code, name, msg = command_error(c["app"], {"insert": "c", "documents": [{"x": 1}]})
    assert (code, name, msg) == (10107, "NotWritablePrimary", "not primary")
    # (pymongo asks a directly connected server for primaryPreferred: raw messages for the rest.)
    sock = wire.connect(s.port)
    reply = wire.command(sock, {"find": "c", "$db": "app"})
    assert (reply["code"], reply["codeName"], reply["errmsg"]) == (
        13435, "NotPrimaryNoSecondaryOk", "not primary and secondaryOk=false")
    reply = wire.command(sock, {"find": "c", "$db": "app",
                                "$readPreference": {"mode": "secondaryPreferred"}})
    assert (reply["code"], reply["codeName"]) == (13436, "NotPrimaryOrSecondary")
    # A retryable write (txnNumber) refused off the primary carries the label drivers retry on.
    lsid = {"id": bson.Binary(uuid.uuid4().bytes, 4)}
    reply = wire.command(sock, {"insert": "c", "documents": [{"x": 1}], "$db": "app",
                                "lsid": lsid, "txnNumber": bson.Int64(1)})
    assert (reply["code"], reply["errorLabels"]) == (10107, ["RetryableWriteError"])
    reply = wire.command(sock, {"insert": "c", "documents": [{"x": 1}], "$db": "app"})
    assert reply["code"] == 10107 and "errorLabels" not in reply
    # OP_QUERY's secondaryOk bit (4) allows it as $readPreference does.
    for flags, code in ((0, 13435), (4, 13436)):
        sock.sendall(wire.op_query("app.$cmd", {"count": "c"}, flags=flags)[0])
        assert wire.read_message(sock).doc["code"] == code
    sock.close()
    # The local database is this member's own: open in every state.
    c.local.command({"insert": "scratch", "documents": [{"_id": 1}]})
    assert c.local.command({"find": "scratch"})["cursor"]["firstBatch"] == [{"_id": 1}]
    for cmd in ({"replSetGetStatus": 1}, {"replSetGetConfig": 1}, {"replSetFreeze": 5}):
        assert command_error(c.admin, cmd)[:2] == (94, "NotYetInitialized")
    assert c.admin.command("ping")["ok"] == 1
    c.close()


@pytest.mark.parametrize("config,code,words", [
    ({"_id": "other", "members": [{"_id": 0, "host": "HOST"}]}, 93,
     "Attempting to initiate a replica set with name other, but command line reports rs0"),
    ({"_id": SET, "members": []}, 93, "members"),
    ({"_id": SET, "members": [{"_id": 0, "host": "HOST", "priority": 2000}]}, 93, "priority"),
    ({"_id": SET, "members": [{"_id": 0, "host": "HOST", "bogus": 1}]}, 93, "bogus"),
    ({"_id": SET, "version": 2, "members": [{"_id": 0, "host": "HOST"}]}, 103, "version"),
    ({"_id": SET, "members": [{"_id": 0, "host": "127.0.0.1:1"}]}, 74, "maps to this node"),
    ({"_id": SET, "members": [{"_id": 0, "host": "HOST", "priority": 0}]}, 93,
     "no member can become primary"),
    ({"_id": SET, "members": [{"_id": 0, "host": "HOST", "priority": 0},
                              {"_id": 1, "host": "127.0.0.1:1"}]}, 93, "is not electable"),
    ({"_id": SET, "members": [{"_id": 0, "host": "HOST"}, {"_id": 1, "host": "127.0.0.1:1"}]},
     74, "replSetInitiate quorum check failed because not all proposed set members responded "
     "affirmatively: 127.0.0.1:1 failed with Error connecting to 127.0.0.1:1"),
])
def test_initiate_refusals(fresh_server, config, code, words):
    s = member(fresh_server)
    c = s.client()
    for m in config["members"]:
        if m["host"] == "HOST":
            m["host"] = host_of(s)
    got = command_error(c.admin, {"replSetInitiate": config})
    assert got[0] == code, got
    assert words in got[2], got
    # Nothing was kept: the member still waits for a configuration.
    assert c.admin.command("hello")["isWritablePrimary"] is False
    assert command_error(c.admin, {"replSetGetConfig": 1})[0] == 94
    c.close()


# -- an initiated member -------------------------------------------------------------------


def test_initiate_makes_a_primary_that_drivers_use(fresh_server):
    s = member(fresh_server)
    c = s.client()
    before = c.admin.command("hello")["topologyVersion"]
    assert c.admin.command("replSetInitiate", {
        "_id": SET, "members": [{"_id": 0, "host": host_of(s)}]})["ok"] == 1
    hello = wait_primary(s)
    assert hello["setName"] == SET
    assert hello["setVersion"] == 1
    assert hello["hosts"] == [host_of(s)]
    assert hello["primary"] == host_of(s)
    assert hello["me"] == host_of(s)
    assert hello["secondary"] is False
    assert hello["topologyVersion"]["processId"] == before["processId"]
    assert hello["topologyVersion"]["counter"] > before["counter"]
    # Protocol version 1's electionId: 0x7fffffff then the term.
    status = c.admin.command("replSetGetStatus")
    assert hello["electionId"] == ObjectId("7fffffff" + format(status["term"], "016x"))
    assert isinstance(hello["lastWrite"]["opTime"]["ts"], Timestamp)
    assert hello["lastWrite"]["opTime"]["t"] == status["term"]
    assert isinstance(hello["lastWrite"]["lastWriteDate"], datetime.datetime)

    # A second initiate is refused.
    assert command_error(c.admin, {"replSetInitiate": {}})[:2] == (23, "AlreadyInitialized")

    # A driver given the set's name discovers the primary from hello and writes through it.
    rs = pymongo.MongoClient(f"mongodb://{host_of(s)}/?replicaSet={SET}",
                             serverSelectionTimeoutMS=10000)
    try:
        db = rs["app"]
        db.create_collection("cpu", timeseries={"timeField": "t", "metaField": "m"})
        now = datetime.datetime(2026, 1, 1)
        coll = db.get_collection("cpu", write_concern=pymongo.WriteConcern(w="majority", j=True))
        coll.insert_many([{"t": now + datetime.timedelta(seconds=i), "m": i % 3, "v": i}
                          for i in range(100)])
        assert coll.count_documents({}) == 100
        assert rs.primary == ("127.0.0.1", s.port)
    finally:
        rs.close()
    c.close()


def test_status_and_config_shapes(fresh_server):
    s = member(fresh_server)
    initiate(s)
    wait_primary(s)
    c = s.client()
    status = c.admin.command("replSetGetStatus")
    assert status["set"] == SET
    assert status["myState"] == 1
    assert status["term"] >= 1
    assert isinstance(status["date"], datetime.datetime)
    assert status["majorityVoteCount"] == 1
    assert status["writeMajorityCount"] == 1
    assert status["votingMembersCount"] == 1
    assert status["heartbeatIntervalMillis"] == 2000
    optimes = status["optimes"]
    for f in ("lastCommittedOpTime", "readConcernMajorityOpTime", "appliedOpTime",
              "durableOpTime"):
        assert set(optimes[f]) == {"ts", "t"}
    [m] = status["members"]
    assert m["_id"] == 0 and m["name"] == host_of(s)
    assert (m["state"], m["stateStr"], m["health"], m["self"]) == (1, "PRIMARY", 1.0, True)
    assert m["configVersion"] == 1
    assert isinstance(m["electionTime"], Timestamp)
    assert isinstance(m["electionDate"], datetime.datetime)
    assert m["uptime"] >= 0

    config = c.admin.command("replSetGetConfig")["config"]
    assert config["_id"] == SET
    assert config["version"] == 1
    assert config["protocolVersion"] == 1
    assert config["writeConcernMajorityJournalDefault"] is True
    [mc] = config["members"]
    assert mc == {"_id": 0, "host": host_of(s), "arbiterOnly": False, "buildIndexes": True,
                  "hidden": False, "priority": 1.0, "tags": {}, "secondaryDelaySecs": 0,
                  "votes": 1}
    settings = config["settings"]
    assert isinstance(settings["replicaSetId"], ObjectId)
    assert settings["electionTimeoutMillis"] == 10000
    assert settings["chainingAllowed"] is True
    committed = c.admin.command("replSetGetConfig", commitmentStatus=True)
    assert committed["commitmentStatus"] is True
    c.close()


def test_restart_and_kill_keep_the_set(fresh_server):
    s = member(fresh_server)
    initiate(s)
    wait_primary(s)
    c = s.client()
    set_id = c.admin.command("replSetGetConfig")["config"]["settings"]["replicaSetId"]
    c["app"]["c"].insert_one({"_id": 1}, )
    c.close()

    assert s.stop() == 0
    s.start(port=s.port)
    hello = wait_primary(s)
    assert hello["setName"] == SET and hello["primary"] == host_of(s)
    s.kill()
    s.start(port=s.port)
    wait_primary(s)
    c = s.client()
    assert c.admin.command("replSetGetConfig")["config"]["settings"]["replicaSetId"] == set_id
    assert c["app"]["c"].find_one() == {"_id": 1}
    c.close()


def test_stored_set_name_must_match(fresh_server):
    s = member(fresh_server)
    initiate(s)
    wait_primary(s)
    assert s.stop() == 0
    other = fresh_server.new(dbpath=s.dbpath, extra_args=["--replSet", "other"], start=False)
    other.spawn()
    assert other.wait_exit() not in (0, None)
    assert "is for replica set 'rs0', not 'other'" in other.log_text()


def test_awaitable_hello_answers_when_the_topology_changes(fresh_server):
    s = member(fresh_server)
    waiter = s.client(socketTimeoutMS=30000)
    tv = waiter.admin.command("hello")["topologyVersion"]
    result = {}

    def await_hello():
        start = time.monotonic()
        result["hello"] = waiter.admin.command(
            {"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 20000})
        result["seconds"] = time.monotonic() - start

    t = threading.Thread(target=await_hello)
    t.start()
    time.sleep(0.5)
    assert "hello" not in result  # held back: nothing changed yet
    initiate(s)
    t.join(25)
    assert result["seconds"] < 15
    assert result["hello"]["topologyVersion"]["counter"] > tv["counter"]
    # A client that is behind hears at once; one ahead is refused.
    start = time.monotonic()
    waiter.admin.command({"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 5000})
    assert time.monotonic() - start < 2
    ahead = {"processId": tv["processId"], "counter": 10 ** 9}
    assert command_error(waiter.admin, {"hello": 1, "topologyVersion": ahead,
                                        "maxAwaitTimeMS": 10})[0] == 2
    waiter.close()


def test_step_down_and_freeze(fresh_server):
    s = member(fresh_server)
    initiate(s)
    wait_primary(s)
    c = s.client()
    assert command_error(c.admin, {"replSetFreeze": 30})[:2] == (95, "NotSecondary")
    assert command_error(c.admin, {"replSetStepDown": 1, "secondaryCatchUpPeriodSecs": 5})[:2] \
        == (2, "BadValue")
    # Without force, a set with no other electable member cannot hand over.
    start = time.monotonic()
    code, name, msg = command_error(c.admin, {"replSetStepDown": 5,
                                              "secondaryCatchUpPeriodSecs": 1})
    assert (code, name) == (262, "ExceededTimeLimit")
    assert "No electable secondaries caught up" in msg
    assert time.monotonic() - start >= 0.9
    c["app"]["c"].insert_one({"_id": 1})

    # Forced, the member is a secondary for the step-down period: writes refused, reads with
    # secondaryOk served.
    c.admin.command("replSetStepDown", 60, force=True)
    hello = c.admin.command("hello")
    assert hello["isWritablePrimary"] is False and hello["secondary"] is True
    assert "primary" not in hello
    assert c.admin.command("replSetGetStatus")["members"][0]["stateStr"] == "SECONDARY"
    assert command_error(c["app"], {"insert": "c", "documents": [{"_id": 2}]})[0] == 10107
    sock = wire.connect(s.port)
    assert wire.command(sock, {"find": "c", "$db": "app"})["code"] == 13435
    sock.close()
    reader = c["app"].get_collection("c", read_preference=SecondaryPreferred())
    assert list(reader.find()) == [{"_id": 1}]
    assert command_error(c.admin, {"replSetStepDown": 60})[0] == 10107

    # Unfreezing lets it stand again at once.
    assert c.admin.command("replSetFreeze", 0)["info"] == "unfreezing"
    wait_primary(s)
    c["app"]["c"].insert_one({"_id": 2})
    assert c["app"]["c"].count_documents({}) == 2
    c.close()


def test_shutdown_ends_a_waiting_step_down(fresh_server):
    s = member(fresh_server)
    initiate(s)
    wait_primary(s)
    waiter = s.client(socketTimeoutMS=120000)
    t = threading.Thread(target=lambda: command_error(waiter.admin, {
        "replSetStepDown": 600, "secondaryCatchUpPeriodSecs": 600}))
    t.daemon = True
    t.start()
    time.sleep(0.5)
    start = time.monotonic()
    assert s.signal(signal.SIGTERM) == 0
    assert time.monotonic() - start < 15
    waiter.close()


def test_mongosh_initiates_with_the_default_configuration(fresh_server, tmp_path):
    s = member(fresh_server)
    script = ("const r = rs.initiate(); print('me=' + r.me);"
              "let h; for (let i = 0; i < 200; i++) { h = db.hello();"
              " if (h.isWritablePrimary) break; sleep(50); }"
              "print('setName=' + h.setName);"
              "print('state=' + rs.status().members[0].stateStr);"
              "print('host=' + rs.conf().members[0].host);")
    p = subprocess.run(
        [mongosh_path(), f"mongodb://127.0.0.1:{s.port}/test?directConnection=true", "--quiet",
         "--eval", script],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path))
    assert p.returncode == 0, p.stderr
    lines = set(p.stdout.split())
    # Listening on loopback only, the default configuration names the member by that address.
    assert f"me={host_of(s)}" in lines
    assert f"setName={SET}" in lines
    assert "state=PRIMARY" in lines
    assert f"host={host_of(s)}" in lines


# -- options ------------------------------------------------------------------------------


def test_repl_set_options(fresh_server, tmp_path):
    s = member(fresh_server)
    c = s.client()
    parsed = c.admin.command("getCmdLineOpts")["parsed"]
    assert parsed["replication"] == {"replSet": SET}
    c.close()
    s.stop()

    conf = tmp_path / "mongod.conf"
    conf.write_text("replication:\n  replSetName: fromfile\n")
    t = fresh_server.new(extra_args=["--config", str(conf)])
    c = t.client()
    assert c.admin.command("getCmdLineOpts")["parsed"]["replication"] == {
        "replSetName": "fromfile"}
    assert c.admin.command("hello")["isreplicaset"] is True
    c.close()

    for bad in (["--replSet", "a/b"], ["--replSet", "rs0", "--inMemory"]):
        u = fresh_server.new(extra_args=bad, start=False)
        u.spawn()
        assert u.wait_exit() not in (0, None)


# -- several members (with the test commands: fail points, hgPartitionMember) -----------------

TEST_MEMBERS = ["--setParameter", "enableTestCommands=1"]


def start_set(fresh_server, n=3):
    members = [member(fresh_server, extra=TEST_MEMBERS) for _ in range(n)]
    c = members[0].client()
    c.admin.command("replSetInitiate", {
        "_id": SET, "members": [{"_id": i, "host": host_of(m)} for i, m in enumerate(members)]})
    c.close()
    wait_primary(members[0])
    for m in members[1:]:
        wait_state(m, secondary=True, primary=host_of(members[0]))
    return members


def hello_of(server):
    c = server.client(serverSelectionTimeoutMS=2000)
    try:
        return c.admin.command("hello")
    finally:
        c.close()


def wait_state(server, timeout=20.0, **expected):
    def matches():
        h = hello_of(server)
        return h if all(h.get(k) == v for k, v in expected.items()) else None
    return wait_for(matches, timeout, what=f"{host_of(server)} to reach {expected}")


def test_three_members_elect_a_primary_and_fail_over(fresh_server):
    members = start_set(fresh_server)
    first = hello_of(members[0])
    assert first["hosts"] == [host_of(m) for m in members]
    for m in members[1:]:
        h = hello_of(m)
        assert h["setName"] == SET and h["isWritablePrimary"] is False
        assert h["me"] == host_of(m) and "electionId" not in h
    c = members[0].client()
    status = c.admin.command("replSetGetStatus")
    assert [m["stateStr"] for m in status["members"]] == ["PRIMARY", "SECONDARY", "SECONDARY"]
    # As mongod: only this member's own entry says `self`.
    assert [m.get("self", False) for m in status["members"]] == [True, False, False]
    assert status["majorityVoteCount"] == 2
    # A healthy set's topology holds still (no member flapping between up and down).
    counter = c.admin.command("hello")["topologyVersion"]["counter"]
    time.sleep(3)
    assert c.admin.command("hello")["topologyVersion"]["counter"] == counter
    assert [m["health"] for m in c.admin.command("replSetGetStatus")["members"]] == [1, 1, 1]
    c.close()

    seeds = ",".join(host_of(m) for m in members)
    rs = pymongo.MongoClient(f"mongodb://{seeds}/?replicaSet={SET}", serverSelectionTimeoutMS=15000)
    try:
        # (MongoClient.primary does not wait for the first discovery.)
        wait_for(lambda: rs.primary == ("127.0.0.1", members[0].port), 15, what="the driver")
        # kill -9 the primary: the two others elect one of themselves.
        members[0].kill()
        start = time.monotonic()

        def new_primary():
            for m in members[1:]:
                h = hello_of(m)
                if h.get("isWritablePrimary"):
                    return m, h
            return None
        winner, h = wait_for(new_primary, 15, what="a new primary")
        elapsed = time.monotonic() - start
        assert elapsed < 10, elapsed
        assert h["electionId"] > first["electionId"]
        other = members[1] if winner is members[2] else members[2]
        wait_state(other, secondary=True, primary=host_of(winner))
        # The driver finds the new primary on its own.
        wait_for(lambda: rs.primary == ("127.0.0.1", winner.port), 15, what="the driver")
        assert rs.admin.command("ping")["ok"] == 1
        # The new primary sees the old one down.
        wc = winner.client()
        wait_for(lambda: wc.admin.command("replSetGetStatus")["members"][0]["health"] == 0,
                 what="the old primary reported down")
        assert wc.admin.command("replSetGetStatus")["members"][0]["stateStr"] == \
            "(not reachable/healthy)"
        wc.close()
        # Restarted, the old primary comes back as a secondary of the new one.
        members[0].start(port=members[0].port)
        wait_state(members[0], secondary=True, primary=host_of(winner))
        # Members with live Raft connections shut down cleanly (exit code 0: nothing leaked).
        for m in members:
            assert m.stop() == 0, m.log_tail()
    finally:
        rs.close()


def test_step_down_hands_the_primary_over(fresh_server):
    members = start_set(fresh_server)
    c = members[0].client()
    c.admin.command("replSetStepDown", 60)
    c.close()

    def elsewhere():
        for m in members[1:]:
            if hello_of(m).get("isWritablePrimary"):
                return m
        return None
    winner = wait_for(elsewhere, 15, what="another primary")
    wait_state(members[0], secondary=True, primary=host_of(winner))


def test_secondary_reads_see_bucket_appends_the_log_brings(fresh_server):
    """A secondary applies a bucket append (a diff of the bucket) in place; its reads of the
    latest measurements per series, which a cache serves once filled, then give the appended
    rows (the applied append is not the secondary's own bucket catalog's, so it stales the
    cache), and its buckets are the primary's, byte for byte."""
    members = start_set(fresh_server)
    c = members[0].client()
    db = c.get_database("appends", write_concern=pymongo.WriteConcern(w=3))
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2026, 5, 1)
    db.ts.insert_many([{"t": base + datetime.timedelta(seconds=i), "m": "s%d" % (i % 3),
                        "v": float(i)} for i in range(30)])
    lastpoint = [{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "v": {"$first": "$v"}}},
                 {"$sort": {"_id": 1}}]
    sc = members[1].client(readPreference="secondary")
    sdb = sc.appends

    def hits():
        return sc.admin.command("serverStatus")["hourglass"]["timeseries"]["latestCacheHits"]
    first = [{"_id": "s0", "v": 27.0}, {"_id": "s1", "v": 28.0}, {"_id": "s2", "v": 29.0}]
    # w: 3 waits for the members to hold the write; each applies it a moment later.
    wait_for(lambda: list(sdb.ts.aggregate(lastpoint)) == first, 10, what="the rows applied")
    before = hits()
    assert list(sdb.ts.aggregate(lastpoint))[0] == {"_id": "s0", "v": 27.0}
    assert hits() == before + 1  # served by the cache
    # Appends to the same buckets, replicated to every member before the insert returns.
    db.ts.insert_many([{"t": base + datetime.timedelta(seconds=100 + i), "m": "s%d" % (i % 2),
                        "v": 100.0 + i} for i in range(4)])
    primary_buckets = list(db.get_collection("system.buckets.ts").find().sort("_id", 1))
    assert len(primary_buckets) == 3
    wait_for(lambda: list(sdb.get_collection("system.buckets.ts").find().sort("_id", 1)) ==
             primary_buckets, 10, what="the appends applied")
    assert list(sdb.ts.aggregate(lastpoint)) == [
        {"_id": "s0", "v": 102.0}, {"_id": "s1", "v": 103.0}, {"_id": "s2", "v": 29.0}]
    sc.close()
    c.close()


def test_plain_members_form_a_set_once_each_answers(fresh_server):
    """Members started with --replSet alone, as a user starts them, form a set; replSetInitiate
    first asks each member named whether it can be one (mongod's quorum check): one that cannot
    be reached, a server without --replSet or a member of a set already initiated make it fail
    with NodeNotFound, and nothing is kept."""
    a, b, c = (member(fresh_server) for _ in range(3))
    standalone = fresh_server.new()
    # A port that takes the connection and closes it unanswered.
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(4)
    mute_host = "127.0.0.1:%d" % mute.getsockname()[1]

    def hang_up():
        while True:
            try:
                conn, _ = mute.accept()
            except OSError:
                return
            conn.close()
    threading.Thread(target=hang_up, daemon=True).start()
    ca = a.client()
    code, name, msg = command_error(ca.admin, {"replSetInitiate": {"_id": SET, "members": [
        {"_id": 0, "host": host_of(a)}, {"_id": 1, "host": host_of(standalone)},
        {"_id": 2, "host": "127.0.0.1:1"}, {"_id": 3, "host": mute_host}]}})
    mute.close()
    assert (code, name) == (74, "NodeNotFound")
    assert msg.startswith("replSetInitiate quorum check failed because not all proposed set "
                          "members responded affirmatively: "), msg
    assert f"{host_of(standalone)} failed with it is not running with --replSet" in msg
    assert "127.0.0.1:1 failed with Error connecting to 127.0.0.1:1" in msg
    assert (f"{mute_host} failed with network error while attempting to run command 'hello' on "
            f"host '{mute_host}' :: caused by :: ") in msg
    assert command_error(ca.admin, {"replSetGetConfig": 1})[0] == 94
    ca.admin.command("replSetInitiate", {"_id": SET, "members": [
        {"_id": i, "host": host_of(m)} for i, m in enumerate((a, b, c))]})
    wait_primary(a)
    for m in (b, c):
        wait_state(m, secondary=True, primary=host_of(a))
    ca.close()
    # A member of this set answers with it: another set cannot be initiated with it.
    d = member(fresh_server)
    cd = d.client()
    code, _, msg = command_error(cd.admin, {"replSetInitiate": {"_id": SET, "members": [
        {"_id": 0, "host": host_of(d)}, {"_id": 1, "host": host_of(b)}]}})
    assert code == 74 and f"{host_of(b)} failed with its replica set is already initiated" in msg
    # A member of a set of another name cannot be named either.
    e = member(fresh_server, name="other")
    ce = e.client()
    ce.admin.command("replSetInitiate", {"_id": "other", "members": [
        {"_id": 0, "host": host_of(e)}]})
    wait_primary(e)
    ce.close()
    code, _, msg = command_error(cd.admin, {"replSetInitiate": {"_id": SET, "members": [
        {"_id": 0, "host": host_of(d)}, {"_id": 1, "host": host_of(e)}]}})
    assert code == 74, msg
    assert f"{host_of(e)} failed with it is a member of replica set other, not {SET}" in msg
    assert command_error(cd.admin, {"replSetGetConfig": 1})[0] == 94
    # Raft's connection is taken only for the member's own set.
    code, _, msg = command_error(cd.admin, {
        "hgRaftConnect": 1, "setName": "other", "from": 1, "fromAddress": "x:1", "to": 2,
        "toAddress": host_of(d)})
    assert code == 93 and "'other'" in msg
    cd.close()


# -- replSetReconfig ------------------------------------------------------------------------


def reconfig(client, change, **fields):
    config = client.admin.command("replSetGetConfig")["config"]
    change(config)
    config["version"] += 1
    return client.admin.command({"replSetReconfig": config, **fields})


def test_reconfig_of_a_set_of_one(fresh_server):
    s = member(fresh_server)
    initiate(s)
    wait_primary(s)
    c = s.client()
    before = c.admin.command("replSetGetConfig")["config"]

    def tag_and_tune(config):
        config["members"][0]["tags"] = {"dc": "east"}
        config["settings"]["heartbeatIntervalMillis"] = 1000
    assert reconfig(c, tag_and_tune)["ok"] == 1
    after = c.admin.command("replSetGetConfig")["config"]
    assert after["version"] == before["version"] + 1
    assert after["members"][0]["tags"] == {"dc": "east"}
    assert after["settings"]["heartbeatIntervalMillis"] == 1000
    assert after["settings"]["replicaSetId"] == before["settings"]["replicaSetId"]
    hello = c.admin.command("hello")
    assert hello["setVersion"] == after["version"] and hello["tags"] == {"dc": "east"}

    # MongoDB's refusals.
    same = dict(after)
    assert command_error(c.admin, {"replSetReconfig": same})[0] == 103  # version not higher
    renamed = dict(after, _id="other", version=after["version"] + 1)
    code, _, msg = command_error(c.admin, {"replSetReconfig": renamed})
    assert code == 103 and "replica set name" in msg
    moved = dict(after, version=after["version"] + 1,
                 members=[dict(after["members"][0], host="127.0.0.1:1")])
    assert command_error(c.admin, {"replSetReconfig": moved})[0] == 74
    bad = dict(after, version=after["version"] + 1,
               members=[dict(after["members"][0], priority=-1)])
    assert command_error(c.admin, {"replSetReconfig": bad})[0] == 93
    # A majority of the new configuration's voters must answer (mongod's quorum check).
    grown = dict(after, version=after["version"] + 1,
                 members=after["members"] + [{"_id": 1, "host": "127.0.0.1:1"}])
    code, _, msg = command_error(c.admin, {"replSetReconfig": grown})
    assert code == 74, msg
    assert msg.startswith("Quorum check failed because not enough voting nodes responded; "
                          f"required 2 but only the following 1 voting nodes responded: "
                          f"{host_of(s)}; the following nodes did not respond affirmatively: "
                          "127.0.0.1:1 failed with Error connecting to 127.0.0.1:1"), msg
    assert command_error(c.admin, {"replSetReconfig": 1})[0] == 14
    # A forced configuration jumps the version.
    forced = dict(after)
    c.admin.command({"replSetReconfig": forced, "force": True})
    assert c.admin.command("replSetGetConfig")["config"]["version"] > after["version"] + 10000
    # Kept across a restart.
    assert s.stop() == 0
    s.start(port=s.port)
    wait_primary(s)
    c.close()
    c = s.client()
    assert c.admin.command("replSetGetConfig")["config"]["members"][0]["tags"] == {"dc": "east"}
    # Off the primary it is refused.
    c.admin.command("replSetStepDown", 60, force=True)
    assert command_error(c.admin, {"replSetReconfig": dict(after, version=10 ** 6)})[0] == 10107
    c.close()


def test_reconfig_adds_and_removes_members(fresh_server):
    members = start_set(fresh_server, n=2)
    extra = member(fresh_server, extra=TEST_MEMBERS)
    c = members[0].client()

    def add(config):
        config["members"].append({"_id": 2, "host": host_of(extra)})
    reconfig(c, add)
    wait_state(extra, secondary=True, primary=host_of(members[0]))
    assert hello_of(members[0])["hosts"] == [host_of(m) for m in members + [extra]]
    wait_for(lambda: [m["stateStr"] for m in c.admin.command("replSetGetStatus")["members"]]
             == ["PRIMARY", "SECONDARY", "SECONDARY"], what="three members")
    # Adding two voters at once needs force.
    two = c.admin.command("replSetGetConfig")["config"]
    two["members"] = two["members"][:1]
    two["version"] += 1
    code, _, msg = command_error(c.admin, {"replSetReconfig": two})
    assert code == 103 and "at most 1 voting member" in msg

    def remove(config):
        config["members"] = [m for m in config["members"] if m["_id"] != 2]
    reconfig(c, remove)
    wait_for(lambda: hello_of(members[0])["hosts"] == [host_of(m) for m in members],
             what="the member removed")
    # The removed member learns it is no longer in the set.
    wait_for(lambda: "setName" not in hello_of(extra), what="the removed member's hello")
    ec = extra.client()
    assert command_error(ec.admin, {"replSetGetStatus": 1})[0] == 93
    ec.close()
    c.close()


def test_mongosh_rs_add_and_remove(fresh_server, tmp_path):
    first = member(fresh_server, extra=TEST_MEMBERS)
    second = member(fresh_server, extra=TEST_MEMBERS)
    initiate(first)
    wait_primary(first)
    script = (f"printjson(rs.add('{host_of(second)}').ok);"
              "let n; for (let i = 0; i < 200; i++) {"
              " n = rs.status().members.filter(m => m.stateStr == 'SECONDARY').length;"
              " if (n == 1) break; sleep(50); }"
              "print('secondaries=' + n);"
              f"printjson(rs.remove('{host_of(second)}').ok);"
              "print('members=' + rs.conf().members.length);")
    p = subprocess.run(
        [mongosh_path(), f"mongodb://{host_of(first)}/?directConnection=true", "--quiet",
         "--eval", script],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "secondaries=1", "1", "members=1"], p.stdout


# -- malformed arguments ----------------------------------------------------------------------


@pytest.mark.parametrize("cmd,code", [
    ({"replSetInitiate": "rs0"}, 14),
    ({"replSetGetConfig": 1, "bogus": 1}, 40415),
    ({"replSetGetConfig": 1, "commitmentStatus": "yes"}, 14),
    ({"replSetGetStatus": 1, "bogus": 1}, 40415),
    ({"replSetStepDown": "60"}, 14),
    ({"replSetStepDown": 60, "secondaryCatchUpPeriodSecs": "1"}, 14),
    ({"replSetStepDown": -1}, 2),
    ({"replSetStepDown": 60, "bogus": 1}, 40415),
    ({"replSetFreeze": "10"}, 14),
    ({"replSetFreeze": -5}, 2),
    ({"replSetReconfig": 1}, 14),
    ({"replSetReconfig": {"_id": SET}, "bogus": 1}, 40415),
    ({"hgRaftConnect": 1, "setName": SET}, 2),
    ({"hgRaftConnect": 1, "setName": 5, "from": 1, "fromAddress": "a:1", "to": 1,
      "toAddress": "b:1"}, 14),
])
def test_malformed_replica_set_commands(fresh_server, cmd, code):
    s = member(fresh_server)
    c = s.client()
    got = command_error(c.admin, cmd)
    assert got[0] == code, got
    assert c.admin.command("ping")["ok"] == 1  # the member stays healthy
    c.close()
