'use strict';
// The Node client of issue 59, driven by tests/integration/test_node_client.py:
//
//   node roundtrip.js produce --gateway H:P --bootstrap H:P[,H:P] --topic T --partitions N --count C
//        --compression gzip|zstd|none --out sent.jsonl     creates T through the gateway, produces C
//        records (idempotent, with headers) in batches it encodes itself, and writes what it sent
//   node roundtrip.js consume --bootstrap H:P[,H:P] --topic T --count C --out read.jsonl
//        reads C records back from every partition and writes them
//
// Mutual TLS with the files in $REPLOG_TLS_CA_FILE, $REPLOG_TLS_CERT_FILE and $REPLOG_TLS_KEY_FILE.
// A line of the .jsonl files: {"partition", "offset", "key" (base64 or null), "value" (base64),
// "headers": [[key, base64 value or null]], "timestamp_ms" (a string: 64 bits)}.

const fs = require('node:fs');
const { Replog } = require('./lib/client');
const { decodeBatches, encodeBatch, ready } = require('./lib/batch');

const BATCH_RECORDS = 500;
const T0_MS = 1700000000000n;

function options(argv) {
  const found = {};
  for (let i = 0; i < argv.length; i += 2) found[argv[i].replace(/^--/, '')] = argv[i + 1];
  return found;
}

function asLine(partition, r) {
  return JSON.stringify({
    partition, offset: r.offset === undefined ? null : String(r.offset),
    key: r.key === null ? null : r.key.toString('base64'), value: r.value.toString('base64'),
    headers: r.headers.map(([k, v]) => [k, v === null ? null : v.toString('base64')]),
    timestamp_ms: String(r.timestampMs),
  });
}

function record(i) {
  // Keys repeat, every tenth is null; values are JSON-like text; headers carry a null value too.
  const headers = [['source', Buffer.from('node')], ['seq', Buffer.from(String(i))]];
  if (i % 7 === 0) headers.push(['empty', null]);
  return {
    key: i % 10 === 0 ? null : Buffer.from(`customer-${i % 97}`),
    value: Buffer.from(JSON.stringify({ id: i, kind: 'order', amount: (i * 37) % 1000, note: 'from node'.repeat(1 + (i % 3)) })),
    timestampMs: T0_MS + BigInt(i),
    headers,
  };
}

async function produce(o, tls) {
  const replog = new Replog({ bootstrap: o.bootstrap.split(','), gateway: o.gateway, tls });
  try {
    const partitions = Number(o.partitions);
    await replog.createTopic(o.topic, partitions, Number(o['replication-factor'] || 3));
    await replog.refresh(o.topic);
    const { producerId, producerEpoch } = await replog.initProducerId();
    const pending = new Map(); // partition -> records not yet sent
    for (let i = 0; i < Number(o.count); i++) {
      const p = i % partitions;
      if (!pending.has(p)) pending.set(p, []);
      pending.get(p).push(record(i));
    }
    const lines = [];
    await Promise.all([...pending].map(async ([partition, records]) => {
      let sequence = 0; // per partition, from 0: docs/record-format.md, "The idempotent producer"
      for (let start = 0; start < records.length; start += BATCH_RECORDS) {
        const chunk = records.slice(start, start + BATCH_RECORDS);
        const batch = encodeBatch(chunk, { producerId, producerEpoch, baseSequence: sequence, compression: o.compression });
        const base = await replog.produce(o.topic, partition, batch);
        sequence = (sequence + chunk.length) % 2 ** 31;
        chunk.forEach((r, j) => lines.push(asLine(partition, { ...r, offset: base + BigInt(j) })));
      }
    }));
    fs.writeFileSync(o.out, lines.join('\n') + '\n');
  } finally {
    replog.close();
  }
}

async function consume(o, tls) {
  const replog = new Replog({ bootstrap: o.bootstrap.split(','), tls });
  try {
    const topic = await replog.refresh(o.topic);
    const wanted = Number(o.count);
    const deadline = Date.now() + Number(o['timeout-ms'] || 120000);
    const next = new Map(topic.partitions.map((p) => [p.partition, 0n]));
    const lines = [];
    while (lines.length < wanted) {
      if (Date.now() > deadline) throw new Error(`read ${lines.length} of ${wanted} records in time`);
      for (const [partition, offset] of next) {
        const records = await replog.fetch(o.topic, partition, offset, decodeBatches, deadline);
        for (const r of records) lines.push(asLine(partition, r));
        if (records.length) next.set(partition, records[records.length - 1].offset + 1n);
      }
    }
    fs.writeFileSync(o.out, lines.join('\n') + '\n');
  } finally {
    replog.close();
  }
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  const o = options(rest);
  const tls = { ca: process.env.REPLOG_TLS_CA_FILE, cert: process.env.REPLOG_TLS_CERT_FILE, key: process.env.REPLOG_TLS_KEY_FILE };
  await ready();
  if (command === 'produce') await produce(o, tls);
  else if (command === 'consume') await consume(o, tls);
  else throw new Error('usage: node roundtrip.js produce|consume --topic T ...');
}

main().then(() => process.exit(0), (error) => {
  console.error(`roundtrip: ${error.stack || error}`);
  process.exit(1);
});
