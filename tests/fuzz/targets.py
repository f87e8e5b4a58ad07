"""Who the fuzz calls as, which server serves each method, and how one call of any kind is made.

Every method of every service in the protos (and the standard health and reflection services every
server adds) is a `Target`: its path, its descriptor, its streaming kind and the processes that
serve it. `call` sends one request (or a short stream of them) with a deadline and returns the
status code: OK or the typed code the server answered.

`defang` lists the few acts an identity is *entitled* to that would wreck the cluster on purpose,
which the fuzz does not commit (it checks that a caller cannot do what it may not, not that an
entitled caller cannot do harm): at the live controller epoch, the controller's UpdateMetadata (its
word on every live broker and partition) and its LeaderAndIsr with `init` (the whole list of what a
broker hosts: the broker deletes every replica not listed); a broker's ControlledShutdown of itself
at its live broker epoch; the operator's election of every partition's leader at once.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Sequence

import grpc
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

import replog.v1
from replog.common.security.principal import Principal
from replog.common.security.rules import decide

from .messages import Context, message_class

CALL_DEADLINE_S = 10.0
SERVER_STREAM_DEADLINE_S = 3.0  # a watch of a made-up service answers once, then waits for a change that never comes
STREAM_ANSWERS_MAX = 5  # a server stream (a health watch, a topology export) is read this far, then cancelled

BROKER_SERVICES = ("replog.v1.LogService", "replog.v1.BrokerControlService", "replog.v1.ReplicationService",
                   "replog.v1.GroupService")
EVERY_SERVER = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection")


@dataclass(frozen=True)
class Identity:
    """A caller: its principal and the TLS files of its certificate."""

    label: str
    principal: Principal
    files: object  # TlsFiles


@dataclass(frozen=True)
class Target:
    path: str
    method: MethodDescriptor
    servers: tuple[str, ...]  # process names, tried in turn

    @property
    def service(self) -> str:
        return self.method.containing_service.full_name

    def entitled(self, principal: Principal) -> bool:
        """The method table lets this kind of caller in (a user's ACLs are judged later, per request)."""
        return decide(principal, self.path) is None


def all_targets(process_names: Sequence[str]) -> list[Target]:
    """Every method of every service the cluster's servers offer, with the processes that serve it."""
    modules = [importlib.import_module(f"replog.v1.{m.name}") for m in pkgutil.iter_modules(replog.v1.__path__)
               if m.name.endswith("_pb2")] + [health_pb2, reflection_pb2]
    targets = []
    for module in modules:
        for service in module.DESCRIPTOR.services_by_name.values():
            servers = _servers_of(service.full_name, process_names)
            targets += [Target(f"/{service.full_name}/{m.name}", m, servers) for m in service.methods]
    return sorted(targets, key=lambda t: t.path)


def _servers_of(service: str, names: Sequence[str]) -> tuple[str, ...]:
    if service in EVERY_SERVER:
        return tuple(n for n in names if not n.startswith("zookeeper"))
    role = {"replog.v1.ControllerService": "controller", "replog.v1.AdminService": "gateway"}.get(
        service, "broker" if service in BROKER_SERVICES else None)
    assert role is not None, f"which process serves {service}? (a new service: add it here)"
    return tuple(n for n in names if n.startswith(role + "-"))


def defang(target: Target, request: Message, context: Context) -> Message:
    """The request, minus the few entitled acts that would wreck the cluster by design (module docstring)."""
    name = target.method.name
    if name == "UpdateMetadata" and request.controller_epoch == context.controller_epoch:
        request.controller_epoch = context.controller_epoch + 1  # an epoch ZooKeeper has not confirmed
    elif name == "LeaderAndIsr" and request.controller_epoch == context.controller_epoch:
        request.init = False
    elif name == "ControlledShutdown" and not request.partitions:
        request.broker_epoch = 0  # refused as stale: the broker stays in the cluster
    elif name == "ElectLeaders":
        request.all = False
    return request


def call(channel: grpc.Channel, target: Target, requests: list[Message]) -> grpc.StatusCode:
    """Send `requests` (one for a unary request, a short stream otherwise); the call's status."""
    method = target.method
    serialize = message_class(method.input_type).SerializeToString
    deserialize = message_class(method.output_type).FromString
    try:
        if not method.client_streaming and not method.server_streaming:
            channel.unary_unary(target.path, serialize, deserialize)(requests[0], timeout=CALL_DEADLINE_S)
        elif method.client_streaming and not method.server_streaming:
            channel.stream_unary(target.path, serialize, deserialize)(iter(requests), timeout=CALL_DEADLINE_S)
        else:
            opener: Callable = (channel.stream_stream if method.client_streaming else channel.unary_stream)(
                target.path, serialize, deserialize)
            answers = opener(iter(requests) if method.client_streaming else requests[0],
                             timeout=CALL_DEADLINE_S if method.client_streaming else SERVER_STREAM_DEADLINE_S)
            _read_some(answers)
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def _read_some(answers) -> None:
    for count, _ in enumerate(answers, start=1):
        if count >= STREAM_ANSWERS_MAX:
            answers.cancel()  # a stream that would go on (a watch): enough of it was read
            return
