"""Prometheus remote write (protocol 1.0) into hourglassd's HTTP port: POST /api/v1/write with a
snappy-compressed protobuf WriteRequest. The request is encoded here, field by field, from
Prometheus's remote-write specification (WriteRequest.timeseries = 1; TimeSeries.labels = 1,
samples = 2; Label.name = 1, value = 2; Sample.value = 1 (double), timestamp = 2 (int64 ms)), so
the server's own message definitions are checked against the specification, not against
themselves. Each metric becomes a time-series collection, its labels the metaField."""

import datetime
import math
import struct
import urllib.error
import urllib.request

import pytest
import snappy

from conftest import free_port, module_server


def varint(n):
    n &= (1 << 64) - 1  # negative int64s are ten-byte varints
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire_type, payload):
    return varint(number << 3 | wire_type) + payload


def length_delimited(number, data):
    return field(number, 2, varint(len(data)) + data)


def label(name, value):
    return length_delimited(1, name.encode()) + length_delimited(2, value.encode())


def sample(value, ts_ms):
    return field(1, 1, struct.pack("<d", value)) + field(2, 0, varint(ts_ms))


def series(labels, samples, extra=b""):
    body = b"".join(length_delimited(1, label(k, v)) for k, v in labels)
    body += b"".join(length_delimited(2, sample(v, t)) for v, t in samples)
    return body + extra


def write_request(*all_series, extra=b""):
    return b"".join(length_delimited(1, s) for s in all_series) + extra


def post(port, body, path="/api/v1/write", compress=True):
    data = snappy.compress(body) if compress else body
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method="POST",
                                 headers={"Content-Encoding": "snappy",
                                          "Content-Type": "application/x-protobuf",
                                          "X-Prometheus-Remote-Write-Version": "0.1.0"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture(scope="module")
def http_port():
    return free_port()


@pytest.fixture(scope="module")
def prom_server(request, tmp_path_factory, http_port):
    yield from module_server(request, tmp_path_factory, "hg-prom", "hourglassd-prom",
                             ["--httpPort", str(http_port)])


@pytest.fixture(scope="module")
def client(prom_server):
    c = prom_server.client()
    yield c
    c.close()


def at(ms):
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


def test_remote_write_stores_each_metric_in_a_time_series_collection(client, http_port):
    t0 = 1_700_000_000_000
    body = write_request(
        series([("__name__", "http_requests_total"), ("job", "api"), ("instance", "a:9090")],
               [(1.0, t0), (5.0, t0 + 15_000)]),
        series([("instance", "b:9090"), ("__name__", "http_requests_total"), ("job", "api")],
               [(7.0, t0)]),
        series([("__name__", "up")], [(1.0, t0)]),
        series([("__name__", "temperature"), ("room", "k")], [(-3.25, -1_000)]))
    assert post(http_port, body) == (204, "")
    db = client.prometheus
    [info] = db.list_collections(filter={"name": "http_requests_total"})
    assert info["type"] == "timeseries"
    assert info["options"]["timeseries"]["timeField"] == "time"
    assert info["options"]["timeseries"]["metaField"] == "labels"
    got = list(db.http_requests_total.find({}, {"_id": 0}).sort([("labels.instance", 1), ("time", 1)]))
    assert got == [
        {"time": at(t0), "labels": {"instance": "a:9090", "job": "api"}, "value": 1.0},
        {"time": at(t0 + 15_000), "labels": {"instance": "a:9090", "job": "api"}, "value": 5.0},
        {"time": at(t0), "labels": {"instance": "b:9090", "job": "api"}, "value": 7.0},
    ]
    # Labels sorted by name whatever order they came in.
    assert list(db.http_requests_total.find_one({"labels.instance": "b:9090"})["labels"]) == [
        "instance", "job"]
    # A series with no label but its name has no metaField; times before 1970 are kept.
    assert list(db.up.find({}, {"_id": 0})) == [{"time": at(t0), "value": 1.0}]
    assert list(db.temperature.find({}, {"_id": 0})) == [
        {"time": at(-1_000), "labels": {"room": "k"}, "value": -3.25}]


def test_special_values_and_the_database_parameter(client, http_port):
    body = write_request(series([("__name__", "g")], [(math.inf, 1000), (-0.0, 2000),
                                                      (math.nan, 3000)]))
    assert post(http_port, body, path="/api/v1/write?db=promdb") == (204, "")
    values = [d["value"] for d in client.promdb.g.find().sort("time", 1)]
    assert values[0] == math.inf
    assert values[1] == 0.0 and math.copysign(1, values[1]) == -1
    assert math.isnan(values[2])


def test_metadata_is_accepted_and_an_empty_request_writes_nothing(client, http_port):
    # WriteRequest.metadata (field 3), which Prometheus sends on its own: accepted, not stored.
    metadata = length_delimited(3, field(1, 0, varint(1)) + length_delimited(2, b"up"))
    assert post(http_port, write_request(extra=metadata)) == (204, "")
    assert post(http_port, b"") == (204, "")


def test_refusals(client, http_port):
    status, body = post(http_port, b"not snappy at all", compress=False)
    assert (status, body) == (400, "snappy: corrupt input\n")
    status, body = post(http_port, b"\x0a\xff\xff\xff")  # a truncated length-delimited field
    assert (status, body) == (400, "not a valid protobuf WriteRequest\n")
    status, body = post(http_port, write_request(series([("job", "x")], [(1.0, 1)])))
    assert (status, body) == (400, "a series has no metric name (label __name__)\n")
    # Exemplars (TimeSeries field 3) are refused, not dropped unseen.
    exemplar = length_delimited(3, length_delimited(1, label("trace_id", "1")) +
                                field(2, 1, struct.pack("<d", 1.0)) + field(3, 0, varint(5)))
    status, body = post(http_port, write_request(
        series([("__name__", "with_exemplar")], [(1.0, 1)], extra=exemplar)))
    assert status == 400 and "exemplars" in body
    assert "with_exemplar" not in client.prometheus.list_collection_names()
    req = urllib.request.Request(f"http://127.0.0.1:{http_port}/api/v1/write", method="GET")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 405


def test_a_metric_name_storage_refuses_is_dropped_and_named(client, http_port):
    t = 1_700_000_000_000
    body = write_request(series([("__name__", "ok_metric")], [(1.0, t)]),
                         series([("__name__", "bad$metric")], [(1.0, t), (2.0, t)]))
    status, text = post(http_port, body)
    assert status == 400
    assert text.startswith('measurement "bad$metric": ') and text.endswith("(dropped 2 samples)\n")
    assert client.prometheus.ok_metric.count_documents({}) == 1
