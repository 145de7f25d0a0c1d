"""Block compression of collections as mongod has it: --wiredTigerCollectionBlockCompressor and
storage.wiredTiger.collectionConfig.blockCompressor (snappy by default), create's
storageEngine.wiredTiger.configString (which wins), zstd for time-series buckets whatever the
server-wide default; collStats shows the table's wiredTiger.creationString."""
import datetime
import pathlib
import subprocess
import time

import pytest
from bson.code import Code
from pymongo.errors import WriteError

import tsbuckets
from conftest import command_error, free_port, hourglassd_path


def failed_startup(tmp_path, *args):
    """Starts hourglassd with `args` on a free port, expecting it to refuse them and exit."""
    r = subprocess.run([hourglassd_path(), "--dbpath", str(tmp_path), "--port", str(free_port()),
                        *args],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    return r


def creation_string(db, name):
    return db.command("collStats", name)["wiredTiger"]["creationString"]


def compressor(db, name):
    for part in creation_string(db, name).split(","):
        if part.startswith("block_compressor="):
            return part.split("=", 1)[1]
    raise AssertionError("no block_compressor in the creation string")


def measurements(n):
    t0 = datetime.datetime(2024, 1, 1)
    return [{"t": t0 + datetime.timedelta(seconds=i), "m": {"host": f"h{i % 5}"},
             "v": float(i % 17), "s": "reading-" + str(i % 3)} for i in range(n)]


def test_defaults_snappy_for_collections_and_zstd_for_buckets(fresh_server):
    s = fresh_server.new()
    c = s.client()
    try:
        db = c.bc
        db.create_collection("plain")
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        assert compressor(db, "plain") == "snappy"
        # The view's statistics are its buckets'.
        assert compressor(db, "ts") == "zstd"
        assert compressor(db, "system.buckets.ts") == "zstd"
        # getCmdLineOpts lists the option only when it was given.
        parsed = c.admin.command("getCmdLineOpts")["parsed"]
        assert "wiredTiger" not in parsed["storage"]
    finally:
        c.close()


@pytest.mark.parametrize("choice", ["none", "zlib", "zstd"])
def test_the_flag_sets_new_collections_and_data_survives_a_restart(fresh_server, choice):
    s = fresh_server.new(extra_args=["--wiredTigerCollectionBlockCompressor", choice])
    c = s.client()
    docs = [{"_id": i, "text": "value " * 20 + str(i)} for i in range(2000)]
    try:
        db = c.bc
        db.plain.insert_many(docs)
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        db.ts.insert_many(measurements(3000))
        assert compressor(db, "plain") == choice
        # Time-series buckets keep zstd whatever the server-wide default (as MongoDB).
        assert compressor(db, "ts") == "zstd"
        parsed = c.admin.command("getCmdLineOpts")["parsed"]
        assert parsed["storage"]["wiredTiger"]["collectionConfig"]["blockCompressor"] == choice
    finally:
        c.close()
    s.stop()
    s.start()
    c = s.client()
    try:
        db = c.bc
        assert list(db.plain.find().sort("_id", 1)) == docs
        assert db.ts.count_documents({}) == 3000
        assert db.ts.count_documents({"m.host": "h3", "v": {"$gte": 10}}) == sum(
            1 for d in measurements(3000) if d["m"]["host"] == "h3" and d["v"] >= 10)
        assert compressor(db, "plain") == choice
    finally:
        c.close()


def test_create_config_string_wins_over_every_default(fresh_server):
    s = fresh_server.new(extra_args=["--wiredTigerCollectionBlockCompressor", "none"])
    c = s.client()
    try:
        db = c.bc
        zlib = {"wiredTiger": {"configString": "block_compressor=zlib"}}
        db.create_collection("a", storageEngine=zlib)
        db.create_collection("b", storageEngine=zlib, timeseries={"timeField": "t"})
        assert compressor(db, "a") == "zlib"
        assert compressor(db, "b") == "zlib"
        # The option is kept as given, on the collection and on the buckets.
        infos = {i["name"]: i for i in db.list_collections()}
        assert infos["a"]["options"]["storageEngine"] == zlib
        assert infos["system.buckets.b"]["options"]["storageEngine"] == zlib
        db.a.insert_one({"x": 1})
        db.b.insert_one({"t": datetime.datetime(2024, 1, 1), "x": 1})
        assert db.a.find_one({}, {"_id": 0}) == {"x": 1}
        assert db.b.find_one({}, {"_id": 0, "t": 0}) == {"x": 1}
        # Other storage engines' options are accepted and unused.
        db.create_collection("c", storageEngine={"inMemory": {"configString": "x=1"}})
        assert compressor(db, "c") == "none"
    finally:
        c.close()


@pytest.mark.parametrize(
    "storage_engine,code",
    [
        ({"wiredTiger": {"configString": "no_such_option=1"}}, 2),
        ({"wiredTiger": {"configString": "block_compressor=lz4"}}, 2),
        ({"wiredTiger": {"configString": 7}}, 14),
        ({"wiredTiger": {"configString": "block_compressor=zstd", "other": 1}}, 2),
        ({"wiredTiger": "block_compressor=zstd"}, 2),
    ],
)
def test_bad_config_strings_are_refused_and_nothing_is_created(fresh_server, storage_engine, code):
    s = fresh_server.new()
    c = s.client()
    try:
        db = c.bc
        for options in ({}, {"timeseries": {"timeField": "t"}}):
            got, _, errmsg = command_error(
                db, {"create": "bad", "storageEngine": storage_engine, **options})
            assert got == code, errmsg
            assert "bad" not in db.list_collection_names()
            assert "system.buckets.bad" not in db.list_collection_names()
        # The connection and the server are fine.
        db.good.insert_one({"a": 1})
        assert db.good.count_documents({}) == 1
    finally:
        c.close()


def test_bad_flag_value_fails_at_startup(tmp_path):
    r = failed_startup(tmp_path, "--wiredTigerCollectionBlockCompressor", "lz4")
    assert "wiredTigerCollectionBlockCompressor" in r.stderr and "lz4" in r.stderr


def zstd_storage_size(fresh_server, extra_args):
    """storageSize of a zstd collection of varied text after a restart (a checkpoint)."""
    s = fresh_server.new(extra_args=extra_args)
    c = s.client()
    words = [f"w{(i * 7919) % 1009:04d}" for i in range(400)]
    docs = [{"_id": i, "text": " ".join(words[(i * 31 + k * 17) % 400] for k in range(30))}
            for i in range(6000)]
    try:
        c.bc.create_collection(
            "z", storageEngine={"wiredTiger": {"configString": "block_compressor=zstd"}})
        c.bc.z.insert_many(docs)
    finally:
        c.close()
    assert s.stop() == 0
    s.start()
    c = s.client()
    try:
        assert c.bc.z.count_documents({}) == len(docs)
        return c.bc.command("collStats", "z")["storageSize"]
    finally:
        c.close()


def test_zstd_level_option(fresh_server, tmp_path):
    """mongod's --zstdDefaultCompressionLevel (storage.wiredTiger.engineConfig.
    zstdCompressionLevel): the level of the zstd block compressor; a higher one stores the same
    pages in fewer bytes, both read back."""
    fast = zstd_storage_size(fresh_server, ["--zstdDefaultCompressionLevel", "1"])
    small = zstd_storage_size(fresh_server, ["--zstdDefaultCompressionLevel", "19"])
    assert small < fast
    s = fresh_server.new(extra_args=["--zstdDefaultCompressionLevel", "3"])
    c = s.client()
    try:
        parsed = c.admin.command("getCmdLineOpts")["parsed"]
        assert parsed["storage"]["wiredTiger"]["engineConfig"]["zstdCompressionLevel"] == 3
    finally:
        c.close()
    conf = tmp_path / "mongod.conf"
    conf.write_text("storage:\n  wiredTiger:\n    engineConfig:\n      zstdCompressionLevel: 19\n")
    from_file = zstd_storage_size(fresh_server, ["--config", str(conf)])
    assert from_file < fast
    for bad in ("23", "-8", "fast"):
        r = failed_startup(tmp_path, "--zstdDefaultCompressionLevel", bad)
        assert "zstdDefaultCompressionLevel" in r.stderr, r.stderr
    # The config file's key goes through the same check.
    bad = tmp_path / "bad.conf"
    bad.write_text("storage:\n  wiredTiger:\n    engineConfig:\n      zstdCompressionLevel: 40\n")
    r = failed_startup(tmp_path, "--config", str(bad))
    assert "zstdCompressionLevel" in r.stderr and "40" in r.stderr, r.stderr


def test_config_file_sets_the_compressor(fresh_server, tmp_path):
    conf = tmp_path / "mongod.conf"
    conf.write_text("storage:\n  wiredTiger:\n    collectionConfig:\n      blockCompressor: zlib\n")
    s = fresh_server.new(extra_args=["--config", str(conf)])
    c = s.client()
    try:
        c.bc.create_collection("a")
        assert compressor(c.bc, "a") == "zlib"
    finally:
        c.close()


def test_bad_config_file_value_fails_at_startup(tmp_path):
    conf = tmp_path / "mongod.conf"
    conf.write_text("storage:\n  wiredTiger:\n    collectionConfig:\n      blockCompressor: lz4\n")
    r = failed_startup(tmp_path, "--config", str(conf))
    assert "blockCompressor" in r.stderr and "lz4" in r.stderr


def test_engine_config_string_reaches_wiredtiger(fresh_server, tmp_path):
    """mongod's --wiredTigerEngineConfigString / storage.wiredTiger.engineConfig.configString:
    appended to WiredTiger's open configuration (here: statistics logging, which writes
    WiredTigerStat files into the dbpath), shown by getCmdLineOpts; one WiredTiger refuses stops
    startup with its message."""
    config = "statistics=(fast),statistics_log=(wait=1)"
    s = fresh_server.new(extra_args=["--wiredTigerEngineConfigString", config])
    c = s.client()
    try:
        parsed = c.admin.command("getCmdLineOpts")["parsed"]
        assert parsed["storage"]["wiredTiger"]["engineConfig"]["configString"] == config
        c.ec.t.insert_one({"a": 1})
        deadline = time.time() + 10
        while not list(pathlib.Path(s.dbpath).glob("WiredTigerStat*")) and time.time() < deadline:
            time.sleep(0.2)
        assert list(pathlib.Path(s.dbpath).glob("WiredTigerStat*"))
    finally:
        c.close()
    r = failed_startup(tmp_path, "--wiredTigerEngineConfigString", "no_such_key=1")
    assert "no_such_key" in r.stderr


def test_config_file_engine_config_string(fresh_server, tmp_path):
    conf = tmp_path / "mongod.conf"
    conf.write_text("storage:\n  wiredTiger:\n    engineConfig:\n"
                    "      configString: \"statistics=(fast)\"\n")
    s = fresh_server.new(extra_args=["--config", str(conf)])
    c = s.client()
    try:
        parsed = c.admin.command("getCmdLineOpts")["parsed"]
        assert parsed["storage"]["wiredTiger"]["engineConfig"]["configString"] == \
            "statistics=(fast)"
    finally:
        c.close()
    bad = tmp_path / "bad.conf"
    bad.write_text("storage:\n  wiredTiger:\n    engineConfig:\n      configString: \"nope=1\"\n")
    r = failed_startup(tmp_path, "--config", str(bad))
    assert "nope" in r.stderr


def test_bucket_parameter_defaults(fresh_server):
    # A server started with no arguments at all (not even HOURGLASSD_EXTRA_ARGS).
    s = fresh_server.new(env_args=False)
    c = s.client()
    try:
        # Buckets are compressed from their first write (and closed version-1 ones when they
        # close), and narrow commits journaled, unless told otherwise.
        for name in ("hourglassTimeseriesAlwaysCompressBuckets",
                     "hourglassTimeseriesCompressClosedBuckets", "hourglassTimeseriesWriteBack"):
            assert c.admin.command({"getParameter": 1, name: 1})[name] is True, name
        # Commits rewrite a bucket whole after eight edits in a row, write-back flushes after 32.
        for name, default in (("hourglassTimeseriesBucketEditsBeforeRewrite", 8),
                              ("hourglassTimeseriesFlushEditsBeforeRewrite", 32)):
            assert c.admin.command({"getParameter": 1, name: 1})[name] == default, name
            for bad in (-2, "1", None, 1.5):
                code, _, msg = command_error(c.admin, {"setParameter": 1, name: bad})
                assert code == 2, (name, bad)
                assert name in msg or "integer" in msg or "number" in msg, msg
            assert c.admin.command({"getParameter": 1, name: 1})[name] == default, name
            c.admin.command({"setParameter": 1, name: -1})  # never
            assert c.admin.command({"getParameter": 1, name: 1})[name] == -1, name
        # A write-back flush commits about 256 KiB of buckets per transaction.
        name = "hourglassTimeseriesFlushTransactionBytes"
        assert c.admin.command({"getParameter": 1, name: 1})[name] == 256 * 1024
    finally:
        c.close()


def test_always_compress_buckets_parameter(fresh_server):
    """Buckets are written compressed from their first write (MongoDB 8.0): version 2 while
    their rows come in time order, 3 after one that does not; turned off at runtime, the next
    new bucket is version 1. Every measurement reads back either way."""
    name = "hourglassTimeseriesAlwaysCompressBuckets"
    s = fresh_server.new(env_args=False)
    c = s.client()
    try:
        assert c.admin.command({"getParameter": 1, name: 1})[name] is True
        for value in ("x", None, [True]):
            code, _, _ = command_error(c.admin, {"setParameter": 1, name: value})
            assert code == 2, value
        db = c.ac
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        t0 = datetime.datetime(2024, 1, 1)
        docs = [{"t": t0 + datetime.timedelta(seconds=i), "m": "a", "v": i} for i in range(5)]
        db.ts.insert_many(docs[:3])
        (b,) = db["system.buckets.ts"].find()
        assert b["control"]["version"] == 2 and b["control"]["count"] == 3
        assert tsbuckets.columns(b)["v"] == [0, 1, 2]
        db.ts.insert_many([docs[4], docs[3]])  # the second is earlier than the first
        (b,) = db["system.buckets.ts"].find()
        assert b["control"]["version"] == 3 and b["control"]["count"] == 5
        assert tsbuckets.columns(b)["v"] == [0, 1, 2, 4, 3]
        # A measurement a BSONColumn cannot hold is refused, naming why.
        with pytest.raises(WriteError) as e:
            db.ts.insert_one({"t": t0, "m": "a", "f": Code("x", {"y": 1})})
        assert e.value.code == 2 and "javascriptWithScope" in str(e.value)
        assert db.ts.count_documents({}) == 5
        c.admin.command({"setParameter": 1, name: False})
        db.ts.insert_one({"t": t0, "m": "b", "v": 9})
        versions = sorted(b["control"]["version"] for b in db["system.buckets.ts"].find())
        assert versions == [1, 3]
        assert sorted(d["v"] for d in db.ts.find()) == [0, 1, 2, 3, 4, 9]
    finally:
        c.admin.command({"setParameter": 1, name: True})
        c.close()


def test_compress_closed_buckets_parameter(fresh_server):
    # Version-1 buckets (hourglassTimeseriesAlwaysCompressBuckets off), their compression at
    # close started off explicitly (whatever the defaults and HOURGLASSD_EXTRA_ARGS), then
    # turned on.
    name = "hourglassTimeseriesCompressClosedBuckets"
    s = fresh_server.new(extra_args=["--setParameter", f"{name}=false", "--setParameter",
                                     "hourglassTimeseriesAlwaysCompressBuckets=false"])
    c = s.client()
    try:
        assert c.admin.command({"getParameter": 1, name: 1})[name] is False
        for value in ("x", None, [True]):
            code, _, _ = command_error(c.admin, {"setParameter": 1, name: value})
            assert code == 2, value
        assert c.admin.command({"getParameter": 1, name: 1})[name] is False
        # Turned on at runtime, the next bucket to close is stored compressed, and reads see
        # every measurement through it.
        c.admin.command({"setParameter": 1, name: True})
        c.admin.command({"setParameter": 1, "timeseriesBucketMaxCount": 10})
        db = c.bc
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        db.ts.insert_many(measurements(60))
        versions = sorted(b["control"]["version"] for b in db["system.buckets.ts"].find())
        assert 2 in versions and 1 in versions, versions
        assert db.ts.count_documents({}) == 60
        assert sorted(d["v"] for d in db.ts.find()) == sorted(m["v"] for m in measurements(60))
        st = db.command("collStats", "ts")["timeseries"]
        assert st["numCompressedBuckets"] >= 1
        assert st["numBytesCompressed"] < st["numBytesUncompressed"]
    finally:
        c.admin.command({"setParameter": 1, "hourglassTimeseriesCompressClosedBuckets": False})
        c.close()


def test_flush_rewrite_parameter_refused_at_startup(tmp_path):
    # Not an integer of at least -1 on the command line: the server does not start, and says
    # which parameter.
    for bad in ("x", "-2", "1.5"):
        r = failed_startup(tmp_path, "--setParameter",
                           f"hourglassTimeseriesFlushEditsBeforeRewrite={bad}")
        assert "hourglassTimeseriesFlushEditsBeforeRewrite" in r.stdout + r.stderr, bad
