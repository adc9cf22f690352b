// kafkajs against `silt serve`: a producer and a group consumer. Run by test_groups_kafkajs.sh
// with the broker address as the argument; exits non-zero (with a message) on any failure.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const broker = process.argv[2];
const topic = 'js-topic';
const groupId = 'js-group';
const N = 300;

const kafka = new Kafka({ clientId: 'silt-kafkajs', brokers: [broker], logLevel: logLevel.NOTHING });

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

// Consumes with a fresh member of the group until `want` values arrived, then waits a moment
// for duplicates and disconnects (committing). Returns the values.
async function consume(want) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const got = [];
  let resolveDone;
  const done = new Promise((r) => { resolveDone = r; });
  await consumer.run({
    eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length >= want) resolveDone();
    },
  });
  const timer = setTimeout(() => fail(`consumed ${got.length} of ${want} in time`), 40000);
  await done;
  await new Promise((r) => setTimeout(r, 1000));
  clearTimeout(timer);
  await consumer.disconnect();
  return got;
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });

  const producer = kafka.producer();
  await producer.connect();
  const first = Array.from({ length: N }, (_, i) => `js-${i}`);
  await producer.send({ topic, messages: first.map((value) => ({ value })) });

  const got = await consume(N);
  if (got.length !== N || new Set(got).size !== N || !first.every((v) => got.includes(v))) {
    fail(`first member consumed ${got.length} values (${new Set(got).size} distinct)`);
  }
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  const total = offsets[0].partitions.reduce((s, p) => s + Number(p.offset), 0);
  if (total !== N) fail(`committed offsets add up to ${total}: ${JSON.stringify(offsets)}`);

  const more = Array.from({ length: 30 }, (_, i) => `js-more-${i}`);
  await producer.send({ topic, messages: more.map((value) => ({ value })) });
  const got2 = await consume(more.length);
  if (got2.length !== more.length || !more.every((v) => got2.includes(v))) {
    fail(`second member got ${got2.length} values, e.g. ${got2.slice(0, 3)}`);
  }
  const groups = await admin.listGroups();
  if (!groups.groups.some((g) => g.groupId === groupId)) fail('listGroups: ' + JSON.stringify(groups));
  const desc = await admin.describeGroups([groupId]);
  if (desc.groups[0].state !== 'Empty') fail('describeGroups: ' + JSON.stringify(desc));
  await producer.disconnect();
  await admin.disconnect();
  console.log(`kafkajs: ${got.length} + ${got2.length} records consumed in group ${groupId}`);
}

main().catch((e) => fail(e.stack || String(e)));
