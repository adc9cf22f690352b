// kafka-ts (npm) producing and consuming in a group against `silt serve`, for
// test_kafka_ts_sessions.sh: argv[2] is HOST:PORT of the broker, argv[3] HOST:PORT of its
// /metrics. kafka-ts's consumer fetches in incremental fetch sessions (KIP-227, Fetch v17 by
// topic id): a first fetch of epoch 0, then only the partitions whose position moved. Records are
// produced in three rounds while it consumes, so most fetches are incremental ones that have to
// answer new records of partitions the request does not name. Exits non-zero on any failure.
'use strict';
const { createKafkaClient } = require('kafka-ts');

const [host, port] = process.argv[2].split(':');
const metricsAddr = process.argv[3];
const topic = 'ts-sessions';
const ROUND = 200;
const ROUNDS = 3;

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

async function metric(name) {
  const text = await (await fetch(`http://${metricsAddr}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) sum += Number(line.split(' ').pop());
  }
  return { sum, text };
}

async function main() {
  const client = createKafkaClient({ clientId: 'silt-kafka-ts', bootstrapServers: [{ host, port: Number(port) }] });
  const producer = client.createProducer({});
  const expected = new Set();
  const send = async (round) => {
    const messages = [];
    for (let i = 0; i < ROUND; i++) {
      const value = `r${round}-${i}`;
      expected.add(value);
      messages.push({ topic, partition: i % 3, key: `k${i}`, value, headers: { round: String(round) } });
    }
    await producer.send(messages);
  };
  await send(0);

  const got = new Map();
  let dupes = 0;
  let badHeader = 0;
  let resolveDone;
  const done = new Promise((r) => { resolveDone = r; });
  const consumer = await client.startConsumer({
    groupId: 'ts-group', topics: [topic], fromBeginning: true, maxWaitMs: 300,
    onBatch: (batch) => {
      for (const m of batch) {
        if (got.has(m.value)) dupes++;
        got.set(m.value, m.partition);
        if (m.headers.round !== m.value.slice(1, m.value.indexOf('-'))) badHeader++;
      }
      if (got.size >= ROUND * ROUNDS) resolveDone();
    },
  });
  for (let round = 1; round < ROUNDS; round++) {
    await new Promise((r) => setTimeout(r, 700));
    await send(round);
  }
  const timer = setTimeout(() => fail(`consumed ${got.size} of ${ROUND * ROUNDS} in time`), 60000);
  await done;
  clearTimeout(timer);
  const sessions = await metric('silt_fetch_sessions');
  await consumer.close();
  await producer.close();

  if (dupes !== 0) fail(`${dupes} records delivered twice`);
  if (badHeader !== 0) fail(`${badHeader} records with the wrong header`);
  const missing = [...expected].filter((v) => !got.has(v));
  if (missing.length) fail(`missing ${missing.length} records, e.g. ${missing.slice(0, 3)}`);
  for (const [v, p] of got) {
    if (Number(v.split('-')[1]) % 3 !== p) fail(`${v} came from partition ${p}`);
  }
  if (sessions.sum < 1) fail('no fetch session was held while consuming');
  const errors = sessions.text.split('\n').filter((l) => l.startsWith('silt_request_errors_total') &&
    l.includes('api="Fetch"') && /FETCH_SESSION|INVALID_FETCH_SESSION_EPOCH/.test(l));
  if (errors.length) fail('fetch session errors: ' + errors.join('; '));
  console.log(`kafka-ts: ${got.size} records in ${ROUNDS} rounds over ${sessions.sum} fetch session(s)`);
}

main().catch((e) => fail(e.stack || String(e)));
