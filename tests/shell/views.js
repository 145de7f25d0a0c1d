// A new user's views, typed into mongosh (db.createView, reads through it, the refusals):
//   mongosh "mongodb://127.0.0.1:PORT/test" --quiet --file tests/shell/views.js
// Any failed check throws (mongosh exits non-zero); prints "VIEWS_JS_OK" last on success.

load(__dirname + '/checks.js');

const vdb = db.getSiblingDB('hg_shell_views');
vdb.dropDatabase();

vdb.createCollection('readings', { timeseries: { timeField: 'ts', metaField: 'sensor' } });
const start = ISODate('2024-03-01T00:00:00Z');
const rows = [];
for (let i = 0; i < 24; i++) {
  rows.push({ ts: new Date(start.getTime() + i * 3600 * 1000), sensor: { id: i % 2 }, temp: 10 + i });
}
vdb.readings.insertMany(rows);

// A view that hides one sensor and converts the unit, as a report would.
vdb.createView('fahrenheit', 'readings', [
  { $match: { 'sensor.id': 1 } },
  { $project: { _id: 0, ts: 1, f: { $add: [{ $multiply: ['$temp', 1.8] }, 32] } } },
]);
const info = vdb.getCollectionInfos({ name: 'fahrenheit' })[0];
checkEq(info.type, 'view', 'listed as a view');
checkEq(info.options.viewOn, 'readings', 'viewOn');
checkEq(info.info.readOnly, true, 'read only');

const first = vdb.fahrenheit.find().sort({ ts: 1 }).limit(1).toArray();
checkEq(first, [{ ts: ISODate('2024-03-01T01:00:00Z'), f: 11 * 1.8 + 32 }], 'first reading');
checkEq(vdb.fahrenheit.countDocuments({}), 12, 'countDocuments through the view');
const hot = vdb.fahrenheit.aggregate([{ $match: { f: { $gt: 90 } } }, { $count: 'n' }]).toArray();
checkEq(hot, [{ n: rows.filter((r) => r.sensor.id === 1 && r.temp * 1.8 + 32 > 90).length }],
        'aggregate appended to the view');

checkCode(() => vdb.fahrenheit.insertOne({ f: 1 }), 166, 'insert into a view');
checkCode(() => vdb.createView('fahrenheit', 'readings', []), 48, 'another view by that name');
checkCode(() => vdb.createView('loop', 'loop', []), 5, 'a view on itself');

// A $lookup of a view reads it under its collation only (OptionNotSupportedOnView otherwise).
vdb.createView('ci_readings', 'readings', [], { collation: { locale: 'en', strength: 2 } });
checkCode(() => vdb.readings.aggregate([{ $lookup: { from: 'ci_readings', localField: '_id',
  foreignField: '_id', as: 'same' } }]).toArray(), 167, 'a $lookup of a collated view');
checkEq(vdb.readings.aggregate([{ $limit: 1 }, { $lookup: { from: 'ci_readings',
  localField: '_id', foreignField: '_id', as: 'same' } }], { collation: { locale: 'en',
  strength: 2 } }).toArray()[0].same.length, 1, 'under the view collation');
check(vdb.fahrenheit.drop(), 'drop the view');
checkEq(vdb.getCollectionNames().includes('fahrenheit'), false, 'gone');
checkEq(vdb.readings.countDocuments({}), 24, 'data stays');
vdb.dropDatabase();
print('VIEWS_JS_OK');
