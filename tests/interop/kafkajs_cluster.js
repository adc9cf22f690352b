// kafkajs against a three-node silt cluster: produces 60 values to the six partitions of
// `topic` (10 each, by explicit partition) through the first broker given, then reads the
// whole topic with a group consumer and checks every one of its values came back, from the
// partition it was sent to. Run by test_cluster_clients.py with the brokers as arguments.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const brokers = process.argv[2].split(',');
const topic = process.argv[3];
const N = 60;

const kafka = new Kafka({ clientId: 'silt-kafkajs-cluster', brokers, logLevel: logLevel.NOTHING });

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

async function main() {
  const producer = kafka.producer();
  await producer.connect();
  const sent = Array.from({ length: N }, (_, i) => ({ value: `kafkajs-${i}`, partition: i % 6 }));
  const results = await producer.send({ topic, acks: -1, messages: sent });
  const partitions = new Set(results.map((r) => r.partition));
  if (partitions.size !== 6) fail(`producer acks came from partitions ${[...partitions]}`);
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: 'kafkajs-cluster', sessionTimeout: 6000,
                                    heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const got = new Map();
  let resolveDone;
  const done = new Promise((r) => { resolveDone = r; });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const v = message.value.toString();
      if (v.startsWith('kafkajs-')) got.set(v, partition);
      if (got.size >= N) resolveDone();
    },
  });
  const timer = setTimeout(() => fail(`consumed ${got.size} of ${N} in time`), 60000);
  await done;
  clearTimeout(timer);
  await consumer.disconnect();
  for (const m of sent) {
    if (got.get(m.value) !== m.partition) fail(`${m.value} came back from ${got.get(m.value)}`);
  }
  console.log(`ok: kafkajs produced ${N} records over 6 partitions and read them back`);
}

main().then(() => process.exit(0), (e) => fail(e.stack || String(e)));
