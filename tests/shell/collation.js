// Collations typed into mongosh, as the manual's collation examples write them:
//   mongosh "mongodb://127.0.0.1:PORT/test" --quiet --file tests/shell/collation.js
// Any failed check throws (mongosh exits non-zero); prints "COLLATION_JS_OK" last on success.

load(__dirname + '/checks.js');

const cdb = db.getSiblingDB('hg_shell_collation');
cdb.dropDatabase();
cdb.words.insertMany([
  { _id: 1, s: 'cote' }, { _id: 2, s: 'côte' }, { _id: 3, s: 'coté' }, { _id: 4, s: 'côté' },
  { _id: 5, s: 'Müller' }, { _id: 6, s: 'Muetze' }, { _id: 7, s: 'Mueller' },
  { _id: 8, s: '10' }, { _id: 9, s: '9' }, { _id: 10, s: 'あ' }, { _id: 11, s: 'ア' },
]);
const words = (filter, collation) =>
  cdb.words.find(filter).collation(collation).sort({ s: 1 }).toArray().map((d) => d.s);

// French (Canada) weighs the last accent first.
checkEq(words({ _id: { $lte: 4 } }, { locale: 'fr_CA' }), ['cote', 'côte', 'coté', 'côté'],
        'fr_CA order');
// German phonebook: ü as ue.
checkEq(words({ s: /^M/ }, { locale: 'de@collation=phonebook' }),
        ['Mueller', 'Müller', 'Muetze'], 'de phonebook order');
// numericOrdering.
checkEq(words({ s: { $in: ['10', '9'] } }, { locale: 'en', numericOrdering: true }), ['9', '10'],
        'numericOrdering');
// Japanese: hiragana and katakana of one sound match at strength 1.
checkEq(cdb.words.countDocuments({ s: 'あ' }, { collation: { locale: 'ja', strength: 1 } }), 2,
        'ja strength 1');
// Case-insensitive writes.
const upd = cdb.words.updateMany({ s: 'MÜLLER' }, { $set: { found: true } },
                                 { collation: { locale: 'de', strength: 2 } });
checkEq(upd.modifiedCount, 1, 'updateMany under strength 2');
checkEq(cdb.words.distinct('s', { s: { $in: ['COTE', 'CÔTE'] } },
                           { collation: { locale: 'fr', strength: 1 } }).length, 1,
        'distinct under strength 1');
checkCode(() => cdb.words.find().collation({ locale: 'xx' }).toArray(), 2, 'an unknown locale');

// A collection with a default collation, and a case-insensitive unique index (the manual's
// "case insensitive indexes" example).
cdb.createCollection('names', { collation: { locale: 'en', strength: 2 } });
checkEq(cdb.getCollectionInfos({ name: 'names' })[0].options.collation.strength, 2,
        'the default collation is listed');
cdb.names.createIndex({ name: 1 }, { unique: true });
checkEq(cdb.names.getIndexes().filter((i) => i.name === 'name_1')[0].collation.locale, 'en',
        'the index inherits the default collation');
cdb.names.insertOne({ name: 'Zoë' });
checkCode(() => cdb.names.insertOne({ name: 'ZOË' }), 11000, 'a case variant is a duplicate');
checkEq(cdb.names.find({ name: 'zoë' }).toArray().length, 1, 'reads take the default collation');
const plan = cdb.names.find({ name: 'zoë' }).explain().queryPlanner.winningPlan;
checkEq(plan.inputStage.indexName, 'name_1', 'and use the collated index');
// A time-series collection with a collation: metas and measurements compare under it, buckets
// group the metas by their bytes, and control.max is the collation's ("10" after "9").
cdb.createCollection('sensors', {
  timeseries: { timeField: 't', metaField: 'site' },
  collation: { locale: 'en', strength: 2, numericOrdering: true },
});
checkEq(cdb.getCollectionInfos({ name: 'sensors' })[0].options.collation.numericOrdering, true,
        'the time-series collection lists its collation');
cdb.sensors.insertMany([
  { t: ISODate('2026-01-01T00:00:00Z'), site: 'Paris', v: '9' },
  { t: ISODate('2026-01-01T00:01:00Z'), site: 'paris', v: '10' },
  { t: ISODate('2026-01-01T00:02:00Z'), site: 'Paris', v: '10' },
]);
checkEq(cdb.sensors.countDocuments({ site: 'PARIS' }), 3, 'metas compare under the collation');
checkEq(cdb.getCollection('system.buckets.sensors').countDocuments({}), 2,
        'one bucket per meta by its bytes');
checkEq(cdb.getCollection('system.buckets.sensors').findOne({ meta: 'Paris' }).control.max.v,
        '10', 'control.max under numeric ordering');
checkEq(cdb.sensors.countDocuments({ v: { $gt: '9' } }), 2, 'numeric order on a measurement');
checkEq(cdb.sensors.countDocuments({ v: { $gt: '9' } }, { collation: { locale: 'simple' } }), 0,
        'a read under another collation');
checkEq(cdb.sensors.deleteMany({ site: 'paris', v: '10' }).deletedCount, 2,
        'deletes take the default collation');
cdb.dropDatabase();
print('COLLATION_JS_OK');
