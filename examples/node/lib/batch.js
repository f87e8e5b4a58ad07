'use strict';
// Record batches, written from docs/record-format.md alone: encodeBatch builds one, decodeBatches reads
// the concatenated batches of a fetch answer. Integers are big-endian and fixed-width; timestamps and
// 64-bit fields are BigInts. Codecs: none, gzip (Node's zlib) and zstd (@bokuweb/zstd-wasm); a batch
// in another codec is refused with an error naming it.

const zlib = require('node:zlib');
const zstd = require('@bokuweb/zstd-wasm');
const { crc32c } = require('./crc32c');

const HEADER_SIZE = 61;
const CRC_START = 21;
const MAGIC = 2;
const CODECS = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };
const CODEC_MASK = 0x07;
const LOG_APPEND_TIME = 0x08;
const RECORD_HEADERS = 0x10;
const EXPANDED_BYTES_MAX = 64 * 1024 * 1024;

let zstdReady = null;
function ready() {
  // The zstd codec is WebAssembly, loaded once before the first batch.
  if (zstdReady === null) zstdReady = zstd.init();
  return zstdReady;
}

function compress(codec, data) {
  if (codec === CODECS.gzip) return zlib.gzipSync(data);
  if (codec === CODECS.zstd) return Buffer.from(zstd.compress(data, 3));
  throw new Error(`this example compresses with gzip or zstd, not codec ${codec}`);
}

function expand(codec, data) {
  if (codec === CODECS.gzip) return zlib.gunzipSync(data, { maxOutputLength: EXPANDED_BYTES_MAX });
  if (codec === CODECS.zstd) return Buffer.from(zstd.decompress(data));
  throw new Error(`this example reads gzip and zstd batches, not codec ${codec}`);
}

function int32(value) {
  const b = Buffer.alloc(4);
  b.writeInt32BE(value);
  return b;
}

function bytesField(data) {
  // A length (-1 for null) and the bytes.
  return data === null || data === undefined ? [int32(-1)] : [int32(data.length), data];
}

// records: [{ key: Buffer|null, value: Buffer, timestampMs: BigInt, headers: [[string, Buffer|null], ...] }]
function encodeBatch(records, { producerId = -1n, producerEpoch = -1, baseSequence = -1, compression = 'none' } = {}) {
  if (records.length === 0) throw new Error('a batch holds at least one record');
  const codec = CODECS[compression];
  if (codec === undefined) throw new Error(`unknown compression ${compression}`);
  const withHeaders = records.some((r) => r.headers && r.headers.length > 0);
  const base = records[0].timestampMs;
  let max = base;
  const parts = [];
  records.forEach((r, i) => {
    if (r.timestampMs > max) max = r.timestampMs;
    const head = Buffer.alloc(12);
    head.writeInt32BE(i, 0);
    head.writeBigInt64BE(r.timestampMs - base, 4);
    parts.push(head, ...bytesField(r.key), int32(r.value.length), r.value);
    if (withHeaders) {
      const headers = r.headers || [];
      parts.push(int32(headers.length));
      for (const [key, value] of headers) parts.push(...bytesField(Buffer.from(key, 'utf8')), ...bytesField(value));
    }
  });
  let body = Buffer.concat(parts);
  if (codec !== CODECS.none) body = compress(codec, body);
  const header = Buffer.alloc(HEADER_SIZE);
  header.writeBigInt64BE(0n, 0); // base_offset: the leader's
  header.writeInt32BE(HEADER_SIZE - 12 + body.length, 8); // batch_length
  header.writeInt32BE(-1, 12); // partition_leader_epoch: the leader's
  header.writeInt8(MAGIC, 16);
  header.writeInt16BE((withHeaders ? RECORD_HEADERS : 0) | codec, 21);
  header.writeInt32BE(records.length - 1, 23);
  header.writeBigInt64BE(base, 27);
  header.writeBigInt64BE(max, 35);
  header.writeBigInt64BE(BigInt(producerId), 43);
  header.writeInt16BE(producerEpoch, 51);
  header.writeInt32BE(baseSequence, 53);
  header.writeInt32BE(records.length, 57);
  const batch = Buffer.concat([header, body]);
  batch.writeUInt32BE(crc32c(batch, CRC_START), 17);
  return batch;
}

// The records of every whole batch in `data`, each { offset, key, value, timestampMs, headers, leaderEpoch }.
function decodeBatches(data) {
  const out = [];
  let pos = 0;
  while (data.length - pos >= HEADER_SIZE) {
    const size = 12 + data.readInt32BE(pos + 8);
    if (pos + size > data.length) break; // a cut-off tail
    const batch = data.subarray(pos, pos + size);
    pos += size;
    if (batch.readInt8(16) !== MAGIC) throw new Error(`magic ${batch.readInt8(16)}`);
    if (batch.readUInt32BE(17) !== crc32c(batch, CRC_START)) throw new Error('CRC mismatch');
    const attributes = batch.readInt16BE(21);
    const codec = attributes & CODEC_MASK;
    const baseOffset = batch.readBigInt64BE(0);
    const leaderEpoch = batch.readInt32BE(12);
    const baseTimestamp = batch.readBigInt64BE(27);
    const maxTimestamp = batch.readBigInt64BE(35);
    const count = batch.readInt32BE(57);
    let records = batch.subarray(HEADER_SIZE);
    if (codec !== CODECS.none) records = expand(codec, records);
    let p = 0;
    const take = () => {
      const length = records.readInt32BE(p);
      p += 4;
      if (length < 0) return null;
      const field = Buffer.from(records.subarray(p, p + length));
      p += length;
      return field;
    };
    for (let i = 0; i < count; i++) {
      const offsetDelta = records.readInt32BE(p);
      const timestampDelta = records.readBigInt64BE(p + 4);
      p += 12;
      const key = take();
      const value = take();
      const headers = [];
      if (attributes & RECORD_HEADERS) {
        const n = records.readInt32BE(p);
        p += 4;
        for (let h = 0; h < n; h++) headers.push([take().toString('utf8'), take()]);
      }
      const timestampMs = attributes & LOG_APPEND_TIME ? maxTimestamp : baseTimestamp + timestampDelta;
      out.push({ offset: baseOffset + BigInt(offsetDelta), key, value, timestampMs, headers, leaderEpoch });
    }
    if (p !== records.length) throw new Error('the records do not fill the batch');
  }
  return out;
}

module.exports = { CODECS, decodeBatches, encodeBatch, ready };
