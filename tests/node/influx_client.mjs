// InfluxDB's own Node.js client (@influxdata/influxdb-client) writing to hourglassd's HTTP port:
// points of every field type through its batching write API (which gzips bodies over 1 KB), and
// a batch the server refuses. Run by tests/integration/test_http_write.py
// (test_the_influxdb_node_client_writes), which starts the server with --httpPort, passes the
// port in HG_HTTP_PORT and the database in HG_BUCKET, and reads the points back with pymongo.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError, InfluxDB, Point } from '@influxdata/influxdb-client';

const url = `http://127.0.0.1:${process.env.HG_HTTP_PORT}`;
const bucket = process.env.HG_BUCKET;

test('points of every field type, in batches', async () => {
  const influx = new InfluxDB({ url, token: 'unused' });
  const write = influx.getWriteApi('my-org', bucket, 'ms', { batchSize: 250 });
  for (let i = 0; i < 600; i++) {
    write.writePoint(
      new Point('sensor')
        .tag('room', `r${i % 3}`)
        .tag('floor', i % 2 ? 'upper' : 'lower')
        .floatField('temperature', 20 + i / 10)
        .intField('count', i)
        .uintField('total', 4294967296 + i)
        .stringField('state', i % 2 ? 'ok, "fine"' : 'warm up')
        .booleanField('on', i % 2 === 1)
        .timestamp(new Date(Date.UTC(2026, 0, 1) + i * 1000)));
  }
  await write.close();  // flushes, and rejects if any batch failed
});

test('a refused batch surfaces as the client error InfluxDB gives', async () => {
  const influx = new InfluxDB({ url, token: 'unused' });
  const write = influx.getWriteApi('my-org', bucket, 'ms', { maxRetries: 0 });
  write.writePoint(new Point('sensor').floatField('time', 1).timestamp(new Date(0)));
  await assert.rejects(write.close(), (e) => {
    assert.ok(e instanceof HttpError, String(e));
    assert.equal(e.statusCode, 400);
    assert.equal(e.code, 'invalid');
    assert.match(e.message, /input field "time" on measurement "sensor" is invalid/);
    return true;
  });
});
