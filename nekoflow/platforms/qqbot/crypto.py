"""QQ bot webhook signatures (pure): Ed25519 with a key derived from the bot secret.

The QQ docs derive the private key's 32-byte seed from the bot secret by repeating the secret
until it is at least 32 bytes long and keeping the first 32. Every callback carries
``X-Signature-Ed25519`` (hex) over ``X-Signature-Timestamp + body``; the op 13 validation is
answered with ``{"plain_token", "signature"}`` where the signature covers
``event_ts + plain_token``. The Ed25519 work is done by ``cryptography`` (OpenSSL).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SEED_SIZE = 32


def seed_from_secret(secret: str) -> bytes:
    """The 32-byte Ed25519 seed of ``secret`` (repeated to 32 bytes, then cut)."""
    raw = secret.encode("utf-8")
    if not raw:
        raise ValueError("the bot secret is empty")
    while len(raw) < SEED_SIZE:
        raw += raw
    return raw[:SEED_SIZE]


def private_key(secret: str) -> Ed25519PrivateKey:
    """The bot's Ed25519 private key."""
    return Ed25519PrivateKey.from_private_bytes(seed_from_secret(secret))


def sign(secret: str, message: bytes) -> str:
    """The hex Ed25519 signature of ``message``."""
    return private_key(secret).sign(message).hex()


def verify(secret: str, signature_hex: str | None, timestamp: str | None, body: bytes) -> bool:
    """True when ``signature_hex`` signs ``timestamp + body`` with the bot's key."""
    if not signature_hex or not timestamp:
        return False
    try:
        signature = bytes.fromhex(signature_hex)
    except ValueError:
        return False
    if len(signature) != 64:
        return False
    try:
        private_key(secret).public_key().verify(signature, timestamp.encode("utf-8") + body)
    except InvalidSignature:
        return False
    return True


def validation_answer(secret: str, plain_token: str, event_ts: str) -> dict[str, str]:
    """The answer to an op 13 callback validation."""
    message = (event_ts + plain_token).encode("utf-8")
    return {"plain_token": plain_token, "signature": sign(secret, message)}
