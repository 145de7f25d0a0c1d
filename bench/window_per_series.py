#!/usr/bin/python3
"""A moving average per host ($setWindowFields partitioned by the metaField, sorted by time) on
the collection `ts_bench ingest` loads (tsbench.cpu), over the last hour and over everything:
prints each one's rows and median over RUNS runs (pymongo).

    bench/window_per_series.py PORT [RUNS] [hostname]

e.g. after `build/release/bench/ts_bench ingest --uri mongodb://127.0.0.1:PORT --hosts 4000
--hours 3 --conns 4` and a restart of the server."""
import datetime
import statistics
import sys
import time

import pymongo

port = int(sys.argv[1])
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
coll = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true").tsbench.cpu
last = next(coll.aggregate([{"$group": {"_id": None, "t": {"$max": "$time"}}}]))["t"]
# With a third argument `hostname`, partitioned by the subfield "$tags.hostname" instead.
PARTITION = "$tags.hostname" if "hostname" in sys.argv[3:] else "$tags"
MOVING = [{"$setWindowFields": {"partitionBy": PARTITION, "sortBy": {"time": 1}, "output": {
    "ma": {"$avg": "$usage_user", "window": {"documents": [-5, 0]}}}}},
    {"$project": {"_id": 0, "time": 1, "ma": 1}}]
PIPELINES = {
    "moving-avg-per-host-last-hour":
        [{"$match": {"time": {"$gte": last - datetime.timedelta(hours=1)}}}] + MOVING,
    "moving-avg-per-host-all": MOVING,
}
for name, pipeline in PIPELINES.items():
    times, n = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n = sum(1 for _ in coll.aggregate(pipeline, allowDiskUse=True))
        times.append((time.perf_counter() - t0) * 1000)
    print(f"RESULT {name} docs={n} median_ms={statistics.median(times):.0f} runs={runs}")
