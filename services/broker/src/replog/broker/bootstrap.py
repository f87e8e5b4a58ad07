"""Wires the broker's adapters: logs and replicas, ZooKeeper (registration, watches),
replica fetchers, the ISR sender, checkpoints, gRPC services, tracing and metrics.
Nothing is built at import time; `start()` builds it all in dependency order and
`stop()` takes it down in reverse (controlled shutdown first).

A broker listens before it joins ZooKeeper, however long ZooKeeper takes to answer: its health
says NOT_SERVING and its services refuse with UNAVAILABLE (readiness_gate.py) until then. It
never gives up waiting: a broker that exited when ZooKeeper was down left the partitions it
alone held offline until a person started it again."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

from replog.broker.config import BrokerConfig, log_directories, producer_state_limits, request_bytes_max
from replog.broker.control.controlled_shutdown import controlled_shutdown
from replog.broker.control.controller_fence import ControllerFence, zookeeper_controller_epoch
from replog.broker.control.controller_link import ControllerLink
from replog.broker.control.isr_changes import IsrChangeSender
from replog.broker.control.lost_marks import LostMarks, rewrite_registration
from replog.broker.control.offline_dirs import OfflineDirs
from replog.broker.control.registration import register_broker
from replog.broker.control.resignations import Resignations
from replog.broker.control.state_changes import ReplicaStateChanges
from replog.broker.control.topic_configs import TopicConfigs
from replog.broker.core.effects import NO_EFFECTS
from replog.broker.entrypoints.control_servicer import BrokerControlServicer
from replog.broker.entrypoints.log_servicer import LogServicer
from replog.broker.entrypoints.metadata_cache import MetadataCache
from replog.broker.entrypoints.partition_counts import PARTITION_COUNTS
from replog.broker.entrypoints.produce_edge import ProduceEdge
from replog.broker.entrypoints.replication_servicer import ReplicationServicer
from replog.broker.entrypoints.servicers import bindings
from replog.broker.groups.wiring import build_groups
from replog.broker.kafka.wiring import build_kafka_listener
from replog.broker.log import LogConfig
from replog.broker.log.descriptors import process_budget
from replog.broker.produce.delayed_produces import DelayedProduces
from replog.broker.produce.produce_handler import ProduceHandler
from replog.broker.produce.producer_ids import ProducerIdAllocator
from replog.broker.quotas.client_quotas import ClientQuotas
from replog.broker.quotas.edge import QuotaGate
from replog.broker.replicas.assignments import assigned_here
from replog.broker.maintenance.checkpointer import Checkpointer, ControlBursts
from replog.broker.logdirs.fsync_probe import FsyncProbe
from replog.broker.logdirs.log_dirs import DuplicateReplicaError, NoOnlineLogDirError
from replog.broker.maintenance.producer_expiry import ProducerExpiry
from replog.broker.logdirs.recovery_losses import report_recovery
from replog.broker.replicas.replica_manager import ReplicaManager
from replog.broker.maintenance.log_cleaner import LogCleaner
from replog.broker.maintenance.retention_rounds import RetentionRounds
from replog.broker.maintenance.scrubber import Scrubber
from replog.broker.replication.fetcher import FetchSettings, ReplicaFetcher
from replog.broker.replication.fetcher_manager import FetcherManager
from replog.broker.replication.replication_throttle import ReplicationThrottle
from replog.broker.runtime.halt import halt_on_offline_dir
from replog.broker.runtime.metrics import BrokerMetrics
from replog.broker.runtime.turn import Turn
from replog.broker.runtime.wait_slots import WaitSlots
from replog.common import gc_policy, rpc_spans, telemetry
from replog.common.acls.core.authorizer import Authorizer
from replog.common.acls.enforcement import Enforcer
from replog.common.acls.store import AclWatcher
from replog.common.channels import ChannelCache
from replog.common.clock import SystemClock
from replog.common.grpc_server import start_server
from replog.common.metrics import table as metric_table
from replog.common.metrics.process import ProcessMetrics, release
from replog.common.quotas.store import QuotaWatcher
from replog.common.readiness_gate import ReadinessGate
from replog.common.refusal_log import RefusalLog
from replog.common.request_bounds import PartitionsBound
from replog.common.security.principal import Principal
from replog.common.security.settings import tls_files
from replog.common.service import StartupError
from replog.common.zk import schema
from replog.common.zk.auth import ZkEndpoint, load_credentials
from replog.common.zk.client import ZkClient
from replog.common.zk.schema import znode_acls
from replog.common.zk.tls import zookeeper_tls_files
from replog.v1 import broker_control_pb2

log = logging.getLogger(__name__)

SERVER_STOP_GRACE_S = 2.0
CONTROL_SERVICE = broker_control_pb2.DESCRIPTOR.services_by_name["BrokerControlService"].full_name
DEFAULT_FLUSH_CHECK_MS = 1000


class BrokerProcess:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.clock = SystemClock()
        credentials = load_credentials(config.zookeeper_credentials_file, znode_acls.broker_identity(config.broker_id))
        self.zk = ZkClient(
            ZkEndpoint(config.zookeeper, credentials, zookeeper_tls_files(config)),
            session_timeout_ms=config.zookeeper_session_timeout_ms,
            connect_backoff_max_ms=config.zookeeper_connect_backoff_max_ms,
        )
        self.gate = ReadinessGate(f"broker {config.broker_id} is waiting for ZooKeeper at {config.zookeeper}")
        # None with --insecure; else the certificate must be valid for the host peers dial
        self.tls = tls_files(config, Principal("broker", str(config.broker_id)), config.published_host)
        self.channels = ChannelCache(self.tls)
        self.authorizer = Authorizer(config.super_user_principals)
        self.acl_watcher = AclWatcher(self.zk, self.authorizer)
        self.quota_watcher: QuotaWatcher | None = None  # built with the services (_build)
        self.server = None
        self.kafka = None  # the Kafka listener (kafka/), when kafka_port is not -1
        self.broker_epoch = 0
        self._joined = False  # start() ran to the end: every component is up, for stop() to take down
        self._stopping = False
        self._session_lost = False
        self._registration_lock = threading.Lock()  # its data is rewritten by the lost marks and offline dirs

    # --- start -------------------------------------------------------------------------

    def start(self, stopping: threading.Event) -> bool:
        """Load the logs, listen, wait for ZooKeeper, then run and register. False when `stopping`
        was set before ZooKeeper answered: nothing but the server and the loaded logs was started."""
        config = self.config
        telemetry.init_tracing("replog-broker", str(config.broker_id), config.trace_dir)
        self.metrics = BrokerMetrics()
        process_metrics = ProcessMetrics(metric_table.BROKER_INFO, {
            "broker_id": str(config.broker_id), "rack": config.rack, "version": release("replog-broker")})
        process_metrics.watch_certificates(self.tls)
        self.zk.add_session_listener(process_metrics.on_zookeeper_session)
        self.replicas = self._load_replicas()
        stall_max_ms = config.log_dir_fsync_stall_max_ms
        self.fsync_probes = []
        for directory in self.replicas.directories:
            directory.space.free_bytes_min = config.log_dir_free_bytes_min
            directory.space.refresh()
            self.fsync_probes.append(FsyncProbe(directory.failures, interval_ms=max(stall_max_ms // 3, 1),
                                                stall_max_ms=stall_max_ms))
        self.metrics.watch_log_dirs(self.replicas.directories)
        report_recovery(self.replicas, self.metrics)
        self.lost_marks = LostMarks(self.replicas.lost_records, self._log_end_offset)
        self._lost_marks_stale = False  # the registration still names a replica that caught up
        self._build()
        self.server = start_server(
            bindings(rpc_spans.traced_servicer(self.control_servicer, CONTROL_SERVICE), self.replication_servicer,
                     self.log_servicer, self.group_servicer),
            host=config.host, port=config.port, max_workers=config.grpc_workers, serving=False,
            interceptors=[self.gate, PartitionsBound(PARTITION_COUNTS, config.request_partitions_max,
                                                     "request_partitions_max", self.refusals)],
            tls=self.tls, receive_bytes_max=request_bytes_max(config),
            concurrent_rpcs_max=config.grpc_concurrent_rpcs_max,
            edge=config, enforcer=Enforcer(self.authorizer), super_users=config.super_user_principals,
        )
        self.kafka = build_kafka_listener(config, self.tls, self.authorizer, metadata=self.metadata,
                                          log_servicer=self.log_servicer, group_servicer=self.group_servicer,
                                          zk=self.zk, topic_config_defaults=self._topic_config_defaults,
                                          topic_configs=self.topic_configs,
                                          request_bytes_max=request_bytes_max(config))
        # Scraped from now on, also while waiting for ZooKeeper (replog_zookeeper_connected says so).
        metrics_port = telemetry.start_metrics_server(config.metrics_port, config.host)
        if not self.zk.connect(stopping):
            return False
        self.zk.ensure_layout()
        self.acl_watcher.start()  # the first read before clients are served
        self.quota_watcher.start()
        self.replicas.delete_unassigned(assigned_here(self.zk, config.broker_id))
        gc_policy.settle()  # the loaded replicas live as long as the process
        self.gate.open()
        if self.kafka is not None:
            self.kafka.start()  # bound already (its port is in the registration); serves from now on
        self.metrics.watch_partitions(lambda: self.replicas.summary(self.topic_configs.min_insync_replicas))
        self.controller.start()
        self.throttle.watch(self.zk)
        self.isr_changes.start()
        self.checkpointer.start()
        if self.log_cleaner is not None:
            self.log_cleaner.start()
        for probe in self.fsync_probes:
            probe.start()
        self.groups.start()
        self._register(metrics_port)
        self.server.set_serving(True)  # healthy means registered: peers and the controller can see it
        self.zk.add_session_listener(self._on_session)
        self._joined = True
        log.info("broker %d up: grpc %s:%d (advertised as %s), kafka %s, metrics %d, rack %r, %d local replicas",
                 config.broker_id, config.host, self.server.port, config.published_host,
                 self.kafka.port if self.kafka is not None else "off", metrics_port, config.rack,
                 len(self.replicas.topic_partitions()))
        return True

    def _load_replicas(self) -> ReplicaManager:
        config = self.config
        log_config = LogConfig(
            segment_bytes=config.segment_bytes,
            max_batch_bytes=config.message_max_bytes,
            flush_messages=config.flush_messages or None,
            flush_interval_ms=config.flush_interval_ms or None,
            retention_ms=None if config.log_retention_ms < 0 else config.log_retention_ms,
            retention_bytes=None if config.log_retention_bytes < 0 else config.log_retention_bytes,
            segment_ms=config.log_roll_ms,
            cleanup_policy=config.log_cleanup_policy,
            min_cleanable_dirty_ratio=config.log_cleaner_min_cleanable_ratio,
            min_compaction_lag_ms=config.log_cleaner_min_compaction_lag_ms,
            max_compaction_lag_ms=config.log_cleaner_max_compaction_lag_ms,
            delete_retention_ms=config.log_cleaner_delete_retention_ms,
            fsync_on_roll=False,  # the checkpointer fsyncs rolled segments off the append path
            remove_deleted_at_once=False,  # deleted segments' files are removed off the partition's lock
        )
        budget = process_budget()
        if budget is not None:
            self.metrics.watch_descriptors(budget)
            log.info("the hosted logs may hold %d file descriptors (the open-files limit less headroom)",
                     budget.descriptors_max)
        replicas = ReplicaManager(broker_id=config.broker_id, log_dirs=log_directories(config), log_config=log_config,
                                  clock=self.clock, producer_state_limits=producer_state_limits(config),
                                  descriptor_budget=budget)
        for directory in replicas.directories:
            directory.failures.on_descriptor_shortage = self.metrics.out_of_descriptors.inc
        try:
            replicas.load()  # a directory that cannot be read goes offline; the broker starts on the others
        except (NoOnlineLogDirError, DuplicateReplicaError) as exc:
            raise StartupError(str(exc)) from None
        except OSError as exc:  # EMFILE / ENFILE (log_dir_failures.py): no disk is at fault
            raise StartupError(f"cannot open the local logs: {exc}; raise the open-files limit") from None
        return replicas

    def _build(self) -> None:
        config, clock, metrics, replicas = self.config, self.clock, self.metrics, self.replicas
        turn = Turn()  # the process's one turn (turn.py)
        self.refusals = RefusalLog(logging.getLogger("replog.broker.refusals"), lambda: clock.monotonic_ms() / 1000)
        self.metadata = MetadataCache()
        self.topic_configs = TopicConfigs(self.zk, default_min_insync_replicas=config.min_insync_replicas,
                                          default_log_config=replicas.log_config_of(""),
                                          on_log_config=replicas.apply_log_config,
                                          on_min_insync_replicas=replicas.apply_min_insync_replicas,
                                          fsync_each_append_always=config.fsync_acks_all)
        replicas.log_config_of = self.topic_configs.log_config  # new replicas open with their topic's settings
        self.delayed_produces = DelayedProduces(replicas.produce_progress, clock)
        self.controller = ControllerLink(self.zk, self.channels)
        self.offline_dirs = OfflineDirs(replicas, halt=halt_on_offline_dir(self.zk.stop), record=self._record_offline,
                                        controller=self.controller, broker_id=config.broker_id,
                                        broker_epoch_of=lambda: self.broker_epoch)
        self.offline_dirs.connect()
        self.resignations = Resignations(lookup=replicas.get, controller=self.controller,
                                         broker_id=config.broker_id, broker_epoch_of=lambda: self.broker_epoch)
        settings = FetchSettings(config.broker_id, config.replica_fetch_wait_max_ms, config.replica_fetch_max_bytes,
                                 config.replica_fetch_max_bytes)

        def make_fetcher(leader_id: int, fetcher_id: int) -> ReplicaFetcher:
            return ReplicaFetcher(
                leader_id=leader_id, fetcher_id=fetcher_id, fetcher_count=config.num_replica_fetchers,
                settings=settings, lookup=replicas.get, address_of=self.metadata.broker_address,
                broker_epoch_of=lambda: self.broker_epoch, channels=self.channels, clock=clock, metrics=metrics,
                turn=turn, fsync_each_append=self.topic_configs.fsync_each_append,
            )

        self.fetchers = FetcherManager(make_fetcher, config.num_replica_fetchers)
        self.isr_changes = IsrChangeSender(
            broker_id=config.broker_id, broker_epoch_of=lambda: self.broker_epoch, hosted=replicas.hosted,
            lookup=replicas.get, controller=self.controller, replica_lag_time_max_ms=config.replica_lag_time_max_ms,
            clock=clock, metrics=metrics,
        )
        replicas.consequences.connect(delayed_produces=self.delayed_produces, isr_changes=self.isr_changes)
        self.state_changes = ReplicaStateChanges(
            broker_id=config.broker_id, replicas=replicas, fetchers=self.fetchers, topic_configs=self.topic_configs,
            now_ms=clock.monotonic_ms, turn=turn,
        )
        bursts = ControlBursts(clock)
        self.checkpointer = Checkpointer(
            replicas, clock, checkpoint_interval_ms=config.replica_high_watermark_checkpoint_interval_ms,
            flush_check_interval_ms=config.flush_interval_ms or DEFAULT_FLUSH_CHECK_MS,
            interval_flush=config.flush_interval_ms > 0, bursts=bursts,
            chores=(*(d.space.refresh for d in replicas.directories), self.metadata.refresh_digest,
                    self._refresh_lost_marks, ProducerExpiry(
                replicas.hosted, clock, metrics, check_interval_ms=config.producer_id_expiration_check_interval_ms),
                RetentionRounds(replicas.hosted, clock, check_interval_ms=config.log_retention_check_interval_ms,
                                partitions_per_round_max=config.log_retention_partitions_per_round_max,
                                metrics=metrics),
                Scrubber(replicas.hosted, clock, bytes_per_second=config.log_scrub_bytes_per_second,
                         on_corrupt=metrics.scrub_corrupt_segments.inc, resign=self.resignations.resign,
                         refetch=self.fetchers.position_changed)),
        )
        self.log_cleaner = LogCleaner(
            replicas.hosted, clock, keys_max=config.log_cleaner_keys_max,
            bytes_per_second=config.log_cleaner_io_max_bytes_per_second, backoff_ms=config.log_cleaner_backoff_ms,
            metrics=metrics) if config.log_cleaner_enable else None
        stopping = lambda: self._stopping  # noqa: E731
        self.control_servicer = BrokerControlServicer(
            state_changes=self.state_changes, metadata=self.metadata, broker_epoch_of=lambda: self.broker_epoch,
            fence=ControllerFence(zookeeper_controller_epoch(self.zk)), refusals=self.refusals, bursts=bursts)
        self.throttle = ReplicationThrottle(clock)
        self.replication_servicer = ReplicationServicer(
            broker_id=config.broker_id, lookup=replicas.get, clock=clock, metrics=metrics,
            fetch_bytes_max=config.replica_fetch_max_bytes, stopping=stopping, throttle=self.throttle, turn=turn,
        )
        wait_slots = WaitSlots(config.grpc_workers)
        produce = ProduceHandler(
            lookup=replicas.get, is_known=self.metadata.has_partition, topic_configs=self.topic_configs,
            delayed_produces=self.delayed_produces, metrics=metrics,
            batch_bytes_max=config.message_max_bytes, request_timeout_ms=config.request_timeout_ms,
            wait_slots=wait_slots, turn=turn, clock=clock,
        )
        self._topic_config_defaults = {**self.topic_configs.default_log_config.as_topic_configs(),
                                       "min.insync.replicas": str(config.min_insync_replicas)}
        quotas = ClientQuotas(clock, metrics, samples=config.quota_window_num,
                              sample_ms=config.quota_window_size_seconds * 1000)
        self.quota_watcher = QuotaWatcher(self.zk, quotas.replace)
        self.log_servicer = LogServicer(
            broker_id=config.broker_id, produce=ProduceEdge(produce, clock), lookup=replicas.get,
            hosted=replicas.hosted,
            metadata=self.metadata, producer_ids=ProducerIdAllocator(self.zk, config.broker_id), clock=clock,
            metrics=metrics, fetch_bytes_max=config.fetch_max_bytes, stopping=stopping, wait_slots=wait_slots,
            quotas=QuotaGate(quotas),
            topic_config_defaults=self._topic_config_defaults,
            checkpoint=lambda: replicas.write_checkpoints(flush_if_due=False, strict=True),
        )
        self.groups, self.group_servicer = build_groups(config, produce=produce, lookup=replicas.get,
                                                        metadata=self.metadata, zk=self.zk, clock=clock,
                                                        metrics=metrics)

    # --- registration --------------------------------------------------------------------

    def _register(self, metrics_port: int) -> None:
        config = self.config
        registration = schema.BrokerRegistration(
            broker_id=config.broker_id, host=config.published_host, port=self.server.port,
            rack=config.rack or None,
            metrics_port=metrics_port, timestamp_ms=int(time.time() * 1000),
            kafka_port=self.kafka.port if self.kafka is not None else 0,
            lost_partitions=self.lost_marks.partitions(), log_dirs=tuple(str(d) for d in log_directories(config)),
            unclean_start=not self.replicas.clean_start, min_insync_replicas_default=config.min_insync_replicas,
            **self._offline_fields(),
        )
        self._registration = registration
        self.broker_epoch = register_broker(self.zk, registration,
                                            wait_s=config.zookeeper_session_timeout_ms / 1000 + 2)

    def _offline_fields(self) -> dict:
        return dict(offline_log_dirs=self.offline_dirs.offline_dirs(),
                    offline_partitions=tuple((tp.topic, tp.partition) for tp in self.offline_dirs.offline_partitions()))

    def _record_offline(self, dirs, partitions) -> None:
        """OfflineDirs' `record`: the registration names the offline directories and their replicas."""
        if not self._joined:
            return  # the registration, when it is written, carries them
        with self._registration_lock:
            self._registration = dataclasses.replace(
                self._registration, offline_log_dirs=tuple(dirs),
                offline_partitions=tuple((tp.topic, tp.partition) for tp in partitions))
            self.zk.kazoo.set(schema.broker_path(self.config.broker_id), self._registration.encode())

    def _log_end_offset(self, topic_partition) -> int | None:
        hosted = self.replicas.get(topic_partition)
        return None if hosted is None else hosted.run(lambda h: (h.log.log_end_offset, NO_EFFECTS))

    def _refresh_lost_marks(self) -> None:
        """A checkpointer chore: drop caught-up replicas from the registration's lost marks (lost_marks.py)."""
        self._lost_marks_stale |= self.lost_marks.drop_caught_up()
        if not self._lost_marks_stale or not self._joined or self._stopping:
            return
        try:
            with self._registration_lock:
                self._registration = rewrite_registration(self.zk, self._registration, self.lost_marks.partitions())
            self._lost_marks_stale = False
        except Exception as exc:  # noqa: BLE001 - logged; the next round tries again
            log.warning("could not update the registration's lost partitions (trying again): %s", exc)

    def _on_session(self, state: str) -> None:
        """After a session expiry the registration is gone: register again (a new broker epoch)."""
        if state == "lost":
            self._session_lost = True
        elif state == "connected" and self._session_lost and not self._stopping:
            self._session_lost = False
            threading.Thread(target=self._reregister, name="reregister", daemon=True).start()

    def _reregister(self) -> None:
        registration = dataclasses.replace(self._registration, timestamp_ms=int(time.time() * 1000),
                                           lost_partitions=self.lost_marks.partitions(), **self._offline_fields())
        try:
            self.broker_epoch = register_broker(self.zk, registration,
                                                wait_s=self.config.zookeeper_session_timeout_ms / 1000 + 2)
        except Exception as exc:  # noqa: BLE001 - logged; the broker keeps serving what it has
            log.error("could not register again after the ZooKeeper session expired: %s", exc)

    # --- stop ----------------------------------------------------------------------------

    def stop(self) -> None:
        if self._stopping:
            return
        if self._joined and self.config.controlled_shutdown_enable and self.broker_epoch:
            self.state_changes.begin_shutdown()
            controlled_shutdown(self.controller, self.config.broker_id, self.broker_epoch)
        self._stopping = True
        if self._joined:
            self.groups.stop()
            self.delayed_produces.close()
            for hosted in self.replicas.hosted():
                hosted.wake()
            self.fetchers.stop()
            self.isr_changes.stop()
            self.checkpointer.stop()
            if self.log_cleaner is not None:
                self.log_cleaner.stop()
            self.offline_dirs.stop()
            self.resignations.stop()
            for probe in self.fsync_probes:
                probe.stop()
            self.replication_servicer.end_streams()
            self.log_servicer.end_streams()
        if self.kafka is not None:
            self.kafka.stop()
        if self.server is not None:
            self.server.stop(SERVER_STOP_GRACE_S)
            self.replicas.close()
        self.acl_watcher.stop()
        if self.quota_watcher is not None:
            self.quota_watcher.stop()
        self.channels.close()
        self.zk.stop()
        log.info("broker %d stopped", self.config.broker_id)
