"""Feishu event security (pure): decryption of encrypted events and the request signature.

With an Encrypt Key set in the console, the body is ``{"encrypt": base64}``: AES-256-CBC with
key = SHA-256(encrypt key), the first 16 bytes of the decoded data are the IV, PKCS#7 padding.
Each request then carries ``X-Lark-Signature`` = hex SHA-256 of ``timestamp + nonce +
encrypt_key + body`` (``X-Lark-Request-Timestamp``, ``X-Lark-Request-Nonce``). AES is done by
``cryptography`` (OpenSSL).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


class DecryptError(ValueError):
    """The ``encrypt`` field is not an event encrypted with this app's key."""


def _key(encrypt_key: str) -> bytes:
    return hashlib.sha256(encrypt_key.encode("utf-8")).digest()


def decrypt(encrypt_key: str, data: str) -> bytes:
    """The plaintext JSON bytes of an ``encrypt`` field."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        raise DecryptError("is not base64") from None
    if len(raw) < 32 or len(raw) % 16:
        raise DecryptError("has a wrong length")
    decryptor = Cipher(algorithms.AES(_key(encrypt_key)), modes.CBC(raw[:16])).decryptor()
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError:
        raise DecryptError("does not decrypt with this encrypt key") from None


def encrypt(encrypt_key: str, plaintext: bytes, *, iv: bytes | None = None) -> str:
    """The ``encrypt`` field Feishu would send for ``plaintext`` (tests, fakes)."""
    iv = iv or os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(_key(encrypt_key)), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode()


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    """Hex SHA-256 of ``timestamp + nonce + encrypt_key + body``."""
    data = (timestamp + nonce + encrypt_key).encode("utf-8") + body
    return hashlib.sha256(data).hexdigest()


def signature_ok(
    given: str | None, timestamp: str | None, nonce: str | None, encrypt_key: str, body: bytes
) -> bool:
    """Constant-time check of ``X-Lark-Signature``."""
    if not given or timestamp is None or nonce is None:
        return False
    expected = signature(timestamp, nonce, encrypt_key, body)
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def token_ok(given: object, expected: str) -> bool:
    """Constant-time check of the verification token carried in the event."""
    if not isinstance(given, str) or not expected.strip():  # a blank token never matches
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
