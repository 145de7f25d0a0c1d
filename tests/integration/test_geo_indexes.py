"""2dsphere indexes and the reads that need them, as MongoDB documents them: the index spec and its
checks, key extraction errors (16755), $geoWithin/$geoIntersects through the index with the same
answers as without it, $near/$nearSphere ordered by distance (meters for GeoJSON points, radians
for legacy pairs), and the $geoNear stage. Distances are checked against the haversine formula on
MongoDB's earth radius (6378.1 km), written out here."""

import datetime
import json
import math
import random

import pytest
from pymongo.errors import OperationFailure, WriteError

from conftest import command_error

EARTH_RADIUS_M = 6378.1 * 1000
PARIS = [2.3522, 48.8566]
LONDON = [-0.1276, 51.5072]
BERLIN = [13.4050, 52.5200]
MADRID = [-3.7038, 40.4168]
ROME = [12.4964, 41.9028]
NEW_YORK = [-74.0060, 40.7128]
NATURAL = [("$natural", 1)]


def point(lnglat):
    return {"type": "Point", "coordinates": lnglat}


def radians_between(a, b):
    lng1, lat1, lng2, lat2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = (math.sin((lat2 - lat1) / 2) ** 2 +
         math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2)
    return 2 * math.asin(math.sqrt(h))


def meters_between(a, b):
    return radians_between(a, b) * EARTH_RADIUS_M


@pytest.fixture
def cities(db):
    db.cities.insert_many([
        {"_id": "paris", "loc": point(PARIS), "country": "FR"},
        {"_id": "london", "loc": point(LONDON), "country": "GB"},
        {"_id": "berlin", "loc": BERLIN, "country": "DE"},  # a legacy pair
        {"_id": "madrid", "loc": {"lng": MADRID[0], "lat": MADRID[1]}, "country": "ES"},
        {"_id": "rome", "loc": point(ROME), "country": "IT"},
        {"_id": "new_york", "loc": point(NEW_YORK), "country": "US"},
        {"_id": "thames", "loc": {"type": "LineString",
                                  "coordinates": [[-0.5, 51.45], [0.5, 51.5]]}, "country": "GB"},
        {"_id": "nowhere", "country": "XX"},  # no location: not in the index
    ])
    db.cities.create_index([("loc", "2dsphere")])
    return db.cities


def ids(cursor):
    return [d["_id"] for d in cursor]


# ---- the index ----------------------------------------------------------------------------

def test_spec_and_options(db):
    assert db.a.create_index([("loc", "2dsphere")]) == "loc_2dsphere"
    spec = next(i for i in db.a.list_indexes() if i["name"] == "loc_2dsphere")
    assert spec["key"] == {"loc": "2dsphere"} and spec["2dsphereIndexVersion"] == 3
    # Compound with ascending fields, and an explicit version 3.
    db.a.create_index([("kind", 1), ("loc", "2dsphere")], **{"2dsphereIndexVersion": 3})
    # Bad versions and mixed plugins, as MongoDB answers them.
    cases = [
        ({"key": {"p": "2dsphere"}, "name": "p1", "2dsphereIndexVersion": 4}, 67),
        ({"key": {"p": "2dsphere"}, "name": "p2", "2dsphereIndexVersion": "3"}, 14),
        ({"key": {"p": "2dsphere", "q": "hashed"}, "name": "p3"}, 67),
    ]
    for spec, code in cases:
        got, _, _ = command_error(db, {"createIndexes": "a", "indexes": [spec]})
        assert got == code, spec


def test_index_versions_1_and_2(db):
    """Versions 1 and 2 key a cell by its token string ("<face>/<digits>") and cover points like
    shapes; version 1 also keys documents without a geometry (as null). Reads through them
    answer as a collection scan does."""
    rng = random.Random(5)
    docs = [{"_id": i, "g": point([rng.uniform(-40, 40), rng.uniform(-40, 40)])}
            for i in range(300)]
    docs += [{"_id": 1000 + i, "g": {"type": "LineString", "coordinates": [
        [x, y], [x + 2, y + 1]]}} for i, (x, y) in enumerate((rng.uniform(-40, 40),
                                                              rng.uniform(-40, 40))
                                                             for _ in range(50))]
    docs += [{"_id": "none"}, {"_id": "null", "g": None}]
    for version in (1, 2):
        coll = db["v%d" % version]
        coll.insert_many(docs)
        coll.create_index([("g", "2dsphere")], **{"2dsphereIndexVersion": version})
        spec = next(i for i in coll.list_indexes() if i["name"] == "g_2dsphere")
        assert spec["2dsphereIndexVersion"] == version
        for q in ({"$geoWithin": {"$centerSphere": [[0, 0], 0.2]}},
                  {"$geoIntersects": {"$geometry": {"type": "Polygon", "coordinates": [
                      [[-10, -10], [10, -10], [10, 10], [-10, 10], [-10, -10]]]}}},
                  {"$nearSphere": {"$geometry": point([3, 3]), "$maxDistance": 900_000}}):
            by_index = ids(coll.find({"g": q}))
            by_scan = [d["_id"] for d in coll.find().hint(NATURAL)
                       if d["_id"] in set(by_index)]
            assert by_index, (version, q)
            if "$nearSphere" not in q:
                by_scan = ids(coll.find({"g": q}).hint(NATURAL))
                assert sorted(by_index) == sorted(by_scan), (version, q)
        # The bounds are token strings: ranges of a cell's descendants, single ancestors.
        plan = coll.find({"g": {"$geoWithin": {"$centerSphere": [[0, 0], 0.1]}}}).explain()[
            "queryPlanner"]["winningPlan"]["inputStage"]
        bounds = plan["indexBounds"]["g"]
        assert bounds and all(b.startswith('["') and "/" in b for b in bounds), bounds
        assert any(b.endswith('")') for b in bounds) and any(b.endswith('"]') for b in bounds)
        # Version 1 keeps documents without a geometry (a hinted scan of it finds them).
        hinted = set(ids(coll.find({}).hint("g_2dsphere")))
        assert ({"none", "null"} <= hinted) == (version == 1)
        assert len(hinted) == len(docs) - (0 if version == 1 else 2)
        # Version 1 takes only the simple geometries.
        multi = {"type": "MultiPoint", "coordinates": [[1, 1], [2, 2]]}
        if version == 1:
            with pytest.raises(WriteError) as e:
                coll.insert_one({"g": multi})
            assert e.value.code == 16755 and "old index format" in str(e.value)
        else:
            coll.insert_one({"g": multi})


def test_indexed_levels(db):
    """coarsestIndexedLevel and finestIndexedLevel bound the cells of non-point shapes (and the
    ancestors a query reads): listed as given, checked with MongoDB's codes, and the answers
    stay those of a collection scan."""
    rng = random.Random(3)
    shapes = []
    for i in range(400):
        x, y = rng.uniform(-60, 60), rng.uniform(-60, 60)
        d = rng.uniform(0.01, 3)
        shapes.append({"_id": i, "g": {"type": "Polygon", "coordinates": [
            [[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]]]} if i % 2 else point([x, y])})
    db.shapes.insert_many(shapes)
    db.shapes.create_index([("g", "2dsphere")], coarsestIndexedLevel=5, finestIndexedLevel=9)
    spec = next(i for i in db.shapes.list_indexes() if i["name"] == "g_2dsphere")
    assert (spec["coarsestIndexedLevel"], spec["finestIndexedLevel"]) == (5, 9)
    for q in ({"$geoIntersects": {"$geometry": point([10.5, 10.5])}},
              {"$geoWithin": {"$centerSphere": [[0, 0], 0.4]}},
              {"$geoIntersects": {"$geometry": {"type": "Polygon", "coordinates": [
                  [[-20, -20], [5, -20], [5, 5], [-20, 5], [-20, -20]]]}}}):
        by_index = sorted(ids(db.shapes.find({"g": q})))
        assert by_index == sorted(ids(db.shapes.find({"g": q}).hint(NATURAL))), q
    cases = [
        ({"coarsestIndexedLevel": -1}, 16747),
        ({"finestIndexedLevel": 31}, 16748),
        ({"coarsestIndexedLevel": 12, "finestIndexedLevel": 10}, 16749),
        ({"finestIndexedLevel": 10}, None),  # coarsest stays 2
        ({"coarsestIndexedLevel": 17}, 16749),  # finest stays 16
        ({"finestIndexedLevel": "x"}, 14),
        ({"finestIndexedLevel": 9.5}, 2),
    ]
    for extra, code in cases:
        spec = {"key": {"h": "2dsphere"}, "name": "h" + str(len(extra)) + str(code), **extra}
        got, name, _ = command_error(db, {"createIndexes": "shapes", "indexes": [spec]}) \
            if code is not None else (None, None, None)
        if code is None:
            assert db.command({"createIndexes": "shapes", "indexes": [spec]})["ok"] == 1
        else:
            assert got == code, extra
            if code > 1000:
                assert name == "Location%d" % code


def test_documents_that_are_no_geometry_are_refused(db, cities):
    for bad in ["paris", 5, [200, 10], {"type": "Point", "coordinates": [0, 95]},
                {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1]]]}]:
        with pytest.raises(WriteError) as e:
            cities.insert_one({"_id": "bad", "loc": bad})
        assert e.value.code == 16755 and "Can't extract geo keys" in str(e.value)
    # Missing, null and empty values are fine (and not indexed); nothing was lost.
    cities.insert_many([{"_id": "null", "loc": None}, {"_id": "empty", "loc": []}])
    assert cities.count_documents({}) == 10
    # Building the index over a collection that holds a non-geometry fails the same way.
    db.other.insert_one({"loc": "somewhere"})
    code, _, msg = command_error(db, {"createIndexes": "other",
                                      "indexes": [{"key": {"loc": "2dsphere"}, "name": "g"}]})
    assert code == 16755 and "Can't extract geo keys" in msg


# ---- $geoWithin and $geoIntersects through the index --------------------------------------

def winning_stage(explain):
    plan = explain["queryPlanner"]["winningPlan"]
    stages = []
    while plan:
        stages.append(plan["stage"])
        plan = plan.get("inputStage")
    return stages


def test_within_and_intersects_use_the_index(cities):
    europe = {"type": "Polygon", "coordinates": [[[-10, 35], [20, 35], [20, 55], [-10, 55],
                                                  [-10, 35]]]}
    within = {"loc": {"$geoWithin": {"$geometry": europe}}}
    assert sorted(ids(cities.find(within))) == ["berlin", "london", "madrid", "paris", "rome",
                                                "thames"]
    assert sorted(ids(cities.find(within).hint(NATURAL))) == sorted(ids(cities.find(within)))
    explain = cities.find(within).explain()
    assert winning_stage(explain) == ["FETCH", "IXSCAN"]
    ixscan = explain["queryPlanner"]["winningPlan"]["inputStage"]
    assert ixscan["indexName"] == "loc_2dsphere" and ixscan["indexBounds"]["loc"]
    # The index narrows the scan: it does not read every document.
    stats = cities.find(within).explain()["executionStats"]
    assert stats["totalDocsExamined"] < 8
    crossing = {"loc": {"$geoIntersects": {"$geometry": {
        "type": "LineString", "coordinates": [[0, 51], [0, 52]]}}}}
    assert ids(cities.find(crossing)) == ["thames"]
    cap = {"loc": {"$geoWithin": {"$centerSphere": [PARIS, 400_000 / EARTH_RADIUS_M]}}}
    assert sorted(ids(cities.find(cap))) == ["london", "paris", "thames"]


def test_random_points_match_a_collection_scan(db):
    rng = random.Random(7)
    db.pts.insert_many([{"_id": i, "loc": point([rng.uniform(-180, 180),
                                                 rng.uniform(-90, 90)])} for i in range(3000)])
    db.pts.create_index([("loc", "2dsphere")])
    queries = [
        {"$geoWithin": {"$centerSphere": [[10, 10], 0.2]}},
        {"$geoWithin": {"$centerSphere": [[179, -60], 0.3]}},  # across the antimeridian
        {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [
            [[-30, -10], [40, -10], [40, 30], [-30, 30], [-30, -10]]]}}},
        {"$geoIntersects": {"$geometry": {"type": "Polygon", "coordinates": [
            [[100, 60], [150, 60], [150, 85], [100, 85], [100, 60]]]}}},
    ]
    for q in queries:
        by_index = sorted(ids(db.pts.find({"loc": q})))
        by_scan = sorted(ids(db.pts.find({"loc": q}).hint(NATURAL)))
        assert by_index == by_scan and by_index, q
    # The cap's members are the points within its radius.
    expected = sorted(d["_id"] for d in db.pts.find().hint(NATURAL)
                      if radians_between(d["loc"]["coordinates"], [10, 10]) <= 0.2)
    assert sorted(ids(db.pts.find({"loc": queries[0]}))) == expected
    # Without a maximum, $near reads ring by ring out to the antipode: every point, in order.
    everything = list(db.pts.find().hint(NATURAL))
    by_distance = [d["_id"] for d in sorted(
        everything, key=lambda d: radians_between(d["loc"]["coordinates"], [10, 10]))]
    near = {"loc": {"$nearSphere": {"$geometry": point([10, 10])}}}
    assert ids(db.pts.find(near)) == by_distance
    assert ids(db.pts.find(near).limit(5)) == by_distance[:5]
    assert ids(db.pts.aggregate([{"$geoNear": {"near": [10, 10], "spherical": True,
                                               "distanceField": "r"}}, {"$skip": 2990}])) == \
        by_distance[2990:]


def test_compound_index_with_an_equality(cities):
    cities.create_index([("country", 1), ("loc", "2dsphere")])
    q = {"country": "GB", "loc": {"$geoWithin": {"$centerSphere": [LONDON, 0.01]}}}
    assert sorted(ids(cities.find(q))) == ["london", "thames"]
    # A read without a geo predicate does not use a 2dsphere index (it lacks documents).
    assert ids(cities.find({"country": "XX"})) == ["nowhere"]
    assert "IXSCAN" not in winning_stage(cities.find({"country": "XX"}).explain())
    assert cities.distinct("country") == ["DE", "ES", "FR", "GB", "IT", "US", "XX"]


def test_arrays_of_subdocuments(db):
    db.routes.insert_many([
        {"_id": 1, "stops": [{"at": point(LONDON)}, {"at": point(PARIS)}]},
        {"_id": 2, "stops": [{"at": point(BERLIN)}, {"at": point(NEW_YORK)}]},
    ])
    db.routes.create_index([("stops.at", "2dsphere")])
    near_paris = {"stops.at": {"$geoWithin": {"$centerSphere": [PARIS, 0.001]}}}
    assert ids(db.routes.find(near_paris)) == [1]
    first = list(db.routes.find({"stops.at": {"$near": {"$geometry": point(MADRID)}}}))
    assert [d["_id"] for d in first] == [1, 2]  # Paris is nearer Madrid than Berlin


# ---- $near and $nearSphere ------------------------------------------------------------------

def test_near_orders_by_distance_in_meters(cities):
    got = list(cities.find({"loc": {"$near": {"$geometry": point(PARIS)}}}))
    # The Thames line's eastern end (0.5, 51.5) is nearer Paris than London is.
    assert ids(got)[:4] == ["paris", "thames", "london", "berlin"]
    points = [d for d in got if d["_id"] not in ("thames",)]
    coords = {"berlin": BERLIN, "madrid": MADRID}
    dists = [meters_between(PARIS, coords.get(d["_id"]) or d["loc"]["coordinates"])
             for d in points]
    assert dists == sorted(dists)
    assert "nowhere" not in ids(got) and len(got) == 7
    # Bounds in meters: London is 344 km from Paris, Berlin 878 km.
    bounded = {"loc": {"$near": {"$geometry": point(PARIS), "$maxDistance": 900_000,
                                 "$minDistance": 300_000}}}
    assert ids(cities.find(bounded)) == ["thames", "london", "berlin"]
    assert ids(cities.find(bounded).limit(2)) == ["thames", "london"]
    assert ids(cities.find(bounded).skip(1)) == ["london", "berlin"]
    # A sort re-orders the matches; other clauses filter them.
    assert ids(cities.find(bounded).sort("_id", 1)) == ["berlin", "london", "thames"]
    assert ids(cities.find({**bounded, "country": "GB"})) == ["thames", "london"]
    assert ids(cities.find({"$and": [bounded, {"country": "DE"}]})) == ["berlin"]
    # count takes $near too.
    assert cities.database.command("count", "cities", query=bounded)["n"] == 3
    plan = cities.find(bounded).explain()["queryPlanner"]["winningPlan"]
    assert (plan["stage"], plan["indexName"]) == ("GEO_NEAR_2DSPHERE", "loc_2dsphere")


def test_near_sphere_with_a_legacy_point_is_in_radians(cities):
    limit = meters_between(PARIS, LONDON) / EARTH_RADIUS_M + 1e-6
    got = ids(cities.find({"loc": {"$nearSphere": PARIS, "$maxDistance": limit}}))
    assert got == ["paris", "thames", "london"]
    got = ids(cities.find({"loc": {"$nearSphere": {"$geometry": point(ROME)}}}).limit(2))
    assert got == ["rome", "paris"]  # 1,106 km; Berlin is 1,184 km away


def test_near_errors(db, cities):
    near = {"$near": {"$geometry": point(PARIS)}}
    cases = [
        ({"loc": {"$near": PARIS}}, 291),  # flat legacy $near needs a 2d index
        ({"elsewhere": near}, 291),  # no geo index on the field
        ({"$or": [{"loc": near}, {"country": "FR"}]}, 2),
        ({"loc": {"$not": near}}, 2),
        ({"loc": near, "other": {"$nearSphere": PARIS}}, 2),
        ({"loc": {"$near": {"$geometry": {"type": "LineString",
                                          "coordinates": [[0, 0], [1, 1]]}}}}, 2),
        ({"loc": {"$near": {"$geometry": point(PARIS), "$maxDistance": -1}}}, 2),
        ({"loc": {"$near": PARIS, "$maxDistance": "far"}}, 16895),
        ({"loc": {"$nearSphere": [200, 0]}}, 2),
    ]
    for flt, code in cases:
        got, _, msg = command_error(db, {"find": "cities", "filter": flt})
        assert got == code, (flt, msg)
    got, _, _ = command_error(db, {"find": "cities", "filter": {"loc": near},
                                   "sort": {"$natural": 1}})
    assert got == 2
    # Contexts that cannot order by distance.
    with pytest.raises(OperationFailure) as e:
        list(cities.aggregate([{"$match": {"loc": near}}]))
    assert e.value.code == 5626500
    with pytest.raises(OperationFailure) as e:
        cities.count_documents({"loc": near})
    assert e.value.code == 5626500
    assert cities.count_documents({}) == 8


# ---- $geoNear --------------------------------------------------------------------------------

def test_geo_near_stage(cities):
    out = list(cities.aggregate([
        {"$geoNear": {"near": point(PARIS), "distanceField": "dist.m",
                      "maxDistance": 900_000, "includeLocs": "where"}},
        {"$project": {"dist": 1, "where": 1}},
    ]))
    assert ids(out) == ["paris", "thames", "london", "berlin"]
    assert out[0]["dist"]["m"] == 0
    assert abs(out[2]["dist"]["m"] - meters_between(PARIS, LONDON)) < 0.01
    assert out[3]["where"] == BERLIN
    # query, minDistance, distanceMultiplier (kilometers), and stages after it.
    out = list(cities.aggregate([
        {"$geoNear": {"near": point(PARIS), "distanceField": "km", "minDistance": 1,
                      "distanceMultiplier": 0.001, "query": {"country": {"$ne": "GB"}}}},
        {"$limit": 2},
    ]))
    assert ids(out) == ["berlin", "madrid"]  # 878 km, then 1,053 km
    assert abs(out[0]["km"] - meters_between(PARIS, BERLIN) / 1000) < 1e-5
    # A legacy point with spherical: radians; `key` names the field.
    out = list(cities.aggregate([{"$geoNear": {"near": MADRID, "spherical": True,
                                               "distanceField": "r", "key": "loc"}}]))
    assert ids(out)[:2] == ["madrid", "paris"]
    assert abs(out[1]["r"] - radians_between(MADRID, PARIS)) < 1e-9


def test_geo_near_errors(db, cities):
    def code_of(pipeline, coll="cities"):
        got, _, _ = command_error(db, {"aggregate": coll, "pipeline": pipeline, "cursor": {}})
        return got

    ok = {"near": point(PARIS), "distanceField": "d"}
    assert code_of([{"$match": {}}, {"$geoNear": ok}]) == 40603
    assert code_of([{"$geoNear": {"distanceField": "d"}}]) == 5860400
    assert code_of([{"$geoNear": {"near": point(PARIS)}}]) == 16606
    assert code_of([{"$geoNear": {**ok, "limit": 5}}]) == 50858
    assert code_of([{"$geoNear": {**ok, "num": 5}}]) == 50857
    assert code_of([{"$geoNear": {**ok, "collation": {"locale": "fr"}}}]) == 40227
    assert code_of([{"$geoNear": {"near": "Paris", "distanceField": "d"}}]) == 5860401
    assert code_of([{"$geoNear": {"near": point(PARIS), "distanceField": 5}}]) == 16606
    assert code_of([{"$geoNear": {**ok, "includeLocs": 1}}]) == 16607
    assert code_of([{"$geoNear": {**ok, "key": 1}}]) == 14
    assert code_of([{"$geoNear": {**ok, "key": ""}}]) == 2
    assert code_of([{"$geoNear": {**ok, "query": "x"}}]) == 14
    assert code_of([{"$geoNear": {**ok, "minDistance": "far"}}]) == 14
    assert code_of([{"$geoNear": {**ok, "distanceMultiplier": -1}}]) == 2
    assert code_of([{"$geoNear": "here"}]) == 14
    assert code_of([{"$geoNear": {"near": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]},
                                  "distanceField": "d"}}]) == 2
    assert code_of([{"$geoNear": {**ok, "maxDistance": -1}}]) == 2
    assert code_of([{"$geoNear": {**ok, "key": "country"}}]) == 291
    assert code_of([{"$geoNear": {"near": PARIS, "distanceField": "d"}}]) == 291  # flat: 2d
    assert code_of([{"$geoNear": ok}], coll="missing") == 26
    db.plain.insert_one({"loc": point(PARIS)})
    assert code_of([{"$geoNear": ok}], coll="plain") == 27
    cities.create_index([("country", 1), ("loc", "2dsphere")])
    assert code_of([{"$geoNear": ok}]) == 27  # two 2dsphere indexes: say which
    assert len(list(cities.aggregate([{"$geoNear": {**ok, "key": "loc"}}]))) == 7


def test_geo_near_query_under_a_collation(cities):
    # $geoNear's `query` compares strings under the aggregate's collation.
    stage = {"$geoNear": {"near": point(ROME), "distanceField": "d", "query": {"country": "gb"}}}
    assert ids(cities.aggregate([stage])) == []
    # (The Thames' eastern end is nearer Rome than London is.)
    assert ids(cities.aggregate([stage], collation={"locale": "en", "strength": 2})) == \
        ["thames", "london"]


def test_geo_near_point_from_a_variable(db, cities):
    # MongoDB 5.1+: `near` may be an expression of the command's `let` variables.
    by_var = list(cities.aggregate([{"$geoNear": {"near": "$$pt", "distanceField": "d"}}],
                                   let={"pt": point(ROME)}))
    constant = list(cities.aggregate([{"$geoNear": {"near": point(ROME), "distanceField": "d"}}]))
    assert ids(by_var) == ids(constant) and ids(by_var)[:2] == ["rome", "paris"]
    assert [d["d"] for d in by_var] == [d["d"] for d in constant]
    # Built of variables inside a GeoJSON point.
    out = list(cities.aggregate([{"$geoNear": {
        "near": {"type": "Point", "coordinates": ["$$lng", "$$lat"]}, "distanceField": "d"}}],
        let={"lng": LONDON[0], "lat": LONDON[1]}))
    assert ids(out)[:2] == ["london", "thames"]
    for bad in (5, "abc"):
        code, _, _ = command_error(db, {"aggregate": "cities", "cursor": {}, "let": {"pt": bad},
                                        "pipeline": [{"$geoNear": {"near": "$$pt",
                                                                   "distanceField": "d"}}]})
        assert code == 5860401
    code, _, _ = command_error(db, {"aggregate": "cities", "cursor": {}, "pipeline": [
        {"$geoNear": {"near": "$$undefinedVar", "distanceField": "d"}}]})
    assert code == 17276


def test_geo_near_first_in_lookup_and_union_with(db, cities):
    db.offices.insert_many([{"_id": "o-rome", "at": point(ROME), "country": "FR"},
                            {"_id": "o-london", "at": point(LONDON), "country": "GB"}])
    # Each office's nearest cities, by the office's own point (a `let` variable).
    out = list(db.offices.aggregate([
        {"$lookup": {"from": "cities", "let": {"pt": "$at"}, "as": "near",
                     "pipeline": [{"$geoNear": {"near": "$$pt", "distanceField": "m"}},
                                  {"$limit": 2}, {"$project": {"m": 1}}]}},
        {"$sort": {"_id": 1}}]))
    assert [ids(o["near"]) for o in out] == [["london", "thames"], ["rome", "paris"]]
    assert abs(out[1]["near"][1]["m"] - meters_between(ROME, PARIS)) < 0.01
    assert out[0]["near"][0]["m"] == 0
    # With localField/foreignField as well: only the same country's cities, nearest first.
    out = list(db.offices.aggregate([
        {"$lookup": {"from": "cities", "localField": "country", "foreignField": "country",
                     "let": {"pt": "$at"}, "as": "near",
                     "pipeline": [{"$geoNear": {"near": "$$pt", "distanceField": "m"}}]}},
        {"$sort": {"_id": 1}}]))
    assert [ids(o["near"]) for o in out] == [["london", "thames"], ["paris"]]
    # $unionWith: a constant point, the rest of its pipeline after the near read.
    out = list(db.offices.aggregate([
        {"$match": {"_id": "o-rome"}},
        {"$unionWith": {"coll": "cities", "pipeline": [
            {"$geoNear": {"near": point(BERLIN), "distanceField": "m", "maxDistance": 900_000}},
            {"$project": {"m": 1}}]}}]))
    assert ids(out) == ["o-rome", "berlin", "paris", "thames"]  # London is 932 km away
    assert abs(out[2]["m"] - meters_between(BERLIN, PARIS)) < 0.01
    # Errors come from the near read of the foreign collection.
    db.plain.insert_one({"loc": point(PARIS)})
    for frm, code_wanted in (("plain", 27), ("missing", 26)):  # as at the top level
        code, _, _ = command_error(db, {"aggregate": "offices", "cursor": {}, "pipeline": [
            {"$lookup": {"from": frm, "let": {"pt": "$at"}, "as": "n", "pipeline": [
                {"$geoNear": {"near": "$$pt", "distanceField": "m"}}]}}]})
        assert code == code_wanted
    db.command("create", "city_view", viewOn="cities", pipeline=[{"$match": {}}])
    code, _, _ = command_error(db, {"aggregate": "offices", "cursor": {}, "pipeline": [
        {"$unionWith": {"coll": "city_view", "pipeline": [
            {"$geoNear": {"near": point(PARIS), "distanceField": "m"}}]}}]})
    assert code == 40603


# ---- time-series collections ------------------------------------------------------------------

def test_time_series_meta_index_and_near(db):
    db.create_collection("sensors", timeseries={"timeField": "t", "metaField": "site"})
    db.sensors.create_index([("site.loc", "2dsphere")])
    spec = next(i for i in db.sensors.list_indexes() if i["name"] == "site.loc_2dsphere")
    assert spec["key"] == {"site.loc": "2dsphere"}
    t = datetime.datetime(2026, 1, 1)
    db.sensors.insert_many([{"t": t, "site": {"name": n, "loc": point(c)}, "v": i}
                            for i, (n, c) in enumerate([("paris", PARIS), ("berlin", BERLIN),
                                                        ("rome", ROME)])])
    within = {"site.loc": {"$geoWithin": {"$centerSphere": [PARIS, 1_000_000 / EARTH_RADIUS_M]}}}
    assert sorted(d["site"]["name"] for d in db.sensors.find(within)) == ["berlin", "paris"]
    # The meta's geo index bounds the buckets (the series index cannot).
    explain = json.dumps(db.command("explain", {"find": "sensors", "filter": within}))
    assert '"indexName": "site.loc_2dsphere"' in explain
    # As in MongoDB, find cannot order a time-series collection by distance.
    code, _, _ = command_error(db, {"find": "sensors", "filter": {
        "site.loc": {"$near": {"$geometry": point(PARIS)}}}})
    assert code == 5626500
    # $geoNear on the metaField reads every measurement by its series' distance, through the
    # index MongoDB asks for.
    out = list(db.sensors.aggregate([{"$geoNear": {
        "near": point(ROME), "distanceField": "d", "key": "site.loc", "includeLocs": "at"}}]))
    assert [d["site"]["name"] for d in out] == ["rome", "paris", "berlin"]
    assert out[1]["at"] == point(PARIS)
    assert abs(out[2]["d"] - meters_between(ROME, BERLIN)) < 0.01
    db.sensors.drop_index("site.loc_2dsphere")
    code, _, _ = command_error(db, {"aggregate": "sensors", "pipeline": [{"$geoNear": {
        "near": point(PARIS), "distanceField": "d", "key": "site.loc"}}], "cursor": {}})
    assert code == 291


def test_time_series_geo_near_on_a_measurement(db):
    db.create_collection("tracks", timeseries={"timeField": "t", "metaField": "car"})
    t0 = datetime.datetime(2026, 1, 1)
    stops = [("paris", PARIS), ("london", LONDON), ("berlin", BERLIN), ("madrid", MADRID),
             ("rome", ROME)]
    db.tracks.insert_many([{"t": t0 + datetime.timedelta(minutes=i), "car": i % 2,
                            "pos": point(c), "city": n} for i, (n, c) in enumerate(stops)])
    db.tracks.insert_one({"t": t0, "car": 9, "city": "parked"})  # no position: no distance
    out = list(db.tracks.aggregate([
        {"$geoNear": {"near": point(PARIS), "distanceField": "km", "key": "pos",
                      "distanceMultiplier": 0.001, "maxDistance": 1_100_000}},
        {"$project": {"_id": 0, "city": 1, "km": 1}},
    ]))
    assert [d["city"] for d in out] == ["paris", "london", "berlin", "madrid"]
    assert abs(out[2]["km"] - meters_between(PARIS, BERLIN) / 1000) < 1e-6
    # A $match after it filters; legacy pairs with spherical are in radians.
    out = list(db.tracks.aggregate([
        {"$geoNear": {"near": ROME, "spherical": True, "distanceField": "r", "key": "pos"}},
        {"$match": {"car": 0}}, {"$limit": 2}]))
    assert [d["city"] for d in out] == ["rome", "paris"]  # car 0: Paris, Berlin, Rome
    assert abs(out[0]["r"]) < 1e-12

    def code_of(stage):
        got, _, _ = command_error(db, {"aggregate": "tracks", "pipeline": [{"$geoNear": stage}],
                                       "cursor": {}})
        return got

    ok = {"near": point(PARIS), "distanceField": "d"}
    assert code_of(ok) == 5892921  # key is required
    assert code_of({**ok, "key": "pos", "query": {"car": 0}}) == 5860207
    assert code_of({**ok, "key": "pos", "includeLocs": "l"}) == 5860208
    assert code_of({**ok, "key": "car", "query": {"car": 0}}) == 1938439


def test_time_series_geo_near_in_a_lookup(db):
    # A time-series collection read by distance from each outer document's point.
    db.create_collection("pings", timeseries={"timeField": "t", "metaField": "car"})
    t0 = datetime.datetime(2026, 1, 1)
    db.pings.insert_many([{"t": t0, "car": i, "pos": point(c), "city": n}
                          for i, (n, c) in enumerate([("paris", PARIS), ("berlin", BERLIN),
                                                      ("rome", ROME)])])
    db.depots.insert_many([{"_id": 1, "at": point(MADRID)}, {"_id": 2, "at": point(BERLIN)}])
    out = list(db.depots.aggregate([
        {"$lookup": {"from": "pings", "let": {"pt": "$at"}, "as": "cars", "pipeline": [
            {"$geoNear": {"near": "$$pt", "distanceField": "m", "key": "pos"}},
            {"$project": {"_id": 0, "city": 1}}]}},
        {"$sort": {"_id": 1}}]))
    assert [[c["city"] for c in d["cars"]] for d in out] == [["paris", "rome", "berlin"],
                                                             ["berlin", "paris", "rome"]]


def test_time_series_measurement_index(db):
    db.create_collection("fleet", timeseries={"timeField": "t", "metaField": "truck"})
    db.fleet.create_index([("pos", "2dsphere")])
    spec = next(i for i in db.fleet.list_indexes() if i["name"] == "pos_2dsphere")
    assert spec["key"] == {"pos": "2dsphere"} and spec["2dsphereIndexVersion"] == 3
    bucket_spec = next(i for i in db.system.buckets.fleet.list_indexes()
                       if i["name"] == "pos_2dsphere")
    assert bucket_spec["key"] == {"data.pos": "2dsphere_bucket"}  # MongoDB's conversion
    rng = random.Random(11)
    t0 = datetime.datetime(2026, 3, 1)
    docs = [{"t": t0 + datetime.timedelta(seconds=i), "truck": i % 25,
             "pos": point([rng.uniform(-30, 30), rng.uniform(-30, 30)])} for i in range(6000)]
    docs.append({"t": t0, "truck": 99})  # no position
    db.fleet.insert_many(docs)
    cases = [
        {"pos": {"$geoWithin": {"$centerSphere": [[5, 5], 0.05]}}},
        {"pos": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [
            [[-10, -10], [0, -10], [0, 0], [-10, 0], [-10, -10]]]}}}, "truck": {"$lt": 10}},
        {"pos": {"$geoIntersects": {"$geometry": docs[17]["pos"]}}},
    ]
    for q in cases:
        by_index = sorted(str(d["_id"]) for d in db.fleet.find(q))
        by_scan = sorted(str(d["_id"]) for d in db.fleet.find(q).hint(NATURAL))
        assert by_index == by_scan and by_index, q
    expected = sum(1 for d in docs if "pos" in d and
                   radians_between(d["pos"]["coordinates"], [5, 5]) <= 0.05)
    assert db.fleet.count_documents(cases[0]) == expected
    # $geoNear on the measurement reads ring by ring through the index: every position, in order.
    with_pos = [d for d in docs if "pos" in d]
    order = sorted(radians_between(d["pos"]["coordinates"], [5, 5]) for d in with_pos)
    out = list(db.fleet.aggregate([{"$geoNear": {"near": [5, 5], "spherical": True,
                                                 "key": "pos", "distanceField": "r"}}]))
    assert len(out) == len(with_pos)
    assert all(abs(a["r"] - b) < 1e-9 for a, b in zip(out, order))
    out = list(db.fleet.aggregate([{"$geoNear": {"near": point([5, 5]), "key": "pos",
                                                 "distanceField": "m", "maxDistance": 2e6}},
                                   {"$limit": 3}]))
    assert [round(d["m"] / EARTH_RADIUS_M, 9) for d in out] == [round(r, 9) for r in order[:3]]
    # The read goes through the bucket index.
    explain = json.dumps(db.command("explain", {"find": "fleet", "filter": cases[0]}))
    assert '"indexName": "pos_2dsphere"' in explain and '"IXSCAN"' in explain
    # A measurement that is no point is refused before it is acknowledged; nothing is lost.
    for bad in [{"type": "LineString", "coordinates": [[0, 0], [1, 1]]}, "here", [500, 0]]:
        with pytest.raises((WriteError, OperationFailure)) as e:
            db.fleet.insert_one({"t": t0, "truck": 1, "pos": bad})
        assert e.value.code == 16755, bad
    assert db.fleet.count_documents({}) == 6001
    assert db.fleet.count_documents(cases[0]) == expected
    # Building the index over buckets that hold a non-point fails the same way.
    db.create_collection("shapes", timeseries={"timeField": "t"})
    db.shapes.insert_one({"t": t0, "pos": {"type": "LineString", "coordinates": [[0, 0], [1, 1]]}})
    code, _, _ = command_error(db, {"createIndexes": "shapes",
                                    "indexes": [{"key": {"pos": "2dsphere"}, "name": "g"}]})
    assert code == 16755


# ---- coordinate reference systems ----------------------------------------------------------------

STRICT = {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}


def test_big_polygons_and_named_crs(db, cities):
    # Clockwise around Western Europe: with the strict winding CRS, the inside is the rest of
    # the world (the manual's "big polygon").
    ring = [[[-10, 35], [-10, 55], [20, 55], [20, 35], [-10, 35]]]
    rest_of_world = {"type": "Polygon", "coordinates": ring, "crs": STRICT}
    within = {"loc": {"$geoWithin": {"$geometry": rest_of_world}}}
    assert ids(cities.find(within)) == ["new_york"]
    assert sorted(ids(cities.find(within).hint(NATURAL))) == ["new_york"]
    intersects = {"loc": {"$geoIntersects": {"$geometry": rest_of_world}}}
    assert ids(cities.find(intersects)) == ["new_york"]
    # Without it, the same ring is the smaller side: Western Europe.
    plain = {"loc": {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": ring}}}}
    assert "paris" in ids(cities.find(plain)) and "new_york" not in ids(cities.find(plain))
    # WGS84's names are the default CRS, in queries and in documents.
    wgs84 = {"type": "name", "properties": {"name": "EPSG:4326"}}
    cities.insert_one({"_id": "lyon", "loc": {"type": "Point", "coordinates": [4.83, 45.76],
                                              "crs": wgs84}})
    assert "lyon" in ids(cities.find(plain))
    # A big polygon is for queries: an index refuses it; stored without one, it never matches.
    with pytest.raises(WriteError) as e:
        cities.insert_one({"_id": "big", "loc": rest_of_world})
    assert e.value.code == 16755 and "strict winding" in str(e.value)
    db.noindex.insert_one({"_id": 1, "area": rest_of_world})
    assert db.noindex.count_documents({"area": {"$geoIntersects": {
        "$geometry": point([100, 0])}}}) == 0
    bad = [
        {"type": "Point", "coordinates": [0, 0], "crs": STRICT},
        {"type": "Polygon", "coordinates": ring + [[[0, 40], [1, 40], [1, 41], [0, 40]]],
         "crs": STRICT},
        {"type": "Polygon", "coordinates": ring,
         "crs": {"type": "name", "properties": {"name": "EPSG:3857"}}},
        {"type": "Polygon", "coordinates": ring, "crs": "EPSG:4326"},
    ]
    for g in bad:
        code, _, _ = command_error(db, {"find": "cities",
                                        "filter": {"loc": {"$geoIntersects": {"$geometry": g}}}})
        assert code == 2, g


# ---- 2d indexes ------------------------------------------------------------------------------

def test_2d_index_spec_and_errors(db):
    assert db.flat.create_index([("xy", "2d")], bits=20, min=0, max=100) == "xy_2d"
    spec = next(i for i in db.flat.list_indexes() if i["name"] == "xy_2d")
    assert spec["key"] == {"xy": "2d"} and (spec["bits"], spec["min"], spec["max"]) == (20, 0, 100)
    db.flat.create_index([("loc", "2d"), ("kind", 1)])  # other fields may follow
    cases = [
        ({"key": {"p": "2d"}, "name": "a", "bits": 0}, 72),
        ({"key": {"p": "2d"}, "name": "b", "bits": 33}, 72),
        ({"key": {"p": "2d"}, "name": "c", "min": 5, "max": 5}, 72),
        ({"key": {"p": "2d"}, "name": "d", "bits": "26"}, 14),
        ({"key": {"p": "2d", "q": "2d"}, "name": "e"}, 16800),
        ({"key": {"k": 1, "p": "2d"}, "name": "f"}, 16801),
        ({"key": {"p": "2d", "q": "2dsphere"}, "name": "g"}, 67),
        ({"key": {"p": "2d"}, "name": "h", "collation": {"locale": "fr"}}, 67),
    ]
    for spec, code in cases:
        got, _, msg = command_error(db, {"createIndexes": "flat", "indexes": [spec]})
        assert got == code, (spec, msg)
    # Documents: a point outside the plane, a GeoJSON object, non-numbers are refused; other
    # values (strings, numbers, missing) are simply not in the index.
    for bad, code in [([150, 5], 13027), ({"type": "Point", "coordinates": [1, 1]}, 16804),
                      ([1, "b"], 13026), (["a", "b"], 16804)]:
        with pytest.raises(WriteError) as e:
            db.flat.insert_one({"xy": bad})
        assert e.value.code == code, bad
    db.flat.insert_many([{"xy": "somewhere"}, {"xy": 7}, {"other": 1}, {"xy": [100, 100]}])
    assert db.flat.count_documents({}) == 4


def test_2d_within_and_near(db):
    rng = random.Random(5)
    pts = [[rng.uniform(-50, 50), rng.uniform(-50, 50)] for _ in range(2000)]
    db.grid.insert_many([{"_id": i, "loc": p} for i, p in enumerate(pts)])
    db.grid.insert_one({"_id": "list", "loc": [[1, 1], [40, 40]]})  # a list of locations
    db.grid.create_index([("loc", "2d")])
    shapes = [
        {"$geoWithin": {"$box": [[-10, -5], [12, 20]]}},
        {"$geoWithin": {"$center": [[3, 4], 6]}},
        {"$geoWithin": {"$polygon": [[0, 0], [30, 5], [10, 30]]}},
        {"$geoWithin": {"$centerSphere": [[20, 10], 0.1]}},
    ]
    for q in shapes:
        by_index = sorted(map(str, ids(db.grid.find({"loc": q}))))
        by_scan = sorted(map(str, ids(db.grid.find({"loc": q}).hint(NATURAL))))
        assert by_index == by_scan and by_index, q
        plan = db.grid.find({"loc": q}).explain()["queryPlanner"]["winningPlan"]
        assert plan["inputStage"]["indexName"] == "loc_2d", q
    # $near with a legacy pair: flat distances, nearest first.
    # The list's nearest location, [1, 1], is what counts for it.
    got = list(db.grid.find({"loc": {"$near": [0, 0], "$maxDistance": 8}}))
    near = [(math.hypot(*p), p) for p in pts if math.hypot(*p) <= 8] + [(math.sqrt(2),
                                                                         [[1, 1], [40, 40]])]
    assert [d["loc"] for d in got] == [p for _, p in sorted(near)] and len(near) > 1
    # Without a maximum, ring by ring across the whole plane: every document, in order, also
    # from a point at the plane's edge.
    for center in ([0, 0], [180, -180]):
        def flat(p, c=center):
            return min(math.hypot(q[0] - c[0], q[1] - c[1]) for q in p) if isinstance(
                p[0], list) else math.hypot(p[0] - c[0], p[1] - c[1])
        docs = list(db.grid.find().hint(NATURAL))
        order = [d["_id"] for d in sorted(docs, key=lambda d: flat(d["loc"]))]
        assert ids(db.grid.find({"loc": {"$near": center}})) == order
    plan = db.grid.find({"loc": {"$near": [0, 0]}}).explain()["queryPlanner"]["winningPlan"]
    assert (plan["stage"], plan["keyPattern"]) == ("GEO_NEAR_2D", {"loc": "2d"})
    # $nearSphere on a 2d index: radians.
    got = list(db.grid.find({"loc": {"$nearSphere": [0, 0], "$maxDistance": 0.1}}))
    near = [(radians_between(p, [0, 0]), p) for p in pts if radians_between(p, [0, 0]) <= 0.1]
    near.append((radians_between([1, 1], [0, 0]), [[1, 1], [40, 40]]))
    assert [d["loc"] for d in got] == [p for _, p in sorted(near)] and len(near) > 1
    # $geoNear prefers the 2d index and measures on the plane without `spherical`.
    db.grid.create_index([("loc2", "2dsphere")])
    out = list(db.grid.aggregate([{"$geoNear": {"near": [10, 10], "distanceField": "d"}},
                                  {"$limit": 3}]))
    flat = sorted(pts, key=lambda p: math.hypot(p[0] - 10, p[1] - 10))[:3]
    assert [d["loc"] for d in out] == flat
    assert abs(out[0]["d"] - math.hypot(flat[0][0] - 10, flat[0][1] - 10)) < 1e-9
    # GeoJSON needs a 2dsphere index.
    code, _, _ = command_error(db, {"aggregate": "grid", "pipeline": [{"$geoNear": {
        "near": point([10, 10]), "distanceField": "d"}}], "cursor": {}})
    assert code == 291
    db.grid.create_index([("loc3", "2d")])
    code, _, _ = command_error(db, {"aggregate": "grid", "pipeline": [{"$geoNear": {
        "near": [10, 10], "distanceField": "d"}}], "cursor": {}})
    assert code == 27  # two 2d indexes


def test_2d_custom_plane(db):
    db.board.create_index([("cell", "2d")], min=0, max=8, bits=3)
    db.board.insert_many([{"_id": n, "cell": c} for n, c in
                          [("a1", [0.5, 0.5]), ("e4", [4.5, 3.5]), ("h8", [7.5, 7.5]),
                           ("edge", [8, 8])]])
    assert sorted(ids(db.board.find({"cell": {"$geoWithin": {"$box": [[4, 3], [8, 8]]}}}))) == [
        "e4", "edge", "h8"]
    assert ids(db.board.find({"cell": {"$near": [0, 0]}}).limit(2)) == ["a1", "e4"]


def test_geo_indexes_survive_a_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    t0 = datetime.datetime(2026, 5, 1)
    try:
        c.g.places.insert_many([{"_id": n, "loc": point(p), "xy": p} for n, p in
                                [("paris", PARIS), ("rome", ROME), ("madrid", MADRID)]])
        c.g.places.create_index([("loc", "2dsphere")])
        c.g.places.create_index([("xy", "2d")])
        c.g.create_collection("ts", timeseries={"timeField": "t"})
        c.g.ts.create_index([("pos", "2dsphere")])
        c.g.ts.insert_many([{"t": t0, "pos": point(p)} for p in (PARIS, ROME)])
    finally:
        c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    try:
        near = {"loc": {"$near": {"$geometry": point(MADRID)}}}
        assert ids(c.g.places.find(near)) == ["madrid", "paris", "rome"]
        assert ids(c.g.places.find({"xy": {"$near": ROME}}).limit(1)) == ["rome"]
        with pytest.raises(WriteError) as e:
            c.g.places.insert_one({"loc": "nowhere"})
        assert e.value.code == 16755
        cap = {"pos": {"$geoWithin": {"$centerSphere": [ROME, 0.01]}}}
        assert c.g.ts.count_documents(cap) == 1
        assert '"IXSCAN"' in json.dumps(c.g.command("explain", {"find": "ts", "filter": cap}))
    finally:
        c.close()
    assert s.shutdown_command() == 0
