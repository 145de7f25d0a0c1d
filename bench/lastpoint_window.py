#!/usr/bin/python3
"""The latest measurement per host among those of the last hour, as users spell it, on the
collection `ts_bench ingest` loads (tsbench.cpu): prints each pipeline's median over RUNS runs.

    bench/lastpoint_window.py PORT [RUNS]

e.g. after `build/release/bench/ts_bench ingest --uri mongodb://127.0.0.1:PORT --hosts 4000
--hours 3 --conns 4` and a restart of the server."""
import datetime
import statistics
import sys
import time

import pymongo

port = int(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
client = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true")
coll = client.tsbench.cpu
last = next(coll.aggregate([{"$group": {"_id": None, "t": {"$max": "$time"}}}]))["t"]
since = last - datetime.timedelta(hours=1)
PIPELINES = {
    "lastpoint-1h": [{"$match": {"time": {"$gte": since}}},
                     {"$sort": {"tags.hostname": 1, "time": -1}},
                     {"$group": {"_id": "$tags.hostname", "last": {"$first": "$$ROOT"}}}],
    "lastpoint-1h-top": [{"$match": {"time": {"$gt": since}}},
                         {"$group": {"_id": "$tags.hostname",
                                     "u": {"$top": {"sortBy": {"time": -1},
                                                    "output": "$usage_user"}}}}],
}
for name, pipeline in PIPELINES.items():
    times, groups = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        groups = len(list(coll.aggregate(pipeline, allowDiskUse=True)))
        times.append((time.perf_counter() - t0) * 1000)
    print(f"RESULT {name} groups={groups} median_ms={statistics.median(times):.1f} runs={runs}")
