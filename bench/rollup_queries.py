"""A year of one host's hourly averages: from raw buckets, from the rollup, and from the source
with the rollup answering (docs/benchmarks.md, issue 20).

  rollup_queries.py PORT [--runs 20] [--hosts 10]

Expects `ts_bench load` data in tsbench.cpu (TSBS cpu-only shape, from 2016-01-01) and the
rollup tsbench.cpu_1h ({every: "1h", fields: {usage_user: ["avg", ...]}}). Each query is run
`--runs` times on random hosts (fixed seed) after 3 untimed ones, drained with the documents
left undecoded (RawBSONDocument: the client's decoding is not the server's time); the figure is
the median latency. Prints RESULT lines.
"""

import argparse
import datetime
import random
import statistics
import time

import pymongo
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

Y0 = datetime.datetime(2016, 1, 1)
Y1 = datetime.datetime(2017, 1, 1)


def raw_pipeline(host):
    return [{"$match": {"tags.hostname": host, "time": {"$gte": Y0, "$lt": Y1}}},
            {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "hour"}},
                        "avg": {"$avg": "$usage_user"}}},
            {"$sort": {"_id": 1}}]


def timed(fn, hosts, runs, rng):
    for _ in range(3):
        fn(rng.choice(hosts))
    times = []
    n = None
    for _ in range(runs):
        host = rng.choice(hosts)
        t = time.perf_counter()
        n = fn(host)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--hosts", type=int, default=10)
    a = ap.parse_args()
    client = pymongo.MongoClient("127.0.0.1", a.port, directConnection=True)
    db = client.get_database("tsbench", codec_options=CodecOptions(document_class=RawBSONDocument))
    hosts = ["host_%d" % i for i in range(a.hosts)]
    rng = random.Random(7)

    def set_answers(on):
        client.admin.command("setParameter", 1, hourglassAnswerAggregatesFromRollups=on)

    def raw(host):
        return len(list(db.cpu.aggregate(raw_pipeline(host))))

    def rollup_find(host):
        return len(list(db.cpu_1h.find(
            {"tags.hostname": host, "time": {"$gte": Y0, "$lt": Y1}},
            {"_id": 0, "time": 1, "avg": "$usage_user.avg"}).sort("time", 1)))

    set_answers(False)
    ms_raw, n_raw = timed(raw, hosts, a.runs, rng)
    set_answers(True)
    ms_answered, n_answered = timed(raw, hosts, a.runs, rng)
    ms_find, n_find = timed(rollup_find, hosts, a.runs, rng)
    assert n_raw == n_answered == n_find, (n_raw, n_answered, n_find)
    print(f"RESULT query=raw-group rows={n_raw} median_ms={ms_raw:.2f}")
    print(f"RESULT query=source-group-answered-by-rollup rows={n_answered} "
          f"median_ms={ms_answered:.2f} speedup={ms_raw / ms_answered:.1f}")
    print(f"RESULT query=rollup-find rows={n_find} median_ms={ms_find:.2f} "
          f"speedup={ms_raw / ms_find:.1f}")


if __name__ == "__main__":
    main()
