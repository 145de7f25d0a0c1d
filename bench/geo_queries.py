#!/usr/bin/env python3
"""Geo queries as users write them, over N random GeoJSON points (longitude -180..180, latitude
-60..60): through a 2dsphere index against a collection scan of the same filter, and the reads
only an index can answer ($near, $nearSphere, $geoNear), for a regular collection and a
time-series measurement (CARS cars, 1,000 by default, each within about a degree of its home).
Medians of 7 runs, ms. With `reuse`, the collections a previous run loaded are queried as they are
(after a restart, say). Usage: bench/geo_queries.py PORT [N] [CARS] [reuse]"""
import datetime, random, statistics, sys, time
import pymongo

port = int(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
cars = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
reuse = len(sys.argv) > 4 and sys.argv[4] == "reuse"
c = pymongo.MongoClient(port=port); db = c.geobench
if not reuse:
    db.drop_collection("places"); db.drop_collection("tracks")
    rng = random.Random(1)
    pts = [[rng.uniform(-180, 180), rng.uniform(-60, 60)] for _ in range(n)]
    db.places.insert_many([{"_id": i, "loc": {"type": "Point", "coordinates": p}}
                           for i, p in enumerate(pts)], ordered=False)
    db.places.create_index([("loc", "2dsphere")])
    t0 = datetime.datetime(2026, 1, 1)
    db.create_collection("tracks", timeseries={"timeField": "t", "metaField": "car"})
    # CARS cars, each driving within about a degree of its home (a bucket covers a small area).
    homes = [[rng.uniform(-170, 170), rng.uniform(-55, 55)] for _ in range(cars)]
    homes[0] = [2.35, 48.85]
    db.tracks.insert_many([{"t": t0 + datetime.timedelta(seconds=i // cars), "car": i % cars,
                            "pos": {"type": "Point", "coordinates": [
                                homes[i % cars][0] + rng.uniform(-1, 1),
                                homes[i % cars][1] + rng.uniform(-1, 1)]}} for i in range(n)],
                          ordered=False)
    db.tracks.create_index([("pos", "2dsphere")])


def t(fn, runs=7):
    xs = []
    for _ in range(runs):
        s = time.perf_counter(); fn(); xs.append((time.perf_counter() - s) * 1000)
    return statistics.median(xs)


NAT = [("$natural", 1)]
paris = {"type": "Point", "coordinates": [2.35, 48.85]}
cap = {"loc": {"$geoWithin": {"$centerSphere": [[2.35, 48.85], 300 / 6378.1]}}}
square = {"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [
    [[0, 40], [10, 40], [10, 50], [0, 50], [0, 40]]]}}}}
rows = []
for name, q in [("$geoWithin $centerSphere 300 km", cap), ("$geoWithin $geometry 10x10 deg", square)]:
    m = len(list(db.places.find(q)))
    rows.append((name, m, t(lambda: list(db.places.find(q))),
                 t(lambda: list(db.places.find(q).hint(NAT)), 3)))
near = {"loc": {"$near": {"$geometry": paris, "$maxDistance": 500000}}}
rows.append(("$near 500 km, 10 nearest", 10, t(lambda: list(db.places.find(near).limit(10))), None))
geo_near = [{"$geoNear": {"near": paris, "distanceField": "d", "maxDistance": 500000}},
            {"$limit": 10}]
rows.append(("$geoNear 500 km, 10 nearest", 10, t(lambda: list(db.places.aggregate(geo_near))),
             None))
nearest = {"loc": {"$near": {"$geometry": paris}}}
rows.append(("$near without a maximum, 10 nearest", 10,
             t(lambda: list(db.places.find(nearest).limit(10))), None))
legacy = {"loc": {"$nearSphere": [2.35, 48.85], "$maxDistance": 500 / 6378.1}}
rows.append(("$nearSphere legacy pair, radians, 10 nearest", 10,
             t(lambda: list(db.places.find(legacy).limit(10))), None))
geo_near_ts = [{"$geoNear": {"near": paris, "key": "pos", "distanceField": "d"}}, {"$limit": 10}]
rows.append(("time-series $geoNear on the measurement, 10 nearest", 10,
             t(lambda: list(db.tracks.aggregate(geo_near_ts))), None))
tq = {"pos": cap["loc"]}
m = len(list(db.tracks.find(tq)))
rows.append(("time-series $geoWithin $centerSphere 300 km", m, t(lambda: list(db.tracks.find(tq))),
             t(lambda: list(db.tracks.find(tq).hint(NAT)), 3)))
print(f"{n} points, {cars} cars{', reused' if reuse else ''}; index vs collection scan (ms, medians)")
for name, m, ix, scan in rows:
    ratio = f"{scan / ix:.0f}x" if scan else "index only"
    print(f"  {name}: {m} matches, index {ix:.2f}" +
          (f", scan {scan:.1f} ({ratio})" if scan else " (no scan spelling)"))
