"""Secrets the database keeps sealed: a webhook's token is a key to post in its channel under
any name, so a copy of the database file must not be one.

`SecretBox` seals text with Fernet (AES-128-CBC and HMAC-SHA256, from `cryptography`, a library
built for exactly this) under a key derived (HKDF-SHA256) from key material the database never
holds: the bot's own Discord token, which every process of one bot shares. A sealed value is
written `sealed:v1:` then the Fernet token; one without that prefix is a row stored in clear by
an earlier version, read as it is and sealed again on the way. A value sealed under other key
material (the bot's token was reset) cannot be opened: the caller treats it as not stored.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "sealed:v1:"
_INFO = b"tomori-cog sealed secrets v1"


class SecretBox:
    """Seals and opens the database's secrets under one key (see the module docstring)."""

    def __init__(self, key_material: str) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
            key_material.encode()
        )
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, secret: str) -> str:
        return PREFIX + self._fernet.encrypt(secret.encode()).decode()

    def open(self, stored: str) -> str | None:
        """The secret `stored` holds; None if it was sealed under other key material."""
        if not is_sealed(stored):
            return stored  # stored in clear by an earlier version
        try:
            return self._fernet.decrypt(stored.removeprefix(PREFIX).encode()).decode()
        except InvalidToken:
            return None


def is_sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)
