'use strict';
// A small replog client over gRPC: the protos in ../../protos loaded at run time (@grpc/proto-loader),
// mutual TLS with the CA, certificate and key files given, the gateway's AdminService for topics and
// the brokers' LogService for metadata, producer ids, produce and fetch. Batches: batch.js.

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTOS = path.resolve(__dirname, '..', '..', '..', 'protos');
const definition = protoLoader.loadSync(['replog/v1/admin.proto', 'replog/v1/log.proto'], {
  includeDirs: [PROTOS], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
});
const v1 = grpc.loadPackageDefinition(definition).replog.v1;

const RETRIABLE = new Set(['ERROR_CODE_NOT_LEADER', 'ERROR_CODE_LEADER_NOT_AVAILABLE', 'ERROR_CODE_REQUEST_TIMED_OUT',
  'ERROR_CODE_NOT_ENOUGH_REPLICAS', 'ERROR_CODE_UNKNOWN_TOPIC_OR_PARTITION', 'ERROR_CODE_FENCED_LEADER_EPOCH',
  'ERROR_CODE_UNKNOWN_LEADER_EPOCH', 'ERROR_CODE_REPLICA_NOT_AVAILABLE']);

function credentials({ ca, cert, key }) {
  return grpc.credentials.createSsl(fs.readFileSync(ca), fs.readFileSync(key), fs.readFileSync(cert));
}

function call(client, method, request, timeoutMs = 30000) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + timeoutMs }, (error, reply) => (error ? reject(error) : resolve(reply)));
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Replog {
  constructor({ bootstrap, gateway, tls }) {
    this.bootstrap = bootstrap;
    this.gateway = gateway;
    this.creds = credentials(tls);
    this.clients = new Map();
    this.brokers = new Map(); // broker id -> address
    this.leaders = new Map(); // "topic/partition" -> { address, leaderEpoch }
  }

  log(address) {
    if (!this.clients.has(address)) this.clients.set(address, new v1.LogService(address, this.creds));
    return this.clients.get(address);
  }

  async createTopic(name, partitions, replicationFactor, configs = {}) {
    const admin = new v1.AdminService(this.gateway, this.creds);
    try {
      return await call(admin, 'CreateTopic', { name, partitions, replication_factor: replicationFactor, configs });
    } finally {
      admin.close();
    }
  }

  async refresh(topic) {
    let last;
    for (const address of this.bootstrap) {
      try {
        const reply = await call(this.log(address), 'Metadata', { topics: [topic] }, 5000);
        for (const b of reply.brokers) this.brokers.set(b.broker_id, `${b.host}:${b.port}`);
        for (const t of reply.topics) {
          for (const p of t.partitions) {
            if (p.leader >= 0 && this.brokers.has(p.leader)) {
              this.leaders.set(`${t.name}/${p.partition}`, { address: this.brokers.get(p.leader), leaderEpoch: p.leader_epoch });
            } else {
              this.leaders.delete(`${t.name}/${p.partition}`);
            }
          }
        }
        return reply.topics.find((t) => t.name === topic);
      } catch (error) {
        last = error;
      }
    }
    throw new Error(`no broker answered Metadata: ${last}`);
  }

  async leader(topic, partition, deadline) {
    for (;;) {
      const found = this.leaders.get(`${topic}/${partition}`);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no leader for ${topic}-${partition}`);
      await sleep(200);
      await this.refresh(topic);
    }
  }

  async initProducerId() {
    const reply = await call(this.log(this.bootstrap[0]), 'InitProducerId', { producer_id: -1, producer_epoch: -1 });
    if (reply.error_code !== 'ERROR_CODE_NONE') throw new Error(`InitProducerId: ${reply.error_code} ${reply.error_message}`);
    return { producerId: BigInt(reply.producer_id), producerEpoch: reply.producer_epoch };
  }

  // One batch to its partition's leader (acks=all), the same bytes again after a retriable error: the
  // leader answers a retry of a batch it has with DUPLICATE_SEQUENCE_NUMBER and the original offset.
  async produce(topic, partition, batch, timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let code;
      let message;
      try {
        const { address } = await this.leader(topic, partition, deadline);
        const reply = await call(this.log(address), 'Produce', {
          acks: -1, timeout_ms: 30000, partitions: [{ topic, partition, record_batch: batch }],
        });
        ({ error_code: code, error_message: message } = reply.partitions[0]);
        if (code === 'ERROR_CODE_NONE' || code === 'ERROR_CODE_DUPLICATE_SEQUENCE_NUMBER') {
          return BigInt(reply.partitions[0].base_offset);
        }
      } catch (error) {
        code = 'UNAVAILABLE';
        message = error.message;
      }
      if ((!RETRIABLE.has(code) && code !== 'UNAVAILABLE') || Date.now() > deadline) {
        throw new Error(`produce to ${topic}-${partition}: ${code} ${message}`);
      }
      await sleep(200);
      await this.refresh(topic);
    }
  }

  // Committed records of a partition from `offset` on: one Fetch answer, decoded by `decode`.
  async fetch(topic, partition, offset, decode, deadline) {
    const { address, leaderEpoch } = await this.leader(topic, partition, deadline);
    const reply = await call(this.log(address), 'Fetch', {
      max_wait_ms: 500, min_bytes: 1, max_bytes: 4 * 1024 * 1024,
      partitions: [{ topic, partition, fetch_offset: String(offset), current_leader_epoch: leaderEpoch }],
    });
    const data = reply.partitions[0];
    if (data.error_code !== 'ERROR_CODE_NONE') {
      if (!RETRIABLE.has(data.error_code)) throw new Error(`fetch ${topic}-${partition}: ${data.error_code} ${data.error_message}`);
      await this.refresh(topic);
      return [];
    }
    const highWatermark = BigInt(data.high_watermark);
    return decode(data.records).filter((r) => r.offset >= offset && r.offset < highWatermark);
  }

  close() {
    for (const client of this.clients.values()) client.close();
  }
}

module.exports = { Replog };
