#!/usr/bin/env python3
"""A case-insensitive find on a collection with a default collation: through the collated index
the collection takes, against a collection scan of the same query (the only plan reads under a
collation had before collated indexes). Usage: bench/collated_lookup.py PORT [DOCS]"""
import sys, time, statistics, pymongo
port = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
c = pymongo.MongoClient(port=port); db = c.cbench; db.drop_collection("users")
db.create_collection("users", collation={"locale": "en", "strength": 2})
db.users.insert_many([{"_id": i, "name": "User%07d" % i} for i in range(n)], ordered=False)
db.users.create_index("name")
def t(fn, runs=15):
    xs = []
    for _ in range(runs):
        s = time.perf_counter(); fn(); xs.append((time.perf_counter() - s) * 1000)
    return statistics.median(xs)
q = {"name": "user%07d" % (n // 2)}
ix = t(lambda: list(db.users.find(q)))
scan = t(lambda: list(db.users.find(q).hint([("$natural", 1)])), 5)
print(f"{n} docs, case-insensitive find by name: collated index {ix:.2f} ms, collection scan {scan:.1f} ms ({scan/ix:.0f}x)")
print(db.users.find(q).explain()["queryPlanner"]["winningPlan"]["inputStage"]["indexBounds"])
