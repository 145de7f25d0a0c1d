// A collection clustered by _id and a backup's fsync lock, typed into mongosh:
//   mongosh "mongodb://127.0.0.1:PORT/test" --quiet --file tests/shell/clustered_fsync.js
// Any failed check throws (mongosh exits non-zero); prints "CLUSTERED_FSYNC_JS_OK" last on success.

load(__dirname + '/checks.js');

const cdb = db.getSiblingDB('hg_shell_clustered');
cdb.dropDatabase();

// db.createCollection with clusteredIndex, as the manual's example creates one.
cdb.createCollection('events', {
  clusteredIndex: { key: { _id: 1 }, unique: true, name: 'events clustered key' },
  expireAfterSeconds: 3600,
});
const info = cdb.getCollectionInfos({ name: 'events' })[0];
checkEq(info.options.clusteredIndex,
        { v: 2, key: { _id: 1 }, name: 'events clustered key', unique: true }, 'clusteredIndex');
checkEq(info.options.expireAfterSeconds, Long(3600), 'expireAfterSeconds');
checkEq(cdb.events.getIndexes(),
        [{ v: 2, key: { _id: 1 }, name: 'events clustered key', unique: true, clustered: true }],
        'getIndexes');
cdb.events.insertMany([{ _id: 30 }, { _id: 10 }, { _id: 20 }]);
checkEq(cdb.events.find().toArray().map((d) => d._id), [10, 20, 30], 'natural order is _id order');
checkCode(() => cdb.events.dropIndex('events clustered key'), 5979800, 'the clustered index stays');
checkCode(() => cdb.createCollection('bad', { clusteredIndex: { key: { a: 1 }, unique: true } }),
          197, 'only {_id: 1}');

// db.fsyncLock(): reads go on, db.fsyncUnlock() lets writes in again.
const locked = db.fsyncLock();
checkEq(locked.lockCount, Long(1), 'lockCount');
check(db.adminCommand({ currentOp: 1 }).fsyncLock === true, 'currentOp shows the lock');
checkEq(cdb.events.countDocuments({}), 3, 'reads while locked');
const unlocked = db.fsyncUnlock();
checkEq(unlocked.lockCount, Long(0), 'unlocked');
check(db.adminCommand({ currentOp: 1 }).fsyncLock === undefined, 'no lock shown');
cdb.events.insertOne({ _id: 40 });
checkEq(cdb.events.countDocuments({}), 4, 'writes after the unlock');
checkCode(() => db.fsyncUnlock(), 20, 'nothing left to unlock');

cdb.dropDatabase();
print('CLUSTERED_FSYNC_JS_OK');
