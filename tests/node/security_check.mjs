// The Node.js driver against an hourglassd with --auth over TLS: SCRAM-SHA-256 and SCRAM-SHA-1
// with authSource/authMechanism, MONGODB-X509 with a client certificate, and a wrong password.
// Run by tests/integration/test_tls.py (test_node_driver_logs_in_over_tls), which starts the
// server, makes the certificates and users, and passes them in the environment:
//   HG_PORT, HG_CA, HG_CLIENT_PEM, HG_X509_USER, HG_SCRAM_USER, HG_SCRAM_PWD.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, MongoServerError } from 'mongodb';

const env = process.env;
const tls = `tls=true&tlsCAFile=${encodeURIComponent(env.HG_CA)}` +
  `&tlsCertificateKeyFile=${encodeURIComponent(env.HG_CLIENT_PEM)}`;
const base = `127.0.0.1:${env.HG_PORT}/?directConnection=true&${tls}`;

async function whoAmI(uri) {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
  try {
    await client.connect();
    const status = await client.db('admin').command({ connectionStatus: 1 });
    return status.authInfo.authenticatedUsers;
  } finally {
    await client.close();
  }
}

for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-1']) {
  test(`${mechanism} with authSource`, async () => {
    const user = encodeURIComponent(env.HG_SCRAM_USER);
    const pwd = encodeURIComponent(env.HG_SCRAM_PWD);
    const users = await whoAmI(
      `mongodb://${user}:${pwd}@${base}&authSource=admin&authMechanism=${mechanism}`);
    assert.deepEqual(users, [{ user: env.HG_SCRAM_USER, db: 'admin' }]);
  });
}

test('MONGODB-X509 names the certificate subject', async () => {
  const users = await whoAmI(
    `mongodb://${base}&authMechanism=MONGODB-X509&authSource=${encodeURIComponent('$external')}`);
  assert.deepEqual(users, [{ user: env.HG_X509_USER, db: '$external' }]);
});

test('a wrong password fails with AuthenticationFailed', async () => {
  const user = encodeURIComponent(env.HG_SCRAM_USER);
  await assert.rejects(
    whoAmI(`mongodb://${user}:wrong@${base}&authSource=admin`),
    (e) => e instanceof MongoServerError && e.code === 18);
});
