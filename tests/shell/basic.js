// A mongosh session as a user would type it, run with
//   mongosh "mongodb://127.0.0.1:PORT/test" --quiet --file tests/shell/basic.js
// Any failed check throws, which makes mongosh exit non-zero. The script
// prints "BASIC_JS_OK" as its last line on success.

load(__dirname + '/checks.js');

// "show dbs"
const dbs = db.getMongo().getDBs();
check(dbs.ok === 1, 'listDatabases ok');
check(Array.isArray(dbs.databases), 'listDatabases returns a databases array');

// "use hg_shell_basic"
const name = 'hg_shell_basic';
const sdb = db.getSiblingDB(name);
sdb.dropDatabase();
checkEq(sdb.getName(), name, 'getSiblingDB name');

// createCollection
const created = sdb.createCollection('items');
checkEq(created.ok, 1, 'createCollection ok');
check(sdb.getCollectionNames().includes('items'), 'show collections lists items');

// insertOne / insertMany
const one = sdb.items.insertOne({ _id: 0, name: 'zero', qty: 0, tags: ['start'] });
check(one.acknowledged === true, 'insertOne acknowledged');
checkEq(one.insertedId, 0, 'insertOne insertedId');

const many = sdb.items.insertMany(
  Array.from({ length: 20 }, (_, i) => ({ _id: i + 1, name: 'item' + (i + 1), qty: (i * 7) % 10 }))
);
checkEq(Object.keys(many.insertedIds).length, 20, 'insertMany inserted 20');

const generated = sdb.items.insertOne({ name: 'no-id' });
check(generated.insertedId._bsontype === 'ObjectId', 'generated _id is an ObjectId');
check(sdb.items.findOne({ name: 'no-id' })._id.equals(generated.insertedId), 'generated _id stored');

// find().sort().limit()
const top = sdb.items.find({ qty: { $gte: 5 } }, { _id: 1, qty: 1 }).sort({ qty: -1, _id: 1 }).limit(3).toArray();
checkEq(top, [{ _id: 8, qty: 9 }, { _id: 18, qty: 9 }, { _id: 5, qty: 8 }], 'find sort limit');

checkEq(sdb.items.findOne({ _id: 0 }), { _id: 0, name: 'zero', qty: 0, tags: ['start'] }, 'findOne');

// A cursor over several batches.
let seen = 0;
sdb.items.find().batchSize(4).forEach(() => { seen += 1; });
checkEq(seen, 22, 'cursor iterates all batches');

// countDocuments / estimatedDocumentCount
checkEq(sdb.items.countDocuments({}), 22, 'countDocuments all');
checkEq(sdb.items.countDocuments({ qty: { $lt: 5 } }), 11, 'countDocuments filtered');
checkEq(sdb.items.estimatedDocumentCount(), 22, 'estimatedDocumentCount');

// updates
const upd = sdb.items.updateMany({ qty: 0 }, { $set: { zero: true } });
checkEq(upd.matchedCount, 3, 'updateMany matched');
checkEq(upd.modifiedCount, 3, 'updateMany modified');

// aggregate
const agg = sdb.items.aggregate([
  { $match: { qty: { $exists: true } } },
  { $group: { _id: null, total: { $sum: '$qty' } } },
]).toArray();
checkEq(agg, [{ _id: null, total: 90 }], 'aggregate total');

// deleteMany
const del = sdb.items.deleteMany({ qty: { $gte: 5 } });
checkEq(del.deletedCount, 10, 'deleteMany deletedCount');
checkEq(sdb.items.countDocuments({}), 12, 'count after delete');

// Server errors surface as MongoServerError with MongoDB's code.
let bad = null;
try {
  sdb.runCommand({ noSuchCommandXyz: 1 });
} catch (e) {
  bad = e;
}
check(bad !== null, 'unknown command fails');
checkEq(bad.code, 59, 'unknown command code');
checkEq(bad.codeName, 'CommandNotFound', 'unknown command codeName');

// drop / show collections
check(sdb.items.drop() === true, 'drop returns true');
check(!sdb.getCollectionNames().includes('items'), 'items gone after drop');

// "show dbs" no longer lists the database once it is empty and dropped.
sdb.dropDatabase();
const after = db.getMongo().getDBs().databases.map((d) => d.name);
check(!after.includes(name), 'dropped database not listed');

print('BASIC_JS_OK');
