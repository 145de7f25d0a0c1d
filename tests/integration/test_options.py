"""hourglassd's command line and config file, as mongod users know them: --version, --help,
bad options, --config YAML, --inMemory, --maxConns."""
import os
import socket
import subprocess
import time

import pymongo
import pytest

import wire
from conftest import free_port, hourglassd_path


def run(args, timeout=30):
    return subprocess.run([hourglassd_path()] + args, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def wait_for_port(port, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"hourglassd exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("hourglassd did not listen in time")


def test_version_and_help_exit_zero():
    v = run(["--version"])
    assert v.returncode == 0
    assert v.stdout.startswith("hourglassd version v")
    h = run(["--help"])
    assert h.returncode == 0
    for flag in ("--port", "--bind_ip", "--dbpath", "--config", "--setParameter", "--inMemory"):
        assert flag in h.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--noSuchFlag"], "noSuchFlag"),
        (["--port", "notaport"], "port"),
        (["--setParameter", "noEquals"], "noEquals"),
        (["--setParameter", "noSuchParameter=1"], "noSuchParameter"),
        (["--setParameter", "cursorTimeoutMillis=abc"], "cursorTimeoutMillis"),
    ],
)
def test_bad_options_fail_with_a_message(args, needle, tmp_path):
    r = run(args + ["--dbpath", str(tmp_path)])
    assert r.returncode != 0
    assert needle in r.stderr


def test_unreadable_config_file_fails(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("net: [unclosed\n")
    r = run(["--config", str(bad)])
    assert r.returncode != 0
    assert "config file" in r.stderr.lower()
    r = run(["--config", str(tmp_path / "missing.conf")])
    assert r.returncode != 0


def test_config_file_sets_port_dbpath_and_log(tmp_path):
    port = free_port()
    dbpath = tmp_path / "data"
    logfile = tmp_path / "server.log"
    conf = tmp_path / "mongod.conf"
    conf.write_text(
        f"net:\n  port: {port}\n  bindIp: 127.0.0.1\n"
        f"storage:\n  dbPath: {dbpath}\n"
        f"systemLog:\n  destination: file\n  path: {logfile}\n"
        f"setParameter:\n  cursorTimeoutMillis: 1234\n"
    )
    proc = subprocess.Popen([hourglassd_path(), "-f", str(conf)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        c = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true",
                                serverSelectionTimeoutMS=10000)
        try:
            c.cfg.c.insert_one({"a": 1})
            opts = c.admin.command("getCmdLineOpts")
            assert opts["parsed"]["config"] == str(conf)
            assert opts["parsed"]["net"]["port"] == port
            assert opts["parsed"]["storage"]["dbPath"] == str(dbpath)
            r = c.admin.command({"getParameter": 1, "cursorTimeoutMillis": 1})
            assert r["cursorTimeoutMillis"] == 1234
            c.admin.command("shutdown")
        except pymongo.errors.AutoReconnect:
            pass
        finally:
            c.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (dbpath / "mongod.lock").exists()
    assert any(name.endswith(".wt") for name in os.listdir(dbpath))
    assert '"msg":"Waiting for connections"' in logfile.read_text()


def test_in_memory_keeps_nothing_across_restart(fresh_server, tmp_path):
    dbpath = str(tmp_path / "mem")
    s = fresh_server.new(dbpath=dbpath, extra_args=["--inMemory"])
    c = s.client()
    try:
        c.mem.c.insert_many([{"i": i} for i in range(10)])
        assert c.mem.c.count_documents({}) == 10
    finally:
        c.close()
    assert s.shutdown_command() == 0
    assert not os.path.exists(dbpath) or not any(
        n.endswith(".wt") for n in os.listdir(dbpath))
    s.start()
    c = s.client()
    try:
        assert c.mem.c.count_documents({}) == 0
        assert "mem" not in c.list_database_names()
    finally:
        c.close()


def open_working_connection(port, timeout=30):
    """A raw connection that answered hello; retried while the server still counts connections
    that clients have just closed (a closed pymongo client's monitor may keep its own open until
    it next wakes up)."""
    deadline = time.time() + timeout
    while True:
        sock = wire.connect(port)
        try:
            if wire.command(sock, {"hello": 1, "$db": "admin"})["ok"] == 1:
                return sock
        except Exception:
            if time.time() > deadline:
                raise
        sock.close()
        time.sleep(0.2)


def test_max_conns_refuses_connections_beyond_the_limit(fresh_server):
    s = fresh_server.new(extra_args=["--maxConns", "3"])
    socks = []
    try:
        for _ in range(3):
            socks.append(open_working_connection(s.port))
        extra = wire.connect(s.port)
        extra.settimeout(10)
        try:
            extra.sendall(wire.op_msg({"hello": 1, "$db": "admin"})[0])
            assert extra.recv(16) == b""  # closed without a reply
        except ConnectionResetError:
            pass
        finally:
            extra.close()
        status = wire.command(socks[0], {"serverStatus": 1, "$db": "admin"})
        assert status["connections"]["rejected"] >= 1
        # A freed slot is usable again.
        socks.pop().close()
        open_working_connection(s.port).close()
    finally:
        for sock in socks:
            sock.close()


def test_cache_size_defaults_like_mongod_and_follows_the_flag(fresh_server, tmp_path):
    # mongod's default WiredTiger cache: the larger of 50% of (RAM - 1 GB) and 256 MB.
    with open("/proc/meminfo") as f:
        ram_mb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:")) // 1024
    want = max(256, (ram_mb - 1024) // 2) << 20
    s = fresh_server.new(dbpath=str(tmp_path / "default"))
    c = s.client()
    try:
        got = c.admin.command("serverStatus")["wiredTiger"]["cache"]["maximum bytes configured"]
        # /proc/meminfo and sysconf may round RAM differently by a few MB.
        assert abs(got - want) <= 8 << 20
    finally:
        c.close()
    s = fresh_server.new(dbpath=str(tmp_path / "flag"), extra_args=["--wiredTigerCacheSizeGB", "0.5"])
    c = s.client()
    try:
        got = c.admin.command("serverStatus")["wiredTiger"]["cache"]["maximum bytes configured"]
        assert got == 512 << 20
    finally:
        c.close()
