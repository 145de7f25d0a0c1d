#!/usr/bin/python3
"""Time-series writes that change stored measurements, on the ts_bench data (TSBS cpu-only shape):
updates and deletes of one host-hour and of one hour of every host, and a sorted findAndModify,
each as a user writes it and with hint {$natural: 1} (every bucket read, as these writes ran
before they found their buckets as reads do). Each instance takes another host and hour (fixed
seed), so no instance finds what an earlier one changed. Prints the median milliseconds and the
buckets each read (explain's totalDocsExamined).

  build/release/hourglassd --port 27999 --dbpath /tmp/tsm &
  build/release/bench/ts_bench load --uri mongodb://127.0.0.1:27999 --hosts 100 --hours 24
  /usr/bin/python3 bench/ts_modify.py --port 27999 --runs 15
"""

import argparse
import datetime
import random
import statistics
import time

import pymongo

T0 = datetime.datetime(2016, 1, 1)


def timed(fn):
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=27017)
    ap.add_argument("--db", default="tsbench")
    ap.add_argument("--coll", default="cpu")
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    client = pymongo.MongoClient(port=a.port, directConnection=True)
    db = client[a.db]
    coll = db[a.coll]
    rng = random.Random(7)
    used = set()

    def pick():
        while True:
            h, hour = rng.randrange(a.hosts), rng.randrange(a.hours)
            if (h, hour) not in used:
                used.add((h, hour))
                return f"host_{h}", T0 + datetime.timedelta(hours=hour)

    def window(start):
        return {"$gte": start, "$lt": start + datetime.timedelta(hours=1)}

    natural = {"$natural": 1}
    cases = {
        "updateMany host-hour": lambda host, start, hint: db.command({
            "update": a.coll, "updates": [{
                "q": {"tags.hostname": host, "time": window(start)},
                "u": {"$inc": {"usage_user": 1}}, "multi": True,
                **({"hint": hint} if hint else {})}]}),
        "deleteMany host-hour": lambda host, start, hint: db.command({
            "delete": a.coll, "deletes": [{
                "q": {"tags.hostname": host, "time": window(start)}, "limit": 0,
                **({"hint": hint} if hint else {})}]}),
        "findAndModify latest of a host": lambda host, start, hint: db.command({
            "findAndModify": a.coll, "query": {"tags.hostname": host},
            "sort": {"time": -1}, "update": {"$set": {"checked": True}},
            **({"hint": hint} if hint else {})}),
    }
    total = db[f"system.buckets.{a.coll}"].count_documents({})
    print(f"buckets: {total}")
    for name, run in cases.items():
        for hint in (None, natural):
            times = []
            examined = None
            for _ in range(a.runs):
                host, start = pick()
                if examined is None and not name.startswith("findAndModify"):
                    inner = ({"update": a.coll, "updates": [{
                        "q": {"tags.hostname": host, "time": window(start)},
                        "u": {"$inc": {"usage_user": 1}}, "multi": True,
                        **({"hint": hint} if hint else {})}]} if name.startswith("update") else
                        {"delete": a.coll, "deletes": [{
                            "q": {"tags.hostname": host, "time": window(start)}, "limit": 0,
                            **({"hint": hint} if hint else {})}]})
                    e = db.command("explain", inner, verbosity="executionStats")
                    examined = e["executionStats"]["totalDocsExamined"]
                r = {}
                try:
                    times.append(timed(lambda: r.update(run(host, start, hint))))
                except pymongo.errors.OperationFailure as e:  # a build without this write
                    print(f"{name:32s} fails: {e.code} {e.details.get('errmsg')}")
                    break
                if name != "findAndModify latest of a host":
                    assert r["n"] == 360, r
            if not times:
                continue
            label = "hint $natural" if hint else "as written"
            print(f"{name:32s} {label:14s} median {statistics.median(times):8.2f} ms"
                  f"   buckets read {examined if examined is not None else '-'}")


if __name__ == "__main__":
    main()
