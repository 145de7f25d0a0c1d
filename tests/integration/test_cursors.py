"""Idle cursors die after cursorTimeoutMillis (MongoDB's reaper), unless opened with
noCursorTimeout; the kill is counted in serverStatus.metrics.cursor.timedOut."""
import time

import pymongo
import pytest
from bson.int64 import Int64


def test_idle_cursor_times_out_but_no_timeout_cursor_survives(fresh_server):
    s = fresh_server.new(extra_args=["--setParameter", "cursorTimeoutMillis=300"])
    c = s.client()
    try:
        db = c.cur
        db.c.insert_many([{"i": i} for i in range(5)])
        idle = db.command({"find": "c", "batchSize": 1})["cursor"]["id"]
        kept = db.command({"find": "c", "batchSize": 1, "noCursorTimeout": True})["cursor"]["id"]
        assert idle != 0 and kept != 0
        time.sleep(2.5)  # the reaper looks once a second
        with pytest.raises(pymongo.errors.OperationFailure) as err:
            db.command({"getMore": Int64(idle), "collection": "c"})
        assert err.value.code == 43
        more = db.command({"getMore": Int64(kept), "collection": "c", "batchSize": 10})
        assert [d["i"] for d in more["cursor"]["nextBatch"]] == [1, 2, 3, 4]
        status = c.admin.command("serverStatus")
        assert status["metrics"]["cursor"]["timedOut"] >= 1
    finally:
        c.close()
