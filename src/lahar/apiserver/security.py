"""Per-data-dir TLS material, the bearer token, and the kubeconfig that carries them.

On first start the server makes a private CA, a serving certificate for the
loopback names (plus any address the user binds), and a random token; later
starts reuse them, so a kubeconfig written once keeps working across restarts.
Private keys and the token are written with mode 0600.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Credentials:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    token: str


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _san(names: list[str]) -> x509.SubjectAlternativeName:
    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return x509.SubjectAlternativeName(entries)


def _make_ca(pki: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lahar-ca")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    (pki / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(
        pki / "ca.key",
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    return cert, key


def _load_ca(pki: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


def _serving_names_ok(cert_path: Path, names: list[str]) -> bool:
    if not cert_path.exists():
        return False
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    have = {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    have |= set(san.get_values_for_type(x509.DNSName))
    fresh = cert.not_valid_after_utc > dt.datetime.now(dt.UTC) + dt.timedelta(days=30)
    return fresh and all(str(n) in have for n in names)


def ensure_credentials(data_dir: Path, extra_names: tuple[str, ...] = ()) -> Credentials:
    """Create (once) and return the CA, serving certificate and token under ``data_dir/pki``."""
    pki = data_dir / "pki"
    pki.mkdir(parents=True, exist_ok=True, mode=0o700)
    if (pki / "ca.crt").exists() and (pki / "ca.key").exists():
        ca_cert, ca_key = _load_ca(pki)
    else:
        ca_cert, ca_key = _make_ca(pki)
    names = list(dict.fromkeys([*LOOPBACK_NAMES, *extra_names]))
    if not _serving_names_ok(pki / "apiserver.crt", names):
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lahar-apiserver")]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=825))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_san(names), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        (pki / "apiserver.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_private(
            pki / "apiserver.key",
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
        )
    token_path = pki / "token"
    if not token_path.exists():
        _write_private(token_path, secrets.token_urlsafe(32).encode())
    return Credentials(
        pki / "ca.crt", pki / "apiserver.crt", pki / "apiserver.key", token_path.read_text().strip()
    )


def write_kubeconfig(
    path: Path, server: str, creds: Credentials, *, context: str = "lahar"
) -> None:
    """A kubeconfig with the CA inline and the bearer token, mode 0600."""
    ca = base64.b64encode(creds.ca_cert.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": context, "cluster": {"server": server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": f"{context}-admin", "user": {"token": creds.token}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": f"{context}-admin", "namespace": "default"},
            }
        ],
        "current-context": context,
        "preferences": {},
    }
    tmp = path.with_suffix(".tmp")
    _write_private(tmp, yaml.safe_dump(config, sort_keys=False).encode())
    os.replace(tmp, path)
