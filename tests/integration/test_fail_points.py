"""Fail points (MongoDB 7.0's configureFailPoint and waitForFailPoint, test-only commands) and
the failCommand fail point that the drivers' test suites use: the commands exist only with
--setParameter enableTestCommands=1; modes, counts and errors answer as MongoDB's; failCommand
fails, delays or hangs up on the commands it lists."""

import subprocess
import threading
import time

import pytest
from pymongo.errors import AutoReconnect, OperationFailure, WriteConcernError

from conftest import command_error, hourglassd_path, run_command

TEST_COMMANDS = ["configureFailPoint", "waitForFailPoint"]


@pytest.fixture
def tc_db(tc_client, unique_name):
    d = tc_client[("t_" + unique_name)[:60]]
    yield d
    for name in ("failCommand", "dummy"):
        tc_client.admin.command({"configureFailPoint": name, "mode": "off"})
    tc_client.drop_database(d.name)


def configure(client, name="failCommand", mode="alwaysOn", data=None):
    cmd = {"configureFailPoint": name, "mode": mode}
    if data is not None:
        cmd["data"] = data
    reply = client.admin.command(cmd)
    assert reply["ok"] == 1
    return reply["count"]


def times_entered(client, name="failCommand"):
    """The fail point's entries so far: what configureFailPoint answers, keeping the mode off."""
    return configure(client, name, "off")


def ping_fails(db):
    reply = run_command(db, {"ping": 1})
    if reply["ok"] == 1:
        return False
    assert reply["code"] == 2 and reply["errmsg"] == "Failing command via 'failCommand' failpoint"
    return True


def fail_pings(client, mode):
    configure(client, mode=mode, data={"failCommands": ["ping"], "errorCode": 2})


def test_test_commands_do_not_exist_without_enable_test_commands(fresh_server):
    server = fresh_server.new(env_args=False)
    client = server.client()
    try:
        for name in TEST_COMMANDS:
            for db in (client.admin, client.test):
                code, code_name, msg = command_error(db, {name: "dummy", "mode": "alwaysOn",
                                                          "timesEntered": 1, "maxTimeMS": 1})
                assert (code, code_name) == (59, "CommandNotFound")
                assert msg == f"no such command: '{name}'"
        listed = client.admin.command("listCommands")["commands"]
        assert "ping" in listed
        assert not set(TEST_COMMANDS) & set(listed)
        assert client.admin.command({"getParameter": 1, "enableTestCommands": 1}) == {
            "enableTestCommands": False, "ok": 1.0}
        code, _, msg = command_error(client.admin, {"setParameter": 1, "enableTestCommands": 1})
        assert code == 20, msg  # startup only
    finally:
        client.close()


def test_test_commands_exist_with_enable_test_commands(tc_client, tc_db):
    listed = tc_client.admin.command("listCommands")["commands"]
    for name in TEST_COMMANDS:
        assert listed[name]["adminOnly"] is True
    assert tc_client.admin.command({"getParameter": 1, "enableTestCommands": 1})[
        "enableTestCommands"] is True
    # Admin-only, as every admin command answers elsewhere.
    for cmd in ({"configureFailPoint": "dummy", "mode": "off"},
                {"waitForFailPoint": "dummy", "timesEntered": 0, "maxTimeMS": 10}):
        code, code_name, msg = command_error(tc_db, cmd)
        assert (code, code_name) == (13, "Unauthorized")
        assert msg == f"{next(iter(cmd))} may only be run against the admin database."


def test_configure_answers_the_entries_before_it(tc_client, tc_db):
    before = configure(tc_client, data={"failCommands": ["ping"], "errorCode": 2})
    assert isinstance(before, int)
    assert all(ping_fails(tc_db) for _ in range(3))
    # Entries are counted across configurations, and turning off does not reset them.
    assert configure(tc_client, mode="off") == before + 3
    assert not ping_fails(tc_db)
    assert times_entered(tc_client) == before + 3
    assert configure(tc_client, name="dummy", mode="alwaysOn", data={"x": 1}) == 0


def test_modes(tc_client, tc_db):
    start = times_entered(tc_client)
    fail_pings(tc_client, {"times": 2})
    assert [ping_fails(tc_db) for _ in range(4)] == [True, True, False, False]
    assert times_entered(tc_client) == start + 2

    fail_pings(tc_client, {"skip": 2})
    assert [ping_fails(tc_db) for _ in range(5)] == [False, False, True, True, True]
    assert times_entered(tc_client) == start + 5  # the skipped checks are not entries

    fail_pings(tc_client, {"activationProbability": 0})
    assert not any(ping_fails(tc_db) for _ in range(20))
    fail_pings(tc_client, {"activationProbability": 1})
    assert all(ping_fails(tc_db) for _ in range(20))
    assert times_entered(tc_client) == start + 25

    fail_pings(tc_client, "alwaysOn")
    assert all(ping_fails(tc_db) for _ in range(3))
    fail_pings(tc_client, "off")
    assert not ping_fails(tc_db)
    # As in MongoDB, {times: 0} still activates once.
    fail_pings(tc_client, {"times": 0})
    assert [ping_fails(tc_db) for _ in range(2)] == [True, False]
    assert times_entered(tc_client) == start + 29


@pytest.mark.parametrize("cmd, code, msg", [
    ({"configureFailPoint": "noSuchFailPoint", "mode": "alwaysOn"}, 266,
     "noSuchFailPoint not found"),
    ({"configureFailPoint": 1, "mode": "alwaysOn"}, 266, " not found"),
    ({"configureFailPoint": "dummy"}, 20, "When setting a failpoint, you must supply a 'mode'"),
    ({"configureFailPoint": "dummy", "mode": "sometimes"}, 2, "unknown mode: sometimes"),
    ({"configureFailPoint": "dummy", "mode": 1}, 14, "'mode' must be a string or JSON object"),
    ({"configureFailPoint": "dummy", "mode": {}}, 2,
     "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or "
     "'{activationProbability:p}'"),
    ({"configureFailPoint": "dummy", "mode": {"times": "1"}}, 14,
     'Expected field "times" to have numeric type, but found string'),
    ({"configureFailPoint": "dummy", "mode": {"times": 1.5}}, 2,
     'Expected field "times" to have a value exactly representable as a 64-bit integer, but '
     'found times: 1.5'),
    ({"configureFailPoint": "dummy", "mode": {"times": -1}}, 2,
     "'times' option to 'mode' must be positive"),
    ({"configureFailPoint": "dummy", "mode": {"times": 2 ** 31}}, 2,
     "'times' option to 'mode' is too large"),
    ({"configureFailPoint": "dummy", "mode": {"skip": -1}}, 2,
     "'skip' option to 'mode' must be positive"),
    ({"configureFailPoint": "dummy", "mode": {"activationProbability": "x"}}, 14,
     "the 'activationProbability' option to 'mode' must be a double between 0 and 1"),
    ({"configureFailPoint": "dummy", "mode": {"activationProbability": 1.5}}, 2,
     "activationProbability must be between 0.0 and 1.0; found 1.5"),
    ({"configureFailPoint": "dummy", "mode": "alwaysOn", "data": "x"}, 14,
     "the 'data' option must be a JSON object"),
    ({"waitForFailPoint": "noSuchFailPoint", "timesEntered": 1, "maxTimeMS": 10}, 266,
     "noSuchFailPoint not found"),
    ({"waitForFailPoint": 1, "timesEntered": 1, "maxTimeMS": 10}, 14,
     "BSON field 'waitForFailPoint.waitForFailPoint' is the wrong type 'int', expected type "
     "'string'"),
    ({"waitForFailPoint": "dummy", "maxTimeMS": 10}, 40414,
     "BSON field 'waitForFailPoint.timesEntered' is missing but a required field"),
    ({"waitForFailPoint": "dummy", "timesEntered": 1}, 40414,
     "BSON field 'waitForFailPoint.maxTimeMS' is missing but a required field"),
    ({"waitForFailPoint": "dummy", "timesEntered": 1, "maxTimeMS": -1}, 2,
     "-1 value for maxTimeMS is out of range [0, 2147483647]"),
])
def test_errors(tc_client, tc_db, cmd, code, msg):
    assert command_error(tc_client.admin, cmd)[::2] == (code, msg)


def test_wait_for_fail_point(tc_client, tc_db):
    target = configure(tc_client, data={"failCommands": ["ping"], "errorCode": 2}) + 2
    # Already entered that often: answers at once.
    reply = tc_client.admin.command({"waitForFailPoint": "failCommand",
                                     "timesEntered": target - 2, "maxTimeMS": 10})
    assert reply == {"ok": 1.0}

    def ping_twice_later():
        time.sleep(0.3)
        ping_fails(tc_db)
        ping_fails(tc_db)

    pinger = threading.Thread(target=ping_twice_later)
    pinger.start()
    start = time.monotonic()
    tc_client.admin.command({"waitForFailPoint": "failCommand", "timesEntered": target,
                             "maxTimeMS": 60000})
    assert time.monotonic() - start >= 0.25
    pinger.join()

    start = time.monotonic()
    code, code_name, msg = command_error(
        tc_client.admin, {"waitForFailPoint": "failCommand", "timesEntered": target + 1,
                          "maxTimeMS": 200})
    assert (code, code_name, msg) == (50, "MaxTimeMSExpired", "operation exceeded time limit")
    assert time.monotonic() - start >= 0.2


def test_fail_command_error_code_on_insert(tc_client, tc_db):
    configure(tc_client, mode={"times": 1},
              data={"failCommands": ["insert"], "errorCode": 2, "errorLabels": ["MyLabel"]})
    with pytest.raises(OperationFailure) as err:
        tc_db.c.insert_one({"_id": 1})
    assert err.value.code == 2
    assert err.value.details["codeName"] == "BadValue"
    assert err.value.details["errmsg"] == "Failing command via 'failCommand' failpoint"
    assert err.value.details["errorLabels"] == ["MyLabel"]
    assert err.value.has_error_label("MyLabel")
    tc_db.c.insert_one({"_id": 2})
    assert [d["_id"] for d in tc_db.c.find()] == [2]


def test_fail_command_codes_keep_mongodb_code_names(tc_client, tc_db):
    configure(tc_client, data={"failCommands": ["count"], "errorCode": 9001})
    assert command_error(tc_db, {"count": "c"})[:2] == (9001, "SocketException")
    configure(tc_client, data={"failCommands": ["count"], "errorCode": 12345,
                               "errorExtraInfo": {"extra": 1}})
    reply = run_command(tc_db, {"count": "c"})
    assert (reply["code"], reply["codeName"], reply["extra"]) == (12345, "Location12345", 1)
    # errorExtraInfo that is not a document fails the command with TypeMismatch instead.
    configure(tc_client, data={"failCommands": ["count"], "errorCode": 12345,
                               "errorExtraInfo": 5})
    code, _, msg = command_error(tc_db, {"count": "c"})
    assert code == 14 and "errorExtraInfo" in msg, msg
    configure(tc_client, mode="off")
    assert run_command(tc_db, {"count": "c"})["ok"] == 1


def test_enable_test_commands_refuses_a_non_boolean_at_startup(tmp_path):
    r = subprocess.run([hourglassd_path(), "--dbpath", str(tmp_path), "--port", "1",
                        "--setParameter", "enableTestCommands=maybe"],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "enableTestCommands" in r.stdout + r.stderr


def test_fail_command_leaves_other_commands_alone(tc_client, tc_db):
    configure(tc_client, data={"failCommands": ["find"], "errorCode": 2})
    tc_db.c.insert_one({"_id": 1})  # not listed: unaffected
    assert tc_db.c.count_documents({}) == 1  # an aggregate
    with pytest.raises(OperationFailure) as err:
        list(tc_db.c.find())
    assert err.value.code == 2
    # configureFailPoint is never failed, even when listed.
    configure(tc_client, data={"failCommands": ["configureFailPoint"], "errorCode": 2})
    assert configure(tc_client, mode="off") >= 1


def test_fail_command_close_connection(tc_server, tc_client, tc_db):
    configure(tc_client, mode={"times": 1},
              data={"failCommands": ["insert"], "closeConnection": True})
    with pytest.raises(AutoReconnect):
        tc_db.c.insert_one({"_id": 1})
    tc_db.c.insert_one({"_id": 2})
    assert [d["_id"] for d in tc_db.c.find()] == [2]
    assert "Failing command via 'failCommand' failpoint: closing connection" in \
        tc_server.log_text()


def test_fail_command_block_connection(tc_client, tc_db):
    configure(tc_client, mode={"times": 1},
              data={"failCommands": ["insert"], "blockConnection": True, "blockTimeMS": 400})
    start = time.monotonic()
    tc_db.c.insert_one({"_id": 1})
    assert time.monotonic() - start >= 0.4
    assert tc_db.c.count_documents({}) == 1
    # blockTimeMS is required with blockConnection.
    configure(tc_client, data={"failCommands": ["insert"], "blockConnection": True})
    with pytest.raises(OperationFailure) as err:
        tc_db.c.insert_one({"_id": 2})
    assert err.value.code == 72
    assert err.value.details["errmsg"] == \
        "must specify 'blockTimeMS' when 'blockConnection' is true"


def test_fail_command_app_name(tc_server, tc_client, tc_db):
    configure(tc_client, data={"failCommands": ["insert"], "errorCode": 2, "appName": "fpApp"})
    tc_db.c.insert_one({"_id": 1})  # another application
    app_client = tc_server.client(appname="fpApp", retryWrites=False)
    try:
        with pytest.raises(OperationFailure) as err:
            app_client[tc_db.name].c.insert_one({"_id": 2})
        assert err.value.code == 2
    finally:
        app_client.close()
    assert tc_db.c.count_documents({}) == 1


def test_fail_command_write_concern_error(tc_client, tc_db):
    wce = {"code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "Not enough nodes"}
    configure(tc_client, mode={"times": 1},
              data={"failCommands": ["insert", "find"], "writeConcernError": wce,
                    "errorLabels": ["MyLabel"]})
    # Reads take no write concern: find is unaffected and does not use up the time.
    assert list(tc_db.c.find()) == []
    with pytest.raises(WriteConcernError) as err:
        tc_db.c.insert_one({"_id": 1})
    assert err.value.code == 100
    assert err.value.details == wce
    # The insert itself happened.
    assert tc_db.c.count_documents({}) == 1
    tc_db.c.insert_one({"_id": 2})
