// Geo queries typed into mongosh, as the manual's geospatial examples write them:
//   mongosh "mongodb://127.0.0.1:PORT/test" --quiet --file tests/shell/geo.js
// Any failed check throws (mongosh exits non-zero); prints "GEO_JS_OK" last on success.

load(__dirname + '/checks.js');

const gdb = db.getSiblingDB('hg_shell_geo');
gdb.dropDatabase();
gdb.places.insertMany([
  { _id: 'central_park', location: { type: 'Point', coordinates: [-73.97, 40.77] } },
  { _id: 'sara_d_roosevelt', location: { type: 'Point', coordinates: [-73.9928, 40.7193] } },
  { _id: 'polo_grounds', location: { type: 'Point', coordinates: [-73.9375, 40.8303] } },
  { _id: 'legacy', location: [-73.98, 40.76] },
]);
const ids = (filter) => gdb.places.find(filter).toArray().map((d) => d._id).sort();

// Manhattan, south of 40.8 (a rough box as a GeoJSON polygon).
const midtown = {
  type: 'Polygon',
  coordinates: [[[-74.02, 40.70], [-73.93, 40.70], [-73.93, 40.80], [-74.02, 40.80],
                 [-74.02, 40.70]]],
};
checkEq(ids({ location: { $geoWithin: { $geometry: midtown } } }),
        ['central_park', 'legacy', 'sara_d_roosevelt'], '$geoWithin $geometry');
// Five miles around Central Park, in radians (miles / 3963.2).
checkEq(ids({ location: { $geoWithin: { $centerSphere: [[-73.97, 40.77], 5 / 3963.2] } } }),
        ['central_park', 'legacy', 'polo_grounds', 'sara_d_roosevelt'], '$centerSphere');
checkEq(ids({ location: { $geoWithin: { $box: [[-74, 40.75], [-73.9, 40.9]] } } }),
        ['central_park', 'legacy', 'polo_grounds'], '$box over points');
checkEq(gdb.places.countDocuments({
  location: { $geoIntersects: { $geometry: { type: 'Point', coordinates: [-73.97, 40.77] } } },
}), 1, '$geoIntersects a point');
checkCode(() => gdb.places.find({ location: { $geoWithin: { $geometry: {
  type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1]]] } } } }).toArray(), 2,
  'an open ring');
checkCode(() => gdb.places.find({ location: { $near: { $geometry: {
  type: 'Point', coordinates: [-73.97, 40.77] } } } }).toArray(), 291, '$near without an index');
// With a 2dsphere index, as the manual's $near and $geoNear examples use it.
checkEq(gdb.places.createIndex({ location: '2dsphere' }), 'location_2dsphere', 'createIndex');
const nearCentralPark = { $geometry: { type: 'Point', coordinates: [-73.9667, 40.78] } };
checkEq(gdb.places.find({ location: { $near: { ...nearCentralPark, $maxDistance: 5000 } } })
          .toArray().map((d) => d._id),
        ['central_park', 'legacy'], '$near in meters, nearest first (1.1 km, 2.5 km)');
checkEq(gdb.places.find({ location: { $near: { ...nearCentralPark, $minDistance: 2000,
                                               $maxDistance: 8000 } } })
          .toArray().map((d) => d._id),
        ['legacy', 'polo_grounds', 'sara_d_roosevelt'], '$near with $minDistance (6.1, 7.1 km)');
const geoNear = gdb.places.aggregate([
  { $geoNear: { near: { type: 'Point', coordinates: [-73.99279, 40.719296] },
                distanceField: 'dist.calculated', maxDistance: 2, includeLocs: 'dist.location' } },
]).toArray();
checkEq(geoNear.map((d) => d._id), ['sara_d_roosevelt'], '$geoNear within 2 meters');
checkEq(geoNear[0].dist.location.coordinates, [-73.9928, 40.7193], 'includeLocs');
checkCode(() => gdb.places.insertOne({ _id: 'bad', location: 'nowhere' }), 16755,
          'a document that is no geometry');
// Legacy coordinates with a 2d index, as the manual's $near and $box examples write them.
gdb.legacy.insertMany([
  { _id: 'a', loc: [-73.97, 40.77] }, { _id: 'b', loc: [-73.88, 40.78] },
  { _id: 'c', loc: [-73.99, 40.71] },
]);
checkEq(gdb.legacy.createIndex({ loc: '2d' }), 'loc_2d', 'createIndex 2d');
checkEq(gdb.legacy.find({ loc: { $near: [-73.9667, 40.78], $maxDistance: 0.10 } })
          .toArray().map((d) => d._id), ['a', 'c', 'b'],
        '$near on the plane (0.011, 0.074, 0.087)');
checkEq(gdb.legacy.find({ loc: { $geoWithin: { $box: [[-74, 40.76], [-73.9, 40.8]] } } })
          .toArray().map((d) => d._id).sort(), ['a'], '$box through the 2d index');
// A time-series collection: a 2dsphere index on a measurement, $geoNear by its key.
gdb.createCollection('rides', { timeseries: { timeField: 'ts', metaField: 'bike' } });
gdb.rides.createIndex({ position: '2dsphere' });
gdb.rides.insertMany([
  { ts: new Date(), bike: 1, position: { type: 'Point', coordinates: [-73.97, 40.77] } },
  { ts: new Date(), bike: 2, position: { type: 'Point', coordinates: [-73.99, 40.71] } },
]);
const rides = gdb.rides.aggregate([{ $geoNear: {
  near: { type: 'Point', coordinates: [-73.99, 40.72] }, key: 'position',
  distanceField: 'meters' } }]).toArray();
checkEq(rides.map((d) => d.bike), [2, 1], '$geoNear on a time-series measurement');
checkEq(gdb.rides.countDocuments({ position: { $geoWithin: { $centerSphere:
  [[-73.97, 40.77], 1 / 6378.1] } } }), 1, '$geoWithin through the measurement index');
// Each ride's nearest place, by a $geoNear at the front of a $lookup with the ride's position.
const nearest = gdb.rides.aggregate([
  { $match: { position: { $exists: true } } },
  { $lookup: { from: 'places', let: { at: '$position' }, as: 'near', pipeline: [
    { $geoNear: { near: '$$at', distanceField: 'm', key: 'location' } }, { $limit: 1 }] } },
  { $sort: { bike: 1 } }]).toArray();
checkEq(nearest.map((r) => r.near.length), nearest.map(() => 1), '$geoNear in $lookup');
check(nearest.every((r) => typeof r.near[0].m === 'number'), 'with its distance');
gdb.dropDatabase();
print('GEO_JS_OK');
