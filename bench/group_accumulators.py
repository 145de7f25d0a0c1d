"""Each $group accumulator per host over the whole time-series collection `ts_bench ingest`
loads (tsbench.cpu: usage_user and usage_system of every measurement), pymongo, medians in ms.

    /usr/bin/python3 bench/group_accumulators.py PORT [RUNS]
"""

import statistics
import sys
import time

import pymongo

ACCUMULATORS = [
    ("sum", {"$sum": "$usage_user"}),
    ("avg", {"$avg": "$usage_user"}),
    ("count", {"$count": {}}),
    ("min", {"$min": "$usage_user"}),
    ("first", {"$first": "$usage_user"}),
    ("stdDevPop", {"$stdDevPop": "$usage_user"}),
    ("stdDevSamp", {"$stdDevSamp": "$usage_user"}),
    ("median", {"$median": {"input": "$usage_user", "method": "approximate"}}),
    ("push", {"$push": "$usage_user"}),
    ("addToSet", {"$addToSet": "$usage_user"}),
    ("sum of $multiply", {"$sum": {"$multiply": ["$usage_user", 2]}}),
    ("avg of $add", {"$avg": {"$add": ["$usage_user", "$usage_system"]}}),
]


def main():
    port = int(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    coll = pymongo.MongoClient(port=port).tsbench.cpu
    for name, acc in ACCUMULATORS:
        pipeline = [{"$group": {"_id": "$tags.hostname", "x": acc}}]
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            list(coll.aggregate(pipeline))
            times.append((time.perf_counter() - t) * 1000)
        print("RESULT accumulator=%s median_ms=%.1f" % (name.replace(" ", "_"), statistics.median(times)))


if __name__ == "__main__":
    main()
