// @platformatic/kafka (npm; a client that speaks only the flexible versions of Kafka 3.5+) against
// `silt serve`. Run by test_platformatic_kafka.sh with the broker address as the argument; exits
// non-zero (with a message) on any failure.
//
// What it exercises, at the versions this client sends: CreateTopics v7 (topic id, configs in the
// answer), Metadata v12, idempotent Produce v11 in every codec the client has (InitProducerId v5),
// a group consumer with Fetch v17 by topic id (JoinGroup v9, SyncGroup v5, Heartbeat v4,
// OffsetCommit v9, OffsetFetch v9, LeaveGroup v5), ListOffsets v9 (earliest, latest, max
// timestamp), ListGroups v5 with state and type filters, DescribeGroups v5, OffsetCommit and
// OffsetDelete from the admin client, DescribeConfigs v4, IncrementalAlterConfigs v1,
// DescribeLogDirs v4, DeleteRecords v2, CreatePartitions v3, DescribeCluster v1,
// DescribeProducers v0, ListPartitionReassignments v0, DeleteGroups v2 and DeleteTopics v6.
import {
  Admin,
  Connection,
  Consumer,
  Producer,
  compressionsAlgorithms,
  describeClusterV1,
  describeProducersV0,
  listPartitionReassignmentsV0,
  stringDeserializers,
  stringSerializers,
} from '@platformatic/kafka';

const broker = process.argv[2];
const [host, port] = broker.split(':');
const topic = 'plat-topic';
const groupId = 'plat-group';
const PER_CODEC = 40;

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

function check(cond, what, detail) {
  if (!cond) fail(what + (detail === undefined ? '' : ': ' + JSON.stringify(detail, bigints)));
  console.log('ok   ' + what);
}

function bigints(_key, value) {
  return typeof value === 'bigint' ? value.toString() : value;
}

const base = { bootstrapBrokers: [broker], retries: 3, retryDelay: 200 };

async function main() {
  const admin = new Admin({ ...base, clientId: 'silt-plat-admin' });

  // CreateTopics v7 answers the topic id, the partitions and each config; Metadata has the same id.
  const created = await admin.createTopics({
    topics: [topic],
    partitions: 2,
    replicas: 1,
    configs: [{ name: 'retention.ms', value: '3600000' }],
  });
  check(created.length === 1 && created[0].name === topic && created[0].partitions === 2,
    'CreateTopics v7 answers the topic with 2 partitions', created);
  check(created[0].configuration['retention.ms'] === '3600000',
    'CreateTopics v7 answers the topic configs', created[0].configuration);
  check(/^[0-9a-f-]{36}$/.test(created[0].id) && !/^[0-]+$/.test(created[0].id),
    'CreateTopics v7 answers a topic id', created[0].id);
  const meta = await admin.metadata({ topics: [topic] });
  check(meta.topics.get(topic).id === created[0].id, 'Metadata gives the same topic id',
    meta.topics.get(topic).id);

  // Idempotent produce in every codec the client has, keys and headers on every record.
  const codecs = Object.keys(compressionsAlgorithms).filter((c) => compressionsAlgorithms[c].available !== false);
  const producer = new Producer({ ...base, clientId: 'silt-plat-producer', idempotent: true,
    serializers: stringSerializers });
  const sent = new Map();
  for (const codec of codecs) {
    const messages = [];
    for (let i = 0; i < PER_CODEC; i++) {
      const key = `${codec}-k${i}`;
      const value = `${codec} value ${i} `.repeat(1 + (i % 5));
      messages.push({ topic, key, value, partition: i % 2, headers: { codec, i: String(i) } });
      sent.set(key, { value, codec, i: String(i), partition: i % 2 });
    }
    const res = await producer.send({ messages, compression: codec, acks: -1 });
    check(res.offsets && res.offsets.length > 0, `Produce v11 (${codec}) answers base offsets`, res);
  }
  check(producer.producerId !== undefined && producer.producerId >= 0n,
    'InitProducerId v5 handed out a producer id', String(producer.producerId));
  await producer.close();
  const total = sent.size;

  // A group consumer reads everything back (Fetch v17 by topic id) and commits.
  const consumer = new Consumer({ ...base, clientId: 'silt-plat-consumer', groupId,
    deserializers: stringDeserializers, maxWaitTime: 500, sessionTimeout: 10000,
    heartbeatInterval: 500, autocommit: false });
  const stream = await consumer.consume({ topics: [topic], mode: 'earliest' });
  const got = new Map();
  const lastOffset = [-1n, -1n];
  let ordered = true;
  const timer = setTimeout(() => fail(`consumed ${got.size} of ${total} in time`), 60000);
  for await (const m of stream) {
    if (m.offset <= lastOffset[m.partition]) ordered = false;
    lastOffset[m.partition] = m.offset;
    got.set(m.key, { value: m.value, codec: m.headers.get('codec'), i: m.headers.get('i'),
      partition: m.partition });
    if (got.size >= total) break;
  }
  clearTimeout(timer);
  check(ordered, 'each partition is read in offset order');
  let same = got.size === total;
  for (const [key, want] of sent) {
    const g = got.get(key);
    if (!g || g.value !== want.value || g.codec !== want.codec || g.i !== want.i ||
        g.partition !== want.partition) {
      same = false;
      console.error('differs: ' + key + ' ' + JSON.stringify(g));
      break;
    }
  }
  check(same, `all ${total} records read back with their keys, values and headers (${codecs.join(', ')})`);
  const ends = [lastOffset[0] + 1n, lastOffset[1] + 1n];
  await consumer.commit({ offsets: [0, 1].map((p) => ({ topic, partition: p, offset: ends[p],
    leaderEpoch: 0 })) });
  await stream.close();
  await consumer.close();

  const committed = await admin.listConsumerGroupOffsets({ groups: [groupId] });
  const byPart = (groups) => {
    const out = {};
    for (const t of groups[0].topics) for (const p of t.partitions) out[p.partitionIndex] = p.committedOffset;
    return out;
  };
  let offs = byPart(committed);
  check(offs[0] === ends[0] && offs[1] === ends[1], 'OffsetFetch v9 returns the committed offsets',
    committed);

  // ListOffsets v9: earliest (-2), latest (-1) and the record with the largest timestamp (-3).
  const listed = await admin.listOffsets({ topics: [{ name: topic, partitions: [
    { partitionIndex: 0, timestamp: -2n }, { partitionIndex: 1, timestamp: -1n }] }] });
  const lp = listed[0].partitions;
  check(lp.find((p) => p.partitionIndex === 0).offset === 0n &&
    lp.find((p) => p.partitionIndex === 1).offset === ends[1], 'ListOffsets v9 earliest and latest', listed);
  const maxTs = await admin.listOffsets({ topics: [{ name: topic, partitions: [
    { partitionIndex: 0, timestamp: -3n }] }] });
  const mt = maxTs[0].partitions[0];
  check(mt.offset >= 0n && mt.offset < ends[0] && mt.timestamp > 0n,
    'ListOffsets v9 max timestamp names a record of the partition', maxTs);

  // ListGroups v5 with filters, DescribeGroups v5.
  const empty = await admin.listGroups({ states: ['EMPTY'], types: ['classic'] });
  check(empty.has(groupId) && empty.get(groupId).protocolType === 'consumer',
    'ListGroups v5 lists the group as Empty and classic', [...empty.values()]);
  const stable = await admin.listGroups({ states: ['STABLE'] });
  check(!stable.has(groupId), 'ListGroups v5 state filter leaves it out of Stable');
  const described = await admin.describeGroups({ groups: [groupId] });
  check(described.get(groupId).state === 'EMPTY' && described.get(groupId).protocolType === 'consumer',
    'DescribeGroups v5 describes the group', [...described.values()]);

  // OffsetCommit from the admin client, and OffsetDelete.
  await admin.alterConsumerGroupOffsets({ groupId, topics: [{ name: topic,
    partitionOffsets: [{ partition: 0, offset: 5n }] }] });
  await admin.deleteConsumerGroupOffsets({ groupId, topics: [{ name: topic, partitionIndexes: [1] }] });
  offs = byPart(await admin.listConsumerGroupOffsets({ groups: [groupId] }));
  // A group's whole offsets (no topics named) list only the partitions that have one.
  check(offs[0] === 5n && offs[1] === undefined, 'OffsetCommit sets and OffsetDelete removes offsets',
    offs);

  // DescribeConfigs v4 and IncrementalAlterConfigs v1 on the topic.
  const cfgOf = async () => {
    const d = await admin.describeConfigs({ resources: [{ resourceType: 2, resourceName: topic,
      configurationKeys: ['retention.ms', 'cleanup.policy'] }] });
    return Object.fromEntries(d[0].configs.map((c) => [c.name, c]));
  };
  let cfg = await cfgOf();
  check(cfg['retention.ms'].value === '3600000' && cfg['retention.ms'].configSource === 1 &&
    cfg['cleanup.policy'].value === 'delete' && cfg['cleanup.policy'].configSource === 5,
    'DescribeConfigs v4: the topic override and a default with their sources', cfg);
  await admin.incrementalAlterConfigs({ resources: [{ resourceType: 2, resourceName: topic,
    configs: [{ name: 'retention.ms', configOperation: 0, value: '7200000' }] }] });
  cfg = await cfgOf();
  check(cfg['retention.ms'].value === '7200000', 'IncrementalAlterConfigs v1 sets retention.ms', cfg);

  // DescribeLogDirs v4: the partitions' sizes.
  const dirs = await admin.describeLogDirs({ topics: [{ name: topic, partitions: [0, 1] }] });
  const parts = dirs.flatMap((b) => b.results.flatMap((r) => r.topics.flatMap((t) => t.partitions)));
  check(parts.length === 2 && parts.every((p) => p.partitionSize > 0n),
    'DescribeLogDirs v4 gives both partitions a size', dirs);

  // DeleteRecords v2 moves the log start; ListOffsets earliest follows.
  const deleted = await admin.deleteRecords({ topics: [{ name: topic,
    partitions: [{ partition: 0, offset: 3n }] }] });
  check(deleted[0].partitions[0].lowWatermark === 3n, 'DeleteRecords v2 answers the new log start',
    deleted);
  const start = await admin.listOffsets({ topics: [{ name: topic, partitions: [
    { partitionIndex: 0, timestamp: -2n }] }] });
  check(start[0].partitions[0].offset === 3n, 'ListOffsets earliest after DeleteRecords', start);

  // CreatePartitions v3.
  await admin.createPartitions({ topics: [{ name: topic, count: 3 }] });
  const meta3 = await admin.metadata({ topics: [topic], forceUpdate: true });
  check(meta3.topics.get(topic).partitionsCount === 3, 'CreatePartitions v3 adds a partition',
    meta3.topics.get(topic).partitionsCount);

  // The APIs the admin client has no method for, through its own codecs on a plain connection.
  const conn = new Connection('silt-plat-raw');
  await conn.connect(host, Number(port));
  const cluster = await describeClusterV1.api.async(conn, false, 1);
  check(cluster.errorCode === 0 && cluster.brokers.length === 1 &&
    cluster.brokers[0].port === Number(port) && cluster.clusterId.length > 0,
    'DescribeCluster v1 describes the one broker', cluster);
  const producers = await describeProducersV0.api.async(conn, [{ name: topic, partitionIndexes: [1] }]);
  const pp = producers.topics[0].partitions[0];
  check(pp.errorCode === 0 && pp.activeProducers.length === 1 &&
    pp.activeProducers[0].producerId === producer.producerId &&
    pp.activeProducers[0].lastSequence === PER_CODEC / 2 * codecs.length - 1,
    'DescribeProducers v0 shows the idempotent producer and its last sequence', producers);
  const reassigning = await listPartitionReassignmentsV0.api.async(conn, 30000, null);
  check(reassigning.errorCode === 0 && reassigning.topics.length === 0,
    'ListPartitionReassignments v0: nothing moving on one broker', reassigning);
  await conn.close();

  // DeleteGroups v2 and DeleteTopics v6.
  await admin.deleteGroups({ groups: [groupId] });
  const after = await admin.listGroups();
  check(!after.has(groupId), 'DeleteGroups v2 deletes the group', [...after.keys()]);
  await admin.deleteTopics({ topics: [topic] });
  const names = await admin.listTopics();
  check(!names.includes(topic), 'DeleteTopics v6 deletes the topic', names);
  await admin.close();
  console.log(`platformatic: ${total} records in ${codecs.length} codecs produced and consumed`);
}

main().catch((e) => fail((e.stack || String(e)) + (e.errors ? '\n' + JSON.stringify(e.errors, bigints) : '')));
