"""`replog certs` and `replog zk-credentials`: files for real hosts, made offline, with clear refusals."""

from __future__ import annotations

import datetime
import json
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from replog.cli.main import main
from replog.common.zk.auth import digest_id, load_credentials


def replog(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def sans(path) -> tuple[list[str], list[str]]:
    certificate = x509.load_pem_x509_certificate(path.read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return (names.get_values_for_type(x509.UniformResourceIdentifier),
            [*names.get_values_for_type(x509.DNSName), *map(str, names.get_values_for_type(x509.IPAddress))])


def test_a_ca_and_a_broker_certificate_for_its_hosts(tmp_path, capsys):
    assert replog(capsys, "certs", "create-ca", "--out", str(tmp_path / "ca"), "--days", "30")[0] == 0
    code, out, _ = replog(capsys, "-o", "json", "certs", "issue", "broker/2", "--ca-dir", str(tmp_path / "ca"),
                          "--out", str(tmp_path / "b"), "--host", "broker-2.replog.svc", "--host", "10.0.0.12",
                          "--days", "7", "--key-type", "rsa-2048")
    assert code == 0
    files = json.loads(out)
    cert = tmp_path / "b" / "broker-2.pem"
    assert files["cert_file"] == str(cert) and files["ca_file"] == str(tmp_path / "ca" / "ca.pem")
    assert sans(cert) == (["replog://broker/2"], ["broker-2.replog.svc", "10.0.0.12"])
    certificate = x509.load_pem_x509_certificate(cert.read_bytes())
    assert (certificate.not_valid_after_utc - certificate.not_valid_before_utc).days == 7
    assert isinstance(certificate.public_key(), rsa.RSAPublicKey)
    assert stat.S_IMODE((tmp_path / "b" / "broker-2.key").stat().st_mode) == 0o600
    ca = x509.load_pem_x509_certificate((tmp_path / "ca" / "ca.pem").read_bytes())
    certificate.verify_directly_issued_by(ca)


def organisation_ca(directory):
    """An RSA CA made elsewhere, as an organisation's PKI would hand it over."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example Corp"),
                      x509.NameAttribute(NameOID.COMMON_NAME, "Example Corp Issuing CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now)
                   .not_valid_after(now + datetime.timedelta(days=90))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    directory.mkdir()
    (directory / "org-ca.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (directory / "org-ca.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                             serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption()))
    return directory / "org-ca.pem", directory / "org-ca.key", key


def test_an_organisations_own_rsa_ca_signs_a_controller_certificate(tmp_path, capsys):
    ca_cert, ca_key, key = organisation_ca(tmp_path / "org")
    code, _, err = replog(capsys, "certs", "issue", "controller/1", "--ca-cert", str(ca_cert), "--ca-key",
                          str(ca_key), "--out", str(tmp_path / "c"), "--host", "ctl-1.example.net")
    assert code == 0, err
    certificate = x509.load_pem_x509_certificate((tmp_path / "c" / "controller-1.pem").read_bytes())
    key.public_key().verify(certificate.signature, certificate.tbs_certificate_bytes, padding.PKCS1v15(),
                            certificate.signature_hash_algorithm)
    assert sans(tmp_path / "c" / "controller-1.pem") == (["replog://controller/1"], ["ctl-1.example.net"])


def test_a_signing_request_names_the_identity_and_hosts(tmp_path, capsys):
    assert replog(capsys, "certs", "request", "gateway/1", "--out", str(tmp_path), "--host", "gw.example.net")[0] == 0
    csr = x509.load_pem_x509_csr((tmp_path / "gateway-1.csr").read_bytes())
    names = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.UniformResourceIdentifier) == ["replog://gateway/1"]
    assert names.get_values_for_type(x509.DNSName) == ["gw.example.net"] and csr.is_signature_valid


@pytest.mark.parametrize("argv, message", [
    (["certs", "issue", "broker/2", "--out", "x", "--host", "h"], "name the CA: --ca-dir DIR"),
    (["certs", "issue", "broker/2", "--ca-dir", "{tmp}/none", "--out", "x", "--host", "h"], "cannot read"),
    (["certs", "issue", "broker/2", "--ca-dir", "{tmp}/ca", "--out", "{tmp}/o"], "needs at least one --host"),
    (["certs", "issue", "broker/2", "--ca-cert", "{tmp}/o/user-a.pem", "--ca-key", "{tmp}/o/user-a.key",
      "--out", "{tmp}/o", "--host", "h"], "is not a CA certificate"),
    (["certs", "issue", "broker/2", "--ca-cert", "{tmp}/ca/ca.pem", "--ca-key", "{tmp}/o/user-a.key",
      "--out", "{tmp}/o", "--host", "h"], "is not the key of"),
    (["certs", "create-ca", "--out", "{tmp}/ca"], "exists: a new CA would orphan"),
    (["certs", "show", "{tmp}/ca/ca.key"], "is not a PEM certificate"),
])
def test_bad_input_is_one_line_naming_what_to_do(argv, message, tmp_path, capsys):
    assert replog(capsys, "certs", "create-ca", "--out", str(tmp_path / "ca"))[0] == 0
    assert replog(capsys, "certs", "issue", "user/a", "--ca-dir", str(tmp_path / "ca"), "--out", str(tmp_path / "o"))[0] == 0
    code, _, err = replog(capsys, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert code == 1 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [["certs", "issue", "broker/two", "--out", "x"], ["certs", "issue", "admin/1"],
                                  ["zk-credentials", "--out", "x", "--brokers", "1,1"],
                                  ["certs", "create-ca", "--out", "x", "--days", "0"]])
def test_malformed_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2


def test_zookeeper_credentials_for_every_process_and_another_broker_later(tmp_path, capsys):
    out = tmp_path / "zk"
    code, printed, _ = replog(capsys, "-o", "json", "zk-credentials", "--out", str(out), "--brokers", "1,2")
    assert code == 0
    result = json.loads(printed)
    assert result["files"] == ["broker-1", "broker-2", "controller", "gateway", "super", "super.digest"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    broker = load_credentials(str(out / "broker-2"))
    assert [user for user, _ in broker.identities] == ["broker-2", "brokers"]
    controller = load_credentials(str(out / "controller"))
    assert controller.digest_of("broker-2") == broker.digest_of("broker-2")
    super_user = load_credentials(str(out / "super"))
    assert result["zookeeper_jvm_flag"].endswith("superDigest=" + digest_id(*super_user.identities[0]))
    assert (out / "super.digest").read_text() == digest_id(*super_user.identities[0]) + "\n"
    before = {name: (out / name).read_text() for name in ("broker-1", "gateway")}
    assert replog(capsys, "zk-credentials", "--out", str(out), "--brokers", "1,2,3")[0] == 0
    assert {name: (out / name).read_text() for name in before} == before
    assert load_credentials(str(out / "controller")).digest_of("broker-3") is not None
