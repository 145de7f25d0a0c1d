"""Fixtures that run a real hourglassd for client-level tests.

The server binary comes from the HOURGLASSD environment variable (an absolute
path).  Each server gets a free port on 127.0.0.1 and its own temporary
--dbpath; its JSON-lines log (stderr) is captured to a file in that directory
and the tail of it is attached to the report of every failing test that used
the server.

HOURGLASSD_EXTRA_ARGS (optional, split like a shell command line) is added to
the command line of every server the fixtures start, before the test's own
arguments, so the whole suite can run against other server settings, e.g.
  HOURGLASSD_EXTRA_ARGS="--setParameter hourglassTimeseriesCompressClosedBuckets=true"
A test that passes the same option itself wins: hourglassd applies repeated
--setParameter options in order, the last one last.

Fixtures:
  server        one server per test module (tests share it, each test uses
                its own database names: see `db` / `unique_name`)
  client        pymongo MongoClient to `server` (directConnection, short
                server selection timeout)
  db            a database on `client` with a name unique to the test
  server_v1     a second server per test module that never compresses buckets
                (hourglassTimeseriesAlwaysCompressBuckets=false,
                hourglassTimeseriesCompressClosedBuckets=false), for tests about
                the version-1 bucket layout whatever HOURGLASSD_EXTRA_ARGS says
  db_v1         like `db`, on `server_v1`
  fresh_server  a factory for function-scoped servers, for restart/kill tests
  tmp_dbpath    a scratch directory for a dbpath
A passed test's temporary directory is deleted when it ends, and a module's server
directory when the module ends without a failure: each server preallocates 300 MB of
WiredTiger journal files, and a whole run starts about a hundred servers. A failed
test keeps its directories (logs and data files) for a look afterwards.
Helpers:
  run_command(db, cmd) -> reply dict even when the server answers ok: 0
  command_error(db, cmd) -> (code, codeName, errmsg) of a failing command
  create_collections(db, colls) creates the collections of a declarative test case
"""

import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid

import pymongo
import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo.errors import AutoReconnect, ConnectionFailure, OperationFailure

# Assertions in the shared bucket helpers report their values like the tests' own.
pytest.register_assert_rewrite("tsbuckets")

READY_TIMEOUT_S = 30.0  # ASan builds start slowly
STOP_TIMEOUT_S = 20.0
LOG_TAIL_LINES = 60

_live_servers = []  # every ServerProcess started, for failure reports


def pytest_configure(config):
    # Raise our soft fd limit to the hard limit before any server starts:
    # the servers inherit it, and the many-connections test needs >1000 fds
    # on both sides of the loopback.
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 65536
        target = min(target, 65536)
        if soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        pass


def hourglassd_path():
    path = os.environ.get("HOURGLASSD")
    if not path:
        pytest.fail(
            "HOURGLASSD is not set: export HOURGLASSD=/abs/path/to/hourglassd "
            "(e.g. build/<dir>/hourglassd)",
            pytrace=False,
        )
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        pytest.fail(f"HOURGLASSD={path} does not exist or is not executable", pytrace=False)
    return path


def env_extra_args():
    """The arguments HOURGLASSD_EXTRA_ARGS adds to every server's command line."""
    return shlex.split(os.environ.get("HOURGLASSD_EXTRA_ARGS", ""))


def pytest_report_header(config):
    extra = env_extra_args()
    if extra:
        return f"hourglassd extra arguments (HOURGLASSD_EXTRA_ARGS): {shlex.join(extra)}"
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One hourglassd process on a dbpath; can be stopped and restarted."""

    def __init__(self, dbpath, extra_args=(), name="hourglassd", env_args=True):
        self.binary = hourglassd_path()
        self.dbpath = dbpath
        # HOURGLASSD_EXTRA_ARGS first: the test's own arguments come later and win. Without
        # env_args the server runs with exactly extra_args (for tests of the defaults).
        self.extra_args = (env_extra_args() if env_args else []) + list(extra_args)
        self.name = name
        self.port = None
        self.proc = None
        self.log_path = None
        self._starts = 0
        _live_servers.append(self)

    # -- lifecycle ---------------------------------------------------------
    def argv(self, port=None):
        port = self.port if port is None else port
        return [
            self.binary,
            "--port",
            str(port),
            "--bind_ip",
            "127.0.0.1",
            "--dbpath",
            self.dbpath,
        ] + self.extra_args

    def spawn(self, port=None):
        """Starts the process without waiting for readiness."""
        self._starts += 1
        self.port = port or free_port()
        logdir = os.path.dirname(self.dbpath.rstrip("/")) or self.dbpath
        self.log_path = os.path.join(logdir, f"{self.name}.{self._starts}.{self.port}.log")
        self._log_file = open(self.log_path, "wb")
        env = dict(os.environ)
        # Leak reports at exit would turn a clean shutdown into exit code 23
        # only if there is a leak; keep ASan's default but make reports land
        # in the captured log.
        self.proc = subprocess.Popen(
            self.argv(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
        return self

    def start(self, port=None, timeout=READY_TIMEOUT_S):
        self.spawn(port)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=READY_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        last_err = None
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise RuntimeError(
                    f"hourglassd exited with code {rc} before becoming ready\n"
                    f"argv: {' '.join(self.argv())}\n--- log tail ---\n{self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    pass
                # A short heartbeat: a closed client's monitor lets its connection go at its
                # next wake-up, and tests of --maxConns count connections from the start.
                c = self.client(serverSelectionTimeoutMS=2000, connectTimeoutMS=2000,
                                heartbeatFrequencyMS=500)
                try:
                    c.admin.command("ping")
                    return
                finally:
                    c.close()
            except (OSError, ConnectionFailure, OperationFailure) as e:
                last_err = e
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(
            f"hourglassd did not answer ping within {timeout}s (last error: {last_err!r})\n"
            f"--- log tail ---\n{self.log_tail()}"
        )

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_exit(self, timeout=STOP_TIMEOUT_S):
        """Waits for the process to exit; returns its exit code (None on timeout)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def shutdown_command(self, timeout=STOP_TIMEOUT_S, **fields):
        """Sends {shutdown: 1} to admin and waits; returns the exit code."""
        c = self.client(serverSelectionTimeoutMS=5000)
        try:
            c.admin.command("shutdown", **fields)
        except (AutoReconnect, ConnectionFailure):
            pass  # the server closes the connection while shutting down
        finally:
            c.close()
        return self.wait_exit(timeout)

    def signal(self, sig, timeout=STOP_TIMEOUT_S):
        self.proc.send_signal(sig)
        return self.wait_exit(timeout)

    def kill(self):
        """SIGKILL, no chance to clean up."""
        if self.running():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()

    def stop(self):
        """Best-effort clean stop used by fixture teardown; returns exit code."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        rc = self.signal(signal.SIGTERM)
        if rc is None:
            self.kill()
            rc = self.proc.returncode
        return rc

    # -- access ------------------------------------------------------------
    @property
    def uri(self):
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def client(self, **kwargs):
        opts = dict(directConnection=True, serverSelectionTimeoutMS=10000, connectTimeoutMS=10000)
        opts.update(kwargs)
        return pymongo.MongoClient("127.0.0.1", self.port, **opts)

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""

    def log_tail(self, n=LOG_TAIL_LINES):
        return "\n".join(self.log_text().splitlines()[-n:])


# -- failure reports --------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.hg_call_report = rep
    if rep.failed and rep.when in ("setup", "call"):
        servers = []
        for value in getattr(item, "funcargs", {}).values():
            if isinstance(value, ServerProcess):
                servers.append(value)
            elif isinstance(value, FreshServers):
                servers.extend(value.started)
        for s in servers:
            rep.sections.append(
                (f"hourglassd log tail (port {s.port}, {s.log_path})", s.log_tail())
            )


# -- fixtures ---------------------------------------------------------------
def module_server(request, tmp_path_factory, dir_name, process_name, args=()):
    """Runs one server for a test module on a new directory; stops it at the module's end,
    failing on an unclean exit, and deletes the directory if no test failed meanwhile."""
    base = tmp_path_factory.mktemp(dir_name)
    dbpath = base / "db"
    dbpath.mkdir()
    failed_before = request.session.testsfailed
    s = ServerProcess(str(dbpath), args, name=process_name)
    s.start()
    yield s
    rc = s.stop()
    # A crash during the module's tests must not go unnoticed.
    assert rc == 0, f"hourglassd exited with {rc} at module teardown\n{s.log_tail()}"
    if request.session.testsfailed == failed_before:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    yield from module_server(request, tmp_path_factory, "hg", "hourglassd")


@pytest.fixture(scope="module")
def client(server):
    c = server.client()
    yield c
    c.close()


@pytest.fixture(scope="module")
def tc_server(request, tmp_path_factory):
    """A server with the test-only commands (configureFailPoint, waitForFailPoint)."""
    yield from module_server(request, tmp_path_factory, "hg_tc", "hourglassd_tc",
                             ["--setParameter", "enableTestCommands=1"])


@pytest.fixture(scope="module")
def tc_client(tc_server):
    """A client of tc_server that retries nothing (a fail point's error reaches the test)."""
    c = tc_server.client(retryWrites=False, retryReads=False)
    yield c
    c.close()


# Buckets stay version 1 on this server: they are not written compressed, nor rewritten
# compressed when they close.
V1_BUCKETS_ARGS = ["--setParameter", "hourglassTimeseriesAlwaysCompressBuckets=false",
                   "--setParameter", "hourglassTimeseriesCompressClosedBuckets=false"]


@pytest.fixture(scope="module")
def server_v1(request, tmp_path_factory):
    yield from module_server(request, tmp_path_factory, "hg_v1", "hourglassd_v1",
                             V1_BUCKETS_ARGS)


_name_counter = [0]


def _sanitize(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


@pytest.fixture
def unique_name(request):
    """A short name unique to this test (usable for databases/collections)."""
    _name_counter[0] += 1
    base = _sanitize(request.node.name)[:40]
    return f"{base}_{_name_counter[0]}"


@pytest.fixture
def db(client, unique_name):
    d = client[("t_" + unique_name)[:60]]
    yield d
    try:
        client.drop_database(d.name)
    except Exception:
        pass


@pytest.fixture
def db_v1(server_v1, unique_name):
    c = server_v1.client()
    d = c[("t_" + unique_name)[:60]]
    yield d
    try:
        c.drop_database(d.name)
    except Exception:
        pass
    c.close()


class FreshServers:
    """Factory of servers owned by one test; all stopped at teardown."""

    def __init__(self, base):
        self.base = base
        self.started = []
        self._n = 0

    def dbpath(self):
        self._n += 1
        p = os.path.join(self.base, f"db{self._n}")
        os.makedirs(p, exist_ok=True)
        return p

    def new(self, dbpath=None, extra_args=(), start=True, env_args=True):
        """A server on `dbpath` (default: a new one) with HOURGLASSD_EXTRA_ARGS and then
        `extra_args`, or with exactly `extra_args` when env_args is False."""
        s = ServerProcess(dbpath or self.dbpath(), extra_args,
                          name=f"hourglassd{len(self.started)}", env_args=env_args)
        self.started.append(s)
        if start:
            s.start()
        return s

    def cleanup(self):
        for s in self.started:
            if s.running():
                s.kill()


@pytest.fixture
def fresh_server(tmp_path):
    f = FreshServers(str(tmp_path))
    yield f
    f.cleanup()


@pytest.fixture(autouse=True)
def discard_tmp_path_of_passed_test(request):
    """Deletes the test's tmp_path once it passed and every server on it has stopped (the
    fixtures that started them stop them first: this one was set up first)."""
    yield
    path = request.node.funcargs.get("tmp_path")
    rep = getattr(request.node, "hg_call_report", None)
    if path is None or rep is None or not rep.passed:
        return
    root = str(path)
    if any(s.running() and s.dbpath.startswith(root) for s in _live_servers):
        return
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def tmp_dbpath(tmp_path):
    p = tmp_path / "dbpath"
    p.mkdir()
    return str(p)


# -- command helpers --------------------------------------------------------
_NOT_PRIMARY_ERROR = getattr(pymongo.errors, "NotPrimaryError", None) or pymongo.errors.NotMasterError


def run_command(db, cmd, **kwargs):
    """Runs `cmd` (a dict, first key = command name) and returns the reply
    document, also when the server answers ok: 0."""
    try:
        return db.command(cmd, **kwargs)
    except (OperationFailure, _NOT_PRIMARY_ERROR) as e:
        # pymongo raises the "not primary" answers (10107, 13435, 13436, ...) as a kind of
        # AutoReconnect; they carry the reply as OperationFailure does.
        return e.details


def command_error(db, cmd, **kwargs):
    """Runs a command expected to fail; returns (code, codeName, errmsg)."""
    reply = run_command(db, cmd, **kwargs)
    assert reply.get("ok") == 0, f"expected {cmd!r} to fail, got {reply!r}"
    return reply.get("code"), reply.get("codeName"), reply.get("errmsg")


def set_timeseries_rewrites(client, on):
    """Turns Hourglass's time-series read rewrites on or off (hourglassTimeseriesRewrites)."""
    client.admin.command({"setParameter": 1, "hourglassTimeseriesRewrites": on})


def aggregate_raw_without_rewrites(client, db, pipeline):
    """aggregate_raw with the time-series rewrites off (every bucket unpacked, then the stages):
    the answer a rewritten read must give byte for byte."""
    set_timeseries_rewrites(client, False)
    try:
        return aggregate_raw(db, pipeline)
    finally:
        set_timeseries_rewrites(client, True)


def error_codes_with_and_without_rewrites(client, db, pipeline):
    """The error codes of an aggregate that must fail, with the time-series rewrites on and off."""
    codes = []
    for rewrites in (True, False):
        set_timeseries_rewrites(client, rewrites)
        try:
            with pytest.raises(OperationFailure) as e:
                aggregate_raw(db, pipeline)
            codes.append(e.value.code)
        finally:
            set_timeseries_rewrites(client, True)
    return codes


def timeseries_db(client, name, batches):
    """A fresh database `name` with the time-series collection w (timeField t, metaField m,
    buckets of at most an hour) holding `batches`, each inserted by its own insert_many, in turn
    (later batches arrive late: their buckets may overlap earlier ones in time)."""
    client.drop_database(name)
    d = client[name]
    d.create_collection("w", timeseries={"timeField": "t", "metaField": "m",
                                         "granularity": "seconds"})
    for batch in batches:
        d.w.insert_many([dict(x) for x in batch], ordered=False)
    return d


def aggregate_raw(db, pipeline, coll="w"):
    """The documents of one aggregate, as their BSON bytes (byte-identical comparisons)."""
    reply = db.command({"aggregate": coll, "pipeline": pipeline, "cursor": {"batchSize": 100000}},
                       codec_options=CodecOptions(document_class=RawBSONDocument))
    assert reply["cursor"]["id"] == 0
    return [bytes(d.raw) for d in reply["cursor"]["firstBatch"]]


def create_collections(db, colls):
    """Creates {name: [docs...]} collections, or {name: {"timeseries": options, "docs": [...]}}
    time-series collections, and inserts their documents."""
    for name, spec in colls.items():
        if isinstance(spec, dict):
            db.create_collection(name, timeseries=spec["timeseries"])
            docs = spec["docs"]
        else:
            docs = spec
        if docs:
            db[name].insert_many([dict(d) for d in docs])


# 2,000 documents, each unwound into 50,000: 100 million documents for the $group (each source
# document a fraction of a second even in the sanitizer build, between two checks). Unless
# stopped, an aggregate of it over such a collection runs for minutes.
RUNAWAY_PIPELINE = [{"$project": {"x": {"$range": [0, 50000]}}},
                    {"$unwind": "$x"},
                    {"$group": {"_id": None, "s": {"$sum": "$x"}}}]


class RunawayAggregate:
    """RUNAWAY_PIPELINE over `coll` on a thread, tagged with a comment so that currentOp finds it;
    `error` is the OperationFailure that stopped it (None if it finished)."""

    def __init__(self, coll, session=None):
        self.tag = "runaway-" + uuid.uuid4().hex
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(coll, session))
        self.thread.start()

    def _run(self, coll, session):
        try:
            list(coll.aggregate(RUNAWAY_PIPELINE, comment=self.tag, session=session))
        except OperationFailure as e:
            self.error = e

    def wait_for_ops(self, client, **extra):
        """Its entries in `client`'s currentOp (with `extra` fields), once there are any."""
        ops = []
        deadline = time.monotonic() + 20
        while not ops and time.monotonic() < deadline:
            ops = client.admin.command({"currentOp": 1, "command.comment": self.tag,
                                        **extra})["inprog"]
            time.sleep(0.02)
        return ops

    def join(self):
        self.thread.join(20)
        assert not self.thread.is_alive()
