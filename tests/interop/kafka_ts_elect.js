// One ElectLeaders request (v2, the newest) sent by the kafka-ts client (npm) to a silt node, for
// test_elect_leaders_kafka_ts.py: argv[2] is HOST:PORT, argv[3] the request as JSON
// ({"electionType": 0|1, "topicPartitions": [{"topic": ..., "partitions": [...]}] or null}).
// Prints the decoded response as JSON. kafka-ts throws on a partition with an error code and
// keeps the decoded response in the error, which is printed the same way.
'use strict';
const { API, createKafkaClient } = require('kafka-ts');

async function main() {
  const [host, port] = process.argv[2].split(':');
  const req = JSON.parse(process.argv[3]);
  const cluster = createKafkaClient({ clientId: 'silt-kafka-ts', requestTimeout: 30000,
    bootstrapServers: [{ host, port: Number(port) }] }).createCluster();
  await cluster.connect();
  let resp;
  try {
    resp = await cluster.sendRequest(API.ELECT_LEADERS,
      { electionType: req.electionType, topicPartitions: req.topicPartitions, timeoutMs: 20000 });
  } catch (e) {
    if (!e.response) throw e;
    resp = e.response;
  }
  await cluster.disconnect();
  console.log(JSON.stringify(resp));
}

main().catch((e) => {
  console.error('FAIL: ' + (e.stack || String(e)));
  process.exit(1);
});
