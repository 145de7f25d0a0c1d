"""The HTTP port (--httpPort): InfluxDB 1.x's POST /write and 2.x's POST /api/v2/write of the
line protocol into time-series collections, /ping and /health. Expected answers are InfluxDB's
(its HTTP API reference: 204 on success; 1.x writes the good lines of a body and answers 400
{"error": "partial write: unable to parse '<line>': <reason> dropped=N"}; 2.x refuses the whole
batch with {"code": "invalid", "message": ...}); the stored measurements are read back with
pymongo from the collections MongoDB users would query."""

import base64
import datetime
import gzip
import json
import os
import subprocess
import urllib.error
import urllib.request

import pytest
from bson.int64 import Int64
from prometheus_client.parser import text_string_to_metric_families

from clienttools import REPO, isolated_env, require_node, require_node_modules
from conftest import command_error, free_port, module_server, run_command


def http(port, method, path, body=None, headers=None):
    """(status, headers, body text) of one request; 4xx and 5xx are answers too."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def write(port, db, lines, path="/write", param="db", extra="", headers=None):
    body = lines.encode() if isinstance(lines, str) else lines
    return http(port, "POST", f"{path}?{param}={db}{extra}", body, headers)


@pytest.fixture(scope="module")
def http_port():
    return free_port()


@pytest.fixture(scope="module")
def http_server(request, tmp_path_factory, http_port):
    yield from module_server(request, tmp_path_factory, "hg-http", "hourglassd-http",
                             ["--httpPort", str(http_port)])


@pytest.fixture(scope="module")
def client(http_server):
    c = http_server.client()
    yield c
    c.close()


def docs(coll):
    return list(coll.find({}, {"_id": 0}).sort("time", 1))


def at(seconds, ms=0):
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds, milliseconds=ms)


def test_ping_health_and_unknown_paths(http_server, http_port):
    status, headers, body = http(http_port, "GET", "/ping")
    assert (status, body) == (204, "")
    assert headers["X-Influxdb-Version"] == "1.8.10"
    assert http(http_port, "HEAD", "/ping")[0] == 204
    status, _, body = http(http_port, "GET", "/ping?verbose=true")
    assert (status, json.loads(body)) == (200, {"version": "1.8.10"})
    status, headers, body = http(http_port, "GET", "/health")
    assert status == 200 and headers["Content-Type"] == "application/json"
    health = json.loads(body)
    assert (health["name"], health["status"], health["checks"]) == ("hourglassd", "pass", [])
    assert http(http_port, "GET", "/nothing")[:3:2] == (404, "404 page not found\n")
    assert http(http_port, "GET", "/write?db=x")[0] == 405
    assert http(http_port, "POST", "/health", b"")[0] == 405


def test_a_v1_write_creates_time_series_collections_of_the_measurements(client, http_port):
    status, _, body = write(http_port, "lp_v1",
                            "cpu,region=west,host=a usage_user=12.5,usage_idle=80i 1700000000000000000\n"
                            "cpu,host=b usage_user=3 1700000001000000000\n"
                            "mem free=10u,ok=t,note=\"a \\\"quoted\\\" note\" 1700000000500000000\n")
    assert (status, body) == (204, "")
    db = client.lp_v1
    infos = {c["name"]: c for c in db.list_collections()}
    assert infos["cpu"]["type"] == "timeseries"
    assert infos["cpu"]["options"]["timeseries"] == {
        "timeField": "time", "metaField": "tags", "granularity": "seconds",
        "bucketMaxSpanSeconds": 3600}
    assert docs(db.cpu) == [
        {"time": at(1700000000), "tags": {"host": "a", "region": "west"}, "usage_user": 12.5,
         "usage_idle": 80},
        {"time": at(1700000001), "tags": {"host": "b"}, "usage_user": 3.0},
    ]
    # Tags sorted by key; an integer field is a long.
    raw = db.cpu.find_one({"tags.host": "a"})
    assert list(raw["tags"].keys()) == ["host", "region"]
    assert isinstance(raw["usage_idle"], Int64)
    assert docs(db.mem) == [{"time": at(1700000000, 500), "free": 10, "ok": True,
                             "note": 'a "quoted" note'}]
    # The measurements are in buckets, as any time-series collection's.
    assert db["system.buckets.cpu"].count_documents({}) == 2


@pytest.mark.parametrize("precision,stamp,expected", [
    ("", "1700000000123456789", at(1700000000, 123)),
    ("ns", "1700000000123456789", at(1700000000, 123)),
    ("u", "1700000000123456", at(1700000000, 123)),
    ("ms", "1700000000123", at(1700000000, 123)),
    ("s", "1700000000", at(1700000000)),
    ("m", "28333333", at(28333333 * 60)),
    ("h", "472222", at(472222 * 3600)),
])
def test_timestamps_in_every_v1_precision(client, http_port, precision, stamp, expected):
    coll = f"p_{precision or 'default'}"
    status, _, body = write(http_port, "lp_precision", f"{coll} v=1 {stamp}",
                            extra=f"&precision={precision}" if precision else "")
    assert (status, body) == (204, "")
    assert [d["time"] for d in docs(client.lp_precision[coll])] == [expected]


def test_a_point_without_timestamp_takes_the_request_time(client, http_port):
    before = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
    assert write(http_port, "lp_now", "now v=1")[0] == 204
    after = datetime.datetime.utcnow() + datetime.timedelta(seconds=1)
    [d] = docs(client.lp_now.now)
    assert before <= d["time"] <= after


def test_v1_keeps_the_good_lines_and_names_the_bad_ones(client, http_port):
    status, headers, body = write(http_port, "lp_partial",
                                  "cpu v=1 1000000000\n"
                                  "cpu v= 2000000000\n"
                                  "cpu,host v=1 3000000000\n"
                                  "cpu v=4 4000000000\n")
    assert status == 400
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "error": "partial write: unable to parse 'cpu v= 2000000000': missing field value\n"
                 "unable to parse 'cpu,host v=1 3000000000': missing tag value dropped=0"}
    # The header carries the first line (a header cannot hold a line break).
    assert headers["X-Influxdb-Error"] == (
        "partial write: unable to parse 'cpu v= 2000000000': missing field value")
    assert [d["v"] for d in docs(client.lp_partial.cpu)] == [1.0, 4.0]
    # Nothing good at all: the parse errors alone, nothing written.
    status, _, body = write(http_port, "lp_partial", "mem x\n")
    assert (status, json.loads(body)) == (400, {"error": "unable to parse 'mem x': missing field value"})
    assert "mem" not in client.lp_partial.list_collection_names()


def test_points_storage_refuses_are_dropped_and_counted(client, http_port):
    run_command(client.lp_drop, {"create": "other", "timeseries": {"timeField": "ts"}})
    status, _, body = write(http_port, "lp_drop",
                            "cpu time=1 1000000000\n"
                            "cpu,time=x v=1 1000000000\n"
                            "other v=1 1000000000\n"
                            "bad$name v=1 1000000000\n"
                            "cpu v=5 5000000000\n")
    assert status == 400
    error = json.loads(body)["error"]
    assert error.startswith("partial write: ") and error.endswith(" dropped=4")
    assert 'invalid field name: input field "time" on measurement "cpu" is invalid' in error
    assert 'invalid tag key: input tag "time" on measurement "cpu" is invalid' in error
    assert 'measurement "other": ' in error  # its documents lack the collection's timeField
    assert 'measurement "bad$name": ' in error  # not a collection name
    assert [d["v"] for d in docs(client.lp_drop.cpu)] == [5.0]
    assert client.lp_drop.other.count_documents({}) == 0


def test_v1_refusals_of_the_request(http_port):
    status, headers, body = http(http_port, "POST", "/write", b"cpu v=1")
    assert (status, json.loads(body)) == (400, {"error": "database is required"})
    assert headers["X-Influxdb-Error"] == "database is required"
    status, _, body = write(http_port, "lp_bad", "cpu v=1", extra="&precision=d")
    assert (status, json.loads(body)) == (400, {"error": 'invalid precision "d"'})
    status, _, body = write(http_port, "lp_bad", "cpu v=1",
                            headers={"Content-Encoding": "br"})
    assert status == 415
    # An empty body writes nothing and is no error.
    assert write(http_port, "lp_bad", "")[0] == 204


def test_gzip_bodies(client, http_port):
    lines = "".join(f"gz,host=h{i % 3} v={i}i {i}000000000\n" for i in range(1000))
    status, _, body = write(http_port, "lp_gzip", gzip.compress(lines.encode()),
                            headers={"Content-Encoding": "gzip"})
    assert (status, body) == (204, "")
    got = docs(client.lp_gzip.gz)
    assert [d["v"] for d in got] == list(range(1000))
    assert {d["tags"]["host"] for d in got} == {"h0", "h1", "h2"}
    status, _, body = write(http_port, "lp_gzip", b"\x1f\x8b\x08\x00garbage",
                            headers={"Content-Encoding": "gzip"})
    assert status == 400 and "gzip" in json.loads(body)["error"]
    assert client.lp_gzip.gz.count_documents({}) == 1000


def test_v2_refuses_a_batch_with_a_bad_line_and_reads_db_from_the_bucket(client, http_port):
    status, _, body = write(http_port, "lp_v2/autogen", "cpu,host=a v=1 1\ncpu v=\n",
                            path="/api/v2/write", param="bucket", extra="&org=any")
    assert (status, json.loads(body)) == (
        400, {"code": "invalid", "message": "unable to parse 'cpu v=': missing field value"})
    assert "cpu" not in client.lp_v2.list_collection_names()
    status, _, body = write(http_port, "lp_v2/autogen", "cpu,host=a v=1 1700000000",
                            path="/api/v2/write", param="bucket", extra="&precision=s")
    assert (status, body) == (204, "")
    assert docs(client.lp_v2.cpu) == [{"time": at(1700000000), "tags": {"host": "a"}, "v": 1.0}]
    # v2 has no minutes or hours, and needs a bucket.
    status, _, body = write(http_port, "lp_v2", "cpu v=1 1", path="/api/v2/write",
                            param="bucket", extra="&precision=h")
    assert (status, json.loads(body)["code"]) == (400, "invalid")
    status, _, body = http(http_port, "POST", "/api/v2/write?org=o", b"cpu v=1")
    assert (status, json.loads(body)) == (400, {"code": "invalid", "message": "bucket is required"})


def test_a_body_over_the_limit_is_refused(client, http_port):
    line = b"big v=1 1\n"
    body = line * (25_000_000 // len(line) + 1)
    status, _, text = write(http_port, "lp_big", body)
    assert (status, json.loads(text)) == (413, {"error": "Request Entity Too Large"})
    assert "big" not in client.lp_big.list_collection_names()
    # The limit holds for the inflated bytes of a gzip body too, as InfluxDB's.
    status, _, text = write(http_port, "lp_big", gzip.compress(body),
                            headers={"Content-Encoding": "gzip"})
    assert (status, json.loads(text)) == (413, {"error": "Request Entity Too Large"})
    # The port still serves.
    assert http(http_port, "GET", "/ping")[0] == 204


def test_the_granularity_of_new_collections_is_a_server_parameter(client, http_port):
    run_command(client.admin, {"setParameter": 1, "hourglassHttpWriteGranularity": "minutes"})
    try:
        assert write(http_port, "lp_gran", "m v=1 1")[0] == 204
        [info] = client.lp_gran.list_collections(filter={"name": "m"})
        assert info["options"]["timeseries"]["granularity"] == "minutes"
    finally:
        run_command(client.admin, {"setParameter": 1, "hourglassHttpWriteGranularity": "seconds"})
    code, name, _ = command_error(client.admin, {"setParameter": 1,
                                                 "hourglassHttpWriteGranularity": "days"})
    assert (code, name) == (2, "BadValue")


def test_the_option_in_the_command_line_and_the_config_file(fresh_server, tmp_path):
    port = free_port()
    s = fresh_server.new(extra_args=["--httpPort", str(port)])
    opts = s.client().admin.command("getCmdLineOpts")
    assert opts["parsed"]["net"]["http"] == {"port": port}
    assert http(port, "GET", "/ping")[0] == 204
    s.stop()
    config = tmp_path / "hourglassd.conf"
    port2 = free_port()
    config.write_text(f"net:\n  http:\n    port: {port2}\n")
    s2 = fresh_server.new(extra_args=["--config", str(config)])
    assert http(port2, "GET", "/ping")[0] == 204
    s2.stop()
    # Not the wire port, and within range.
    bad = fresh_server.new(extra_args=["--httpPort", "70000"], start=False)
    bad.spawn()
    assert bad.proc.wait(timeout=30) != 0
    assert "Invalid --httpPort" in bad.log_tail()


def auth_server_with_root(fresh_server):
    """A server with --auth and an HTTP port, its first user root; (port, root client)."""
    port = free_port()
    s = fresh_server.new(extra_args=["--auth", "--httpPort", str(port)])
    anon = s.client()
    anon.admin.command("createUser", "root", pwd="root-pw", roles=["root"])
    anon.close()
    return s, port, s.client(username="root", password="root-pw", authSource="admin")


def test_with_auth_the_request_must_name_a_user(fresh_server):
    s, port, root = auth_server_with_root(fresh_server)
    root.admin.command("createUser", "reader", pwd="r-pw", roles=["readAnyDatabase"])
    root.admin.command("createUser", "old", pwd="o-pw", roles=["root"],
                       mechanisms=["SCRAM-SHA-1"])

    def basic(user, pwd):
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pwd}".encode()).decode()}

    status, _, body = write(port, "lp_auth", "cpu v=1 1")
    assert (status, json.loads(body)) == (401, {"error": "unable to parse authentication credentials"})
    status, _, body = write(port, "lp_auth", "cpu v=1 1", headers=basic("root", "wrong"))
    assert (status, json.loads(body)) == (401, {"error": "authorization failed"})
    status, _, body = write(port, "lp_auth", "cpu v=1 1", headers=basic("nobody", "x"))
    assert (status, json.loads(body)) == (401, {"error": "authorization failed"})
    assert write(port, "lp_auth", "cpu v=1 1", headers=basic("root", "root-pw"))[0] == 204
    assert write(port, "lp_auth", "cpu v=2 2", extra="&u=root&p=root-pw")[0] == 204
    assert write(port, "lp_auth", "cpu v=3 3", extra="&u=old&p=o-pw")[0] == 204
    assert write(port, "lp_auth", "cpu v=4 4", path="/api/v2/write", param="bucket",
                 headers={"Authorization": "Token root:root-pw"})[0] == 204
    status, _, body = write(port, "lp_auth", "cpu v=5 5", path="/api/v2/write", param="bucket",
                            headers={"Authorization": "Token root:nope"})
    assert (status, json.loads(body)["code"]) == (401, "unauthorized")
    # A user without the insert privilege.
    status, _, body = write(port, "lp_auth", "cpu v=6 6", headers=basic("reader", "r-pw"))
    assert status == 403 and "not authorized on lp_auth" in json.loads(body)["error"]
    assert [d["v"] for d in docs(root.lp_auth.cpu)] == [1.0, 2.0, 3.0, 4.0]
    # Failed logins are logged as the wire port's (20249).
    failures = [json.loads(line)["attr"] for line in s.log_text().splitlines()
                if '"id":20249,' in line]
    assert {(a["user"], a["mechanism"]) for a in failures} == {
        ("root", "PLAIN over HTTP"), ("nobody", "PLAIN over HTTP")}
        # /ping and /health need no credentials (load balancers).
    assert http(port, "GET", "/health")[0] == 200
    root.close()


def test_the_influxdb_node_client_writes(http_server, client, http_port, tmp_path):
    require_node_modules()
    env = isolated_env(tmp_path)
    env.update(HG_HTTP_PORT=str(http_port), HG_BUCKET="lp_node")
    p = subprocess.run(
        [require_node(), "--test", "--test-reporter=spec",
         os.path.join(REPO, "tests", "node", "influx_client.mjs")],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "pass 2" in p.stdout and "fail 0" in p.stdout, p.stdout
    got = docs(client.lp_node.sensor)
    assert len(got) == 600
    start = datetime.datetime(2026, 1, 1)
    for i, d in enumerate(got):
        assert d == {
            "time": start + datetime.timedelta(seconds=i),
            "tags": {"floor": "upper" if i % 2 else "lower", "room": f"r{i % 3}"},
            "temperature": pytest.approx(20 + i / 10),
            "count": i,
            "total": 4294967296 + i,
            "state": 'ok, "fine"' if i % 2 else "warm up",
            "on": i % 2 == 1,
        }, (i, d)


def scrape(port, headers=None):
    status, headers_out, body = http(port, "GET", "/metrics", headers=headers)
    assert status == 200, body
    assert headers_out["Content-Type"].startswith("text/plain; version=0.0.4")
    return {f.name: f for f in text_string_to_metric_families(body)}


def samples(family, **labels):
    return [s for s in family.samples
            if all(s.labels.get(k) == v for k, v in labels.items())]


def test_metrics_in_the_prometheus_text_format(client, http_port):
    assert write(http_port, "lp_metrics", "".join(
        f"cpu,host=h{i % 4} v={i} {i}000000000\n" for i in range(100)))[0] == 204
    families = scrape(http_port)
    # Parsed by Prometheus's own parser: every family typed, counters as counters.
    assert families["hourglass_up"].type == "gauge"
    assert families["hourglass_opcounters"].type == "counter"
    status = client.admin.command("serverStatus")
    [insert] = samples(families["hourglass_opcounters"], type="insert")
    assert insert.name == "hourglass_opcounters_total"
    assert status["opcounters"]["insert"] >= insert.value >= 100
    # The bucket catalog, and each time-series collection's statistics.
    assert families["hourglass_bucket_catalog_buckets"].type == "gauge"
    assert families["hourglass_bucket_catalog_measurements_committed"].type == "counter"
    stats = client.lp_metrics.command("collStats", "cpu")["timeseries"]
    [count] = samples(families["hourglass_timeseries_bucket_count"], db="lp_metrics",
                      collection="cpu")
    assert count.value == stats["bucketCount"] == 4
    [committed] = samples(families["hourglass_timeseries_measurements_committed"],
                          db="lp_metrics", collection="cpu")
    assert committed.value == stats["numMeasurementsCommitted"] == 100
    # Latencies: a histogram over MongoDB's buckets, cumulative, its count serverStatus's ops.
    latency = families["hourglass_op_latency_seconds"]
    assert latency.type == "histogram"
    writes = samples(latency, type="writes")
    buckets = [s for s in writes if s.name.endswith("_bucket")]
    assert len(buckets) == 51 and buckets[-1].labels["le"] == "+Inf"
    values = [b.value for b in buckets]
    assert values == sorted(values)
    [total] = [s for s in writes if s.name.endswith("_count")]
    assert total.value == buckets[-1].value
    ops = client.admin.command("serverStatus")["opLatencies"]["writes"]["ops"]
    assert ops >= total.value >= 1


def test_server_status_op_latencies(client):
    run_command(client.lp_latency, {"insert": "c", "documents": [{"a": 1}]})
    client.lp_latency.c.find_one()
    status = client.admin.command("serverStatus")
    latencies = status["opLatencies"]
    assert set(latencies) == {"reads", "writes", "commands", "transactions"}
    for kind in latencies.values():
        assert set(kind) == {"latency", "ops"}
    assert latencies["writes"]["ops"] >= 1 and latencies["reads"]["ops"] >= 1
    assert latencies["transactions"] == {"latency": 0, "ops": 0}
    with_histograms = client.admin.command("serverStatus", opLatencies={"histograms": True})
    bounds = {0, *(2 ** p for p in range(1, 41)), *(3 * 2 ** (p - 1) for p in range(11, 21))}
    for name, kind in with_histograms["opLatencies"].items():
        assert set(kind) == {"histogram", "latency", "ops"}
        assert all(b["micros"] in bounds and b["count"] > 0 for b in kind["histogram"]), name
        assert sum(b["count"] for b in kind["histogram"]) == kind["ops"]
    assert "opLatencies" not in client.admin.command("serverStatus", opLatencies=0)


def test_metrics_need_a_user_who_may_see_them(fresh_server):
    _, port, root = auth_server_with_root(fresh_server)
    root.admin.command("createUser", "writer", pwd="w-pw", roles=["readWriteAnyDatabase"])
    root.admin.command("createUser", "monitor", pwd="m-pw", roles=["clusterMonitor"])
    status, _, body = http(port, "GET", "/metrics")
    assert (status, json.loads(body)) == (401, {"error": "unable to parse authentication credentials"})
    status, _, body = http(port, "GET", "/metrics", headers={
        "Authorization": "Basic " + base64.b64encode(b"writer:w-pw").decode()})
    assert status == 403 and "not authorized" in json.loads(body)["error"]
    families = scrape(port, headers={
        "Authorization": "Basic " + base64.b64encode(b"monitor:m-pw").decode()})
    assert samples(families["hourglass_up"])[0].value == 1
    root.close()


def test_the_influxdb_python_client_writes(client, http_port):
    """Debian's python3-influxdb (InfluxDB's 1.x Python client): ping, then write_points with
    tags, every field type and second precision, as its users call it."""
    from influxdb import InfluxDBClient
    influx = InfluxDBClient(host="127.0.0.1", port=http_port, database="lp_py")
    assert influx.ping() == "1.8.10"
    points = [{"measurement": "weather", "tags": {"city": c},
               "time": 1_700_000_000 + i, "fields": {"temp": 10.5 + i, "rain": i % 2 == 0,
                                                    "n": i, "note": f"day {i}"}}
              for i, c in enumerate(["oslo", "lima", "oslo"])]
    assert influx.write_points(points, time_precision="s") is True
    got = docs(client.lp_py.weather)
    assert got == [
        {"time": at(1_700_000_000 + i), "tags": {"city": c}, "temp": 10.5 + i, "rain": i % 2 == 0,
         "n": i, "note": f"day {i}"}
        for i, c in enumerate(["oslo", "lima", "oslo"])]
    # A point the server refuses comes back as the client's error, with InfluxDB's message.
    from influxdb.exceptions import InfluxDBClientError
    with pytest.raises(InfluxDBClientError) as e:
        influx.write_points([{"measurement": "weather", "fields": {"time": 1}}])
    assert e.value.code == 400 and 'input field \\"time\\"' in str(e.value.content)


def test_chunked_bodies_and_malformed_requests(client, http_port):
    import http.client as httpclient
    import socket
    conn = httpclient.HTTPConnection("127.0.0.1", http_port, timeout=30)
    lines = (f"chunked,part={i % 2} v={i}i {i}000000000\n".encode() for i in range(500))
    conn.request("POST", "/write?db=lp_chunked", body=lines, encode_chunked=True,
                 headers={"Transfer-Encoding": "chunked"})
    r = conn.getresponse()
    assert (r.status, r.read()) == (204, b"")
    # The same connection serves the next request (keep-alive).
    conn.request("GET", "/ping")
    r = conn.getresponse()
    r.read()
    assert r.status == 204
    conn.close()
    assert client.lp_chunked.chunked.count_documents({}) == 500
    # Bytes that are not HTTP: an error answer or a closed connection, and the port lives on.
    for junk in (b"\x16\x03\x01\x00\xff garbage\r\n\r\n", b"POST /write?db=x HTTP/1.1\r\n"
                 b"Content-Length: -5\r\n\r\n", b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", http_port), timeout=10) as s:
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            assert answer == b"" or answer.split(b" ")[1][:1] == b"4", answer[:100]
    assert http(http_port, "GET", "/ping")[0] == 204
