// The time-series session of a new user, typed into mongosh:
//   mongosh "mongodb://127.0.0.1:PORT/test" --quiet --file tests/shell/timeseries.js
// Any failed check throws (mongosh exits non-zero); prints "TIMESERIES_JS_OK" last on success.

load(__dirname + '/checks.js');

const tdb = db.getSiblingDB('hg_shell_timeseries');
tdb.dropDatabase();

tdb.createCollection('weather', {
  timeseries: { timeField: 'timestamp', metaField: 'metadata', granularity: 'hours' },
  expireAfterSeconds: 86400 * 30,
});
const info = tdb.getCollectionInfos({ name: 'weather' })[0];
checkEq(info.type, 'timeseries', 'listCollections type');
checkEq(info.options.timeseries,
        { timeField: 'timestamp', metaField: 'metadata', granularity: 'hours',
          bucketMaxSpanSeconds: 2592000 },
        'materialized timeseries options');
checkEq(info.options.expireAfterSeconds, Long(2592000), 'expireAfterSeconds as NumberLong');

const docs = [
  { timestamp: ISODate('2021-05-18T00:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 12 },
  { timestamp: ISODate('2021-05-18T04:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 11 },
  { timestamp: ISODate('2021-05-18T08:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 11 },
  { timestamp: ISODate('2021-05-18T12:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 12 },
  { timestamp: ISODate('2021-05-18T16:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 16 },
  { timestamp: ISODate('2021-05-18T20:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 15 },
  { timestamp: ISODate('2021-05-19T00:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 13 },
  { timestamp: ISODate('2021-05-19T04:00:00Z'), metadata: { sensorId: 5578, type: 'temperature' }, temp: 12 },
  { timestamp: ISODate('2021-05-18T00:00:00Z'), metadata: { sensorId: 7777, type: 'temperature' }, temp: 20 },
];
// Inserted out of time order on purpose: the last 5578 one goes back in time.
const res = tdb.weather.insertMany(docs.map((d, i) => Object.assign({ _id: i }, d)));
checkEq(Object.keys(res.insertedIds).length, 9, 'insertMany count');

const found = tdb.weather.find({
  'metadata.sensorId': 5578,
  timestamp: { $gte: ISODate('2021-05-18T12:00:00Z') },
}).sort({ timestamp: 1 }).toArray();
checkEq(found.length, 5, 'find by meta subfield and time');
// Time field first, then the meta field, then the other fields.
checkEq(Object.keys(found[0]), ['timestamp', 'metadata', '_id', 'temp'], 'field order');
checkEq(found[0].temp, 12, 'first in time order');
checkEq(found[4].timestamp, ISODate('2021-05-19T04:00:00Z'), 'last in time order');

const avg = tdb.weather.aggregate([
  { $match: { 'metadata.type': 'temperature' } },
  { $group: { _id: '$metadata.sensorId', avg: { $avg: '$temp' } } },
  { $sort: { _id: 1 } },
]).toArray();
checkEq(avg, [{ _id: 5578, avg: 12.75 }, { _id: 7777, avg: 20 }], 'average per sensor');

const buckets = tdb.system.buckets.weather.find({ 'meta.sensorId': 5578 }).toArray();
check(buckets.length >= 1, 'buckets exist');
const b = buckets[0];
checkEq(Object.keys(b), ['_id', 'control', 'meta', 'data'], 'bucket field order');
// Compressed from the first write (MongoDB 8.0): version 2 while rows come in time order, else 3;
// each column a BSONColumn (BinData subtype 7) of control.count cells.
check(b.control.version === 2 || b.control.version === 3, 'bucket version');
check(b.control.count >= 1, 'bucket count');
checkEq(b.data.timestamp.sub_type, 7, 'time column is a BSONColumn');
// granularity hours: buckets start at a day boundary.
checkEq(b.control.min.timestamp, ISODate('2021-05-18T00:00:00Z'), 'rounded bucket start');
checkEq(b.meta, { sensorId: 5578, type: 'temperature' }, 'bucket meta');
checkEq(b._id.getTimestamp(), ISODate('2021-05-18T00:00:00Z'), 'bucket _id holds the start');

checkEq(tdb.weather.countDocuments({}), 9, 'countDocuments');
checkEq(tdb.weather.distinct('metadata.sensorId').sort(), [5578, 7777], 'distinct meta');

const stats = tdb.runCommand({ collStats: 'weather' });
checkEq(stats.ok, 1, 'collStats ok');
checkEq(stats.timeseries.bucketsNs, 'hg_shell_timeseries.system.buckets.weather', 'bucketsNs');
check(stats.timeseries.bucketCount >= 2, 'bucketCount');
checkEq(stats.timeseries.numMeasurementsCommitted, 9, 'numMeasurementsCommitted');
check(db.serverStatus().bucketCatalog.numCommits >= 1, 'serverStatus bucketCatalog');

checkEq(tdb.runCommand({ collMod: 'weather', timeseries: { granularity: 'hours' } }).ok, 1,
        'collMod same granularity');
let refused = false;
try {
  tdb.runCommand({ collMod: 'weather', timeseries: { granularity: 'seconds' } });
} catch (e) {
  refused = true;
  checkEq(e.code, 72, 'granularity may not become finer');
}
check(refused, 'finer granularity refused');

let threw = false;
try {
  tdb.weather.insertOne({ timestamp: 'yesterday', metadata: { sensorId: 1 } });
} catch (e) {
  threw = true;
  checkEq(e.code, 2, 'time field must be a date');
}
check(threw, 'bad time field rejected');

// explain of a time-series find: the $cursor on the bucket collection, then the unpack stage.
const exp = tdb.weather.find({ temp: { $gt: 12 } }).sort({ timestamp: -1 }).limit(2)
  .explain('executionStats');
checkEq(exp.stages[0].$cursor.queryPlanner.namespace,
        'hg_shell_timeseries.system.buckets.weather', 'explain namespace');
check(exp.stages[0].$cursor.executionStats.totalDocsExamined >= 1, 'explain buckets examined');
const unpack = exp.stages.find((s) => s.$_internalUnpackBucket);
checkEq(unpack.$_internalUnpackBucket.timeField, 'timestamp', 'explain unpack stage');
checkEq(unpack.$_internalUnpackBucket.eventFilter, { temp: { $gt: 12 } }, 'explain eventFilter');
check(exp.stages.some((s) => s.$_internalBoundedSort), 'explain bounded sort');
check(Number(exp.stages[exp.stages.length - 1].nReturned) === 2, 'explain nReturned');

// Without an _id the driver appends one: the measurement reads back as MongoDB's manual shows it.
tdb.weather.insertOne({ timestamp: ISODate('2021-05-20T00:00:00Z'), metadata: { sensorId: 1, type: 'temperature' }, temp: 9 });
checkEq(Object.keys(tdb.weather.findOne({ 'metadata.sensorId': 1 })),
        ['timestamp', 'metadata', 'temp', '_id'], 'driver-generated _id stays last');

// MongoDB 8.0's updates of measurements, as the manual's weather example would write them.
const fixed = tdb.weather.updateMany({ temp: { $lt: 13 } }, { $inc: { temp: 100 } });
checkEq(fixed.matchedCount, fixed.modifiedCount, 'updateMany counts measurements');
check(fixed.modifiedCount > 0, 'updateMany changed measurements');
checkEq(tdb.weather.countDocuments({ temp: { $lt: 13 } }), 0, 'no measurement left below 13');
const one = tdb.weather.findOneAndUpdate({ temp: { $gte: 100 } }, { $set: { fixed: true } },
                                         { returnNewDocument: true });
checkEq(one.fixed, true, 'findOneAndUpdate returns the new measurement');
const up = tdb.weather.updateOne({ metadata: { sensorId: 9, type: 'temperature' },
                                   timestamp: ISODate('2021-05-20T00:00:00Z') },
                                 { $set: { temp: 20 } }, { upsert: true });
checkEq(up.upsertedCount, 1, 'an upsert inserts a measurement');
checkEq(tdb.weather.findOne({ _id: up.insertedId }).temp, 20, 'the upserted measurement');
const removed = tdb.weather.findOneAndDelete({ 'metadata.sensorId': 9 });
checkEq(removed.temp, 20, 'findOneAndDelete returns the measurement');
checkCode(() => tdb.weather.updateMany({}, { $set: { timestamp: 'noon' } }), 2,
          'the time field stays a date');
// The bucket collection as restores and tools use it: its default index as MongoDB lists it,
// indexes created on it directly, explain of its reads; an array under an indexed measurement.
const raw = tdb.getCollection('system.buckets.weather');
checkEq(raw.getIndexes()[0].key,
        { meta: 1, 'control.min.timestamp': 1, 'control.max.timestamp': 1 }, 'default bucket index');
raw.createIndex({ 'control.min.temp': 1, 'control.max.temp': 1 }, { name: 'raw_temp' });
check(tdb.weather.getIndexes().some((i) => i.name === 'raw_temp' && i.key.temp === 1),
      'a raw bucket index listed in user terms');
checkEq(raw.find({ 'control.max.temp': { $gte: 100 } }).hint('raw_temp').explain()
  .queryPlanner.winningPlan.inputStage.indexName, 'raw_temp', 'explain of a bucket read');
checkCode(() => tdb.weather.insertOne({ timestamp: ISODate('2021-05-20T00:00:00Z'),
                                        metadata: { sensorId: 1 }, temp: [1, 2] }),
          5930501, 'an array under an indexed measurement');
checkCode(() => tdb.runCommand({ create: 'system.buckets.plain' }), 20,
          'a bucket collection needs time-series options');
check(tdb.weather.drop(), 'drop');
checkEq(tdb.getCollectionNames().filter((n) => n.includes('weather')), [], 'drop removes both');
tdb.dropDatabase();
print('TIMESERIES_JS_OK');
