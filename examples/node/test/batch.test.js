'use strict';
// The encoder and decoder against docs/record-format.md's test vectors (node --test).

const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const test = require('node:test');
const { crc32c } = require('../lib/crc32c');
const { decodeBatches, encodeBatch, ready } = require('../lib/batch');

const DOC = fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'docs', 'record-format.md'), 'utf8');
const T = 1700000000000n;

function vector(letter) {
  const match = DOC.match(new RegExp(`\\*\\*${letter}\\.\\*\\*[\\s\\S]*?\`\`\`\\n([0-9a-f\\n]+)\`\`\``));
  return Buffer.from(match[1].replace(/\n/g, ''), 'hex');
}

const B_RECORDS = [
  { key: Buffer.from('k1'), value: Buffer.from('v1'), timestampMs: T, headers: [['trace', Buffer.from('abc')]] },
  { key: null, value: Buffer.from('v2'), timestampMs: T + 5n, headers: [['n', null]] },
];

test('the CRC is CRC-32C', () => assert.strictEqual(crc32c(Buffer.from('123456789')), 0xe3069283));

test('the encoder writes vectors A and B byte for byte', () => {
  assert.deepStrictEqual(encodeBatch([{ key: null, value: Buffer.from('hello'), timestampMs: T, headers: [] }]), vector('A'));
  assert.deepStrictEqual(encodeBatch(B_RECORDS, { producerId: 42n, producerEpoch: 0, baseSequence: 7 }), vector('B'));
});

test('the decoder reads every vector, gzip included, and its own zstd', async () => {
  await ready();
  const plain = (records) => records.map((r) => [r.offset, r.key, r.value, r.timestampMs, r.headers]);
  assert.deepStrictEqual(plain(decodeBatches(vector('C'))), [[100n, null, Buffer.from('hello'), T, []]]);
  const expected = B_RECORDS.map((r, i) => [BigInt(i), r.key, r.value, r.timestampMs, r.headers]);
  assert.deepStrictEqual(plain(decodeBatches(vector('B'))), expected);
  assert.deepStrictEqual(plain(decodeBatches(vector('D'))), expected);
  const zstd = encodeBatch(B_RECORDS, { compression: 'zstd' });
  assert.strictEqual(zstd.readInt16BE(21), 0x14);
  assert.deepStrictEqual(plain(decodeBatches(zstd)), expected);
});

test('the decoder reads an empty batch (a compacted log keeps one for a producer) as no record', () => {
  const empty = Buffer.alloc(61); // a header only: record_count 0, offsets 3 to 7 (docs/record-format.md)
  empty.writeBigInt64BE(3n, 0);
  empty.writeInt32BE(49, 8);
  empty.writeInt8(2, 16);
  empty.writeInt32BE(4, 23);
  empty.writeBigInt64BE(T, 27);
  empty.writeBigInt64BE(T, 35);
  empty.writeBigInt64BE(42n, 43);
  empty.writeInt32BE(9, 53);
  empty.writeUInt32BE(crc32c(empty, 21), 17);
  const next = encodeBatch([{ key: null, value: Buffer.from('after'), timestampMs: T, headers: [] }]);
  next.writeBigInt64BE(8n, 0); // outside the CRC, as a leader stamps it
  const records = decodeBatches(Buffer.concat([empty, next]));
  assert.deepStrictEqual(records.map((r) => [r.offset, r.value.toString()]), [[8n, 'after']]);
});
