"""--keyFile (issue 19): replica set members authenticate to each other with a shared key, as
mongod's keyfile internal authentication does — each logs in to the other as the internal user
__system@local (SCRAM-SHA-256, the key as password) before Raft's connection or an oplog read,
and checks the other's proof too. A key file implies --auth. Compared with what MongoDB's
manual says of key files ("Deploy a Self-Managed Replica Set With Keyfile Authentication",
"Localhost Exception")."""

import datetime

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure
from pymongo.write_concern import WriteConcern

from conftest import command_error, run_command
from test_replica_set import SET, TEST_MEMBERS, hello_of, host_of, wait_for, wait_primary

KEY = "aG91cmdsYXNz\nS2V5RmlsZTAx\n"  # whitespace is not part of the key


def key_file(tmp_path, name, text, mode=0o600):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def login(server, user, password, source="admin", **kwargs):
    return MongoClient("127.0.0.1", server.port, directConnection=True, username=user,
                       password=password, authSource=source, serverSelectionTimeoutMS=10000,
                       **kwargs)


@pytest.mark.parametrize("text,mode,message", [
    (KEY, 0o644, "are too open"),
    ("abc\n", 0o600, "has length 3, must be between 6 and 1024 chars"),
    ("abcdef$gh", 0o600, "invalid char in key file"),
    ("   \n", 0o600, "file empty"),
])
def test_a_key_file_mongod_would_refuse_stops_the_server(fresh_server, tmp_path, text, mode,
                                                         message):
    s = fresh_server.new(extra_args=["--keyFile", key_file(tmp_path, "key", text, mode)],
                         start=False)
    s.spawn()
    assert s.wait_exit(30) not in (0, None)
    assert message in s.log_text()


def test_members_with_the_key_form_a_set_and_others_do_not_get_in(fresh_server, tmp_path):
    key = key_file(tmp_path, "key", KEY)
    members = [fresh_server.new(extra_args=["--replSet", SET, "--keyFile", key, *TEST_MEMBERS])
               for _ in range(3)]
    # Access control is on: unauthenticated clients get nowhere but the handshake.
    anonymous = members[1].client()
    reply = run_command(anonymous.admin, {"hgRaftConnect": 1, "setName": SET, "from": 9,
                                          "fromAddress": "x:1", "to": 2, "toAddress": "y:2"})
    assert (reply["ok"], reply["code"]) == (0, 13), reply
    anonymous.close()

    # The localhost exception initiates the set, then creates the first user on the primary.
    c = members[0].client()
    c.admin.command("replSetInitiate", {
        "_id": SET, "members": [{"_id": i, "host": host_of(m)} for i, m in enumerate(members)]})
    wait_primary(members[0])
    c.admin.command("createUser", "admin", pwd="secret", roles=["root"])
    c.close()
    for m in members[1:]:
        wait_for(lambda: hello_of(m).get("secondary"), 30, what=f"{host_of(m)} to join")

    seeds = ",".join(host_of(m) for m in members)
    rs = MongoClient(f"mongodb://admin:secret@{seeds}/?replicaSet={SET}",
                     serverSelectionTimeoutMS=15000)
    try:
        db = rs.get_database("k", write_concern=WriteConcern(w="majority"))
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        t0 = datetime.datetime(2026, 12, 1)
        db.ts.insert_many([{"t": t0 + datetime.timedelta(seconds=i), "m": i % 3, "v": i}
                           for i in range(300)])
        db.docs.insert_many([{"_id": i} for i in range(100)])
        assert rs.admin.command("getCmdLineOpts")["parsed"]["security"] == {
            "authorization": "enabled", "keyFile": key}

        def hashes():
            out = []
            for m in members:
                with login(m, "admin", "secret") as direct:
                    out.append(direct.k.command("dbHash")["collections"])
            return out
        wait_for(lambda: all(h == hashes()[0] for h in hashes()), 30,
                 what="the members' dbHash to match")
        with login(members[2], "admin", "secret", readPreference="secondary") as direct:
            assert direct.k.ts.count_documents({}) == 300
            # The user came through the log too: it authenticates on every member.
            assert direct.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [
                {"user": "admin", "db": "admin"}]

        # The internal user logs in with the key (whitespace removed), not with anything else.
        with login(members[1], "__system", KEY.replace("\n", ""), source="local",
                   authMechanism="SCRAM-SHA-256") as internal:
            assert internal.admin.command("replSetGetStatus")["set"] == SET
        with pytest.raises(OperationFailure) as e:
            with login(members[1], "__system", "aG91cmdsYXNzWrong", source="local",
                       authMechanism="SCRAM-SHA-256") as wrong:
                wrong.admin.command("ping")
        assert e.value.code == 18

        # A server with another key is named a member: it cannot log in, nor be logged in to.
        other = key_file(tmp_path, "other", "b3RoZXJrZXkwMDAx\n")
        stranger = fresh_server.new(extra_args=["--replSet", SET, "--keyFile", other,
                                                *TEST_MEMBERS])
        config = rs.admin.command("replSetGetConfig")["config"]
        config["version"] += 1
        config["members"].append({"_id": 3, "host": host_of(stranger), "votes": 0,
                                  "priority": 0})
        rs.admin.command("replSetReconfig", config)
        wait_for(lambda: "Cannot log in to a member as the internal user" in
                 "".join(m.log_text() for m in members), 30,
                 what="the members to fail to log in to the stranger")
        assert hello_of(stranger).get("setName") is None
        db.docs.insert_one({"_id": "after"})  # the set goes on without it
        # Nor can a set be initiated with it: the quorum check cannot log in to it.
        fresh = fresh_server.new(extra_args=["--replSet", SET, "--keyFile", key, *TEST_MEMBERS])
        with fresh.client() as fc:  # the localhost exception lets replSetInitiate through
            code, _, msg = command_error(fc.admin, {"replSetInitiate": {"_id": SET, "members": [
                {"_id": 0, "host": host_of(fresh)}, {"_id": 1, "host": host_of(stranger)}]}})
        assert code == 74 and f"{host_of(stranger)} failed with " in msg, msg
        assert "Authentication failed" in msg, msg
    finally:
        rs.close()
