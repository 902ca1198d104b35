"""Per-switch identities: a fabric CA and one key + certificate per daemon (X.509, EC P-256).

A daemon proves which switch it is with its certificate: the certificate's
only DNS subject alternative name is the switch's name, and the fabric's CA
signed it. A peer's switch name is taken from that name (``peer_name``),
never from a message field. Certificates carry both TLS client and server
usage, because every daemon is both.

``generate`` writes, into one directory:

* ``ca.pem`` (the fabric CA's certificate) and ``ca.key`` (its key: keep it
  off the switches; it is needed only to issue more certificates);
* ``<switch>.pem`` and ``<switch>.key`` for every switch of the fabric.

Keys are written with mode 0600. Existing files are never overwritten: a
second run issues only what is missing, with the same CA.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fabricmodel import Fabric

CA_CERT = "ca.pem"
CA_KEY = "ca.key"
DEFAULT_DAYS = 365


class CertError(ValueError):
    """Certificate files that cannot be used; the message names the file and the reason."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one daemon: the fabric's CA, this daemon's certificate and key."""

    ca: Path
    cert: Path
    key: Path

    def read(self) -> tuple[bytes, bytes, bytes]:
        """The three files' contents (ca, cert, key)."""
        return self.ca.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()

    @classmethod
    def in_dir(cls, directory: Path, switch: str) -> TlsFiles:
        """The files ``generate`` wrote for ``switch`` into ``directory``."""
        return cls(directory / CA_CERT, directory / f"{switch}.pem", directory / f"{switch}.key")


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write(path: Path, data: bytes, secret: bool) -> None:
    """Write a new file atomically; a key is created 0600 from the start."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as e:
        raise CertError(f"{path}: not a readable unencrypted PEM private key ({e})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CertError(f"{path}: expected an EC private key")
    return key


def _load_cert(path: Path) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError) as e:
        raise CertError(f"{path}: not a readable PEM certificate ({e})") from None


def _ca(fabric: str, key: ec.EllipticCurvePrivateKey, days: int) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, fabric),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"SyncMesh CA of {fabric}")])
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))


def issue(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, fabric: str,
          switch: str, key: ec.EllipticCurvePrivateKey, days: int = DEFAULT_DAYS
          ) -> x509.Certificate:
    """A certificate for ``switch`` (its only DNS name) signed by the fabric CA."""
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, fabric),
                         x509.NameAttribute(NameOID.COMMON_NAME, switch)])
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(switch)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=True, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))


def generate(fabric: Fabric, out: Path, days: int = DEFAULT_DAYS,
             switches: Iterable[str] | None = None) -> list[Path]:
    """Write the CA and every switch's key + certificate into ``out``; returns what was created.

    Files already there are kept (an existing CA signs the new certificates).
    """
    if days < 1:
        raise CertError(f"days: must be >= 1, got {days}")
    names = [s.name for s in fabric.switches] if switches is None else list(switches)
    unknown = sorted(set(names) - {s.name for s in fabric.switches})
    if unknown:
        raise CertError(f"no switch {', '.join(unknown)} in fabric {fabric.name!r}")
    out.mkdir(parents=True, exist_ok=True)
    created: list[Path] = []
    ca_cert_path, ca_key_path = out / CA_CERT, out / CA_KEY
    if ca_cert_path.exists() or ca_key_path.exists():
        if not (ca_cert_path.exists() and ca_key_path.exists()):
            raise CertError(f"{out}: {CA_CERT} and {CA_KEY} must both exist or neither")
        ca_cert, ca_key = _load_cert(ca_cert_path), _load_key(ca_key_path)
    else:
        ca_key = _key()
        ca_cert = _ca(fabric.name, ca_key, days)
        _write(ca_key_path, _pem_key(ca_key), secret=True)
        _write(ca_cert_path, ca_cert.public_bytes(serialization.Encoding.PEM), secret=False)
        created += [ca_cert_path, ca_key_path]
    for name in names:
        files = TlsFiles.in_dir(out, name)
        if files.cert.exists() and files.key.exists():
            continue
        key = _key()
        cert = issue(ca_cert, ca_key, fabric.name, name, key, days)
        _write(files.key, _pem_key(key), secret=True)
        _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), secret=False)
        created += [files.cert, files.key]
    return created


def cert_name(cert: x509.Certificate) -> str | None:
    """The switch a certificate names: its one DNS subject alternative name (None otherwise)."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    names = san.get_values_for_type(x509.DNSName)
    return names[0] if len(names) == 1 else None


def check(files: TlsFiles, switch: str) -> None:
    """Refuse, with the file and the reason, files that cannot prove ``switch``'s identity."""
    for path in (files.ca, files.cert, files.key):
        if not path.is_file():
            raise CertError(f"{path}: no such file (create them with `syncmesh certs`)")
    ca, cert, key = _load_cert(files.ca), _load_cert(files.cert), _load_key(files.key)
    name = cert_name(cert)
    if name != switch:
        raise CertError(f"{files.cert}: certificate names {name!r}, not this daemon's switch "
                        f"{switch!r}")
    ca_key = ca.public_key()
    if not isinstance(ca_key, ec.EllipticCurvePublicKey):
        raise CertError(f"{files.ca}: expected an EC CA key")
    try:
        ca_key.verify(cert.signature, cert.tbs_certificate_bytes,
                      ec.ECDSA(cert.signature_hash_algorithm or hashes.SHA256()))
    except InvalidSignature:
        raise CertError(f"{files.cert}: not signed by the CA in {files.ca}") from None
    if cert.public_key() != key.public_key():
        raise CertError(f"{files.key}: does not belong to the certificate {files.cert}")
    now = dt.datetime.now(dt.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise CertError(f"{files.cert}: not valid now (valid {cert.not_valid_before_utc:%Y-%m-%d}"
                        f" .. {cert.not_valid_after_utc:%Y-%m-%d})")
