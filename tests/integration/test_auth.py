"""Authentication and authorization with --auth: SCRAM-SHA-1 and SCRAM-SHA-256 through pymongo
and mongosh, the localhost exception, users in admin.system.users, the built-in roles allowed and
denied on a representative command of each action, and MongoDB's replies, codes and log lines.
Expected values come from MongoDB's manual (Security → Authentication, Built-In Roles, User
Management Commands) and the drivers' authentication specification."""

import json
import subprocess
import time
import uuid

import pytest
from bson.binary import Binary
from pymongo.errors import OperationFailure

from clienttools import REPO, isolated_env, mongosh_path
from conftest import RunawayAggregate, command_error, module_server, run_command

ROOT_PWD = "root-secret"


@pytest.fixture(scope="module")
def auth_server(request, tmp_path_factory):
    yield from module_server(request, tmp_path_factory, "hg-auth", "hourglassd-auth", ["--auth"])


@pytest.fixture(scope="module")
def root(auth_server):
    """The first user, created through the localhost exception, and a client logged in as it."""
    anon = auth_server.client()
    anon.admin.command("createUser", "root", pwd=ROOT_PWD, roles=["root"])
    anon.close()
    c = auth_server.client(username="root", password=ROOT_PWD, authSource="admin")
    yield c
    c.close()


def login(server, user, pwd, source="admin", mechanism=None):
    kwargs = dict(username=user, password=pwd, authSource=source)
    if mechanism:
        kwargs["authMechanism"] = mechanism
    return server.client(**kwargs)


def log_attrs(server, log_id):
    """The attr of every log line of `log_id`."""
    out = []
    for line in server.log_text().splitlines():
        if f'"id":{log_id},' in line:
            out.append(json.loads(line)["attr"])
    return out


def make_user(root, db, user, roles, pwd="pw", **extra):
    root[db].command("createUser", user, pwd=pwd, roles=roles, **extra)


def denied(db, cmd):
    code, name, msg = command_error(db, cmd)
    return code == 13 and name == "Unauthorized" and msg.startswith("not authorized on ")


def allowed(db, cmd):
    reply = run_command(db, cmd)
    return reply.get("ok") == 1 or reply.get("code") != 13


# -- the localhost exception ------------------------------------------------------------------
def test_localhost_exception_allows_only_the_first_user_of_admin(fresh_server):
    s = fresh_server.new(extra_args=["--auth"])
    anon = s.client()
    # Before any user exists, a localhost client may create one in admin, and nothing else.
    assert denied(anon.test, {"find": "c"})
    assert denied(anon.test, {"createUser": "u", "pwd": "p", "roles": []})
    assert command_error(anon.admin, {"listDatabases": 1, "authorizedDatabases": False})[0] == 13
    assert anon.admin.command("ping")["ok"] == 1
    anon.admin.command("createUser", "first", pwd="p1", roles=["userAdminAnyDatabase"])
    # From then on, the same connection needs to authenticate.
    code, name, msg = command_error(anon.admin, {"createUser": "second", "pwd": "p", "roles": []})
    assert (code, name, msg) == (13, "Unauthorized", "Command createUser requires authentication")
    code, _, msg = command_error(anon.test, {"find": "c"})
    assert (code, msg) == (13, "Command find requires authentication")
    assert anon.admin.command("hello")["isWritablePrimary"] is True
    assert anon.admin.command("buildInfo")["ok"] == 1
    assert anon.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == []
    anon.close()
    first = login(s, "first", "p1")
    first.admin.command("createUser", "second", pwd="p2", roles=[{"role": "read", "db": "test"}])
    notes = [l for l in s.log_text().splitlines() if '"id":20248' in l]
    assert len(notes) == 1 and "allowing localhost access" in notes[0]
    first.close()


# -- SCRAM ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256"])
def test_scram_login_with_each_mechanism(auth_server, root, mechanism):
    user = "m_" + mechanism.replace("-", "_").lower()
    make_user(root, "admin", user, [{"role": "readWrite", "db": "app"}], pwd="s3cret")
    c = login(auth_server, user, "s3cret", mechanism=mechanism)
    c.app.things.insert_one({"x": 1})
    assert c.app.things.count_documents({}) >= 1
    status = c.admin.command("connectionStatus")["authInfo"]
    assert status["authenticatedUsers"] == [{"user": user, "db": "admin"}]
    assert status["authenticatedUserRoles"] == [{"role": "readWrite", "db": "app"}]
    c.close()
    assert any(a["principalName"] == user and a["mechanism"] == mechanism
               for a in log_attrs(auth_server, 20250))


def test_raw_sasl_conversation_replies_as_mongodb(auth_server, root):
    """saslStart/saslContinue by hand (SCRAM-SHA-256, no skipEmptyExchange): conversationId 1,
    done false until the client's empty last message, payloads in the request's type."""
    import base64
    import hashlib
    import hmac
    import os

    make_user(root, "admin", "raw", [], pwd="pencil", mechanisms=["SCRAM-SHA-256"])
    c = auth_server.client()
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n=raw,r={nonce}"
    r1 = c.admin.command({"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                          "payload": Binary(("n,," + first_bare).encode()), "autoAuthorize": 1})
    assert list(r1.keys()) == ["conversationId", "done", "payload", "ok"]
    assert r1["conversationId"] == 1 and r1["done"] is False
    server_first = bytes(r1["payload"]).decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    assert attrs["r"].startswith(nonce) and len(attrs["r"]) == len(nonce) + 32
    assert int(attrs["i"]) == 15000 and len(base64.b64decode(attrs["s"])) == 28
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    final = f"{without_proof},p={base64.b64encode(proof).decode()}"
    # A base64 string payload is answered with a base64 string.
    r2 = c.admin.command({"saslContinue": 1, "conversationId": 1,
                          "payload": base64.b64encode(final.encode()).decode()})
    assert r2["done"] is False and isinstance(r2["payload"], str)
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    expected_v = base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest()).decode()
    assert base64.b64decode(r2["payload"]).decode() == "v=" + expected_v
    assert c.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == []
    r3 = c.admin.command({"saslContinue": 1, "conversationId": 1, "payload": Binary(b"")})
    assert r3["done"] is True
    assert c.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [
        {"user": "raw", "db": "admin"}]
    # The conversation is over: another saslContinue has nothing to continue.
    code, name, msg = command_error(c.admin, {"saslContinue": 1, "conversationId": 1,
                                              "payload": Binary(b"")})
    assert (code, name, msg) == (17, "ProtocolError", "No SASL session state found")
    c.close()


def test_wrong_password_and_unknown_user_fail_alike(auth_server, root):
    make_user(root, "admin", "alice", ["readAnyDatabase"], pwd="right")
    errors = []
    for user, pwd in [("alice", "wrong"), ("nobody", "whatever")]:
        c = login(auth_server, user, pwd)
        with pytest.raises(OperationFailure) as e:
            c.admin.command("ping")  # the client authenticates on its first command
        errors.append((e.value.code, str(e.value.details.get("errmsg"))))
        c.close()
    assert errors == [(18, "Authentication failed."), (18, "Authentication failed.")]
    failures = log_attrs(auth_server, 20249)
    assert any(f.get("principalName") == "alice" and "storedKey mismatch" in f["error"] and
               f["remote"].startswith("127.0.0.1:") for f in failures)
    assert any(f.get("principalName") == "nobody" and "UserNotFound" in f["error"]
               for f in failures)


def test_unknown_mechanism_and_bad_conversation(auth_server):
    c = auth_server.client()
    code, name, msg = command_error(c.admin, {"saslStart": 1, "mechanism": "PLAIN",
                                              "payload": Binary(b"x")})
    assert (code, name) == (334, "MechanismUnavailable")
    assert msg == "Received authentication for mechanism PLAIN which is not enabled"
    code, name, _ = command_error(c.admin, {"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                                            "payload": Binary(b"garbage")})
    assert (code, name) == (18, "AuthenticationFailed")
    c.admin.command({"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                     "payload": Binary(b"n,,n=root,r=abcdefgh")})
    code, name, msg = command_error(c.admin, {"saslContinue": 1, "conversationId": 7,
                                              "payload": Binary(b"")})
    assert (code, name, msg) == (17, "ProtocolError", "sasl: Mismatched conversation id")
    c.close()


def test_sasl_supported_mechs_and_speculative_authenticate(auth_server, root):
    make_user(root, "admin", "only256", [], pwd="p", mechanisms=["SCRAM-SHA-256"])
    anon = auth_server.client()
    h = anon.admin.command({"hello": 1, "saslSupportedMechs": "admin.root"})
    assert h["saslSupportedMechs"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    assert list(h.keys())[-2:] == ["saslSupportedMechs", "ok"]
    h = anon.admin.command({"hello": 1, "saslSupportedMechs": "admin.only256"})
    assert h["saslSupportedMechs"] == ["SCRAM-SHA-256"]
    assert "saslSupportedMechs" not in anon.admin.command(
        {"hello": 1, "saslSupportedMechs": "admin.ghost"})
    code, name, msg = command_error(anon.admin, {"hello": 1, "saslSupportedMechs": "nodot"})
    assert (code, name) == (2, "BadValue") and "database.user" in msg
    # A speculative saslStart answers inside hello; a failing one is dropped silently.
    h = anon.admin.command({"hello": 1, "speculativeAuthenticate": {
        "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(b"n,,n=root,r=0123456789"),
        "db": "admin"}})
    spec = h["speculativeAuthenticate"]
    assert spec["conversationId"] == 1 and spec["done"] is False
    assert bytes(spec["payload"]).decode().startswith("r=0123456789")
    h = anon.admin.command({"hello": 1, "speculativeAuthenticate": {
        "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(b"n,,n=ghost,r=01234567"),
        "db": "admin"}})
    assert "speculativeAuthenticate" not in h and h["ok"] == 1
    anon.close()
    # pymongo authenticates speculatively in its handshake when it can.
    c = login(auth_server, "only256", "p", mechanism="SCRAM-SHA-256")
    c.admin.command("connectionStatus")
    c.close()
    ok = log_attrs(auth_server, 20250)
    assert any(a["principalName"] == "only256" and a["speculative"] is True and
               a["mechanism"] == "SCRAM-SHA-256" for a in ok)


def test_sha256_passwords_are_saslprepped(auth_server, root):
    # U+00AD (soft hyphen) maps to nothing and U+2168 (ROMAN NUMERAL NINE) to "IX" under SASLprep.
    make_user(root, "admin", "prep", [{"role": "read", "db": "app"}], pwd="I\u00adX",
              mechanisms=["SCRAM-SHA-256"])
    for typed in ["IX", "\u2168"]:
        c = login(auth_server, "prep", typed, mechanism="SCRAM-SHA-256")
        assert c.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [
            {"user": "prep", "db": "admin"}]
        c.close()


def test_logout_and_changes_to_the_user_apply_on_the_next_command(auth_server, root):
    make_user(root, "app", "writer", ["readWrite"])
    c = login(auth_server, "writer", "pw", source="app")
    c.app.w.insert_one({"a": 1})
    root.app.command("revokeRolesFromUser", "writer", roles=["readWrite"])
    assert denied(c.app, {"insert": "w", "documents": [{"a": 2}]})
    root.app.command("grantRolesToUser", "writer", roles=[{"role": "read", "db": "app"}])
    assert c.app.w.find_one({"a": 1})["a"] == 1
    assert denied(c.app, {"insert": "w", "documents": [{"a": 3}]})
    c.app.command("logout")
    code, _, msg = command_error(c.app, {"find": "w"})
    assert (code, msg) == (13, "Command find requires authentication")
    c.close()
    c = login(auth_server, "writer", "pw", source="app")
    c.app.w.find_one()
    root.app.command("dropUser", "writer")
    code, _, msg = command_error(c.app, {"find": "w"})
    assert (code, msg) == (13, "Command find requires authentication")
    c.close()


# -- built-in roles ---------------------------------------------------------------------------------
ROLE_CASES = [
    # role, what it may do, what it may not
    ("read@app", ["find", "listCollections", "dbStats", "count"],
     ["insert", "dropDatabase", "serverStatus", "createUser", "findOther"]),
    ("readWrite@app", ["find", "insert", "update", "delete", "createIndexes", "drop"],
     ["collMod", "createUser", "dropDatabase", "findOther", "serverStatus"]),
    ("dbAdmin@app", ["collMod", "dropDatabase", "listCollections", "collStats", "createIndexes"],
     ["find", "insert", "createUser", "serverStatus"]),
    ("userAdmin@app", ["createUser", "usersInfo"], ["find", "insert", "serverStatus"]),
    ("dbOwner@app", ["find", "insert", "collMod", "createUser", "dropDatabase"],
     ["findOther", "serverStatus"]),
    ("clusterMonitor@admin", ["serverStatus", "currentOp", "getCmdLineOpts", "getLog", "dbStats"],
     ["find", "insert", "killOp", "setParameter"]),
    ("hostManager@admin", ["killOp", "setParameter"], ["serverStatus", "find", "insert"]),
    ("clusterManager@admin", ["getDefaultRWConcern"], ["find", "serverStatus", "killOp"]),
    ("clusterAdmin@admin", ["serverStatus", "killOp", "dropDatabase", "getCmdLineOpts"],
     ["find", "insert", "createUser"]),
    ("readAnyDatabase@admin", ["find", "findOther", "listDatabases"],
     ["insert", "createUser", "serverStatus"]),
    ("readWriteAnyDatabase@admin", ["find", "insert", "findOther", "insertOther"],
     ["createUser", "serverStatus", "collMod"]),
    ("userAdminAnyDatabase@admin", ["createUser", "createUserOther", "usersInfo"],
     ["find", "insert"]),
    ("dbAdminAnyDatabase@admin", ["collMod", "collModOther", "dropDatabase"],
     ["find", "insert", "createUser"]),
    ("backup@admin", ["find", "findUsers", "serverStatus"], ["insert", "createUser"]),
    ("restore@admin", ["insert", "createUser"], ["find", "serverStatus"]),
    ("root@admin", ["find", "insert", "findOther", "serverStatus", "killOp", "createUser",
                    "findUsers", "collMod"], []),
]


def action_command(action, n):
    """(database, command) exercising `action`: on app unless the name ends in Other."""
    other = action.endswith("Other")
    base = action[:-5] if other else action
    db = "other" if other else "app"
    cmds = {
        "find": {"find": "c"},
        "insert": {"insert": "c", "documents": [{"n": n}]},
        "update": {"update": "c", "updates": [{"q": {"n": -1}, "u": {"$set": {"x": 1}}}]},
        "delete": {"delete": "c", "deletes": [{"q": {"n": -1}, "limit": 1}]},
        "count": {"count": "c"},
        "listCollections": {"listCollections": 1},
        "dbStats": {"dbStats": 1},
        "collStats": {"collStats": "c"},
        "createIndexes": {"createIndexes": "c", "indexes": [{"key": {f"k{n}": 1},
                                                             "name": f"k{n}_1"}]},
        "drop": {"drop": f"gone{n}"},
        "collMod": {"collMod": "c"},
        "dropDatabase": {"dropDatabase": 1},
        "createUser": {"createUser": f"made{n}", "pwd": "x", "roles": []},
        "usersInfo": {"usersInfo": 1},
        "serverStatus": {"serverStatus": 1},
        "currentOp": {"currentOp": 1},
        "getCmdLineOpts": {"getCmdLineOpts": 1},
        "getLog": {"getLog": "global"},
        "killOp": {"killOp": 1, "op": 123456},
        "setParameter": {"setParameter": 1, "quiet": False},
        "getDefaultRWConcern": {"getDefaultRWConcern": 1},
        "listDatabases": {"listDatabases": 1, "authorizedDatabases": False},
        "findUsers": {"find": "system.users"},
    }
    cluster = {"serverStatus", "currentOp", "getCmdLineOpts", "getLog", "killOp", "setParameter",
               "getDefaultRWConcern", "listDatabases", "findUsers"}
    return ("admin" if base in cluster else db), cmds[base]


@pytest.mark.parametrize("role,may,may_not", ROLE_CASES, ids=[c[0] for c in ROLE_CASES])
def test_built_in_role(auth_server, root, role, may, may_not):
    name, role_db = role.split("@")
    user = "r_" + name
    make_user(root, "admin", user, [{"role": name, "db": role_db}])
    for db in ("app", "other"):
        root[db].c.insert_one({"seed": True})
    c = login(auth_server, user, "pw")
    n = abs(hash(role)) % 1000
    for action in may:
        db, cmd = action_command(action, n)
        reply = run_command(c[db], cmd)
        assert reply.get("code") != 13, f"{role} should be allowed {action}: {reply}"
    for action in may_not:
        db, cmd = action_command(action, n)
        reply = run_command(c[db], cmd)
        assert reply.get("code") == 13, f"{role} should be denied {action}: {reply}"
        assert reply["errmsg"].startswith(f"not authorized on {db} to execute command")
    c.close()


def test_time_series_collections_are_authorized_on_their_view(auth_server, root):
    root.tsdb.create_collection("weather", timeseries={"timeField": "t", "metaField": "m"})
    make_user(root, "tsdb", "tsw", ["readWrite"])
    make_user(root, "tsdb", "tsr", ["read"])
    import datetime
    now = datetime.datetime(2026, 1, 1)
    w = login(auth_server, "tsw", "pw", source="tsdb")
    w.tsdb.weather.insert_many([{"t": now, "m": "a", "v": i} for i in range(5)])
    r = login(auth_server, "tsr", "pw", source="tsdb")
    assert r.tsdb.weather.count_documents({}) == 5
    assert len(list(r.tsdb["system.buckets.weather"].find())) == 1
    assert denied(r.tsdb, {"insert": "weather", "documents": [{"t": now, "m": "b"}]})
    w.close()
    r.close()


def test_pipeline_stages_need_their_targets_privileges(auth_server, root):
    make_user(root, "admin", "pipe", [{"role": "readWrite", "db": "app"},
                                      {"role": "read", "db": "ro"}])
    root.ro.src.insert_one({"k": 1})
    root.app.pc.insert_one({"k": 1})
    c = login(auth_server, "pipe", "pw")
    lookup = lambda coll: {"aggregate": "pc", "cursor": {}, "pipeline": [
        {"$lookup": {"from": coll, "localField": "k", "foreignField": "k", "as": "j"}}]}
    assert c.app.command(lookup("pc"))["cursor"]["firstBatch"][0]["j"][0]["k"] == 1
    # A system collection the roles do not cover, joined directly or from a sub-pipeline.
    assert denied(c.app, lookup("system.views"))
    assert denied(c.app, {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$unionWith": {"coll": "c", "pipeline": [{"$lookup": {
            "from": "system.views", "pipeline": [], "as": "j"}}]}}]})
    assert denied(c.app, {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$facet": {"a": [{"$unionWith": "system.views"}]}}]})
    # Writing stages need insert where they write: read-only in ro, read-write in app.
    assert denied(c.ro, {"aggregate": "src", "cursor": {}, "pipeline": [{"$out": "copy"}]})
    assert denied(c.app, {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$merge": {"into": {"db": "ro", "coll": "merged"}}}]})
    c.ro.command({"aggregate": "src", "cursor": {}, "pipeline": [
        {"$merge": {"into": {"db": "app", "coll": "merged"}}}]})
    assert root.app.merged.count_documents({}) == 1
    c.close()


def test_list_databases_shows_a_user_its_own_databases(auth_server, root):
    root.mine.c.insert_one({"x": 1})
    root.theirs.c.insert_one({"x": 1})
    make_user(root, "mine", "owner", ["readWrite"])
    c = login(auth_server, "owner", "pw", source="mine")
    names = [d["name"] for d in c.admin.command("listDatabases")["databases"]]
    assert "mine" in names and "theirs" not in names
    assert "theirs" in [d["name"] for d in root.admin.command("listDatabases")["databases"]]
    c.close()


# -- users ------------------------------------------------------------------------------------------
def test_users_live_in_admin_system_users_in_mongodbs_shape(auth_server, root):
    make_user(root, "app", "shape", [{"role": "read", "db": "app"}], pwd="p",
              customData={"team": "ops"})
    doc = root.admin["system.users"].find_one({"_id": "app.shape"})
    assert list(doc.keys()) == ["_id", "userId", "user", "db", "credentials", "customData",
                                "roles"]
    assert isinstance(doc["userId"], uuid.UUID)  # BinData subtype 4
    assert list(doc["credentials"].keys()) == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    sha1, sha256 = doc["credentials"]["SCRAM-SHA-1"], doc["credentials"]["SCRAM-SHA-256"]
    assert list(sha256.keys()) == ["iterationCount", "salt", "storedKey", "serverKey"]
    assert (sha1["iterationCount"], sha256["iterationCount"]) == (10000, 15000)
    assert (len(sha1["salt"]), len(sha256["salt"])) == (24, 40)  # 16 and 28 bytes, base64
    assert "p" not in json.dumps(doc["credentials"], default=str).split('"')
    indexes = root.admin["system.users"].index_information()
    assert indexes["user_1_db_1"]["unique"] is True

    info = root.app.command("usersInfo", "shape")["users"]
    assert len(info) == 1
    assert list(info[0].keys()) == ["_id", "userId", "user", "db", "customData", "roles",
                                    "mechanisms"]
    assert info[0]["mechanisms"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
    creds = root.app.command("usersInfo", "shape", showCredentials=True)["users"][0]
    assert creds["credentials"]["SCRAM-SHA-256"]["iterationCount"] == 15000
    priv = root.app.command("usersInfo", {"user": "shape", "db": "app"},
                            showPrivileges=True)["users"][0]
    assert {"resource": {"db": "app", "collection": ""}, "actions": priv["inheritedPrivileges"][0]
            ["actions"]} == priv["inheritedPrivileges"][0]
    assert "find" in priv["inheritedPrivileges"][0]["actions"]
    filtered = root.app.command("usersInfo", 1, filter={"customData.team": "ops"})["users"]
    assert [u["user"] for u in filtered] == ["shape"]
    all_dbs = root.admin.command("usersInfo", {"forAllDBs": True})["users"]
    assert {"root", "shape"} <= {u["user"] for u in all_dbs}


def test_user_management_errors(auth_server, root):
    make_user(root, "app", "dup", [])
    code, name, msg = command_error(root.app, {"createUser": "dup", "pwd": "x", "roles": []})
    assert (code, name, msg) == (51003, "Location51003", 'User "dup@app" already exists')
    code, name, msg = command_error(root.app, {"createUser": "r", "pwd": "x", "roles": ["nope"]})
    assert (code, name, msg) == (31, "RoleNotFound", "Could not find role: nope@app")
    # The cluster roles exist only in admin.
    code, _, _ = command_error(root.app, {"createUser": "r", "pwd": "x", "roles": ["root"]})
    assert code == 31
    code, name, _ = command_error(root.app, {"createUser": "r", "pwd": "x"})
    assert (code, name) == (40414, "Location40414")
    code, _, msg = command_error(root.local, {"createUser": "r", "pwd": "x", "roles": []})
    assert (code, msg) == (2, "Cannot create users in the local database")
    code, name, msg = command_error(root.app, {"dropUser": "ghost"})
    assert (code, name, msg) == (11, "UserNotFound", "User 'ghost@app' not found")
    code, name, msg = command_error(root.app, {"updateUser": "ghost", "pwd": "x"})
    assert (code, name, msg) == (11, "UserNotFound", "User ghost@app not found")
    code, _, msg = command_error(root.app, {"updateUser": "dup"})
    assert (code, msg) == (2, "Must specify at least one field to update in updateUser")
    code, _, msg = command_error(root.app, {"grantRolesToUser": "dup", "roles": []})
    assert (code, msg) == (2, 'grantRolesToUser command requires a non-empty "roles" array')
    code, _, _ = command_error(root.app, {"createUser": "sha", "pwd": "x", "roles": [],
                                          "digestPassword": False})
    assert code == 2  # SCRAM-SHA-256 needs the password itself
    make_user(root, "app", "gone1", [])
    make_user(root, "app", "gone2", [])
    n = root.app.command("dropAllUsersFromDatabase")["n"]
    assert n >= 3 and root.app.command("usersInfo", 1)["users"] == []


def test_update_user_changes_the_password(auth_server, root):
    make_user(root, "app", "rotating", ["read"], pwd="old")
    root.app.command("updateUser", "rotating", pwd="new")
    c = login(auth_server, "rotating", "old", source="app")
    with pytest.raises(OperationFailure) as e:
        c.app.c.find_one()
    assert e.value.code == 18
    c.close()
    c = login(auth_server, "rotating", "new", source="app")
    c.app.c.find_one()
    c.close()


def test_mongosh_logs_in_with_user_and_password(auth_server, root, tmp_path):
    make_user(root, "admin", "shelluser", [{"role": "readWrite", "db": "shell"}], pwd="sh-pw")
    p = subprocess.run(
        [mongosh_path(), f"mongodb://127.0.0.1:{auth_server.port}/shell", "--quiet",
         "-u", "shelluser", "-p", "sh-pw", "--authenticationDatabase", "admin", "--eval",
         "db.c.insertOne({a: 1}); print(db.c.countDocuments({})); "
         "print(JSON.stringify(db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers))"],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path), cwd=REPO)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    assert lines[-2] == "1"
    assert json.loads(lines[-1]) == [{"user": "shelluser", "db": "admin"}]
    bad = subprocess.run(
        [mongosh_path(), f"mongodb://127.0.0.1:{auth_server.port}/shell", "--quiet",
         "-u", "shelluser", "-p", "wrong", "--authenticationDatabase", "admin", "--eval", "1"],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path), cwd=REPO)
    assert bad.returncode != 0
    assert "Authentication failed" in bad.stdout + bad.stderr


def test_without_auth_users_can_still_log_in(server):
    c = server.client()
    c.admin.command("createUser", "noauth_user", pwd="p", roles=["root"])
    u = server.client(username="noauth_user", password="p", authSource="admin")
    assert u.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"] == [
        {"user": "noauth_user", "db": "admin"}]
    # Without --auth, every command runs for everyone.
    assert c.admin.command("serverStatus")["ok"] == 1
    c.admin.command("dropUser", "noauth_user")
    u.close()
    c.close()


def test_config_file_enables_authorization(fresh_server, tmp_path):
    conf = tmp_path / "hg.conf"
    conf.write_text("security:\n  authorization: enabled\n")
    s = fresh_server.new(extra_args=["--config", str(conf)])
    anon = s.client()
    anon.admin.command("createUser", "boss", pwd="p", roles=["root"])
    code, _, _ = command_error(anon.test, {"find": "c"})
    assert code == 13
    boss = login(s, "boss", "p")
    opts = boss.admin.command("getCmdLineOpts")["parsed"]
    assert opts["security"] == {"authorization": "enabled"}
    boss.close()
    anon.close()
    bad = tmp_path / "bad.conf"
    bad.write_text("security:\n  authorization: sometimes\n")
    s2 = fresh_server.new(extra_args=["--config", str(bad)], start=False)
    s2.spawn()
    assert s2.wait_exit(30) not in (0, None)


def test_current_op_own_ops_needs_no_privilege_and_shows_only_ones_own(auth_server, root):
    make_user(root, "app", "opsuser", ["readWrite"])
    c = login(auth_server, "opsuser", "pw", source="app")
    assert denied(c.admin, {"currentOp": 1})
    mine = c.admin.command({"currentOp": 1, "$ownOps": True})["inprog"]
    assert mine and all(op["effectiveUsers"] == [{"user": "opsuser", "db": "app"}] for op in mine)
    # The $currentOp stage: one's own operations need no privilege, everyone's need inprog.
    staged = list(c.admin.aggregate([{"$currentOp": {}}]))
    assert staged and all(op["effectiveUsers"] == [{"user": "opsuser", "db": "app"}]
                          for op in staged)
    assert denied(c.admin, {"aggregate": 1, "cursor": {},
                            "pipeline": [{"$currentOp": {"allUsers": True}}]})
    everyone = root.admin.command({"currentOp": 1})["inprog"]
    assert any(op.get("effectiveUsers") == [{"user": "root", "db": "admin"}] for op in everyone)
    c.close()


def test_a_cursor_continues_and_dies_only_for_the_users_that_opened_it(auth_server, root):
    root.cur.c.insert_many([{"i": i} for i in range(5)])
    make_user(root, "cur", "opener", ["read"])
    make_user(root, "cur", "stranger", ["read"])
    a = login(auth_server, "opener", "pw", source="cur")
    b = login(auth_server, "stranger", "pw", source="cur")
    first = a.cur.command({"find": "c", "batchSize": 1})["cursor"]
    cursor_id = first["id"]
    assert cursor_id != 0 and len(first["firstBatch"]) == 1
    code, name, msg = command_error(b.cur, {"getMore": cursor_id, "collection": "c"})
    assert (code, name, msg) == (13, "Unauthorized",
                                 f"cursor id {cursor_id} was not created by the authenticated user")
    code, _, _ = command_error(b.cur, {"killCursors": "c", "cursors": [cursor_id]})
    assert code == 13
    # The owner goes on; root (killAnyCursor) may kill it.
    more = a.cur.command({"getMore": cursor_id, "collection": "c", "batchSize": 1})["cursor"]
    assert len(more["nextBatch"]) == 1
    killed = root.cur.command({"killCursors": "c", "cursors": [cursor_id]})
    assert killed["cursorsKilled"] == [cursor_id]
    a.close()
    b.close()


def test_a_user_may_kill_its_own_operation_but_not_anothers(auth_server, root):
    make_user(root, "ops", "runner", ["readWrite"])
    make_user(root, "ops", "bystander", ["readWrite"])
    runner = login(auth_server, "runner", "pw", source="ops")
    runner.ops.c.insert_many([{"v": i} for i in range(2000)])
    runaway = RunawayAggregate(runner.ops.c)
    ops = runaway.wait_for_ops(runner, **{"$ownOps": True})
    assert len(ops) == 1, ops
    bystander = login(auth_server, "bystander", "pw", source="ops")
    assert denied(bystander.admin, {"killOp": 1, "op": ops[0]["opid"]})
    assert runner.admin.command({"killOp": 1, "op": ops[0]["opid"]})["info"] == \
        "attempting to kill op"
    runaway.join()
    assert runaway.error is not None and runaway.error.code == 11601
    bystander.close()
    runner.close()


# -- user-defined roles -------------------------------------------------------------------------------
def test_user_defined_roles_grant_what_they_hold_and_what_they_inherit(auth_server, root):
    root.roles_db.c.insert_one({"x": 1})
    root.roles_db.d.insert_one({"x": 2})
    root.roles_db.command("createRole", "cReader", roles=[], privileges=[
        {"resource": {"db": "roles_db", "collection": "c"}, "actions": ["find"]}])
    make_user(root, "roles_db", "custom", ["cReader"])
    c = login(auth_server, "custom", "pw", source="roles_db")
    assert c.roles_db.c.find_one()["x"] == 1
    assert denied(c.roles_db, {"find": "d"})
    assert denied(c.roles_db, {"insert": "c", "documents": [{"x": 3}]})
    # Changes to the role apply at the user's next command.
    root.roles_db.command("grantPrivilegesToRole", "cReader", privileges=[
        {"resource": {"db": "roles_db", "collection": "c"}, "actions": ["insert"]}])
    c.roles_db.c.insert_one({"x": 3})
    root.roles_db.command("revokePrivilegesFromRole", "cReader", privileges=[
        {"resource": {"db": "roles_db", "collection": "c"}, "actions": ["insert"]}])
    assert denied(c.roles_db, {"insert": "c", "documents": [{"x": 4}]})
    root.roles_db.command("grantRolesToRole", "cReader", roles=["read"])
    assert c.roles_db.d.find_one()["x"] == 2
    status = c.admin.command("connectionStatus")["authInfo"]
    assert status["authenticatedUserRoles"] == [{"role": "cReader", "db": "roles_db"},
                                                {"role": "read", "db": "roles_db"}]
    root.roles_db.command("revokeRolesFromRole", "cReader", roles=["read"])
    assert denied(c.roles_db, {"find": "d"})

    info = root.roles_db.command("rolesInfo", "cReader", showPrivileges=True)["roles"]
    assert len(info) == 1
    assert (info[0]["role"], info[0]["db"], info[0]["isBuiltin"]) == ("cReader", "roles_db", False)
    assert info[0]["privileges"] == [{"resource": {"db": "roles_db", "collection": "c"},
                                      "actions": ["find"]}]
    stored = root.admin["system.roles"].find_one({"_id": "roles_db.cReader"})
    assert list(stored.keys()) == ["_id", "role", "db", "privileges", "roles"]
    builtin = root.roles_db.command("rolesInfo", {"role": "read", "db": "roles_db"})["roles"][0]
    assert builtin["isBuiltin"] is True

    # Dropping the role takes it from its users.
    root.roles_db.command("dropRole", "cReader")
    assert denied(c.roles_db, {"find": "c"})
    assert root.roles_db.command("usersInfo", "custom")["users"][0]["roles"] == []
    c.close()


def test_role_management_errors(auth_server, root):
    root.rerr.command("createRole", "base", privileges=[], roles=[])
    code, name, msg = command_error(root.rerr, {"createRole": "base", "privileges": [],
                                                "roles": []})
    assert (code, name, msg) == (51002, "Location51002", 'Role "base@rerr" already exists')
    code, _, _ = command_error(root.rerr, {"createRole": "read", "privileges": [], "roles": []})
    assert code == 2
    code, name, _ = command_error(root.rerr, {"createRole": "wide", "roles": [], "privileges": [
        {"resource": {"db": "other", "collection": ""}, "actions": ["find"]}]})
    assert (code, name) == (49, "InvalidRoleModification")
    code, _, msg = command_error(root.rerr, {"createRole": "odd", "roles": [], "privileges": [
        {"resource": {"db": "rerr", "collection": ""}, "actions": ["fly"]}]})
    assert (code, msg) == (2, "Unrecognized action privilege string: fly")
    root.rerr.command("createRole", "top", privileges=[], roles=["base"])
    code, name, _ = command_error(root.rerr, {"grantRolesToRole": "base", "roles": ["top"]})
    assert (code, name) == (49, "InvalidRoleModification")
    code, name, _ = command_error(root.rerr, {"dropRole": "ghost"})
    assert (code, name) == (31, "RoleNotFound")
    code, _, _ = command_error(root.rerr, {"createRole": "x", "privileges": [],
                                           "roles": ["ghost"]})
    assert code == 31
    # The admin database's roles may reach every database and the cluster.
    root.admin.command("createRole", "monitorAll", roles=[], privileges=[
        {"resource": {"cluster": True}, "actions": ["serverStatus"]},
        {"resource": {"db": "", "collection": ""}, "actions": ["find"]}])
    assert root.rerr.command("dropAllRolesFromDatabase")["n"] == 2
    assert root.rerr.command("rolesInfo", 1)["roles"] == []


def test_user_and_role_commands_refuse_malformed_arguments(auth_server, root):
    code, _, _ = command_error(root.app, {"usersInfo": 3.5})
    assert code == 2
    code, _, msg = command_error(root.app, {"usersInfo": 1, "showPrivileges": True})
    assert (code, msg) == (20, "Privilege or restriction details require exact-match usersInfo "
                                "queries")
    code, _, _ = command_error(root.app, {"createUser": 5, "pwd": "x", "roles": []})
    assert code == 14
    code, _, msg = command_error(root.app, {"createUser": "u", "pwd": "", "roles": []})
    assert (code, msg) == (2, "Password cannot be empty")
    code, _, msg = command_error(root.app, {"createUser": "u", "pwd": "x", "roles": [],
                                            "mechanisms": ["PLAIN"]})
    assert (code, msg) == (2, "Unknown auth mechanism 'PLAIN'")
    code, _, _ = command_error(root.app, {"createUser": "u", "pwd": "x", "roles": [],
                                          "bogus": 1})
    assert code == 40415
    root.rbad.command("createRole", "r", privileges=[], roles=[])
    code, _, msg = command_error(root.rbad, {"grantPrivilegesToRole": "r", "privileges": []})
    assert (code, msg) == (2, 'grantPrivilegesToRole command requires a non-empty "privileges" '
                              'array')
    code, _, msg = command_error(root.rbad, {"grantRolesToRole": "r", "roles": ["r"]})
    assert (code, msg) == (49, "Cannot grant role r@rbad to itself.")
    code, _, msg = command_error(root.rbad, {"dropRole": "read"})
    assert (code, msg) == (2, "read@rbad is a built-in role and cannot be modified")
    code, _, _ = command_error(root.rbad, {"rolesInfo": 3.5})
    assert code == 2
    code, _, msg = command_error(root.rbad, {"updateRole": "r"})
    assert (code, msg) == (2, "Must specify at least one field to update in updateRole")
    code, _, _ = command_error(root.rbad, {"createRole": "q", "roles": [], "privileges": [
        {"resource": {"cluster": False}, "actions": ["find"]}]})
    assert code == 2
    root.rbad.command("dropAllRolesFromDatabase")


def test_auth_and_noauth_together_are_refused(fresh_server):
    s = fresh_server.new(extra_args=["--auth", "--noauth"], start=False)
    s.spawn()
    assert s.wait_exit(30) not in (0, None)
    assert "--auth and --noauth" in s.log_text()


def test_kill_sessions_reaches_only_ones_own_sessions(auth_server, root):
    make_user(root, "sess", "alice", ["readWrite"])
    make_user(root, "sess", "bob", ["readWrite"])
    root.sess.c.insert_many([{"i": i} for i in range(2000)])
    alice = login(auth_server, "alice", "pw", source="sess")
    bob = login(auth_server, "bob", "pw", source="sess")
    session = alice.start_session()
    runaway = RunawayAggregate(alice.sess.c, session=session)
    assert runaway.wait_for_ops(root)
    # Bob's killSessions reaches only Bob's sessions, whatever ids he names.
    bob.admin.command("killSessions", [session.session_id])
    bob.admin.command("killSessions", [])
    # killAllSessions needs killAnySession unless it names only oneself.
    assert denied(bob.admin, {"killAllSessions": []})
    assert denied(bob.admin, {"killAllSessions": [{"user": "alice", "db": "sess"}]})
    bob.admin.command("killAllSessions", [{"user": "bob", "db": "sess"}])
    time.sleep(0.5)  # a killed operation ends within about 100 ms
    assert runaway.wait_for_ops(root), "Bob stopped Alice's operation"
    alice.admin.command("killSessions", [session.session_id])
    runaway.join()
    assert runaway.error is not None and runaway.error.code == 11601
    # root (killAnySession) ends all of a user's sessions.
    second = RunawayAggregate(alice.sess.c)
    assert second.wait_for_ops(root)
    root.admin.command("killAllSessions", [{"user": "alice", "db": "sess"}])
    second.join()
    assert second.error is not None and second.error.code == 11601
    session.end_session()
    alice.close()
    bob.close()
