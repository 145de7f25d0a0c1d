// CRUD walk-through with the official Node.js driver against hourglassd.
// Run with: HOURGLASS_URI=mongodb://127.0.0.1:PORT/?directConnection=true node --test tests/node/
// (tests/integration/test_node_driver.py starts a server and does this.)

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, MongoServerError, ObjectId, Long } from 'mongodb';

const uri = process.env.HOURGLASS_URI;
if (!uri) {
  throw new Error('HOURGLASS_URI is not set (mongodb://127.0.0.1:PORT/?directConnection=true)');
}

const dbName = `hg_node_${process.pid}`;
let client;
let db;

before(async () => {
  client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000, directConnection: true });
  await client.connect();
  db = client.db(dbName);
  await db.dropDatabase();
});

after(async () => {
  if (db) await db.dropDatabase();
  if (client) await client.close();
});

describe('handshake', () => {
  test('hello describes a writable standalone', async () => {
    const hello = await db.admin().command({ hello: 1 });
    assert.equal(hello.ok, 1);
    assert.equal(hello.isWritablePrimary, true);
    assert.equal(hello.maxBsonObjectSize, 16 * 1024 * 1024);
    assert.equal(hello.maxMessageSizeBytes, 48000000);
    assert.equal(hello.maxWriteBatchSize, 100000);
    assert.equal(hello.logicalSessionTimeoutMinutes, 30);
    assert.ok(hello.maxWireVersion >= 17);
    assert.ok(hello.localTime instanceof Date);
  });

  test('buildInfo reports a 7.0 version', async () => {
    const info = await db.admin().command({ buildInfo: 1 });
    assert.match(info.version, /^7\.0\./);
    assert.deepEqual(info.versionArray.slice(0, 2), [7, 0]);
  });

  test('ping', async () => {
    assert.deepEqual(await db.command({ ping: 1 }), { ok: 1 });
  });
});

describe('collections', () => {
  test('create, list, rename, drop', async () => {
    await db.createCollection('made');
    let names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    assert.ok(names.includes('made'));
    await db.collection('made').rename('renamed');
    names = (await db.listCollections().toArray()).map((c) => c.name);
    assert.ok(names.includes('renamed'));
    assert.ok(!names.includes('made'));
    assert.equal(await db.collection('renamed').drop(), true);
    names = (await db.listCollections().toArray()).map((c) => c.name);
    assert.ok(!names.includes('renamed'));
  });

  test('re-creating a collection: same options ok, other options NamespaceExists', async () => {
    await db.createCollection('twice');
    // MongoDB 7.0: identical options are a no-op success.
    assert.equal((await db.command({ create: 'twice' })).ok, 1);
    await assert.rejects(
      db.command({ create: 'twice', timeseries: { timeField: 't' } }),
      (err) => err instanceof MongoServerError && err.code === 48 && err.codeName === 'NamespaceExists'
    );
  });
});

describe('CRUD', () => {
  test('insertOne / insertMany / find / sort / limit', async () => {
    const coll = db.collection('crud');
    const one = await coll.insertOne({ _id: 0, name: 'zero', qty: 0 });
    assert.equal(one.acknowledged, true);
    assert.equal(one.insertedId, 0);
    const docs = Array.from({ length: 50 }, (_, i) => ({ _id: i + 1, name: `n${i + 1}`, qty: (i * 3) % 10 }));
    const many = await coll.insertMany(docs);
    assert.equal(many.insertedCount, 50);

    const top = await coll.find({ qty: { $gte: 8 } }, { projection: { _id: 1, qty: 1 } })
      .sort({ qty: -1, _id: 1 }).limit(3).toArray();
    // qty for _id k is ((k - 1) * 3) % 10: qty 9 for _id 4, 14, 24, ...
    assert.deepEqual(top, [{ _id: 4, qty: 9 }, { _id: 14, qty: 9 }, { _id: 24, qty: 9 }]);

    assert.deepEqual(await coll.findOne({ _id: 0 }), { _id: 0, name: 'zero', qty: 0 });
    const skipped = await coll.find({}).sort({ _id: 1 }).skip(45).toArray();
    assert.deepEqual(skipped.map((d) => d._id), [45, 46, 47, 48, 49, 50]);
  });

  test('generated _id is an ObjectId', async () => {
    const coll = db.collection('gen');
    const r = await coll.insertOne({ a: 1 });
    assert.ok(r.insertedId instanceof ObjectId);
    const back = await coll.findOne({ a: 1 });
    assert.ok(back._id.equals(r.insertedId));
  });

  test('duplicate _id raises E11000 with keyPattern and keyValue', async () => {
    const coll = db.collection('dup');
    await coll.insertOne({ _id: 1 });
    await assert.rejects(coll.insertOne({ _id: 1 }), (err) => {
      assert.equal(err.code, 11000);
      assert.deepEqual(err.keyPattern, { _id: 1 });
      assert.deepEqual(err.keyValue, { _id: 1 });
      assert.match(err.message, /E11000 duplicate key error collection: .*\.dup index: _id_ dup key: \{ _id: 1 \}/);
      return true;
    });
  });

  test('unordered insertMany continues after an error', async () => {
    const coll = db.collection('unordered');
    await assert.rejects(
      coll.insertMany([{ _id: 1 }, { _id: 1 }, { _id: 2 }], { ordered: false }),
      (err) => err.code === 11000 && err.result.insertedCount === 2
    );
    assert.equal(await coll.countDocuments(), 2);
  });

  test('updates, upsert and deletes', async () => {
    const coll = db.collection('upd');
    await coll.insertMany([{ _id: 1, n: 1, g: 'a' }, { _id: 2, n: 2, g: 'a' }, { _id: 3, n: 3, g: 'b' }]);
    let r = await coll.updateOne({ _id: 1 }, { $set: { x: true }, $inc: { n: 10 } });
    assert.equal(r.matchedCount, 1);
    assert.equal(r.modifiedCount, 1);
    assert.deepEqual(await coll.findOne({ _id: 1 }), { _id: 1, n: 11, g: 'a', x: true });
    r = await coll.updateMany({ g: 'a' }, { $unset: { g: '' } });
    assert.equal(r.modifiedCount, 2);
    r = await coll.updateOne({ _id: 9 }, { $set: { n: 9 } }, { upsert: true });
    assert.equal(r.upsertedCount, 1);
    assert.equal(r.upsertedId, 9);
    r = await coll.replaceOne({ _id: 2 }, { replaced: true });
    assert.equal(r.modifiedCount, 1);
    assert.deepEqual(await coll.findOne({ _id: 2 }), { _id: 2, replaced: true });
    assert.equal((await coll.deleteOne({ n: { $gte: 0 } })).deletedCount, 1);
    assert.equal((await coll.deleteMany({})).deletedCount, 3);
  });

  test('findOneAndUpdate before/after and findOneAndDelete', async () => {
    const coll = db.collection('fam');
    await coll.insertOne({ _id: 1, v: 1 });
    const before = await coll.findOneAndUpdate({ _id: 1 }, { $inc: { v: 1 } });
    assert.deepEqual(before, { _id: 1, v: 1 });
    const afterDoc = await coll.findOneAndUpdate({ _id: 1 }, { $inc: { v: 1 } }, { returnDocument: 'after' });
    assert.deepEqual(afterDoc, { _id: 1, v: 3 });
    const upserted = await coll.findOneAndUpdate(
      { _id: 2 }, { $set: { v: 0 } }, { upsert: true, returnDocument: 'after' }
    );
    assert.deepEqual(upserted, { _id: 2, v: 0 });
    assert.deepEqual(await coll.findOneAndDelete({ _id: 2 }), { _id: 2, v: 0 });
    assert.equal(await coll.findOneAndDelete({ _id: 2 }), null);
  });

  test('countDocuments, estimatedDocumentCount, distinct', async () => {
    const coll = db.collection('counts');
    await coll.insertMany(Array.from({ length: 30 }, (_, i) => ({ i, parity: i % 2 ? 'odd' : 'even' })));
    assert.equal(await coll.countDocuments(), 30);
    assert.equal(await coll.countDocuments({ parity: 'odd' }), 15);
    assert.equal(await coll.countDocuments({ i: { $lt: 10 } }, { skip: 2, limit: 5 }), 5);
    assert.equal(await coll.estimatedDocumentCount(), 30);
    assert.deepEqual((await coll.distinct('parity')).sort(), ['even', 'odd']);
  });

  test('aggregate', async () => {
    const coll = db.collection('agg');
    await coll.insertMany([
      { item: 'a', qty: 1 }, { item: 'b', qty: 2 }, { item: 'a', qty: 3 }, { item: 'c', qty: 4 },
    ]);
    const out = await coll.aggregate([
      { $group: { _id: '$item', total: { $sum: '$qty' } } },
      { $sort: { total: -1, _id: 1 } },
      { $project: { _id: 0, item: '$_id', total: 1 } },
    ]).toArray();
    assert.deepEqual(out, [{ total: 4, item: 'a' }, { total: 4, item: 'c' }, { total: 2, item: 'b' }]);
  });

  test('cursor over several batches', async () => {
    const coll = db.collection('batches');
    const n = 1234;
    await coll.insertMany(Array.from({ length: n }, (_, i) => ({ _id: i })));
    const cursor = coll.find({}, { batchSize: 100 }).sort({ _id: 1 });
    let expected = 0;
    for await (const doc of cursor) {
      assert.equal(doc._id, expected);
      expected += 1;
    }
    assert.equal(expected, n);

    // Default batching (101 first) through the aggregate path too.
    const viaAgg = await coll.aggregate([{ $match: { _id: { $gte: 200 } } }]).toArray();
    assert.equal(viaAgg.length, n - 200);
  });

  test('an abandoned cursor can be closed (killCursors)', async () => {
    const coll = db.collection('batches');
    const cursor = coll.find({}, { batchSize: 5 });
    assert.ok(await cursor.next());
    assert.ok(cursor.id instanceof Long);
    assert.notEqual(cursor.id.toString(), '0');
    const id = cursor.id;
    await cursor.close();
    // close() sent killCursors: the server no longer knows the cursor.
    await assert.rejects(
      db.command({ getMore: id, collection: 'batches' }),
      (err) => err.code === 43 && err.codeName === 'CursorNotFound'
    );
  });

  test('journaled write concern', async () => {
    const coll = db.collection('wc', { writeConcern: { w: 1, journal: true } });
    const r = await coll.insertOne({ _id: 'j' });
    assert.equal(r.acknowledged, true);
    assert.deepEqual(await coll.findOne({ _id: 'j' }), { _id: 'j' });
  });

  test('unknown command is CommandNotFound', async () => {
    await assert.rejects(db.command({ noSuchCommandXyz: 1 }), (err) => {
      assert.equal(err.code, 59);
      assert.equal(err.codeName, 'CommandNotFound');
      return true;
    });
  });

  test('sessions', async () => {
    const session = client.startSession();
    try {
      const coll = db.collection('sess');
      await coll.insertOne({ _id: 1 }, { session });
      assert.deepEqual(await coll.findOne({ _id: 1 }, { session }), { _id: 1 });
    } finally {
      await session.endSession();
    }
  });
});
