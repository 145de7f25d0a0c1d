"""Operations that can be stopped (issue 18): maxTimeMS on the commands that read (MaxTimeMSExpired,
50), its limit carried by a cursor across getMores, killOp (Interrupted, 11601) and currentOp's
view of the operations running now, on plain and time-series collections, as MongoDB 7.0 answers
them. The fail point maxTimeAlwaysTimeOut (MongoDB's) makes the limit expire at the first check;
the runaway aggregates here would run for minutes (hundreds of millions of documents out of
$unwind) unless stopped."""

import datetime
import json
import os
import time
import uuid

import pytest
from pymongo.errors import ExecutionTimeout, OperationFailure

import wire
from conftest import RUNAWAY_PIPELINE, RunawayAggregate

MAX_TIME_EXPIRED = 50
INTERRUPTED = 11601


@pytest.fixture
def tc_db(tc_client, unique_name):
    d = tc_client[("t_" + unique_name)[:60]]
    yield d
    tc_client.admin.command({"configureFailPoint": "maxTimeAlwaysTimeOut", "mode": "off"})
    tc_client.drop_database(d.name)


def always_time_out(client, on):
    client.admin.command({"configureFailPoint": "maxTimeAlwaysTimeOut",
                          "mode": "alwaysOn" if on else "off"})


def code_of(fn):
    with pytest.raises(OperationFailure) as e:
        fn()
    return e.value.code


def make_collection(db, kind):
    if kind == "timeseries":
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
        db.c.insert_many([{"t": datetime.datetime(2024, 1, 1), "m": i % 20, "v": i}
                          for i in range(2000)])
    else:
        db.c.insert_many([{"v": i} for i in range(2000)])
    return db.c


@pytest.mark.parametrize("value,message", [
    (-1, "-1 value for maxTimeMS is out of range [0, 2147483647]"),
    (2 ** 31, "2147483648 value for maxTimeMS is out of range [0, 2147483647]"),
    ("10", "maxTimeMS must be a number"),
    (1.5, "maxTimeMS has non-integral value"),
])
def test_bad_max_time_ms_is_refused(tc_db, value, message):
    with pytest.raises(OperationFailure) as e:
        tc_db.command({"find": "c", "maxTimeMS": value})
    assert e.value.code == 2 and message in str(e.value), e.value.details
    assert tc_db.command({"find": "c", "maxTimeMS": 0})["ok"] == 1.0  # 0: no limit
    assert tc_db.command({"find": "c", "maxTimeMS": 5.0})["ok"] == 1.0


def test_every_reading_command_with_a_limit_stops_when_it_expires(tc_client, tc_db):
    coll = tc_db.c
    coll.insert_many([{"v": i % 7} for i in range(50)])
    always_time_out(tc_client, True)
    # As MongoDB's own tests: even a ping with a limit expires under the fail point.
    assert code_of(lambda: tc_db.command({"ping": 1, "maxTimeMS": 10000})) == MAX_TIME_EXPIRED
    assert tc_db.command({"ping": 1})["ok"] == 1.0
    with pytest.raises(ExecutionTimeout) as e:
        list(coll.find({}, max_time_ms=10000))
    assert e.value.code == MAX_TIME_EXPIRED
    assert code_of(lambda: list(coll.aggregate([{"$match": {}}], maxTimeMS=10000))) == \
        MAX_TIME_EXPIRED
    assert code_of(lambda: coll.count_documents({}, maxTimeMS=10000)) == MAX_TIME_EXPIRED
    assert code_of(lambda: coll.distinct("v", maxTimeMS=10000)) == MAX_TIME_EXPIRED
    assert code_of(lambda: tc_db.command({"count": "c", "maxTimeMS": 10000})) == \
        MAX_TIME_EXPIRED
    # Without a limit, nothing expires.
    assert len(list(coll.find({}))) == 50
    assert coll.count_documents({}) == 50
    always_time_out(tc_client, False)
    assert len(list(coll.find({}, max_time_ms=10000))) == 50
    assert sorted(coll.distinct("v", maxTimeMS=10000)) == list(range(7))


def test_a_cursor_keeps_its_limit_across_get_mores(tc_client, tc_db):
    coll = tc_db.c
    coll.insert_many([{"v": i} for i in range(10)])
    limited = coll.find({}, batch_size=2, max_time_ms=60000)
    unlimited = coll.find({}, batch_size=2)
    assert [next(limited)["v"], next(limited)["v"]] == [0, 1]
    assert [next(unlimited)["v"], next(unlimited)["v"]] == [0, 1]
    always_time_out(tc_client, True)
    with pytest.raises(ExecutionTimeout) as e:
        next(limited)  # a getMore, with what is left of the find's 60 s
    assert e.value.code == MAX_TIME_EXPIRED
    assert [d["v"] for d in unlimited] == list(range(2, 10))
    always_time_out(tc_client, False)
    # A getMore takes no limit of its own (only awaitData cursors do, and there are none).
    reply = tc_db.command({"find": "c", "batchSize": 1})
    with pytest.raises(OperationFailure) as e:
        tc_db.command({"getMore": reply["cursor"]["id"], "collection": "c", "maxTimeMS": 100})
    assert e.value.code == 2
    assert "cannot set maxTimeMS on getMore command for a non-awaitData cursor" in str(e.value)
    # The cursor is still there.
    more = tc_db.command({"getMore": reply["cursor"]["id"], "collection": "c"})
    assert [d["v"] for d in more["cursor"]["nextBatch"]] == list(range(1, 10))


@pytest.mark.parametrize("kind", ["plain", "timeseries"])
def test_a_runaway_aggregate_stops_soon_after_its_deadline(tc_db, kind):
    coll = make_collection(tc_db, kind)
    start = time.monotonic()
    assert code_of(lambda: list(coll.aggregate(RUNAWAY_PIPELINE, maxTimeMS=300))) == \
        MAX_TIME_EXPIRED
    took = time.monotonic() - start
    assert 0.3 <= took < 10, took
    assert coll.count_documents({}) == 2000  # the server goes on


def current_ops(client, **filter):
    return client.admin.command({"currentOp": 1, **filter})["inprog"]


@pytest.mark.parametrize("kind", ["plain", "timeseries"])
def test_kill_op_interrupts_a_running_aggregate_that_current_op_lists(tc_client, tc_db, kind):
    coll = make_collection(tc_db, kind)
    runaway = RunawayAggregate(coll)
    tag = runaway.tag
    ops = runaway.wait_for_ops(tc_client)
    assert len(ops) == 1, ops
    op = ops[0]
    assert op["active"] is True and op["type"] == "op"
    assert op["op"] == "command" and op["ns"] == tc_db.name + ".c"
    assert op["command"]["aggregate"] == "c" and op["command"]["comment"] == tag
    assert op["desc"] == "conn%d" % op["connectionId"]
    assert op["client"].startswith("127.0.0.1:")
    assert isinstance(op["opid"], int) and op["opid"] > 0
    assert op["microsecs_running"] >= 0 and op["secs_running"] == op["microsecs_running"] // 10**6
    reply = tc_client.admin.command({"killOp": 1, "op": op["opid"]})
    assert reply["info"] == "attempting to kill op"
    runaway.join()
    assert runaway.error is not None and runaway.error.code == INTERRUPTED
    assert current_ops(tc_client, **{"command.comment": tag}) == []
    assert coll.count_documents({}) == 2000
    # Killing an operation that does not run answers the same, and kills nothing.
    assert tc_client.admin.command({"killOp": 1, "op": 2 ** 40})["info"] == \
        "attempting to kill op"


def test_current_op_lists_itself_and_filters(tc_client):
    ops = current_ops(tc_client)
    mine = [o for o in ops if o["command"].get("currentOp") == 1]
    assert len(mine) == 1
    assert mine[0]["op"] == "command" and mine[0]["ns"] == "admin.$cmd"
    assert current_ops(tc_client, **{"command.currentOp": 1, "op": "command"})[0]["opid"] > \
        mine[0]["opid"]
    assert current_ops(tc_client, **{"command.noSuchField": 1}) == []
    assert current_ops(tc_client, **{"$all": True, "command.noSuchField": 1}) == []
    # Bad input: a filter the query matcher refuses, killOp without a number.
    with pytest.raises(OperationFailure) as e:
        tc_client.admin.command({"currentOp": 1, "$noSuchOperator": 1})
    assert e.value.code == 2 and "$noSuchOperator" in str(e.value)
    with pytest.raises(OperationFailure) as e:
        tc_client.admin.command({"killOp": 1})
    assert e.value.code == 2
    with pytest.raises(OperationFailure) as e:
        tc_client.admin.command({"killOp": 1, "op": "12"})
    assert e.value.code == 14


# Each document's filter takes a while (a 100,000-element array built and measured).
SLOW_FILTER = {"$expr": {"$gt": [{"$size": {"$range": [0, 100000]}}, 0]}}


def test_writes_and_index_builds_stop_at_their_limit(tc_client, tc_db):
    """An interrupted write fails the whole command (MongoDB's rule for interruptions), not one of
    its statements: an update or delete rolls its statement back, an index build leaves no
    index, an insert keeps what it inserted before the check that stopped it."""
    tc_db.c.insert_many([{"_id": i, "v": i} for i in range(2000)])
    tc_db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    for cmd in ({"update": "c", "updates": [{"q": SLOW_FILTER, "u": {"$set": {"x": 1}},
                                            "multi": True}]},
                {"delete": "c", "deletes": [{"q": SLOW_FILTER, "limit": 0}]},
                {"findAndModify": "c", "query": SLOW_FILTER, "sort": {"v": -1},
                 "update": {"$set": {"x": 1}}}):
        start = time.monotonic()
        assert code_of(lambda: tc_db.command({**cmd, "maxTimeMS": 100})) == MAX_TIME_EXPIRED, cmd
        assert time.monotonic() - start < 10
    assert tc_db.c.count_documents({}) == 2000
    assert tc_db.c.count_documents({"x": {"$exists": True}}) == 0
    # An index build of a collection too large to index within 5 ms.
    tc_db.big.insert_many([{"v": i % 1000, "s": "x" * 100} for i in range(20000)])
    assert code_of(lambda: tc_db.command({"createIndexes": "big", "maxTimeMS": 5,
                                          "indexes": [{"key": {"v": 1, "s": 1},
                                                       "name": "v_s"}]})) == MAX_TIME_EXPIRED
    assert "v_s" not in tc_db.big.index_information()
    tc_db.command({"createIndexes": "big", "indexes": [{"key": {"v": 1}, "name": "v_1"}]})
    assert "v_1" in tc_db.big.index_information()
    # Inserts: the fail point lets the dispatcher's check before the command pass ({skip: 1})
    # and fails the next, the insert's own: before its first group of documents (plain), before
    # any measurement is staged (time-series).
    for coll, doc in (("c", {"_id": -1}), ("ts", {"t": datetime.datetime(2024, 1, 1), "m": 1})):
        tc_client.admin.command({"configureFailPoint": "maxTimeAlwaysTimeOut",
                                 "mode": {"skip": 1}})
        try:
            assert code_of(lambda: tc_db.command(
                {"insert": coll, "documents": [doc], "maxTimeMS": 60000})) == MAX_TIME_EXPIRED
        finally:
            always_time_out(tc_client, False)
    assert tc_db.c.count_documents({"_id": -1}) == 0
    assert tc_db.ts.count_documents({}) == 0
    tc_db.command({"insert": "c", "documents": [{"_id": -1}], "maxTimeMS": 60000})
    assert tc_db.c.count_documents({"_id": -1}) == 1


@pytest.mark.parametrize("kind", ["plain", "timeseries"])
def test_a_client_that_disconnects_stops_its_running_operation(tc_client, tc_db, kind):
    make_collection(tc_db, kind)
    tag = "abandoned-" + uuid.uuid4().hex
    sock = wire.connect(tc_client.address[1])
    request, _ = wire.op_msg({"aggregate": "c", "pipeline": RUNAWAY_PIPELINE, "cursor": {},
                              "comment": tag, "$db": tc_db.name})
    sock.sendall(request)
    ops = []
    deadline = time.monotonic() + 20
    while not ops and time.monotonic() < deadline:
        ops = current_ops(tc_client, **{"command.comment": tag})
        time.sleep(0.02)
    assert len(ops) == 1, ops
    sock.close()  # the client goes away without waiting for the answer
    start = time.monotonic()
    while current_ops(tc_client, **{"command.comment": tag}) and time.monotonic() - start < 20:
        time.sleep(0.02)
    took = time.monotonic() - start
    assert current_ops(tc_client, **{"command.comment": tag}) == []
    # The aggregate alone would run for minutes; the bound leaves room for a slow sanitizer build
    # on a busy machine (2.08 s was seen), as the deadline test's does.
    assert took < 10, took
    assert tc_db.c.count_documents({}) == 2000  # and the server goes on


def test_current_op_stage_lists_operations_for_the_rest_of_the_pipeline(tc_client, tc_db):
    coll = make_collection(tc_db, "plain")
    runaway = RunawayAggregate(coll)
    assert len(runaway.wait_for_ops(tc_client)) == 1
    listed = list(tc_client.admin.aggregate([
        {"$currentOp": {"allUsers": True, "idleConnections": False}},
        {"$match": {"command.comment": runaway.tag}},
        {"$project": {"_id": 0, "ns": 1, "op": 1, "opid": 1, "aggregate": "$command.aggregate"}}]))
    assert len(listed) == 1
    assert listed[0]["ns"] == tc_db.name + ".c" and listed[0]["aggregate"] == "c"
    assert listed[0]["op"] == "command" and listed[0]["opid"] > 0
    # The aggregate itself is listed too, with its $currentOp.
    me = list(tc_client.admin.aggregate([{"$currentOp": {}},
                                         {"$match": {"command.pipeline.0.$currentOp": {
                                             "$exists": True}}}]))
    assert len(me) == 1
    tc_client.admin.command({"killOp": 1, "op": listed[0]["opid"]})
    runaway.join()
    assert runaway.error.code == INTERRUPTED
    code = code_of(lambda: tc_db.command({"aggregate": 1, "cursor": {},
                                          "pipeline": [{"$currentOp": {}}]}))
    assert code == 73  # InvalidNamespace: only {aggregate: 1} on admin
    code = code_of(lambda: tc_client.admin.command({"aggregate": 1, "cursor": {}, "pipeline": [
        {"$documents": [{"a": 1}]}, {"$currentOp": {}}]}))
    assert code == 40602  # only as the first stage
    code = code_of(lambda: list(tc_client.admin.aggregate([{"$currentOp": {"bogus": True}}])))
    assert code == 9


@pytest.mark.parametrize("kind", ["plain", "timeseries"])
def test_compact_gives_back_the_space_of_removed_documents(tc_client, tc_db, kind):
    coll = make_collection(tc_db, kind)
    # Random padding: the block compressor cannot shrink it away.
    pads = [os.urandom(2000).hex() for _ in range(4000)]
    if kind == "plain":
        coll.create_index("v")
        coll.insert_many([{"v": i, "pad": pad} for i, pad in enumerate(pads)])
    else:
        coll.insert_many([{"t": datetime.datetime(2024, 1, 2) + datetime.timedelta(seconds=i),
                           "m": i % 50, "pad": pad} for i, pad in enumerate(pads)])
    tc_client.admin.command("fsync")  # a checkpoint: the data reaches the files
    stats = tc_db.command("collStats", "c")
    before = stats["storageSize"]
    coll.delete_many({})
    tc_client.admin.command("fsync")
    reply = tc_db.command("compact", "c")
    assert reply["ok"] == 1 and isinstance(reply["bytesFreed"], int)
    tc_client.admin.command("fsync")
    after = tc_db.command("collStats", "c")["storageSize"]
    assert reply["bytesFreed"] > 0 and after < before, (before, after, reply)
    assert coll.count_documents({}) == 0
    coll.insert_one({"v": 1, "t": datetime.datetime(2024, 1, 1), "m": 1})
    assert coll.count_documents({}) == 1
    code = code_of(lambda: tc_db.command("compact", "missing"))
    assert code == 26
    tc_db.command("create", "vw", viewOn="c", pipeline=[])
    assert code_of(lambda: tc_db.command("compact", "vw")) == 166


def test_compact_refuses_what_it_does_not_do(tc_db):
    make_collection(tc_db, "plain")
    assert code_of(lambda: tc_db.command({"compact": "c", "dryRun": True})) == 115
    assert code_of(lambda: tc_db.command({"compact": 5})) == 14
    assert code_of(lambda: tc_db.command({"compact": "c", "bogus": 1})) == 40415


def test_kill_sessions_stops_the_sessions_operations_and_closes_their_cursors(tc_client, tc_db):
    coll = make_collection(tc_db, "plain")
    doomed, spared = tc_client.start_session(), tc_client.start_session()
    runaway = RunawayAggregate(coll, session=doomed)
    other = RunawayAggregate(coll, session=spared)
    ops = runaway.wait_for_ops(tc_client)
    assert ops and other.wait_for_ops(tc_client)
    assert ops[0]["lsid"] == {"id": uuid.UUID(bytes=bytes(doomed.session_id["id"]))}
    open_cursor = coll.find({}, batch_size=2, session=doomed)
    kept_cursor = coll.find({}, batch_size=2, session=spared)
    next(open_cursor), next(kept_cursor)
    tc_client.admin.command("killSessions", [doomed.session_id])
    runaway.join()
    assert runaway.error is not None and runaway.error.code == INTERRUPTED
    # The session's cursor is closed; the other session's goes on.
    with pytest.raises(OperationFailure) as e:
        list(open_cursor)
    assert e.value.code == 43  # CursorNotFound
    assert len(list(kept_cursor)) == 1999
    assert other.wait_for_ops(tc_client), "the other session's operation was stopped too"
    # An empty list, without --auth, kills every session.
    tc_client.admin.command("killSessions", [])
    other.join()
    assert other.error is not None and other.error.code == INTERRUPTED
    doomed.end_session()
    spared.end_session()


def test_kill_all_sessions_and_bad_session_lists(tc_client, tc_db):
    coll = make_collection(tc_db, "plain")
    runaway = RunawayAggregate(coll)  # in pymongo's implicit session
    assert runaway.wait_for_ops(tc_client)
    tc_client.admin.command("killAllSessions", [])
    runaway.join()
    assert runaway.error is not None and runaway.error.code == INTERRUPTED
    for cmd, code in [({"killSessions": [{}]}, 40414),
                      ({"killSessions": [{"id": "not-a-uuid"}]}, 14),
                      ({"killSessions": {"id": 1}}, 14),
                      ({"killAllSessions": [{"user": "u"}]}, 40414),
                      ({"killAllSessions": [{"user": 1, "db": "x"}]}, 14)]:
        assert code_of(lambda: tc_client.admin.command(cmd)) == code, cmd


def last_slow(server, command):
    """The attr of the last slow-operation line (51803) of `command`."""
    found = None
    for line in server.log_text().splitlines():
        if '"id":51803' in line:
            attr = json.loads(line)["attr"]
            if attr.get("command") == command:
                found = attr
    return found


@pytest.mark.parametrize("kind", ["plain", "timeseries"])
def test_plan_summary_in_current_op_and_the_slow_operation_log(tc_server, tc_client, tc_db,
                                                               kind):
    coll = make_collection(tc_db, kind)
    runaway = RunawayAggregate(coll)
    try:
        # currentOp may list the operation before it has planned its read.
        ops = runaway.wait_for_ops(tc_client, planSummary={"$exists": True})
        assert ops and ops[0]["planSummary"] == "COLLSCAN"
    finally:
        for op in runaway.wait_for_ops(tc_client):
            tc_client.admin.command("killOp", op=op["opid"])
        runaway.join()
    if kind == "plain":
        coll.create_index([("v", 1), ("w", -1)])
        coll.create_index([("w", -1)])
        reads = [({"v": {"$gte": 1990}}, "IXSCAN { v: 1, w: -1 }"),
                 ({"$or": [{"v": 3}, {"w": 4}]}, "IXSCAN { v: 1, w: -1 }, IXSCAN { w: -1 }"),
                 ({"x": 1}, "COLLSCAN")]
    else:
        reads = [({"m": 3}, "IXSCAN { meta: 1, control.min.t: 1, control.max.t: 1 }"),
                 ({"v": 3}, "COLLSCAN")]
    tc_client.admin.command("setParameter", 1, slowOpThresholdMs=0)
    try:
        for query, summary in reads:
            list(coll.find(query))
            assert last_slow(tc_server, "find")["planSummary"] == summary, query
        if kind == "plain":  # writes find their documents with a plan too
            coll.update_many({"v": {"$gte": 1995}}, {"$set": {"u": 1}})
            assert last_slow(tc_server, "update")["planSummary"] == "IXSCAN { v: 1, w: -1 }"
            coll.delete_many({"x": 1})
            assert last_slow(tc_server, "delete")["planSummary"] == "COLLSCAN"
    finally:
        tc_client.admin.command("setParameter", 1, slowOpThresholdMs=100)
