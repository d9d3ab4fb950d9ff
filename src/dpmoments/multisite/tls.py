"""Credentials: a throw-away CA, server and site certificates and SuperNode keys for trials and tests;
the checks a certificate, its key and a CA get before gRPC is started with them.

A real deployment uses its institutions' own CA; these helpers make one for localhost
trials (``dpmoments aggregate --make-test-ca``) and for the tests. The gRPC transport
authenticates a site by the certificate its CA signed for it (common name = site name);
Flower authenticates a SuperNode by an ECDSA key registered with the SuperLink.
"""

import datetime
import ipaddress
from pathlib import Path

__all__ = ["make_ca", "make_site_cert", "make_node_key", "check_pair", "check_roots", "read_credentials",
           "check_node_key"]


def _name(cn):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(path, key):
    from cryptography.hazmat.primitives import serialization

    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _cert(subject, issuer, public_key, signing_key, days, extensions):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=days)))
    for ext, critical in extensions:
        builder = builder.add_extension(ext, critical=critical)
    return builder.sign(signing_key, hashes.SHA256())


def make_ca(directory, hosts=("127.0.0.1", "localhost"), days=2):
    """A throw-away CA and a server certificate for ``hosts`` (tests and localhost trials only).

    Returns ``{"ca": ca.crt, "cert": server.pem, "key": server.key, "ca_key": ca.key}``.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    usage = x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                          decipher_only=False)
    ca = _cert(_name("dpmoments test CA"), _name("dpmoments test CA"), ca_key.public_key(), ca_key, days,
               [(x509.BasicConstraints(ca=True, path_length=0), True), (usage, True)])
    key = ec.generate_private_key(ec.SECP384R1())
    san = []
    for h in hosts:
        try:
            san.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            san.append(x509.DNSName(h))
    cert = _cert(_name(hosts[0]), ca.subject, key.public_key(), ca_key, days,
                 [(x509.SubjectAlternativeName(san), False), (x509.BasicConstraints(ca=False, path_length=None), True)])
    paths = {"ca": d / "ca.crt", "cert": d / "server.pem", "key": d / "server.key", "ca_key": d / "ca.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(paths["key"], key)
    _write_key(paths["ca_key"], ca_key)
    return paths


def make_site_cert(ca_paths, site, directory, days=2):
    """A client certificate (common name = ``site``) signed by the CA of :func:`make_ca`; ``(cert, key)``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca = x509.load_pem_x509_certificate(Path(ca_paths["ca"]).read_bytes())
    ca_key = serialization.load_pem_private_key(Path(ca_paths["ca_key"]).read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP384R1())
    cert = _cert(_name(site), ca.subject, key.public_key(), ca_key, days,
                 [(x509.BasicConstraints(ca=False, path_length=None), True)])
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = (d / f"{site}.pem", d / f"{site}.key")
    paths[0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(paths[1], key)
    return paths


def make_node_key(path):
    """A SuperNode identity (ECDSA P-384, OpenSSH format, like ``ssh-keygen -t ecdsa -b 384``).

    Writes ``path`` (private, stays at the site) and ``path.pub`` (sent to the SuperLink admin).
    """
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    path = Path(path)
    key = ec.generate_private_key(ec.SECP384R1())
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    pub = Path(str(path) + ".pub")
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                  serialization.PublicFormat.OpenSSH) + b"\n")
    return path, pub


def _spki(public_key):
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def check_pair(certificate, private_key, *, cert_name="the certificate", key_name="the private key"):
    """Raise ``ValueError`` naming ``cert_name``/``key_name`` unless they are a PEM certificate and its own key.

    gRPC's C core reports every such fault as "Failed to bind to address", with the reason on its
    own log; checked here, the one line says which file is wrong.
    """
    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(certificate)
    except ValueError:
        raise ValueError(f"{cert_name} is not a PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(private_key, password=None)
    except TypeError:
        raise ValueError(f"{key_name} is encrypted; gRPC needs it unencrypted (kept readable by this user only)") \
            from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"{key_name} is not a PEM private key") from None
    if _spki(key.public_key()) != _spki(cert.public_key()):
        raise ValueError(f"{key_name} does not match {cert_name} (it is the key of another certificate)")


def check_roots(root_certificates, *, name="the CA certificates"):
    """Raise ``ValueError`` naming ``name`` unless it holds at least one PEM certificate."""
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(root_certificates)
    except ValueError:
        raise ValueError(f"{name} holds no PEM certificate") from None


def read_credentials(cert, key, root_certificates):
    """Read and check a certificate, its key and the CA (paths); return the keyword arguments of the gRPC transport.

    Each fault is one ``ValueError`` naming the file (an unreadable file: the ``OSError`` names it).
    """
    data = {name: Path(path).read_bytes() for name, path in
            (("certificate", cert), ("private_key", key), ("root_certificates", root_certificates))}
    check_pair(data["certificate"], data["private_key"], cert_name=f"the certificate '{cert}'",
               key_name=f"the key '{key}'")
    check_roots(data["root_certificates"], name=f"the CA file '{root_certificates}'")
    return data


def check_node_key(path):
    """Raise ``ValueError`` naming ``path`` unless it is a SuperNode's private key (elliptic curve, unencrypted).

    Flower's SuperNode reports a bad key with a multi-line panel and an exit status a supervisor
    restarts; checked here, before it starts, the site says in one line which file is wrong.
    """
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    data = Path(path).read_bytes()
    key = None
    for load in (serialization.load_ssh_private_key, serialization.load_pem_private_key):
        try:
            key = load(data, password=None)
            break
        except TypeError:
            raise ValueError(f"the key '{path}' is encrypted; the SuperNode needs it unencrypted (kept readable by "
                             "this user only)") from None
        except (ValueError, UnsupportedAlgorithm):
            continue
    if key is None:
        pub = " (it looks like the public half, which goes to the aggregator)" if data.lstrip().startswith(
            (b"ecdsa-", b"ssh-", b"-----BEGIN PUBLIC")) else ""
        raise ValueError(f"the key '{path}' is not a private key{pub}: make one with dpmoments site --make-key PATH")
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"the key '{path}' is not an elliptic-curve key, which Flower's SuperNode requires: make one "
                         "with dpmoments site --make-key PATH")
