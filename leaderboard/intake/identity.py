"""Who is asking: a Hugging Face account, else the client's address, never a header anyone can write.

- Signed in with Hugging Face (`gr.OAuthProfile`): ``hf:<username>``. On a Space, submissions and
  annotations require it (`build_app(require_login=...)`).
- Otherwise the socket peer of the request, as uvicorn resolved it: `X-Forwarded-For` counts only
  when the peer is one of the trusted proxy addresses (`forwarded_allow_ips`, uvicorn's
  convention: addresses or networks, comma-separated; the client is the rightmost hop that is not
  a trusted proxy). The default trusts no proxy locally and the Spaces proxy's private network on
  a Space (`default_forwarded_allow_ips`). The header is never read here.
- An address is never stored or shown: the identity is ``ip:`` + a salted hash of it
  (`address_identity`; the salt is NEGT2I_IDENTITY_SALT, else a random one kept under NEGT2I_HOME).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from pathlib import Path
from typing import Any

SALT_ENV = "NEGT2I_IDENTITY_SALT"
FORWARDED_ENV = "FORWARDED_ALLOW_IPS"  # uvicorn's own variable
# The Spaces proxy reaches the app from Hugging Face's private network (10.x addresses).
SPACE_PROXIES = "10.0.0.0/8"
ANONYMOUS = "anonymous"
_salt: bytes | None = None


def default_forwarded_allow_ips() -> str:
    """FORWARDED_ALLOW_IPS when set; else the Spaces proxy's network on a Space, and no proxy elsewhere.

    (Not uvicorn's own default, 127.0.0.1: `serve` listens on 127.0.0.1 with no proxy in front,
    where any local client could then claim any address.)"""
    configured = os.environ.get(FORWARDED_ENV)
    if configured is not None:
        return configured
    return SPACE_PROXIES if os.environ.get("SPACE_ID") else ""


def check_forwarded_allow_ips(value: str) -> str:
    """The value, if every comma-separated item is an IP address or network; else ValueError.

    "*" is refused: uvicorn then takes the leftmost hop, which any client writes itself."""
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        if item == "*":
            raise ValueError("'*' would trust the first X-Forwarded-For hop, which any client writes; name the proxies")
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address or network (e.g. 10.0.0.0/8)") from None
    return value


def _identity_salt() -> bytes:
    """NEGT2I_IDENTITY_SALT, else a random salt made once and kept in NEGT2I_HOME/identity_salt."""
    global _salt
    if _salt is None:
        configured = os.environ.get(SALT_ENV)
        if configured:
            _salt = configured.encode("utf-8")
        else:
            from leaderboard.store.sqlite_store import negt2i_home

            path = negt2i_home() / "identity_salt"
            _salt = _read_or_make_salt(path)
    return _salt


def _read_or_make_salt(path: Path) -> bytes:
    try:
        existing = path.read_bytes()
        if len(existing) >= 16:
            return existing
    except OSError:
        pass
    salt = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(salt)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_bytes()
    except OSError:  # a read-only home: this process's salt only
        pass
    return salt


def address_identity(address: str) -> str:
    """``ip:`` + 16 hex digits of HMAC-SHA256(salt, address): stable for a client, not its address."""
    digest = hmac.new(_identity_salt(), address.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"ip:{digest[:16]}"


def shown_identity(identity: str) -> str:
    """An identity as displayed: one that holds a bare address (stored by an older version) is hashed."""
    if identity.startswith("ip:"):
        try:
            ipaddress.ip_address(identity[3:])
        except ValueError:
            return identity
        return address_identity(identity[3:])
    return identity


def requester(request: Any, profile: Any = None) -> str:
    """``hf:<user>`` when signed in with Hugging Face, else gradio's logged-in user, else the
    hashed address of the request's client (resolved by uvicorn under `forwarded_allow_ips`),
    else "anonymous"."""
    hub_user = getattr(profile, "username", None)
    if hub_user:
        return f"hf:{hub_user}"
    if request is None:
        return ANONYMOUS
    username = getattr(request, "username", None)
    if username:
        return str(username)
    client = getattr(request, "client", None)
    host = getattr(client, "host", None) if client else None
    return address_identity(str(host)) if host else ANONYMOUS
