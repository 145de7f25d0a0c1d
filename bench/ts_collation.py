"""Time-series reads with and without a collection collation (issue 16): the same 200,000
measurements (SERIES series, one string meta each, 200,000 / SERIES times) in a collection
without a collation and in one with {locale: "en", strength: 2}; each query's median of 7 runs
(ms) after one warm-up, as Markdown table rows.
Usage: bench/ts_collation.py PORT [SERIES (default 100)] [reuse]
(a release hourglassd on 127.0.0.1:PORT; `reuse` queries the data a previous run loaded, e.g.
after a restart of the server)."""
import datetime
import statistics
import sys
import time

from pymongo import MongoClient

port = int(sys.argv[1])
series = int(sys.argv[2]) if len(sys.argv) > 2 else 100
reuse = len(sys.argv) > 3 and sys.argv[3] == "reuse"
db = MongoClient("mongodb://127.0.0.1:%d" % port).bench
if not reuse:
    db.drop_collection("plain")
    db.drop_collection("ci")
    db.create_collection("plain", timeseries={"timeField": "t", "metaField": "m"})
    db.create_collection("ci", timeseries={"timeField": "t", "metaField": "m"},
                         collation={"locale": "en", "strength": 2})
    t0 = datetime.datetime(2026, 1, 1)
    rows = [{"t": t0 + datetime.timedelta(seconds=10 * i), "m": "s%d" % j, "v": float(i % 97)}
            for i in range(200_000 // series) for j in range(series)]
    for name in ("plain", "ci"):
        for k in range(0, len(rows), 10_000):
            db[name].insert_many([dict(r) for r in rows[k:k + 10_000]], ordered=False)
queries = {
    "`$group` by the meta, `$sum: 1`":
        lambda c: list(c.aggregate([{"$group": {"_id": "$m", "n": {"$sum": 1}}}])),
    "`find().sort({t: -1}).limit(10)`": lambda c: list(c.find().sort("t", -1).limit(10)),
    "`count_documents` of one series": lambda c: c.count_documents({"m": "s5"}),
    "`$match` one series, `$group` `$max`":
        lambda c: list(c.aggregate([{"$match": {"m": "s5"}},
                                    {"$group": {"_id": None, "x": {"$max": "$v"}}}])),
}
for q, run in queries.items():
    medians = []
    for name in ("plain", "ci"):
        run(db[name])
        times = []
        for _ in range(7):
            start = time.perf_counter()
            run(db[name])
            times.append((time.perf_counter() - start) * 1000)
        medians.append(statistics.median(times))
    print("| %s | %.2f | %.2f | %.1f× |" % (q, medians[0], medians[1], medians[1] / medians[0]))
