"""Local accounts for `make run` and small sites: `var/auth/users.json` with argon2 hashes.

On first start `ensure_accounts` creates `clinician` and `admin` with random passwords and writes
them once to `initial-passwords.txt` (mode 0600) beside the users file. The file is created with
O_EXCL, so with several gateway workers exactly one creates the accounts and the others read them.
Production refuses local accounts unless AUTH_LOCAL_ACCOUNTS=true (gateway.settings).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from pydantic import BaseModel, Field

from gateway.security.principal import Role

USERS_FILE = "users.json"
INITIAL_PASSWORDS_FILE = "initial-passwords.txt"
_hasher = PasswordHasher()
# Verifying an unknown user still costs one argon2 verification, so timing does not reveal names.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


class LocalUser(BaseModel):
    username: str = Field(pattern=r"^[A-Za-z0-9._@-]{1,64}$")
    password_hash: str
    roles: list[Role]
    disabled: bool = False


class LocalUsers(BaseModel):
    users: list[LocalUser]


def _write_private(path: Path, text: str) -> bool:
    """Create `path` with mode 0600; False if it already exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return True


def ensure_accounts(auth_dir: Path) -> bool:
    """Create the default accounts on first start; True if they were created now."""
    auth_dir.mkdir(parents=True, exist_ok=True)
    users_path = auth_dir / USERS_FILE
    if users_path.exists():
        return False
    passwords = {"clinician": secrets.token_urlsafe(18), "admin": secrets.token_urlsafe(18)}
    users = LocalUsers(
        users=[
            LocalUser(
                username="clinician",
                password_hash=_hasher.hash(passwords["clinician"]),
                roles=[Role.CLINICIAN],
            ),
            LocalUser(username="admin", password_hash=_hasher.hash(passwords["admin"]), roles=[Role.ADMIN]),
        ]
    )
    tmp = auth_dir / f".{USERS_FILE}.{os.getpid()}.tmp"
    tmp.write_text(users.model_dump_json(indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    try:
        os.link(tmp, users_path)  # atomic and exclusive: another worker may have won
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    lines = [
        "# NG12 Assessor local accounts, written once on first start. Sign in, then delete this file.",
        *(f"{name} {password}" for name, password in passwords.items()),
    ]
    _write_private(auth_dir / INITIAL_PASSWORDS_FILE, "\n".join(lines) + "\n")
    return True


def read_initial_passwords(auth_dir: Path) -> dict[str, str]:
    """username -> password from initial-passwords.txt (tests and `make run` scripts)."""
    pairs: dict[str, str] = {}
    for line in (auth_dir / INITIAL_PASSWORDS_FILE).read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, password = line.split(" ", 1)
            pairs[name] = password
    return pairs


def add_user(auth_dir: Path, username: str, password: str, roles: list[Role]) -> None:
    """Add or replace one account (admin tooling and tests)."""
    auth_dir.mkdir(parents=True, exist_ok=True)
    path = auth_dir / USERS_FILE
    users = load_users(path)
    kept = [u for u in users.users if u.username != username]
    kept.append(LocalUser(username=username, password_hash=_hasher.hash(password), roles=roles))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(LocalUsers(users=kept).model_dump_json(indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def load_users(path: Path) -> LocalUsers:
    if not path.exists():
        return LocalUsers(users=[])
    return LocalUsers.model_validate(json.loads(path.read_text(encoding="utf-8")))


class LocalAccounts:
    """Checks username and password against the users file (re-read when it changes)."""

    def __init__(self, auth_dir: Path) -> None:
        self.path = auth_dir / USERS_FILE
        self._mtime: float | None = None
        self._users: dict[str, LocalUser] = {}

    def _refresh(self) -> None:
        mtime = self.path.stat().st_mtime if self.path.exists() else None
        if mtime != self._mtime:
            self._users = {u.username: u for u in load_users(self.path).users}
            self._mtime = mtime

    def verify(self, username: str, password: str) -> LocalUser | None:
        """The user when the password is right and the account enabled, else None."""
        self._refresh()
        user = self._users.get(username)
        try:
            _hasher.verify(user.password_hash if user else _DUMMY_HASH, password)
        except (VerificationError, InvalidHashError):
            return None
        if user is None or user.disabled:
            return None
        return user
