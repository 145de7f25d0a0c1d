"""Geo query operators without a geo index, as MongoDB answers them: $geoWithin ($geometry,
$centerSphere, and the flat $box, $center, $polygon) and $geoIntersects over GeoJSON geometries
and legacy coordinate pairs, in find, count, aggregate's $match, updates and deletes. Places are
real cities; which of them lie in which region is geography, written out here."""

import datetime

import pytest
from pymongo.errors import OperationFailure

from conftest import command_error

PARIS = [2.3522, 48.8566]
LONDON = [-0.1276, 51.5072]
BERLIN = [13.4050, 52.5200]
MADRID = [-3.7038, 40.4168]
NEW_YORK = [-74.0060, 40.7128]

# Roughly France's mainland, as a GeoJSON polygon (longitude, latitude).
FRANCE = {"type": "Polygon", "coordinates": [[[-4.8, 42.3], [3.2, 42.3], [7.7, 43.7],
                                               [8.2, 49.0], [2.5, 51.1], [-4.8, 48.5],
                                               [-4.8, 42.3]]]}
EARTH_RADIUS_KM = 6378.1


def point(lnglat):
    return {"type": "Point", "coordinates": lnglat}


@pytest.fixture
def places(db):
    db.places.insert_many([
        {"_id": "paris", "loc": point(PARIS)},
        {"_id": "london", "loc": point(LONDON)},
        {"_id": "berlin", "loc": BERLIN},                       # a legacy pair
        {"_id": "madrid", "loc": {"lng": MADRID[0], "lat": MADRID[1]}},  # legacy, as a document
        {"_id": "new_york", "loc": point(NEW_YORK)},
        {"_id": "seine", "loc": {"type": "LineString", "coordinates": [[2.0, 48.9], [2.6, 48.8]]}},
        {"_id": "channel", "loc": {"type": "LineString", "coordinates": [[1.8, 50.9], [1.3, 51.1],
                                                                        [-0.1, 51.5]]}},
        {"_id": "idf", "loc": {"type": "Polygon", "coordinates": [[[1.5, 48.1], [3.5, 48.1],
                                                                 [3.5, 49.2], [1.5, 49.2],
                                                                 [1.5, 48.1]]]}},
        {"_id": "tags", "loc": ["not", "a", "place"]},
        {"_id": "none"},
    ])
    return db.places


def ids(cursor):
    return sorted(d["_id"] for d in cursor)


def test_within_a_polygon(places):
    within = {"loc": {"$geoWithin": {"$geometry": FRANCE}}}
    assert ids(places.find(within)) == ["idf", "paris", "seine"]
    assert places.count_documents(within) == 3
    assert ids(places.aggregate([{"$match": within}])) == ["idf", "paris", "seine"]
    # $within is the old name.
    assert ids(places.find({"loc": {"$within": {"$geometry": FRANCE}}})) == ["idf", "paris",
                                                                              "seine"]
    # A MultiPolygon: France or a box around Berlin.
    multi = {"type": "MultiPolygon", "coordinates": [FRANCE["coordinates"], [[
        [13, 52], [14, 52], [14, 53], [13, 53], [13, 52]]]]}
    assert ids(places.find({"loc": {"$geoWithin": {"$geometry": multi}}})) == [
        "berlin", "idf", "paris", "seine"]


def test_intersects(places):
    # The line from Calais to London crosses the Channel coast; Paris is in Ile-de-France.
    coast = {"type": "LineString", "coordinates": [[1.0, 50.5], [2.5, 51.5]]}
    assert ids(places.find({"loc": {"$geoIntersects": {"$geometry": coast}}})) == ["channel"]
    assert ids(places.find({"loc": {"$geoIntersects": {"$geometry": point(PARIS)}}})) == [
        "idf", "paris"]


def test_center_sphere(places):
    # 500 km around Paris: London (344 km) and the French places, not Berlin (878 km).
    near_paris = {"loc": {"$geoWithin": {"$centerSphere": [PARIS, 500 / EARTH_RADIUS_KM]}}}
    assert ids(places.find(near_paris)) == ["channel", "idf", "london", "paris", "seine"]
    far = {"loc": {"$geoWithin": {"$centerSphere": [PARIS, 1100 / EARTH_RADIUS_KM]}}}
    assert "berlin" in ids(places.find(far)) and "madrid" in ids(places.find(far))


def test_flat_shapes_see_points(places):
    box = {"loc": {"$geoWithin": {"$box": [[-5, 40], [15, 53]]}}}
    assert ids(places.find(box)) == ["berlin", "london", "madrid", "paris"]
    # Degrees on the plane: London is 3.63 from Paris there.
    assert ids(places.find({"loc": {"$geoWithin": {"$center": [PARIS, 4]}}})) == ["london",
                                                                                   "paris"]
    assert ids(places.find({"loc": {"$geoWithin": {"$center": [PARIS, 3]}}})) == ["paris"]
    # Below the line from (-10, 35) to (20, 60): Berlin only (Madrid is just above it).
    polygon = {"loc": {"$geoWithin": {"$polygon": [[-10, 35], [20, 35], [20, 60]]}}}
    assert ids(places.find(polygon)) == ["berlin"]


def test_writes_with_geo_filters(places):
    r = places.update_many({"loc": {"$geoWithin": {"$geometry": FRANCE}}},
                           {"$set": {"country": "FR"}})
    assert r.modified_count == 3
    assert places.delete_many({"loc": {"$geoIntersects": {"$geometry": point(NEW_YORK)}}}
                              ).deleted_count == 1
    assert ids(places.find({"country": "FR"})) == ["idf", "paris", "seine"]


def test_arrays_of_points(db):
    db.routes.insert_many([{"_id": 1, "stops": [point(LONDON), point(PARIS)]},
                           {"_id": 2, "stops": [BERLIN, NEW_YORK]}])
    within = {"stops": {"$geoWithin": {"$geometry": FRANCE}}}
    assert ids(db.routes.find(within)) == [1]  # one element within is enough


def test_bad_shapes_are_bad_value(db, places):
    bad = [
        {"$geoWithin": {"$geometry": point(PARIS)}},  # not a polygon
        {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0],
                                                                         [1, 1], [0, 2]]]}}},
        {"$geoWithin": {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0],
                                                                         [0, 1], [0, 0]]]}}},
        {"$geoWithin": {"$nowhere": 1}},
        {"$geoWithin": {"$box": [[0, 0]]}},
        {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": [181, 0]}}},
        {"$geoIntersects": {"$box": [[0, 0], [1, 1]]}},
        {"$maxDistance": 5},
    ]
    for cond in bad:
        code, name, _ = command_error(db, {"find": "places", "filter": {"loc": cond}})
        assert (code, name) == (2, "BadValue"), cond
    # Nearness needs a geo index (MongoDB answers the same without one).
    code, name, msg = command_error(db, {"find": "places", "filter": {
        "loc": {"$near": {"$geometry": point(PARIS)}}}})
    assert (code, name) == (291, "NoQueryExecutionPlans") and "$geoNear" in msg
    # The server stays healthy.
    assert places.count_documents({}) == 10


def test_on_a_time_series_collection(db):
    db.create_collection("sensors", timeseries={"timeField": "t", "metaField": "site"})
    t = datetime.datetime(2026, 1, 1)
    db.sensors.insert_many([
        {"t": t, "site": {"name": "paris", "loc": point(PARIS)}, "pos": point(PARIS), "v": 1},
        {"t": t, "site": {"name": "berlin", "loc": point(BERLIN)}, "pos": point(BERLIN), "v": 2},
    ])
    by_meta = {"site.loc": {"$geoWithin": {"$geometry": FRANCE}}}
    assert [d["v"] for d in db.sensors.find(by_meta)] == [1]
    by_measurement = {"pos": {"$geoWithin": {"$centerSphere": [BERLIN, 10 / EARTH_RADIUS_KM]}}}
    assert [d["v"] for d in db.sensors.find(by_measurement)] == [2]
    with pytest.raises(OperationFailure):
        list(db.sensors.find({"pos": {"$geoWithin": {"$box": [[0, 0]]}}}))
