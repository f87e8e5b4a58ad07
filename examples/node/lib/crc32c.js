'use strict';
// CRC-32C (Castagnoli), as docs/record-format.md describes it: reflected polynomial 0x82F63B78,
// initial value and final XOR 0xFFFFFFFF. A table of 256 entries, one byte at a time: plenty for an example.

const TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  TABLE[n] = c >>> 0;
}

function crc32c(buffer, start = 0, end = buffer.length) {
  let crc = 0xffffffff;
  for (let i = start; i < end; i++) crc = TABLE[(crc ^ buffer[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

module.exports = { crc32c };
