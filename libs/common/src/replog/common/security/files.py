"""The three PEM files a process's TLS uses, and noticing when they change on disk.

`TlsFiles` names them: the CA certificate(s) peers must be signed by, this process's certificate,
its key. `stamp` is what says "changed": each file's (inode, size, mtime) -- a rename over the file,
as certificate tools write, changes the inode even within one mtime tick. `read` returns the
material only when the certificate and the key belong together, so a reload that catches a
rotation half written (new key, old certificate) keeps the old material and tries again later.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization


class TlsFilesError(Exception):
    """A TLS file is missing or unreadable, or the certificate and key do not match."""


@dataclass(frozen=True)
class Material:
    ca: bytes
    certificate: bytes
    key: bytes


@dataclass(frozen=True)
class TlsFiles:
    ca_file: str
    cert_file: str
    key_file: str

    def paths(self) -> tuple[str, str, str]:
        return (self.ca_file, self.cert_file, self.key_file)

    def stamp(self) -> tuple:
        """Changes whenever one of the files is replaced or rewritten (None for a missing file)."""
        marks = []
        for path in self.paths():
            try:
                st = os.stat(path)
            except OSError:
                marks.append(None)
                continue
            marks.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return tuple(marks)

    def read(self) -> Material:
        """The three files' bytes; raises TlsFilesError naming the file at fault."""
        contents = []
        for what, path in zip(("CA certificate", "certificate", "key"), self.paths()):
            try:
                with open(path, "rb") as handle:
                    contents.append(handle.read())
            except OSError as exc:
                raise TlsFilesError(f"cannot read the {what} file {path}: {exc.strerror or exc}") from None
        material = Material(*contents)
        _check_pair(material, self)
        return material


def _check_pair(material: Material, files: TlsFiles) -> None:
    try:
        certificate = x509.load_pem_x509_certificate(material.certificate)
    except ValueError:
        raise TlsFilesError(f"{files.cert_file} is not a PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(material.key, password=None)
    except (ValueError, TypeError):
        raise TlsFilesError(f"{files.key_file} is not an unencrypted PEM private key") from None
    if certificate.public_key().public_numbers() != key.public_key().public_numbers():
        raise TlsFilesError(f"the key {files.key_file} does not belong to the certificate {files.cert_file}")
    try:
        x509.load_pem_x509_certificates(material.ca)
    except ValueError:
        raise TlsFilesError(f"{files.ca_file} is not a PEM certificate") from None
