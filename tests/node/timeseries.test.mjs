// Time-series collections through the official Node.js driver.
// Run with: HOURGLASS_URI=mongodb://127.0.0.1:PORT/?directConnection=true node --test tests/node/

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, MongoServerError, MongoBulkWriteError } from 'mongodb';

const uri = process.env.HOURGLASS_URI;
if (!uri) {
  throw new Error('HOURGLASS_URI is not set (mongodb://127.0.0.1:PORT/?directConnection=true)');
}

const dbName = `hg_node_ts_${process.pid}`;
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

describe('time-series collections', () => {
  test('createCollection materializes the options and lists the collection as timeseries', async () => {
    await db.createCollection('cpu', {
      timeseries: { timeField: 'ts', metaField: 'host', granularity: 'minutes' },
      expireAfterSeconds: 3600,
    });
    const [info] = await db.listCollections({ name: 'cpu' }).toArray();
    assert.equal(info.type, 'timeseries');
    assert.deepEqual(info.options.timeseries, {
      timeField: 'ts', metaField: 'host', granularity: 'minutes', bucketMaxSpanSeconds: 86400,
    });
    const onlyTs = await db.listCollections({ type: 'timeseries' }).toArray();
    assert.deepEqual(onlyTs.map((c) => c.name), ['cpu']);
  });

  test('insertMany, then find returns measurements time field first', async () => {
    const cpu = db.collection('cpu');
    const base = Date.UTC(2024, 0, 1);
    const docs = [];
    for (let i = 0; i < 120; i++) {
      docs.push({ ts: new Date(base + i * 1000), host: { name: `h${i % 3}`, dc: 'eu' }, usage: i % 100 });
    }
    const r = await cpu.insertMany(docs);
    assert.equal(r.insertedCount, 120);
    const got = await cpu.find({ 'host.name': 'h1' }, { projection: { _id: 0 } }).sort({ ts: 1 }).toArray();
    assert.equal(got.length, 40);
    assert.deepEqual(Object.keys(got[0]), ['ts', 'host', 'usage']);
    assert.deepEqual(got[0], { ts: new Date(base + 1000), host: { name: 'h1', dc: 'eu' }, usage: 1 });
    assert.equal(await cpu.countDocuments({ usage: { $gte: 80 } }), 20);
    const buckets = await db.collection('system.buckets.cpu').find({}).toArray();
    // Three series (hosts), each in one bucket of one day (granularity minutes).
    assert.equal(buckets.length, 3);
    for (const b of buckets) {
      // Compressed from the first write, rows in time order: version 2, 40 rows, each column a
      // BSONColumn (BinData subtype 7).
      assert.equal(b.control.version, 2);
      assert.equal(b.control.count, 40);
      assert.equal(b.data.ts.sub_type, 7);
    }
  });

  test('a bad time field fails with BadValue and ordered inserts stop there', async () => {
    const cpu = db.collection('cpu');
    await assert.rejects(
      cpu.insertMany([{ ts: new Date(), host: { name: 'x' } }, { ts: 'now' }, { ts: new Date() }]),
      (err) => {
        assert.ok(err instanceof MongoBulkWriteError);
        assert.equal(err.result.insertedCount, 1);
        assert.equal(err.writeErrors[0].code, 2);
        assert.equal(err.writeErrors[0].index, 1);
        return true;
      });
  });

  test('collMod changes the TTL and refuses finer granularity', async () => {
    const r = await db.command({ collMod: 'cpu', expireAfterSeconds: 7200 });
    assert.equal(r.ok, 1);
    const [info] = await db.listCollections({ name: 'cpu' }).toArray();
    assert.deepEqual(info.options.expireAfterSeconds, 7200);
    await assert.rejects(db.command({ collMod: 'cpu', timeseries: { granularity: 'seconds' } }),
      (err) => err instanceof MongoServerError && err.code === 72);
    await db.command({ collMod: 'cpu', expireAfterSeconds: 'off' });
    const [after] = await db.listCollections({ name: 'cpu' }).toArray();
    assert.equal(after.options.expireAfterSeconds, undefined);
  });

  test('drop removes the collection and its buckets', async () => {
    assert.equal(await db.collection('cpu').drop(), true);
    const names = (await db.listCollections().toArray()).map((c) => c.name);
    assert.ok(!names.includes('cpu') && !names.includes('system.buckets.cpu'));
  });
});
