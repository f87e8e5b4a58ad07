"""gRPC credentials from TLS files, reloaded when the files change, with no restart.

Server side: mutual TLS, TLS 1.2 or later (gRPC's own floor): a client must present a certificate
signed by the CA in `ca_file`, within its dates, or the handshake fails before any call is read.
The credentials are dynamic: gRPC asks `_fetch` before each new connection's handshake, which
compares the files' stamp (three stat calls) and, when they changed, hands gRPC the new
certificate, key and CA. Connections already open keep the material they shook hands with.

Client side: `ChannelCredentialsSource` builds channel credentials and looks at the files at most
once per `CHECK_INTERVAL_S`; its `generation` goes up when they changed, and `ChannelCache`
replaces the channels built before (channels.py).
"""

from __future__ import annotations

import logging
import threading
import time

import grpc

from replog.common.security.files import Material, TlsFiles, TlsFilesError

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 1.0


def _server_config(material: Material):
    return grpc.ssl_server_certificate_configuration([(material.key, material.certificate)],
                                                     root_certificates=material.ca)


class ReloadingServerCredentials:
    """Server credentials that require and verify a client certificate and follow the files."""

    def __init__(self, files: TlsFiles) -> None:
        self._files = files
        self._stamp = files.stamp()
        material = files.read()  # TlsFilesError at start: the process does not start half secure
        self._warned_stamp = None
        self.reloads = 0
        self.credentials = grpc.dynamic_ssl_server_credentials(
            _server_config(material), self._fetch, require_client_authentication=True)

    def _fetch(self):
        """Called by gRPC before each handshake: a new configuration when the files changed, else None."""
        try:
            stamp = self._files.stamp()
            if stamp == self._stamp:
                return None
            material = self._files.read()
        except TlsFilesError as exc:
            if stamp != self._warned_stamp:  # once per state of the files, not once per connection
                self._warned_stamp = stamp
                log.warning("TLS files changed but cannot be used yet, keeping the previous ones: %s", exc)
            return None
        except Exception:  # noqa: BLE001 - an exception here would fail the handshake; keep serving
            log.exception("reading the TLS files failed; keeping the previous ones")
            return None
        self._stamp = stamp
        self.reloads += 1
        log.info("TLS files changed: new connections use the new certificate (%s)", self._files.cert_file)
        return _server_config(material)


class ChannelCredentialsSource:
    """Channel credentials for outbound calls, rebuilt when the files changed (checked at most once per
    `CHECK_INTERVAL_S`)."""

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self._lock = threading.Lock()
        self._stamp = files.stamp()
        self._credentials = _channel_credentials(files.read())
        self._checked_s = time.monotonic()
        self.generation = 0

    def current(self) -> tuple[grpc.ChannelCredentials, int]:
        """The credentials to build a channel with, and their generation."""
        now = time.monotonic()
        if now - self._checked_s >= CHECK_INTERVAL_S:
            with self._lock:
                if now - self._checked_s >= CHECK_INTERVAL_S:
                    self._checked_s = now
                    self._reload_if_changed()
        return self._credentials, self.generation

    def _reload_if_changed(self) -> None:
        stamp = self.files.stamp()
        if stamp == self._stamp:
            return
        try:
            material = self.files.read()
        except TlsFilesError as exc:
            log.warning("TLS files changed but cannot be used yet, keeping the previous ones: %s", exc)
            return
        self._stamp = stamp
        self._credentials = _channel_credentials(material)
        self.generation += 1
        log.info("TLS files changed: new channels use the new certificate (%s)", self.files.cert_file)


def _channel_credentials(material: Material) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(root_certificates=material.ca, private_key=material.key,
                                        certificate_chain=material.certificate)


def secure_channel(address: str, files: TlsFiles, options=()) -> grpc.Channel:
    """A one-off channel to `address` with the certificate in `files` (for tools and tests)."""
    return grpc.secure_channel(address, _channel_credentials(files.read()), options=list(options))


def open_channel(address: str, files: TlsFiles | None, options=()) -> grpc.Channel:
    """`secure_channel`, or a plaintext channel when `files` is None (an --insecure cluster)."""
    if files is None:
        return grpc.insecure_channel(address, options=list(options))
    return secure_channel(address, files, options)
