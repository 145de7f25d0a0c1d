"""The oplog's size (issue 19), as mongod keeps it: `--oplogSize` (MB) or 5% of the free disk
(990 MB to 50 GB) chosen when the member first starts and kept with it; the oldest entries
removed once `local.oplog.rs` outgrows it, never one the set has not committed; collStats
reporting it capped with its `maxSize`; `replSetResizeOplog` checked and applied as mongod does;
mongosh's `rs.printReplicationInfo()` reading it."""

import json
import subprocess
import time

from clienttools import isolated_env, mongosh_path
from conftest import command_error, hourglassd_path
from test_replica_set import member, wait_for, wait_primary
from test_replication_log import oplog, primary_of_one

MB = 1024 * 1024


def oplog_stats(client):
    return client.local.command("collStats", "oplog.rs")


def test_the_oplog_is_kept_under_its_size(fresh_server, tmp_path):
    s, c = primary_of_one(fresh_server, extra=["--oplogSize", "2"])
    try:
        stats = oplog_stats(c)
        assert stats["capped"] is True and stats["maxSize"] == 2 * MB
        first_ts = oplog(s)[0]["ts"]
        # About 3 MB of entries, one transaction (one Raft entry) each. (What Raft could hand
        # the state machine again — up to two snapshots' worth, 2,048 entries — stays.)
        pad = "x" * 500
        n = 5000
        for i in range(n):
            c.app.docs.insert_one({"_id": i, "pad": pad})
        # The oldest go; the newest stay, and every document is still there.
        def trimmed():
            st = oplog_stats(c)
            return st if st["size"] <= 2 * MB else None
        stats = wait_for(trimmed, timeout=30, what="the oplog to shrink under its size")
        entries = oplog(s)
        assert entries[0]["ts"] > first_ts
        assert stats["count"] == len(entries) < n
        assert entries[-1]["ns"] == "app.docs" and entries[-1]["o"]["_id"] == n - 1
        assert c.app.docs.count_documents({}) == n
        # serverStatus says so, and carries the member's view of its set.
        status = wait_for(lambda: (lambda st: st if st["oplogTruncation"]["truncateCount"] >= 1
                                   else None)(c.admin.command("serverStatus")),
                          what="the truncation pass to be counted")
        assert status["oplogTruncation"]["processingMethod"] == "scanning"
        assert status["repl"]["setName"] == "rs0" and status["repl"]["isWritablePrimary"] is True
        assert "repl" not in c.admin.command("serverStatus", repl=0)
    finally:
        c.close()
    # The size is the member's, chosen once: a restart with another --oplogSize keeps it (as
    # mongod's; replSetResizeOplog changes it).
    s.stop()
    s.extra_args = [a if a != "2" else "5" for a in s.extra_args]
    assert "5" in s.extra_args
    s.start(port=s.port)
    wait_primary(s)
    c = s.client()
    try:
        assert oplog_stats(c)["maxSize"] == 2 * MB
    finally:
        c.close()


def test_min_retention_hours_keep_young_entries(fresh_server):
    s, c = primary_of_one(fresh_server,
                          extra=["--oplogSize", "1", "--oplogMinRetentionHours", "1"])
    try:
        pad = "x" * 1000
        n = 4000  # past two Raft snapshots: without the retention, most would go
        for i in range(n):
            c.app.docs.insert_one({"_id": i, "pad": pad})
        time.sleep(2.5)  # the truncation runs about every second
        st = oplog_stats(c)
        assert st["count"] >= n and st["size"] > 1 * MB
        status = c.admin.command("serverStatus")["oplogTruncation"]
        assert status["oplogMinRetentionHours"] == 1 and status["truncateCount"] == 0
        # Without it, the size rules.
        c.admin.command("replSetResizeOplog", minRetentionHours=0)
        wait_for(lambda: oplog_stats(c)["count"] < n, what="the oplog to be truncated")
        # (A pass is counted once it has removed all it will, in several transactions.)
        wait_for(lambda: c.admin.command("serverStatus")["oplogTruncation"]["truncateCount"] >= 1,
                 what="the truncation pass to be counted")
    finally:
        c.close()


def test_replset_resize_oplog(fresh_server, tmp_path):
    s, c = primary_of_one(fresh_server, extra=["--oplogSize", "2"])
    try:
        admin = c.admin
        assert oplog_stats(c)["maxSize"] == 2 * MB
        for cmd, expected in [
            ({"replSetResizeOplog": 1, "size": 900},
             (51024, "Location51024",
              "BSON field 'replSetResizeOplog.size' value must be >= 990, actual value '900'")),
            ({"replSetResizeOplog": 1, "size": 2e9},
             (51024, "Location51024", "BSON field 'replSetResizeOplog.size' value must be <= "
                                      "1073741824, actual value '2e+09'")),
            ({"replSetResizeOplog": 1, "minRetentionHours": -1},
             (51024, "Location51024", "BSON field 'replSetResizeOplog.minRetentionHours' value "
                                      "must be >= 0, actual value '-1'")),
            ({"replSetResizeOplog": 1, "size": "big"}, (14, "TypeMismatch", None)),
            ({"replSetResizeOplog": 1, "sizeMB": 1000},
             (40415, "Location40415", "BSON field 'replSetResizeOplog.sizeMB' is an unknown field.")),
        ]:
            code, name, msg = command_error(admin, cmd)
            assert (code, name) == expected[:2], (cmd, msg)
            if expected[2] is not None:
                assert msg == expected[2]
        assert oplog_stats(c)["maxSize"] == 2 * MB  # refused ones changed nothing
        assert admin.command({"replSetResizeOplog": 1, "size": 1000.5,
                              "minRetentionHours": 1.5})["ok"] == 1
        assert oplog_stats(c)["maxSize"] == int(1000.5 * MB)
        # Only against admin, and it needs an oplog.
        assert command_error(c.app, {"replSetResizeOplog": 1, "size": 1000})[0] == 13
    finally:
        c.close()
    # The new size is stored with the member: it outlives a restart.
    s.stop()
    s.start(port=s.port)
    wait_primary(s)
    c = s.client()
    try:
        assert oplog_stats(c)["maxSize"] == int(1000.5 * MB)
    finally:
        c.close()


def test_a_standalone_has_no_oplog_to_resize(client):
    assert command_error(client.admin, {"replSetResizeOplog": 1, "size": 1000}) == (
        26, "NamespaceNotFound", "oplog does not exist")
    stats = client.local.command("collStats", "oplog.rs")
    assert not stats.get("capped") and "maxSize" not in stats


def test_oplog_size_options(fresh_server, tmp_path):
    # mongod's check: a positive number of megabytes.
    for bad in ["0", "-3"]:
        p = subprocess.run([hourglassd_path(), "--replSet", "rs0", "--oplogSize", bad,
                            "--dbpath", str(tmp_path), "--port", "1"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0
        assert f"bad --oplogSize, arg must be greater than 0,found: {bad}" in p.stdout + p.stderr
    p = subprocess.run([hourglassd_path(), "--replSet", "rs0", "--oplogMinRetentionHours", "-1",
                        "--dbpath", str(tmp_path), "--port", "1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert ("bad --oplogMinRetentionHours, argument must be greater or equal to 0"
            in p.stdout + p.stderr)
    # The same checks for the YAML names.
    for yaml, words in [("replication:\n  oplogSizeMB: 0\n",
                         "bad --oplogSize, arg must be greater than 0,found: 0"),
                        ("storage:\n  oplogMinRetentionHours: -2\n",
                         "bad --oplogMinRetentionHours, argument must be greater or equal to 0")]:
        conf = tmp_path / "bad.conf"
        conf.write_text(yaml)
        p = subprocess.run([hourglassd_path(), "--config", str(conf), "--dbpath", str(tmp_path),
                            "--port", "1"], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and words in p.stdout + p.stderr, p.stderr
    s = member(fresh_server, extra=["--oplogSize", "3", "--oplogMinRetentionHours", "2.5"])
    c = s.client()
    try:
        parsed = c.admin.command("getCmdLineOpts")["parsed"]
        assert parsed["replication"]["oplogSizeMB"] == 3
        assert parsed["storage"]["oplogMinRetentionHours"] == 2.5
    finally:
        c.close()


def test_mongosh_prints_the_replication_info(fresh_server, tmp_path):
    s, c = primary_of_one(fresh_server, extra=["--oplogSize", "7"])
    c.app.docs.insert_many([{"_id": i} for i in range(100)])
    c.close()
    script = "print(JSON.stringify(db.getSiblingDB('admin').getReplicationInfo()))"
    p = subprocess.run(
        [mongosh_path(), f"mongodb://127.0.0.1:{s.port}/test?directConnection=true", "--quiet",
         "--eval", script],
        capture_output=True, text=True, timeout=120, env=isolated_env(tmp_path))
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout.strip().splitlines()[-1])
    assert info["configuredLogSizeMB"] == 7
    assert 0 < info["usedMB"] < 7
    assert info["timeDiff"] >= 0 and "tFirst" in info and "tLast" in info
