"""Where meshd's socket is, found the way `meshctl` finds it."""
from __future__ import annotations

import os
from typing import Mapping, Optional

__all__ = ["SYSTEM_SOCKET", "user_socket_path", "default_socket_path"]

#: The system daemon's socket.
SYSTEM_SOCKET = "/run/sessionmesh/meshd.sock"


def user_socket_path(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Where `meshd --user` puts its socket: `$XDG_RUNTIME_DIR/sessionmesh/meshd.sock`, else
    `$XDG_STATE_HOME/sessionmesh/meshd.sock`, else `~/.local/state/sessionmesh/meshd.sock`
    (only absolute variables count, as in meshd)."""
    env = os.environ if environ is None else environ
    runtime, state, home = env.get("XDG_RUNTIME_DIR", ""), env.get("XDG_STATE_HOME", ""), env.get("HOME", "")
    if runtime.startswith("/"):
        return runtime + "/sessionmesh/meshd.sock"
    if state.startswith("/"):
        return state + "/sessionmesh/meshd.sock"
    if home.startswith("/"):
        return home + "/.local/state/sessionmesh/meshd.sock"
    return None


def default_socket_path(environ: Optional[Mapping[str, str]] = None) -> str:
    """The user daemon's socket if that file exists, else the system daemon's (like `meshctl` without `--socket`)."""
    user = user_socket_path(environ)
    if user is not None and os.path.exists(user):
        return user
    return SYSTEM_SOCKET
