"""Serving the labelling app with uvicorn: the address checked, the socket bound before the address is printed (so
``--port 0`` prints the port the system gave), the server run until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from rankgate.errors import F, UsageError

__all__ = ["bind", "check_host", "is_loopback", "run_server"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, *, allow_remote: bool) -> None:
    """A host other than loopback only when asked for in so many words (``allow_remote``): the app has no accounts,
    anyone who reaches the address with the token labels."""
    if not is_loopback(host) and not allow_remote:
        raise UsageError(f"{F.host} {host!r} is not loopback: other machines could reach the app; give "
                         f"{F.allow_remote} to serve them (anyone with the printed address can then label), or "
                         f"{F.host} 127.0.0.1")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port); a port in use is a UsageError saying so."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # (IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP; without it each answer's
    # body waits for the browser's delayed ACK, 40 ms a request)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; give {F.port} another number "
                         "(0 picks a free one)") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def run_server(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until interrupted (uvicorn's own signal handling: Ctrl-C and SIGTERM stop it after
    the requests in flight; every label is already committed)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            date_header=False)
    uvicorn.Server(config).run(sockets=[sock])
