"""Every RPC of every service, fuzzed from every kind of identity against a real secure cluster.

A cluster of ZooKeeper, 1 controller, 2 brokers and a gateway, mutual TLS and ZooKeeper
authentication on. Before the fuzz, the operator writes a known set of records (acks=all) to a kept
topic that no fuzzed request names; a playground topic is what plausible requests name. Then, from
a user with no ACLs (`User:probe`), a broker's certificate, the controller's, the gateway's and the
operator's (a super user), random and mutated requests of every method (messages.py), with the
invariants (invariants.py) checked after each batch. After the fuzz, the cluster is healthy and every
kept record reads back.

In the default suite one round with a fixed seed (FUZZ_SEED, default 55); `make fuzz` repeats
rounds for FUZZ_MINUTES with a new seed and writes its report to FUZZ_REPORT. FUZZ_ONLY (a part of
a method's path) and FUZZ_IDENTITY (probe, operator, broker-1, controller-1, gateway-1) narrow a run
to reproduce a finding.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import grpc
import pytest

from replog.client import Consumer, Producer
from replog.common.security import local
from replog.common.security.principal import Principal
from replog.devcluster import ClusterSpec
from replog.v1 import admin_pb2, admin_pb2_grpc
from tests.integration.broker_helpers import wait_for_isr, zk_session
from tests.integration.controller_helpers import controller
from tests.integration.tls_helpers import session_certificate

from .campaign import Budget, Campaign
from .invariants import ClusterWatch, epochs_of
from .messages import Context
from .targets import Identity, all_targets

MINUTES = float(os.environ["FUZZ_MINUTES"]) if os.environ.get("FUZZ_MINUTES") else None
# One round takes a minute or two on a quiet machine; a long run takes its minutes and the round under way.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600 + 60 * (MINUTES or 0))]

KEPT_TOPIC = "fuzz-kept"
PLAY_TOPIC = "fuzz-play"
PARTITIONS = 2
KEPT_RECORDS = 200
READ_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("fuzz"))
    try:
        cluster = factory(ClusterSpec(controllers=1, brokers=2, gateways=1))
        admin = admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address))
        for topic in (KEPT_TOPIC, PLAY_TOPIC):
            admin.CreateTopic(admin_pb2.CreateTopicRequest(name=topic, partitions=PARTITIONS, replication_factor=2),
                              timeout=30)
        with zk_session(cluster) as zk:
            for topic in (KEPT_TOPIC, PLAY_TOPIC):
                for p in range(PARTITIONS):
                    wait_for_isr(cluster, zk, topic, {1, 2}, 60, partition=p)
        yield cluster
    finally:
        factory.teardown()


def identities(cluster, directory: Path) -> list[Identity]:
    """The callers, the one that changes most last: a user with no ACLs, each kind of service, the operator."""
    every = [
        Identity("probe", Principal("user", "probe"), session_certificate(Principal("user", "probe"), directory)),
        Identity("broker-1", Principal("broker", "1"), local.files_of(cluster.state_dir, Principal("broker", "1"))),
        Identity("controller-1", Principal("controller", "1"),
                 local.files_of(cluster.state_dir, Principal("controller", "1"))),
        Identity("gateway-1", Principal("gateway", "1"), local.files_of(cluster.state_dir, Principal("gateway", "1"))),
        Identity("operator", Principal("user", "admin"), cluster.operator_tls),
    ]
    only = os.environ.get("FUZZ_IDENTITY")
    return [i for i in every if not only or i.label in only.split(",")]


def write_kept_records(cluster) -> list[bytes]:
    bootstrap = [p.address for p in cluster.of_role("broker")]
    values = [f"kept-{i}".encode() for i in range(KEPT_RECORDS)]
    with Producer(bootstrap, acks="all") as producer:
        handles = [producer.send(KEPT_TOPIC, v, partition=i % PARTITIONS) for i, v in enumerate(values)]
        for handle in handles:
            handle.result(timeout=60)
    return values


def read_kept_records(cluster) -> list[bytes]:
    bootstrap = [p.address for p in cluster.of_role("broker")]
    seen = []
    with Consumer(bootstrap, KEPT_TOPIC, iteration_timeout_ms=int(READ_DEADLINE_S * 1000)) as consumer:
        consumer.assign({p: 0 for p in range(PARTITIONS)})
        deadline = time.monotonic() + READ_DEADLINE_S
        for record in consumer:
            seen.append(record.value)
            if len(seen) >= KEPT_RECORDS or time.monotonic() > deadline:
                break
    return seen


class Playground:
    """The context of plausible requests, read before each batch, and the operator's leftovers cleared after
    one: the playground topic is created again if the fuzz deleted it; ACLs and quotas it set are removed."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.admin = admin_pb2_grpc.AdminServiceStub(cluster.channel(cluster.gateway_address))

    def context(self, identity: Identity) -> Context:
        topics = self.admin.ListTopics(admin_pb2.ListTopicsRequest(), timeout=30).topics
        if PLAY_TOPIC not in topics:
            try:
                self.admin.CreateTopic(admin_pb2.CreateTopicRequest(name=PLAY_TOPIC, partitions=PARTITIONS,
                                                                    replication_factor=2), timeout=30)
            except grpc.RpcError:
                pass  # still being deleted: the batch names a topic that is not there, a case too
        brokers = tuple(p.instance_id for p in self.cluster.of_role("broker"))
        with zk_session(self.cluster) as zk:
            controller_id, controller_epoch = controller(zk)
            broker_epochs = {b: zk.kazoo.get(f"/brokers/ids/{b}")[1].czxid for b in brokers}
            leader, leader_epoch, partition_epoch = epochs_of(zk, PLAY_TOPIC, 0) or (brokers[0], 0, 0)
        own = int(identity.principal.name) if identity.principal.kind == "broker" else brokers[0]
        return Context(play_topic=PLAY_TOPIC, own_broker_id=own, broker_ids=brokers, controller_id=controller_id,
                       controller_epoch=controller_epoch, broker_epochs=broker_epochs, leader=leader,
                       leader_epoch=leader_epoch, partition_epoch=partition_epoch, now_ms=int(time.time() * 1000))

    def clear(self, identity: Identity) -> None:
        if identity.label != "operator":
            return
        self.admin.DeleteAcls(admin_pb2.DeleteAclsRequest(filters=[admin_pb2.AclBindingFilter()]), timeout=30)
        entries = self.admin.DescribeClientQuotas(admin_pb2.DescribeClientQuotasRequest(), timeout=30).entries
        removals = [admin_pb2.ClientQuotaAlteration(entity=e.entity, ops=[
            admin_pb2.ClientQuotaOp(type=t, remove=True) for t in (admin_pb2.CLIENT_QUOTA_TYPE_PRODUCER_BYTE_RATE,
                                                                   admin_pb2.CLIENT_QUOTA_TYPE_CONSUMER_BYTE_RATE)])
                    for e in entries]
        if removals:
            self.admin.AlterClientQuotas(admin_pb2.AlterClientQuotasRequest(alterations=removals), timeout=30)


def test_every_rpc_from_every_identity_leaves_the_cluster_whole(cluster, tmp_path):
    kept = write_kept_records(cluster)
    watch = ClusterWatch(cluster, KEPT_TOPIC, PARTITIONS)
    only = os.environ.get("FUZZ_ONLY", "")
    targets = [t for t in all_targets(list(cluster.processes)) if only in t.path]
    playground = Playground(cluster)
    campaign = Campaign(cluster, identities(cluster, tmp_path), targets, watch, playground.context,
                        int(os.environ.get("FUZZ_SEED", "55")), Budget(), after_batch=playground.clear)
    try:
        campaign.run(MINUTES)
    finally:
        campaign.close()
        report = Path(os.environ.get("FUZZ_REPORT", tmp_path / "fuzz-report.json"))
        campaign.write_report(report)
        summary = campaign.report()
        print(f"\nfuzz: seed {summary['run_seed']}, {summary['minutes']} min, {summary['rounds']} round(s), "
              f"{summary['batches']} batches, {summary['messages']} messages {summary['messages_by_kind']} "
              f"to {summary['methods']} methods; per identity {summary['messages_per_identity']}; report {report}")
        print(campaign.tally.table())
        for finding in campaign.findings:
            print(f"FINDING {finding.what} as {finding.identity} at {finding.method} (round {finding.round}, "
                  f"seed {finding.seed}): {finding.detail[:3000]}\n  message: {finding.message}")
    assert not campaign.findings, f"{len(campaign.findings)} findings (printed above; report {report})"
    assert sorted(read_kept_records(cluster)) == sorted(kept), "every acknowledged record reads back"
    with zk_session(cluster) as zk:
        for p in range(PARTITIONS):
            wait_for_isr(cluster, zk, KEPT_TOPIC, {1, 2}, 60, partition=p)
    assert all(cluster.healthy(name) for name in cluster.processes if not name.startswith("zookeeper"))
    assert not watch.problems()
