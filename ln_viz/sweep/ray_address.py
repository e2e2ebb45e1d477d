"""Where the `ray` executor connects: the address read and checked before Ray is asked.

An address is `local` (a private cluster of this process), `auto` (the CLI only: the cluster `ray start`
left on this machine) or `host:port`. A port outside 1-65535 or anything else is refused at once, in one
sentence. A `host:port` is then probed without Ray: a plain TCP connect and the first bytes of an HTTP/2
(gRPC) handshake, each with a short timeout, because `ray.init` on a closed port, an HTTP server or a
silent one waits for minutes (issue 21, M2) and cannot be interrupted.

The server's page never takes an address from a visitor: the operator names the cluster in
$LN_VIZ_RAY_ADDRESS (`configured_address`), and `auto` is not taken there (it joins whatever cluster
runs on the machine).
"""

from __future__ import annotations

import os
import re
import socket

from ln_viz.sweep.spec import SweepError

ENV = "LN_VIZ_RAY_ADDRESS"  # the operator's setting for the app's Stability map
PROBE_TIMEOUT_S = 3.0
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]{0,252}):(?P<port>[0-9]{1,12})")
# the client's connection preface (RFC 9113, 3.4) and an empty SETTINGS frame; a gRPC server (a Ray GCS)
# answers with a SETTINGS frame of its own: 3 bytes of length, type 0x04
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS = 0x04


def parse_address(raw: str, where: str = "--address") -> str:
    """`raw` as the executor uses it: `local`, `auto` or `host:port` (SweepError, naming `where`, else)."""
    address = raw.strip()
    if address in ("local", "auto"):
        return address
    match = _HOST_PORT.fullmatch(address)
    if match is None:
        raise SweepError("sweep.err.ray_address", "address", where=where, address=raw)
    port = int(match["port"])
    if not 1 <= port <= 65535:
        raise SweepError("sweep.err.ray_port", "address", where=where, address=raw, port=port)
    return address


def configured_address() -> tuple[str | None, SweepError | None]:
    """The operator's cluster for the app ($LN_VIZ_RAY_ADDRESS): (address, None); (None, None) when
    unset (the page offers this machine's cores only); (None, why) when it cannot be used."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None, None
    try:
        address = parse_address(raw, f"${ENV}")
    except SweepError as e:
        return None, e
    if address == "auto":
        return None, SweepError("sweep.err.ray_auto", "address", where=f"${ENV}")
    return address, None


def probe(address: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Whether something at `host:port` speaks gRPC, as a Ray cluster's GCS does; SweepError if not:
    nothing listens (refused, unreachable, no answer) or a server that is not one (HTTP, silent)."""
    host, _, port = address.rpartition(":")
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    except OSError as e:
        reason = f"no answer in {timeout:g} s" if isinstance(e, TimeoutError) else e.strerror or type(e).__name__
        raise SweepError("sweep.err.ray_unreachable", "address", address=address, reason=reason) from None
    with sock:
        try:
            sock.sendall(_H2_PREFACE)
            head = _read(sock, 9)
        except OSError as e:
            what = f"no answer in {timeout:g} s" if isinstance(e, TimeoutError) else e.strerror or type(e).__name__
            head, reason = b"", f"it took the connection, then {what}"
        else:
            reason = "it closed the connection" if not head else f"it answered {head!r}"
    if len(head) < 9 or head[3] != _SETTINGS:
        raise SweepError("sweep.err.ray_not_ray", "address", address=address, reason=reason)


def _read(sock: socket.socket, n: int) -> bytes:
    """Up to `n` bytes, fewer when the peer closes the connection first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data
