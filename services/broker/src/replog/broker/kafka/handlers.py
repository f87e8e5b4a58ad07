"""The Kafka APIs, each answered by the broker's own servicers: the same produce path (leader checks,
acks, ISR waits, idempotence, quotas), fetch path (long-poll, KIP-320 epoch checks), metadata cache
and group coordinator as gRPC, reached through the protobuf requests those servicers take.

A handler turns a decoded Kafka request (a dict, apis.py) into the replog request, checks
authorization per resource (access.py; Kafka refuses per topic or group, not the whole request),
calls the servicer and turns its answer into the Kafka response dict. Records are translated by
records.py on the way in and out; error codes by errors.py. Nothing here touches a socket.
"""

from __future__ import annotations

import logging
from typing import Callable

from replog.broker.kafka import consumer_protocol, errors
from replog.broker.kafka.access import Access, CallAborted, KafkaCallContext
from replog.broker.kafka.apis import ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS, Api
from replog.broker.kafka.records import KafkaRecordError, to_kafka, to_replog
from replog.broker.kafka.server import Session, offered
from replog.broker.kafka.topic_admin import KafkaTopicAdmin
from replog.broker.kafka.wire import WireError
from replog.common.core.internal_topics import is_internal
from replog.common.records import CorruptRecordError
from replog.common.topic_admin.core.topics import CreateTopic
from replog.v1 import common_pb2, group_pb2, log_pb2

log = logging.getLogger(__name__)

CLUSTER_ID = "replog"
NO_TOPIC = ""  # a name no topic has (empty is invalid): asked for, the metadata cache answers brokers only
TOPIC_RESOURCE = 2  # DescribeConfigs' resource types: 2 topic, 4 broker
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # DescribeConfigs' config sources
LATEST, EARLIEST = -1, -2
CONSUMER_PROTOCOL_TYPE = "consumer"


class KafkaHandlers:
    def __init__(self, *, broker_id: int, metadata, log_servicer, group_servicer, access: Access,
                 topic_overrides: Callable[[str], dict[str, str]], topic_config_defaults: dict[str, str],
                 batch_bytes_max: Callable[[str], int], topic_admin: KafkaTopicAdmin) -> None:
        # Kafka clients send administrative requests to the "controller" a Metadata answer names. Any replog
        # broker answers them alike (the real controller is no broker and runs no Kafka listener), so each
        # names itself.
        self._broker_id = broker_id
        self._batch_bytes_max = batch_bytes_max  # the largest batch a topic takes (broker and topic limits)
        self._topic_overrides = topic_overrides
        self._topic_config_defaults = dict(topic_config_defaults)
        self._metadata = metadata
        self._log = log_servicer
        self._groups = group_servicer
        self._access = access
        self._topic_admin = topic_admin
        self._by_name = {
            "ApiVersions": self.api_versions, "Metadata": self.metadata, "Produce": self.produce,
            "Fetch": self.fetch, "ListOffsets": self.list_offsets, "OffsetForLeaderEpoch": self.offset_for_leader_epoch,
            "InitProducerId": self.init_producer_id, "FindCoordinator": self.find_coordinator,
            "JoinGroup": self.join_group, "SyncGroup": self.sync_group, "Heartbeat": self.heartbeat,
            "LeaveGroup": self.leave_group, "OffsetCommit": self.offset_commit, "OffsetFetch": self.offset_fetch,
            "DescribeCluster": self.describe_cluster, "CreateTopics": self.create_topics,
            "DeleteTopics": self.delete_topics, "DescribeConfigs": self.describe_configs,
            "DescribeGroups": self.describe_groups, "ListGroups": self.list_groups,
        }

    def __call__(self, session: Session, api: Api, version: int, request: dict) -> dict | None:
        handler = self._by_name[api.name]
        try:
            return handler(session, version, request)
        except CallAborted as exc:  # a servicer found the request malformed
            log.info("Kafka %s from %s refused: %s", api.name, session.peer, exc)
            return {"error_code": errors.INVALID_REQUEST, "error_message": str(exc)}

    def _context(self, session: Session) -> KafkaCallContext:
        return KafkaCallContext(session.principal, session.peer)

    # --- ApiVersions, Metadata, DescribeCluster ------------------------------------------------

    def api_versions(self, session: Session, version: int, request: dict) -> dict:
        return {"error_code": errors.NONE, "api_keys": offered(), "throttle_time_ms": 0}

    def _brokers(self, answer) -> list[dict]:
        """The live brokers that run a Kafka listener, at its port."""
        return [{"node_id": b.broker_id, "host": b.host, "port": b.kafka_port, "rack": b.rack or None}
                for b in answer.brokers if b.kafka_port]

    def metadata(self, session: Session, version: int, request: dict) -> dict:
        wanted = request["topics"]
        # Every topic: null (v1+), or an empty list in v0; an empty list from v1 on asks for none (brokers only).
        names = None if wanted is None or (not wanted and version == 0) else [t["name"] for t in wanted]
        if names is None:
            answer = self._metadata.metadata_response([])
            topics = [t for t in answer.topics if self._access.may_describe(session.principal, t.name)]
            refused = []
        else:
            allowed = [n for n in dict.fromkeys(names) if self._access.may_describe(session.principal, n)]
            refused = [n for n in dict.fromkeys(names) if n not in allowed]
            answer = self._metadata.metadata_response(allowed or [NO_TOPIC])  # brokers only, not every topic
            topics = list(answer.topics) if allowed else []
        described = [{
            "error_code": errors.kafka_code(t.error_code), "name": t.name, "is_internal": is_internal(t.name),
            "partitions": [{
                "error_code": errors.kafka_code(p.error_code), "partition_index": p.partition,
                "leader_id": p.leader, "leader_epoch": p.leader_epoch, "replica_nodes": list(p.replicas),
                "isr_nodes": list(p.isr), "offline_replicas": list(p.offline_replicas),
            } for p in t.partitions],
        } for t in topics]
        described += [{"error_code": errors.TOPIC_AUTHORIZATION_FAILED, "name": n} for n in refused]
        return {"brokers": self._brokers(answer), "cluster_id": CLUSTER_ID, "controller_id": self._broker_id,
                "topics": described}

    def describe_cluster(self, session: Session, version: int, request: dict) -> dict:
        if not self._access.allowed(session.principal, "DescribeCluster"):
            return {"error_code": errors.CLUSTER_AUTHORIZATION_FAILED, "cluster_id": CLUSTER_ID,
                    "error_message": "describe on the cluster is needed"}
        refused = _endpoint_refusal(request["endpoint_type"])  # v0 reads as ENDPOINT_BROKERS
        if refused is not None:
            return {**refused, "cluster_id": CLUSTER_ID}
        answer = self._metadata.metadata_response([])
        brokers = [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"]}
                   for b in self._brokers(answer)]
        return {"error_code": errors.NONE, "cluster_id": CLUSTER_ID, "controller_id": self._broker_id,
                "brokers": brokers}

    # --- Produce ---------------------------------------------------------------------------------

    def produce(self, session: Session, version: int, request: dict) -> dict | None:
        acks = request["acks"]
        answers: dict[tuple[str, int], dict] = {}
        order: list[tuple[str, int]] = []
        sent: list[tuple[str, int]] = []
        pb = log_pb2.ProduceRequest(acks=acks, timeout_ms=max(request["timeout_ms"], 0))
        for topic in request["topic_data"]:
            name = topic["name"]
            may = self._access.allowed(session.principal, "Produce", topic=name)
            for data in topic["partition_data"]:
                key = (name, data["index"])
                order.append(key)
                if request["transactional_id"] is not None:
                    answers[key] = _produce_error(errors.UNSUPPORTED_VERSION, "transactions are not supported")
                elif not may:
                    answers[key] = _produce_error(errors.TOPIC_AUTHORIZATION_FAILED, "produce on the topic is needed")
                else:
                    try:
                        batch = to_replog(data["records"] or b"", self._batch_bytes_max(name))
                    except KafkaRecordError as exc:
                        code = errors.INVALID_RECORD if exc.invalid else errors.CORRUPT_MESSAGE
                        answers[key] = _produce_error(code, str(exc))
                        continue
                    pb.partitions.add(topic=name, partition=data["index"], record_batch=batch)
                    sent.append(key)
        throttle_ms = 0
        if sent:
            response = self._log.Produce(pb, self._context(session))
            throttle_ms = response.throttle_time_ms
            for key, answer in zip(sent, response.partitions):
                answers.setdefault(key, {
                    "error_code": errors.kafka_code(answer.error_code), "base_offset": answer.base_offset,
                    "log_start_offset": answer.log_start_offset if acks == 1 else -1,
                    "error_message": answer.error_message or None})
        if acks == 0:
            return None  # Kafka sends no answer to an acks=0 produce
        topics: dict[str, list[dict]] = {}
        for name, index in order:
            answer = answers.get((name, index)) or _produce_error(errors.UNKNOWN_SERVER_ERROR, "no answer")
            topics.setdefault(name, []).append({"index": index, **answer})
        return {"responses": [{"name": n, "partition_responses": ps} for n, ps in topics.items()],
                "throttle_time_ms": throttle_ms}

    # --- Fetch, ListOffsets, OffsetForLeaderEpoch -------------------------------------------------

    def fetch(self, session: Session, version: int, request: dict) -> dict:
        pb = log_pb2.FetchRequest(max_wait_ms=max(request["max_wait_ms"], 0), min_bytes=max(request["min_bytes"], 0),
                                  max_bytes=max(request["max_bytes"], 0))
        refused: set[tuple[str, int]] = set()
        order: list[tuple[str, int]] = []
        for topic in request["topics"]:
            name = topic["topic"]
            may = self._access.allowed(session.principal, "Fetch", topic=name)
            for p in topic["partitions"]:
                key = (name, p["partition"])
                order.append(key)
                if not may:
                    refused.add(key)
                    continue
                pb.partitions.add(topic=name, partition=p["partition"], fetch_offset=p["fetch_offset"],
                                  current_leader_epoch=p["current_leader_epoch"],
                                  partition_max_bytes=max(p["partition_max_bytes"], 0))
        throttle_ms, read = 0, {}
        if len(pb.partitions):
            response = self._log.Fetch(pb, self._context(session))
            throttle_ms = response.throttle_time_ms
            read = {(d.topic, d.partition): d for d in response.partitions}
        topics: dict[str, list[dict]] = {}
        for key in order:
            topics.setdefault(key[0], []).append(self._fetched(key, read.get(key), key in refused))
        return {"throttle_time_ms": throttle_ms, "error_code": errors.NONE, "session_id": 0,
                "responses": [{"topic": n, "partitions": ps} for n, ps in topics.items()]}

    @staticmethod
    def _fetched(key: tuple[str, int], data, refused: bool) -> dict:
        if refused:
            return {"partition_index": key[1], "error_code": errors.TOPIC_AUTHORIZATION_FAILED, "high_watermark": -1}
        if data is None:  # throttled: the quota answered without reading
            return {"partition_index": key[1], "error_code": errors.NONE, "high_watermark": -1, "records": b""}
        code = errors.kafka_code(data.error_code)
        records = b""
        if code == errors.NONE and data.records:
            try:
                records = to_kafka(data.records)
            except CorruptRecordError as exc:
                log.warning("a stored batch of %s-%d failed its check on the way out: %s", key[0], key[1], exc)
                code = errors.CORRUPT_MESSAGE
        return {"partition_index": key[1], "error_code": code, "high_watermark": data.high_watermark,
                "last_stable_offset": data.high_watermark, "log_start_offset": data.log_start_offset,
                "aborted_transactions": None if code == errors.NONE else [], "records": records}

    def list_offsets(self, session: Session, version: int, request: dict) -> dict:
        pb = log_pb2.ListOffsetsRequest()
        order, refused = [], set()
        for topic in request["topics"]:
            may = self._access.allowed(session.principal, "ListOffsets", topic=topic["name"])
            for p in topic["partitions"]:
                key = (topic["name"], p["partition_index"])
                order.append(key)
                if not may:
                    refused.add(key)
                    continue
                stamp = p["timestamp"]
                spec = {LATEST: log_pb2.OFFSET_SPEC_LATEST, EARLIEST: log_pb2.OFFSET_SPEC_EARLIEST}.get(
                    stamp, log_pb2.OFFSET_SPEC_TIMESTAMP if stamp >= 0 else log_pb2.OFFSET_SPEC_UNSPECIFIED)
                pb.partitions.add(topic=key[0], partition=key[1], spec=spec, timestamp_ms=max(stamp, 0),
                                  current_leader_epoch=p["current_leader_epoch"])
        found = {}
        if len(pb.partitions):
            found = {(r.topic, r.partition): r for r in self._log.ListOffsets(pb, self._context(session)).partitions}
        topics: dict[str, list[dict]] = {}
        for key in order:
            r = found.get(key)
            if key in refused or r is None:
                entry = {"partition_index": key[1], "error_code": errors.TOPIC_AUTHORIZATION_FAILED}
            else:
                code = errors.kafka_code(r.error_code)
                entry = {"partition_index": key[1], "error_code": code, "timestamp": r.timestamp_ms,
                         "offset": r.offset, "leader_epoch": r.leader_epoch if code == errors.NONE else -1,
                         "old_style_offsets": [r.offset] if code == errors.NONE and r.offset >= 0 else []}
            topics.setdefault(key[0], []).append(entry)
        return {"topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}

    def offset_for_leader_epoch(self, session: Session, version: int, request: dict) -> dict:
        pb = log_pb2.OffsetsForLeaderEpochsRequest()
        order, refused = [], set()
        for topic in request["topics"]:
            may = self._access.allowed(session.principal, "OffsetForLeaderEpoch", topic=topic["topic"])
            for p in topic["partitions"]:
                key = (topic["topic"], p["partition"])
                order.append(key)
                if not may:
                    refused.add(key)
                    continue
                pb.partitions.add(topic=key[0], partition=key[1], current_leader_epoch=p["current_leader_epoch"],
                                  leader_epoch=p["leader_epoch"])
        found = {}
        if len(pb.partitions):
            answer = self._log.OffsetsForLeaderEpochs(pb, self._context(session))
            found = {(r.topic, r.partition): r for r in answer.partitions}
        topics: dict[str, list[dict]] = {}
        for key in order:
            r = found.get(key)
            entry = ({"partition": key[1], "error_code": errors.TOPIC_AUTHORIZATION_FAILED} if r is None else
                     {"partition": key[1], "error_code": errors.kafka_code(r.error_code),
                      "leader_epoch": r.leader_epoch, "end_offset": r.end_offset})
            topics.setdefault(key[0], []).append(entry)
        return {"topics": [{"topic": n, "partitions": ps} for n, ps in topics.items()]}

    # --- InitProducerId --------------------------------------------------------------------------

    def init_producer_id(self, session: Session, version: int, request: dict) -> dict:
        if request["transactional_id"] is not None:
            return {"error_code": errors.UNSUPPORTED_VERSION}  # transactions are not supported
        if not self._access.allowed(session.principal, "InitProducerId"):
            return {"error_code": errors.CLUSTER_AUTHORIZATION_FAILED}
        answer = self._log.InitProducerId(log_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1),
                                          self._context(session))
        if answer.error_code:
            return {"error_code": errors.kafka_code(answer.error_code)}
        return {"error_code": errors.NONE, "producer_id": answer.producer_id, "producer_epoch": answer.producer_epoch}

    # --- groups ------------------------------------------------------------------------------------

    def find_coordinator(self, session: Session, version: int, request: dict) -> dict:
        if request["key_type"] != 0:
            return {"error_code": errors.UNSUPPORTED_VERSION, "node_id": -1, "port": -1,
                    "error_message": "only group coordinators: transactions are not supported"}
        group = request["key"]
        if not self._access.allowed(session.principal, "FindCoordinator", group=group):
            return {"error_code": errors.GROUP_AUTHORIZATION_FAILED, "node_id": -1, "port": -1}
        answer = self._groups.FindCoordinator(group_pb2.FindCoordinatorRequest(group_id=group),
                                              self._context(session))
        if answer.error_code:
            return {"error_code": errors.kafka_code(answer.error_code), "error_message": answer.error_message,
                    "node_id": -1, "port": -1}
        endpoint = answer.coordinator
        if not endpoint.kafka_port:
            return {"error_code": errors.COORDINATOR_NOT_AVAILABLE, "node_id": -1, "port": -1,
                    "error_message": f"broker {endpoint.broker_id} runs no Kafka listener"}
        return {"error_code": errors.NONE, "node_id": endpoint.broker_id, "host": endpoint.host,
                "port": endpoint.kafka_port}

    def _group_refusal(self, session: Session, api: str, group: str) -> dict | None:
        if self._access.allowed(session.principal, api, group=group):
            return None
        return {"error_code": errors.GROUP_AUTHORIZATION_FAILED}

    def join_group(self, session: Session, version: int, request: dict) -> dict:
        refused = self._group_refusal(session, "JoinGroup", request["group_id"])
        if refused:
            return {**refused, "member_id": request["member_id"]}
        if request["protocol_type"] != CONSUMER_PROTOCOL_TYPE:
            return {"error_code": errors.INCONSISTENT_GROUP_PROTOCOL, "member_id": request["member_id"]}
        pb = group_pb2.JoinGroupRequest(
            group_id=request["group_id"], member_id=request["member_id"], client_id=session.client_id or "",
            session_timeout_ms=request["session_timeout_ms"], protocol_type=request["protocol_type"],
            rebalance_timeout_ms=max(request["rebalance_timeout_ms"], 0))
        try:
            for p in request["protocols"]:
                topics, owned, user_data = consumer_protocol.read_subscription(p["metadata"])
                pb.protocols.add(name=p["name"], topics=topics, user_data=user_data,
                                 owned_partitions=[common_pb2.TopicPartition(topic=t, partition=i) for t, i in owned])
        except WireError as exc:
            log.info("JoinGroup from %s: a subscription does not decode: %s", session.peer, exc)
            return {"error_code": errors.INCONSISTENT_GROUP_PROTOCOL, "member_id": request["member_id"]}
        answer = self._groups.JoinGroup(pb, self._context(session))
        members = [{"member_id": m.member_id, "metadata": consumer_protocol.write_subscription(
            m.protocol.topics, [(tp.topic, tp.partition) for tp in m.protocol.owned_partitions],
            m.protocol.user_data)} for m in answer.members]
        return {"error_code": errors.kafka_code(answer.error_code), "generation_id": answer.generation_id,
                "protocol_name": answer.protocol_name, "leader": answer.leader_member_id,
                "member_id": answer.member_id or request["member_id"], "members": members}

    def sync_group(self, session: Session, version: int, request: dict) -> dict:
        refused = self._group_refusal(session, "SyncGroup", request["group_id"])
        if refused:
            return refused
        pb = group_pb2.SyncGroupRequest(group_id=request["group_id"], generation_id=request["generation_id"],
                                        member_id=request["member_id"])
        try:
            for a in request["assignments"]:
                partitions, user_data = consumer_protocol.read_assignment(a["assignment"])
                pb.assignments.add(member_id=a["member_id"], user_data=user_data, partitions=[
                    common_pb2.TopicPartition(topic=t, partition=i) for t, i in partitions])
        except WireError as exc:
            log.info("SyncGroup from %s: an assignment does not decode: %s", session.peer, exc)
            return {"error_code": errors.INCONSISTENT_GROUP_PROTOCOL}
        answer = self._groups.SyncGroup(pb, self._context(session))
        code = errors.kafka_code(answer.error_code)
        assignment = b"" if code != errors.NONE else consumer_protocol.write_assignment(
            [(tp.topic, tp.partition) for tp in answer.assignment.partitions], answer.assignment.user_data)
        return {"error_code": code, "assignment": assignment}

    def heartbeat(self, session: Session, version: int, request: dict) -> dict:
        refused = self._group_refusal(session, "Heartbeat", request["group_id"])
        if refused:
            return refused
        answer = self._groups.Heartbeat(group_pb2.HeartbeatRequest(
            group_id=request["group_id"], generation_id=request["generation_id"], member_id=request["member_id"]),
            self._context(session))
        return {"error_code": errors.kafka_code(answer.error_code)}

    def leave_group(self, session: Session, version: int, request: dict) -> dict:
        refused = self._group_refusal(session, "LeaveGroup", request["group_id"])
        if refused:
            return refused
        answer = self._groups.LeaveGroup(group_pb2.LeaveGroupRequest(
            group_id=request["group_id"], member_id=request["member_id"]), self._context(session))
        return {"error_code": errors.kafka_code(answer.error_code)}

    def offset_commit(self, session: Session, version: int, request: dict) -> dict:
        group = request["group_id"]
        # OffsetCommit's one rule, asked first for the group alone (no topic named), then for each topic
        # with it: a refusal of the group is GROUP_AUTHORIZATION_FAILED, of a topic TOPIC_AUTHORIZATION_FAILED.
        group_ok = self._access.allowed(session.principal, "OffsetCommit", group=group)
        pb = group_pb2.OffsetCommitRequest(group_id=group, generation_id=request["generation_id"],
                                           member_id=request["member_id"])
        order, refused = [], {}
        for topic in request["topics"]:
            topic_ok = self._access.allowed(session.principal, "OffsetCommit", topic=topic["name"], group=group)
            for p in topic["partitions"]:
                key = (topic["name"], p["partition_index"])
                order.append(key)
                if not group_ok:
                    refused[key] = errors.GROUP_AUTHORIZATION_FAILED
                elif not topic_ok:
                    refused[key] = errors.TOPIC_AUTHORIZATION_FAILED
                else:
                    pb.partitions.add(topic=key[0], partition=key[1], offset=p["committed_offset"],
                                      leader_epoch=p["committed_leader_epoch"],
                                      metadata=p["committed_metadata"] or "")
        results = {}
        if len(pb.partitions):
            answer = self._groups.OffsetCommit(pb, self._context(session))
            whole = errors.kafka_code(answer.error_code)
            results = {(r.topic, r.partition): errors.kafka_code(r.error_code) for r in answer.partitions}
            for item in pb.partitions:
                results.setdefault((item.topic, item.partition), whole)
        topics: dict[str, list[dict]] = {}
        for key in order:
            code = refused.get(key, results.get(key, errors.UNKNOWN_SERVER_ERROR))
            topics.setdefault(key[0], []).append({"partition_index": key[1], "error_code": code})
        return {"topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}

    def offset_fetch(self, session: Session, version: int, request: dict) -> dict:
        group = request["group_id"]
        if not self._access.allowed(session.principal, "OffsetFetch", group=group):
            return {"error_code": errors.GROUP_AUTHORIZATION_FAILED, "topics": []}
        pb = group_pb2.OffsetFetchRequest(group_id=group)
        for topic in request["topics"] or ():
            for index in topic["partition_indexes"]:
                pb.partitions.add(topic=topic["name"], partition=index)
        answer = self._groups.OffsetFetch(pb, self._context(session))
        if answer.error_code:
            code = errors.kafka_code(answer.error_code)
            return {"error_code": code, "topics": [
                {"name": t["name"], "partitions": [{"partition_index": i, "committed_offset": -1, "error_code": code}
                                                   for i in t["partition_indexes"]]}
                for t in request["topics"] or ()]}
        topics: dict[str, list[dict]] = {}
        for c in answer.offsets:
            if not self._access.may_describe(session.principal, c.topic):
                continue
            topics.setdefault(c.topic, []).append({
                "partition_index": c.partition, "committed_offset": c.offset,
                "committed_leader_epoch": c.leader_epoch, "metadata": c.metadata, "error_code": errors.NONE})
        return {"error_code": errors.NONE, "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}

    def list_groups(self, session: Session, version: int, request: dict) -> dict:
        """The groups this broker coordinates, as a Kafka client asks every broker: only those the user
        may describe (as the gRPC ListGroups answer is trimmed)."""
        if not self._access.may_call(session.principal, "ListGroups"):
            return {"error_code": errors.CLUSTER_AUTHORIZATION_FAILED}
        answer = self._groups.ListGroups(group_pb2.ListGroupsRequest(), self._context(session))
        return {"error_code": errors.kafka_code(answer.error_code), "groups": [
            {"group_id": g.group_id, "protocol_type": g.protocol_type} for g in answer.groups
            if self._access.allowed(session.principal, "DescribeGroups", group=g.group_id)]}

    def describe_groups(self, session: Session, version: int, request: dict) -> dict:
        described = []
        for group_id in request["groups"]:
            if not self._access.allowed(session.principal, "DescribeGroups", group=group_id):
                described.append({"error_code": errors.GROUP_AUTHORIZATION_FAILED, "group_id": group_id})
                continue
            answer = self._groups.DescribeGroups(group_pb2.DescribeGroupsRequest(group_ids=[group_id]),
                                                 self._context(session))
            g = answer.groups[0] if len(answer.groups) else None
            if g is None:
                described.append({"error_code": errors.UNKNOWN_SERVER_ERROR, "group_id": group_id})
                continue
            described.append({
                "error_code": errors.kafka_code(g.error_code), "group_id": g.group_id,
                "group_state": _GROUP_STATES.get(g.state, "Dead"), "protocol_type": g.protocol_type,
                "protocol_data": g.protocol_name,
                "members": [{
                    "member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                    "member_metadata": consumer_protocol.write_subscription(m.topics, [], b""),
                    "member_assignment": consumer_protocol.write_assignment(
                        [(tp.topic, tp.partition) for tp in m.assignment], b""),
                } for m in g.members],
            })
        return {"groups": described}

    # --- administration ----------------------------------------------------------------------------

    # Topics are created and deleted as the admin gateway does (topic_admin.py): each topic authorized by
    # the gateway's rule for its CreateTopic or DeleteTopic, then validated, placed and written.

    def create_topics(self, session: Session, version: int, request: dict) -> dict:
        validate_only = bool(request.get("validate_only"))
        names = [t["name"] for t in request["topics"]]
        answers = {}
        for topic in request["topics"]:
            name = topic["name"]
            if names.count(name) > 1:
                answers[name] = (errors.INVALID_REQUEST, f"Topic '{name}' is listed more than once.")
            elif not self._access.allowed(session.principal, "CreateTopics", topic=name):
                answers[name] = (errors.TOPIC_AUTHORIZATION_FAILED, f"Not authorized to create topic '{name}'.")
            else:
                spec, problem = _create_spec(topic)
                answers[name] = problem or self._topic_admin.create(spec, validate_only)
        created = [n for n, (code, _) in answers.items() if code == errors.NONE]
        if created and not validate_only and request["timeout_ms"] > 0:
            for name in self._topic_admin.await_leaders(created, request["timeout_ms"]):
                answers[name] = (errors.REQUEST_TIMED_OUT, f"Topic '{name}' is created; its leaders are not elected yet.")
        return {"throttle_time_ms": 0, "topics": [
            {"name": n, "error_code": code, "error_message": message} for n, (code, message) in answers.items()]}

    def delete_topics(self, session: Session, version: int, request: dict) -> dict:
        answers = {}
        for name in dict.fromkeys(request["topic_names"]):
            if not self._access.allowed(session.principal, "DeleteTopics", topic=name):
                answers[name] = errors.TOPIC_AUTHORIZATION_FAILED
            else:
                code, message = self._topic_admin.delete(name)
                if code != errors.NONE:
                    log.info("Kafka DeleteTopics of '%s' from %s refused: %s", name, session.peer, message)
                answers[name] = code
        deleted = [n for n, code in answers.items() if code == errors.NONE]
        if deleted and request["timeout_ms"] > 0:
            for name in self._topic_admin.await_gone(deleted, request["timeout_ms"]):
                answers[name] = errors.REQUEST_TIMED_OUT
        return {"throttle_time_ms": 0, "responses": [{"name": n, "error_code": c} for n, c in answers.items()]}

    def describe_configs(self, session: Session, version: int, request: dict) -> dict:
        """A topic's effective configuration: its overrides (ZooKeeper's /config/topics, as the gateway
        wrote them) over the broker's defaults. Broker resources are not described here."""
        results = []
        for resource in request["resources"]:
            name, kind = resource["resource_name"], resource["resource_type"]
            entry = {"resource_type": kind, "resource_name": name, "error_code": errors.NONE}
            if kind != TOPIC_RESOURCE:
                entry.update(error_code=errors.INVALID_REQUEST, error_message="only topic configs are described here")
            elif not self._access.allowed(session.principal, "DescribeConfigs", topic=name):
                entry.update(error_code=errors.TOPIC_AUTHORIZATION_FAILED)
            elif not self._metadata.partition_count(name):
                entry.update(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                overrides = self._topic_overrides(name)
                keys = resource["configuration_keys"]
                merged = {**self._topic_config_defaults, **overrides}
                entry["configs"] = [{
                    "name": key, "value": value, "read_only": False, "is_default": key not in overrides,
                    "config_source": DYNAMIC_TOPIC_CONFIG if key in overrides else DEFAULT_CONFIG,
                    "is_sensitive": False, "synonyms": [],
                } for key, value in sorted(merged.items()) if keys is None or key in keys]
            results.append(entry)
        return {"results": results}


_GROUP_STATES = {group_pb2.GROUP_STATE_EMPTY: "Empty", group_pb2.GROUP_STATE_PREPARING_REBALANCE: "PreparingRebalance",
                 group_pb2.GROUP_STATE_COMPLETING_REBALANCE: "CompletingRebalance",
                 group_pb2.GROUP_STATE_STABLE: "Stable", group_pb2.GROUP_STATE_DEAD: "Dead"}


def _create_spec(topic: dict) -> tuple[CreateTopic | None, tuple[int, str] | None]:
    """The gateway's CreateTopic for one Kafka topic entry, or the Kafka error that refuses it first."""
    name, assignments = topic["name"], topic["assignments"]
    if assignments and (topic["num_partitions"] != -1 or topic["replication_factor"] != -1):
        return None, (errors.INVALID_REQUEST, "With a replica assignment, num_partitions and "
                      "replication_factor must be -1.")
    configs = {}
    for entry in topic["configs"]:
        if entry["value"] is None:
            return None, (errors.INVALID_CONFIG, f"Config '{entry['name']}' has no value.")
        if entry["name"] in configs:
            return None, (errors.INVALID_REQUEST, f"Config '{entry['name']}' is given more than once.")
        configs[entry["name"]] = entry["value"]
    return CreateTopic(
        name=name,
        partitions=0 if assignments else topic["num_partitions"],
        replication_factor=0 if assignments else topic["replication_factor"],
        assignment=tuple(("", a["partition_index"], tuple(a["broker_ids"])) for a in assignments),
        configs=configs,
    ), None


def _endpoint_refusal(endpoint_type: int) -> dict | None:
    """DescribeCluster's error for an endpoint type other than the brokers, as a Kafka broker answers it
    (KIP-919): the controllers are a type it knows but does not serve (replog has no KRaft controllers to
    list), any other type is unknown. None for the brokers."""
    if endpoint_type == ENDPOINT_BROKERS:
        return None
    if endpoint_type == ENDPOINT_CONTROLLERS:
        return {"error_code": errors.MISMATCHED_ENDPOINT_TYPE,
                "error_message": "this listener describes the brokers (endpoint type 1), not the controllers"}
    return {"error_code": errors.UNSUPPORTED_ENDPOINT_TYPE,
            "error_message": f"unsupported endpoint type {endpoint_type}"}


def _produce_error(code: int, message: str) -> dict:
    return {"error_code": code, "base_offset": -1, "error_message": message}
