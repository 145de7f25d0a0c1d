"""Time-series reads with and without a collection collation (issue 16): the same 200,000
measurements (100 series x 2,000 times, one string meta) in a collection without a collation and
in one with {locale: "en", strength: 2}; each query's median of 7 runs (ms) after one warm-up.
Usage: bench/ts_collation.py PORT (a release hourglassd on 127.0.0.1:PORT, an empty database)."""
import datetime, statistics, sys, time
from pymongo import MongoClient
c = MongoClient("mongodb://127.0.0.1:%s" % sys.argv[1])
db = c.bench
db.drop_collection("plain"); db.drop_collection("ci")
db.create_collection("plain", timeseries={"timeField": "t", "metaField": "m"})
db.create_collection("ci", timeseries={"timeField": "t", "metaField": "m"}, collation={"locale": "en", "strength": 2})
t0 = datetime.datetime(2026, 1, 1)
rows = [{"t": t0 + datetime.timedelta(seconds=10 * i), "m": "s%d" % (j), "v": float(i % 97)}
        for i in range(2000) for j in range(100)]
for name in ("plain", "ci"):
    for k in range(0, len(rows), 10000):
        db[name].insert_many([dict(r) for r in rows[k:k + 10000]], ordered=False)
queries = {
    "group by meta, $sum": lambda c: list(c.aggregate([{"$group": {"_id": "$m", "n": {"$sum": 1}}}])),
    "newest 10 (sort time desc, limit)": lambda c: list(c.find().sort("t", -1).limit(10)),
    "count one series": lambda c: c.count_documents({"m": "s5"}),
    "max v of one series": lambda c: list(c.aggregate([{"$match": {"m": "s5"}}, {"$group": {"_id": None, "x": {"$max": "$v"}}}])),
}
for q, f in queries.items():
    out = []
    for name in ("plain", "ci"):
        f(db[name])
        ts = []
        for _ in range(7):
            s = time.perf_counter(); f(db[name]); ts.append((time.perf_counter() - s) * 1000)
        out.append(statistics.median(ts))
    print("| %s | %.2f | %.2f | %.1fx |" % (q, out[0], out[1], out[1] / out[0]))
