// kafka-node (npm; Kafka 0.9-0.11 protocol) against a broker, twice: with ApiVersions (it then
// picks Produce v2 / Fetch v2, magic 1 message sets) and as against an 0.9 broker (Produce v1 /
// Fetch v1, magic 0). Each codec it has (none, gzip, snappy) is produced and consumed back by a
// plain Consumer (always Fetch v0) with keys and offsets checked; ListOffsets v0 gives the log
// end; and consumer groups (the v0 group APIs, OffsetCommit v2; Fetch v2 with ApiVersions, so
// magic 1 timestamps are checked there) read the topics and commit.
//
//   node kafka_node.js <host:port>
'use strict';
const kafka = require('kafka-node');
const TimeoutError = require('kafka-node/lib/errors/TimeoutError');

const broker = process.argv[2];
const N = 90;
// Codecs to run (0 none, 1 gzip, 2 snappy); snappy needs kafka-node's optional native module.
const CODECS = (process.env.KAFKA_NODE_CODECS || '0,1,2').split(',').map(Number);
const BASE_TS = 1700000000000;

function fail (msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

// With versions false the client acts as against a 0.9 broker, which does not know ApiVersions:
// kafka-node takes an unanswered ApiVersions request for that and uses its 0.9 table (Produce
// v1, Fetch v1, magic 0). Its `versions.disabled` option never marks the broker ready (5.0.0),
// so the request is made to time out at once instead.
function client (versions) {
  const c = new kafka.KafkaClient({ kafkaHost: broker, requestTimeout: 10000 });
  if (!versions) {
    c.getApiVersions = (b, cb) => setImmediate(() => cb(new TimeoutError('as a 0.9 broker')));
  }
  return c;
}

function checkVersions (c, versions) {
  for (const b of Object.values(c.brokers)) {
    const usable = b.apiSupport && b.apiSupport.produce.usable;
    if (usable !== (versions ? 2 : 1)) fail(`kafka-node uses Produce v${usable}`);
  }
}

const call = (fn) => new Promise((resolve, reject) => fn((err, res) => err ? reject(err) : resolve(res)));

async function produceAndConsume (versions, codec) {
  const topic = `kafka-node-${versions ? '010' : '09'}-${codec}`;
  const c = client(versions);
  await call((cb) => c.once('ready', () => cb()));
  checkVersions(c, versions);
  // CreateTopics came with 0.10.1; an 0.9 client's Metadata v0 request creates the topic.
  if (versions) await call((cb) => c.createTopics([{ topic, partitions: 1, replicationFactor: 1 }], cb));
  else await call((cb) => c.loadMetadataForTopics([topic], cb));
  const producer = new kafka.Producer(c, { requireAcks: 1 });
  // A producer on a ready client is ready at once (and says so before a listener can attach).
  if (!producer.ready) await call((cb) => producer.once('ready', () => cb()));
  const base = BASE_TS;
  for (let b = 0; b < N; b += 10) {
    const messages = [];
    for (let i = b; i < b + 10; i++) {
      const m = new kafka.KeyedMessage(`key-${i}`, `value ${i} ${codec}`);
      m.timestamp = base + i;  // a KeyedMessage carries its own (Date.now() by default)
      messages.push(m);
    }
    await call((cb) => producer.send([{ topic, messages, attributes: codec }], cb));
  }
  const got = [];
  const consumer = new kafka.Consumer(c, [{ topic, partition: 0, offset: 0 }],
    { fromOffset: true, autoCommit: false, encoding: 'utf8', keyEncoding: 'utf8', fetchMaxBytes: 4096 });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${got.length} messages`)), 30000);
    consumer.on('error', reject);
    consumer.on('message', (m) => {
      got.push(m);
      if (got.length === N) { clearTimeout(timer); resolve(); }
    });
  }).catch((e) => fail(`${topic}: consume: ${e.message}`));
  const offset = new kafka.Offset(c);
  const latest = await call((cb) => offset.fetchLatestOffsets([topic], cb));
  if (latest[topic]['0'] !== N) fail(`${topic}: latest offset ${JSON.stringify(latest)}`);
  // Closing the consumer closes its client too.
  await call((cb) => consumer.close(true, cb));
  got.forEach((m, i) => {
    if (m.offset !== i || m.key !== `key-${i}` || m.value !== `value ${i} ${codec}`) {
      fail(`${topic}: message ${i} is ${JSON.stringify(m)}`);
    }
  });
  console.log(`ok: kafka-node ${versions ? 'with ApiVersions' : 'as with an 0.9 broker'} codec ${codec}`);
}

async function group (versions, codec) {
  const topic = `kafka-node-${versions ? '010' : '09'}-${codec}`;
  const cg = new kafka.ConsumerGroup({
    kafkaHost: broker,
    groupId: `kafka-node-group-${versions}`,
    fromOffset: 'earliest',
    autoCommit: false,
    sessionTimeout: 10000,
    encoding: 'utf8',
    keyEncoding: 'utf8'
  }, [topic]);
  if (!versions) cg.client.getApiVersions = (b, cb) => setImmediate(() => cb(new TimeoutError('as a 0.9 broker')));
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${got.length} messages`)), 60000);
    cg.on('error', reject);
    cg.on('message', (m) => {
      got.push(m);
      if (got.length === N) { clearTimeout(timer); resolve(); }
    });
  }).catch((e) => fail(`group on ${topic}: ${e.message}`));
  await call((cb) => cg.commit(true, cb));
  await call((cb) => cg.close(true, cb));
  got.forEach((m, i) => {
    if (m.offset !== i || m.value !== `value ${i} ${codec}`) fail(`group on ${topic}: message ${i} is ${JSON.stringify(m)}`);
    // With ApiVersions the group fetches with v2: magic 1 messages with the producer's timestamps.
    if (versions && (!m.timestamp || m.timestamp.getTime() !== BASE_TS + i)) {
      fail(`group on ${topic}: message ${i} has timestamp ${m.timestamp}`);
    }
  });
  console.log(`ok: kafka-node consumer group ${versions ? 'with ApiVersions' : 'as with an 0.9 broker'} on ${topic}`);
}

(async () => {
  for (const versions of [true, false]) {
    for (const codec of CODECS) await produceAndConsume(versions, codec);
  }
  for (const codec of CODECS) await group(true, codec);
  await group(false, CODECS[CODECS.length - 1]);
  process.exit(0);
})().catch((e) => fail(e.stack || String(e)));
