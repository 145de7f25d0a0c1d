#!/usr/bin/python3
"""The newest and oldest measurements, as users ask for them, on the collection `ts_bench
ingest` loads (tsbench.cpu): prints each query's median over RUNS runs (pymongo).

    bench/sort_limit.py PORT [RUNS]

e.g. after `build/release/bench/ts_bench ingest --uri mongodb://127.0.0.1:PORT --hosts 4000
--hours 3 --conns 4` and a restart of the server."""
import statistics
import sys
import time

import pymongo

port = int(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
coll = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true").tsbench.cpu
host = {"tags.hostname": "host_17"}
QUERIES = {
    "find-one-host-newest-5": lambda: coll.find(host).sort("time", -1).limit(5),
    "aggregate-one-host-newest-5": lambda: coll.aggregate(
        [{"$match": host}, {"$sort": {"time": -1}}, {"$limit": 5}]),
    "find-newest-1": lambda: coll.find({}).sort("time", -1).limit(1),
    "find-newest-10-after-10": lambda: coll.find({}).sort("time", -1).skip(10).limit(10),
    "find-oldest-5": lambda: coll.find({}).sort("time", 1).limit(5),
    "find-newest-5-usage-above-99": lambda: coll.find(
        {"usage_user": {"$gt": 99}}).sort("time", -1).limit(5),
}
for name, query in QUERIES.items():
    times, n = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n = len(list(query()))
        times.append((time.perf_counter() - t0) * 1000)
    print(f"RESULT {name} docs={n} median_ms={statistics.median(times):.2f} runs={runs}")
