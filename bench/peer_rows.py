"""The peers' rows (../shared/peers: gen_cpu.py's NDJSON) in Hourglass, and their query list.

    /usr/bin/python3 bench/peer_rows.py load PORT FILE.ndjson   # into bench.cpu (time, tags)
    /usr/bin/python3 bench/peer_rows.py query PORT q_mongo.tsv  # per type: first instance warms,
                                                                # then each timed; medians in ms

The peers' own Node.js runner (mongo_bench.cjs) reads the whole file into one string, which at
4,000 hosts passes Node's string limit; this loads it line by line with pymongo, in batches of
5,000 documents, and times the queries with pymongo (decoding the answers, as the peers' clients
do).
"""

import datetime
import json
import statistics
import sys
import time

import pymongo
from bson import json_util

UTC = datetime.timezone.utc


def load(coll, path):
    coll.database.drop_collection(coll.name)
    coll.database.create_collection(
        coll.name, timeseries={"timeField": "time", "metaField": "tags", "granularity": "seconds"})
    batch, n, t0 = [], 0, time.time()
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            d["time"] = datetime.datetime.strptime(
                d["time"]["$date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            batch.append(d)
            if len(batch) == 5000:
                coll.insert_many(batch, ordered=False)
                n += len(batch)
                batch = []
    if batch:
        coll.insert_many(batch, ordered=False)
        n += len(batch)
    print(json.dumps({"loaded": n, "seconds": round(time.time() - t0, 1)}))


def query(coll, path):
    by_type = {}
    for line in open(path):
        if not line.strip():
            continue
        qt, text = line.rstrip("\n").split("\t", 1)
        pipeline = json_util.loads(text)
        if qt not in by_type:
            by_type[qt] = []
            list(coll.aggregate(pipeline, allowDiskUse=True))
        t = time.perf_counter()
        list(coll.aggregate(pipeline, allowDiskUse=True))
        by_type[qt].append((time.perf_counter() - t) * 1000)
    for qt, ms in by_type.items():
        print(json.dumps({"type": qt, "n": len(ms), "median_ms": round(statistics.median(ms), 2)}))


def main():
    mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    coll = pymongo.MongoClient(port=port).bench.cpu
    load(coll, path) if mode == "load" else query(coll, path)


if __name__ == "__main__":
    main()
