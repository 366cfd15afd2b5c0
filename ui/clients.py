"""Who a limit counts against: the address of the connection, and a proxy's word only
where the operator trusts that proxy (issue 49).

Class mode bounds rooms, joins, key tries and answers per client (ui.room), and a client
is a network address. Streamlit's server (uvicorn) believes an `X-Forwarded-For` header
from any connection that comes from 127.0.0.1 or ::1 and reports the header's address as
the client's (`st.context.ip_address`). So a client that reaches the server through
localhost, or through a reverse proxy that passes the client's own header on, picks its
address per connection: ten made-up addresses filled all 50 rooms in 8.4 s.

Addresses are compared as one spelling: a dual-stack server (`streamlit run`'s default)
reports an IPv4 peer as ::ffff:a.b.c.d, which is a.b.c.d here.

Here the header counts only where the operator names the proxies it trusts,
ATTN_TRUSTED_PROXIES (addresses or networks, comma-separated: `127.0.0.1`, `10.0.0.0/8`).
`client_address` undoes what the server did with the header, then walks the header from
the right through the trusted proxies only:

- no header (or one that lists no address): the connection's address; on loopback
  (127.0.0.1, ::1, a dual-stack server's ::ffff:127.0.0.1) every such connection is one
  client, `LOCAL`. The app cannot tell a browser on this machine from an SSH tunnel or a
  local proxy that adds no header, and a limit that counted each browser session there
  would bound nothing: 60 fresh sessions opened all 50 rooms in 3.6 s (issue 49's
  outside review). A class reaches a teacher's laptop over its network address, so this
  costs a real class nothing;
- a header, and the connection came from a proxy the operator trusts: the first address
  from the right that is not a trusted proxy (the client the nearest proxy saw);
- a header the operator did not ask to trust: the connection's own address; where the
  server took it from the header (the connection came from loopback), every such
  connection is the same one client, `LOCAL`.

`connected()` is the one place the app asks: class mode's limits (ui.classroom) and the
heavy-job line's turns (ui.jobs) count the same client. The rest is plain Python, no
Streamlit: tests call `client_address` with any header.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Iterable, Sequence

LOOPBACK = ("127.0.0.1", "::1")  # what Streamlit's server trusts the header from
# Every connection from this machine the operator did not name as a proxy: with no header,
# a header with no address, or one the operator did not ask to trust (made-up addresses,
# `unknown`). One client, so one allowance: it was two (one each way) until the second
# outside review of issue 49 found this machine holding 10 rooms and guessing 0.4 a second.
LOCAL = "this machine (a connection from loopback, no trusted proxy's address)"
PROXIED = LOCAL  # (its old name: a header through loopback that is not trusted)
MAX_HOPS = 32  # a longer header is cut from the left: only its right end is ever read

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_proxies(text: str | None = None) -> tuple[Network, ...]:
    """The operator's trusted proxies from ATTN_TRUSTED_PROXIES (or `text`); an entry
    that is no address or network is left out."""
    text = os.environ.get("ATTN_TRUSTED_PROXIES", "") if text is None else text
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            continue
    return tuple(out)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip().strip('"')
    if text.startswith("["):  # [v6]:port
        text = text[1 : text.find("]")] if "]" in text else text
    elif text.count(":") == 1:  # v4:port
        text = text.split(":")[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    # A dual-stack server (streamlit run's default) sees an IPv4 peer as ::ffff:a.b.c.d:
    # the same address, which an IPv4 entry of ATTN_TRUSTED_PROXIES must match.
    return ip.ipv4_mapped if ip.version == 6 and ip.ipv4_mapped else ip


def _canon(address: str | None) -> str | None:
    """An address as one spelling (::ffff:10.0.0.5 is 10.0.0.5), else as given."""
    ip = _ip(address) if address else None
    return str(ip) if ip is not None else address


_LOOP = tuple(ipaddress.ip_network(a) for a in LOOPBACK)


def _in(address: str | None, networks: Iterable[Network]) -> bool:
    ip = _ip(address) if address else None
    return ip is not None and any(ip.version == n.version and ip in n for n in networks)


def hops(headers: Sequence[str]) -> list[str]:
    """The addresses an X-Forwarded-For header lists, left to right (several headers are
    one list, as the server reads them); at most the last MAX_HOPS."""
    out = [h.strip() for value in headers for h in str(value).split(",")]
    return [h for h in out if h][-MAX_HOPS:]


def _servers_pick(listed: list[str]) -> str | None:
    """The address Streamlit's server reports for a loopback connection with this
    header: the first from the right that is not loopback (uvicorn's rule)."""
    loop = [ipaddress.ip_network(a) for a in LOOPBACK]
    for h in reversed(listed):
        if not _in(h, loop):
            return h
    return listed[0] if listed else None


def client_address(
    reported: str | None, forwarded: Sequence[str], trusted: Sequence[Network]
) -> str | None:
    """The address a limit counts against. `reported`: the address Streamlit reports
    (st.context.ip_address: None for loopback); `forwarded`: the connection's
    X-Forwarded-For headers; `trusted`: the operator's trusted proxies. LOCAL: a
    loopback connection without an address in a header, all of them one client."""
    listed = hops(forwarded)
    reported = _canon(reported)
    # A loopback peer: the server reports None for 127.0.0.1 and ::1, but a dual-stack
    # server's ::ffff:127.0.0.1 as it is (and then ignores the header itself).
    loopback = reported is None or _in(reported, _LOOP)
    if not listed:  # no address in a header: a real peer's own, or this machine
        return reported if not loopback and _ip(reported or "") is not None else LOCAL
    # The connection itself: loopback where the server took `reported` from the header.
    from_loopback = loopback or reported == _canon(_servers_pick(listed))
    peer = LOOPBACK[0] if from_loopback else reported
    if not _in(peer, trusted):
        return PROXIED if from_loopback else reported
    for h in reversed(listed):  # through the trusted proxies, from the nearest
        if not _in(h, trusted):
            ip = _ip(h)
            return str(ip) if ip is not None else h[:64]
    return peer  # every hop is a trusted proxy: the nearest one


_TRUSTED = trusted_proxies()  # read once per process


def connected() -> str | None:
    """The address of the browser session running this script, as `client_address` reads
    it (None: no real connection, as in AppTest, or no session: the caller counts the
    session instead)."""
    import streamlit as st

    try:
        reported = st.context.ip_address
        forwarded = st.context.headers.get_all("X-Forwarded-For")
    except Exception:  # no client context (a thread of its own, a bare script)
        return None
    if reported is not None and not isinstance(reported, str):
        return None  # no real connection: AppTest's runtime reports a stand-in object
    address = client_address(reported, forwarded, _TRUSTED)
    if address == LOCAL and hops(forwarded):  # a header arrived, and was not trusted
        from .runtime import logs

        logs.say(logging.getLogger(__name__), "clients.proxied",
                 "a connection from this machine carries X-Forwarded-For, which is not "
                 "trusted: its clients count as one address. If a reverse proxy you run "
                 "sits on this machine, set ATTN_TRUSTED_PROXIES=127.0.0.1,::1")  # fmt: skip
    return address
