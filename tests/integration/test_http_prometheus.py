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


def test_names_prometheus_would_not_send_are_refused(client, http_port):
    for labels, reason in [
            ([("__name__", "m"), ("a\0b", "x")], 'invalid label name "a\0b"'),
            ([("__name__", "m"), ("a.b", "x")], 'invalid label name "a.b"'),
            ([("__name__", "m"), ("$a", "x")], 'invalid label name "$a"'),
            ([("__name__", "m"), ("9a", "x")], 'invalid label name "9a"'),
            ([("__name__", "m-1")], 'invalid metric name "m-1"'),
            ([("__name__", "m"), ("a", "1"), ("a", "2")], 'duplicate label name "a"')]:
        status, body = post(http_port, write_request(series(labels, [(1.0, 1)])))
        assert (status, body) == (400, reason + "\n"), labels
    assert "m" not in client.prometheus.list_collection_names()
    # An empty label value is no label, as in Prometheus; ':' is allowed in metric names.
    assert post(http_port, write_request(
        series([("__name__", "job:rate5m"), ("a", ""), ("b", "2")], [(1.0, 1)]))) == (204, "")
    [doc] = client.prometheus["job:rate5m"].find({}, {"_id": 0})
    assert doc["labels"] == {"b": "2"}


def test_a_metric_name_storage_refuses_is_dropped_and_named(client, http_port):
    t = 1_700_000_000_000
    long_name = "m" * 300  # a valid metric name, too long for a namespace
    body = write_request(series([("__name__", "ok_metric")], [(1.0, t)]),
                         series([("__name__", long_name)], [(1.0, t), (2.0, t)]))
    status, text = post(http_port, body)
    assert status == 400
    assert text.startswith(f'measurement "{long_name}": ') and text.endswith("(dropped 2 samples)\n")
    assert client.prometheus.ok_metric.count_documents({}) == 1


# -- remote read: ReadRequest.queries = 1; Query.start_timestamp_ms = 1, end_timestamp_ms = 2,
# matchers = 3; LabelMatcher.type = 1 (EQ 0, NEQ 1, RE 2, NRE 3), name = 2, value = 3;
# ReadResponse.results = 1; QueryResult.timeseries = 1.
EQ, NEQ, RE, NRE = 0, 1, 2, 3


def read_request(*queries):
    out = b""
    for start, end, matchers in queries:
        q = field(1, 0, varint(start)) + field(2, 0, varint(end))
        for kind, name, value in matchers:
            q += length_delimited(3, field(1, 0, varint(kind)) + length_delimited(2, name.encode())
                                  + length_delimited(3, value.encode()))
        out += length_delimited(1, q)
    return out


def parse_fields(data):
    """[(number, value)] of one message: ints for varints, bytes for the rest."""
    out, i = [], 0
    while i < len(data):
        key, i = read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n, i = read_varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.append((number, value))
    return out


def read_varint(data, i):
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def decode_response(body):
    """[[({label: value}, [(ts, value)])] per query]"""
    results = []
    for number, result in parse_fields(body):
        assert number == 1
        all_series = []
        for n2, ts in parse_fields(result):
            assert n2 == 1
            labels, samples = [], []
            for n3, part in parse_fields(ts):
                if n3 == 1:
                    kv = dict(parse_fields(part))
                    labels.append((kv.get(1, b"").decode(), kv.get(2, b"").decode()))
                elif n3 == 2:
                    kv = dict(parse_fields(part))
                    ts_ms = kv.get(2, 0)
                    if ts_ms >= 1 << 63:
                        ts_ms -= 1 << 64
                    samples.append((ts_ms, struct.unpack("<d", kv.get(1, b"\0" * 8))[0]))
            assert [k for k, _ in labels] == sorted(k for k, _ in labels)  # sorted by name
            all_series.append((dict(labels), samples))
        results.append(all_series)
    return results


def remote_read(port, *queries, db=""):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/read" + (f"?db={db}" if db else ""),
        data=snappy.compress(read_request(*queries)), method="POST",
        headers={"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
                 "X-Prometheus-Remote-Read-Version": "0.1.0"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.headers["Content-Type"] == "application/x-protobuf"
            assert r.headers["Content-Encoding"] == "snappy"
            return r.status, decode_response(snappy.decompress(r.read()))
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture(scope="module")
def read_data(client, http_port):
    body = write_request(
        series([("__name__", "reqs"), ("job", "api"), ("instance", "a")], [(1.0, 1000), (2.0, 2000), (3.0, 3000)]),
        series([("__name__", "reqs"), ("job", "api"), ("instance", "b")], [(10.0, 1000)]),
        series([("__name__", "reqs_failed"), ("job", "api"), ("instance", "a")], [(0.5, 1000)]),
        series([("__name__", "zones")], [(1.0, 1000)]),
        series([("__name__", "zones"), ("zone", "east")], [(2.0, 1000)]),
        series([("__name__", "zones"), ("zone", "west")], [(3.0, 1000)]))
    assert post(http_port, body, path="/api/v1/write?db=promread") == (204, "")
    return "promread"


def series_of(result):
    return sorted((tuple(sorted(labels.items())), samples) for labels, samples in result)


def test_remote_read_by_name_and_label_matchers(read_data, http_port):
    q = lambda *m, start=0, end=10_000: (start, end, list(m))  # noqa: E731
    status, results = remote_read(http_port, q((EQ, "__name__", "reqs")), db=read_data)
    assert status == 200
    assert series_of(results[0]) == [
        ((("__name__", "reqs"), ("instance", "a"), ("job", "api")),
         [(1000, 1.0), (2000, 2.0), (3000, 3.0)]),
        ((("__name__", "reqs"), ("instance", "b"), ("job", "api")), [(1000, 10.0)]),
    ]
    # Several queries, one result each; equality, inequality, regexes (anchored), time bounds.
    status, results = remote_read(
        http_port,
        q((EQ, "__name__", "reqs"), (EQ, "instance", "a")),
        q((EQ, "__name__", "reqs"), (NEQ, "instance", "a")),
        q((RE, "__name__", "reqs.*"), (RE, "instance", "a")),
        q((EQ, "__name__", "reqs"), (NRE, "job", "ap.")),
        q((EQ, "__name__", "reqs"), (RE, "instance", "")),  # anchored: "" matches no instance
        q((EQ, "__name__", "reqs"), (EQ, "instance", "a"), start=1500, end=2500),
        db=read_data)
    assert status == 200 and len(results) == 6
    assert [s[1] for s in series_of(results[0])] == [[(1000, 1.0), (2000, 2.0), (3000, 3.0)]]
    assert [dict(s[0])["instance"] for s in series_of(results[1])] == ["b"]
    assert sorted(dict(s[0])["__name__"] for s in series_of(results[2])) == ["reqs", "reqs_failed"]
    assert results[3] == []
    assert results[4] == []
    assert [s[1] for s in series_of(results[5])] == [[(2000, 2.0)]]


def test_a_missing_label_is_the_empty_string(read_data, http_port):
    q = lambda *m: (0, 10_000, [(EQ, "__name__", "zones"), *m])  # noqa: E731
    status, results = remote_read(
        http_port,
        q((EQ, "zone", "")),          # only the series without a zone
        q((NEQ, "zone", "")),         # only those with one
        q((RE, "zone", "|east")),     # "" matches: no zone, or east
        q((NRE, "zone", "|east")),    # the others: west
        q((NEQ, "zone", "east")),     # no zone and west
        db=read_data)
    assert status == 200
    zones = [sorted(dict(s[0]).get("zone", "") for s in series_of(r)) for r in results]
    assert zones == [[""], ["east", "west"], ["", "east"], ["west"], ["", "west"]]


def test_regexes_are_anchored_at_the_very_end(client, http_port):
    # PCRE's $ would also match before a final newline; Prometheus's RE2 anchors do not.
    body = write_request(series([("__name__", "nl"), ("v", "a")], [(1.0, 1)]),
                         series([("__name__", "nl"), ("v", "a\n")], [(2.0, 1)]))
    assert post(http_port, body, path="/api/v1/write?db=promnl") == (204, "")
    status, results = remote_read(http_port, (0, 10, [(EQ, "__name__", "nl"), (RE, "v", "a")]),
                                  (0, 10, [(RE, "__name__", "n"), (EQ, "v", "a")]),
                                  db="promnl")
    assert status == 200
    assert [dict(s[0])["v"] for s in series_of(results[0])] == ["a"]
    assert results[1] == []  # "n" is no whole metric name
    # Label names in matchers are checked as in writes.
    status, body = remote_read(http_port, (0, 1, [(EQ, "a.b", "x")]), db="promnl")
    assert (status, body) == (400, 'invalid label name "a.b"\n')


def test_remote_read_refusals(read_data, http_port):
    status, body = remote_read(http_port, (0, 1, [(RE, "job", "(")]), db=read_data)
    assert status == 400 and "invalid regex" in body
    req = urllib.request.Request(f"http://127.0.0.1:{http_port}/api/v1/read", data=b"junk",
                                 method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 400
    # A database with nothing in it answers an empty result per query.
    status, results = remote_read(http_port, (0, 1, [(EQ, "__name__", "x")]), db="promnothing")
    assert (status, results) == (200, [[]])
