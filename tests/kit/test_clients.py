"""ui.clients: a limit counts against the connection, a proxy's header only where trusted.

Streamlit's server reports the X-Forwarded-For address of any connection from loopback as
the client's (uvicorn's rule); `client_address` gets the case as the app sees it:
`reported` is what st.context.ip_address says, `forwarded` the header."""

from __future__ import annotations

import random

from ui import clients as C

NONE = C.trusted_proxies("")
LOCAL = C.trusted_proxies("127.0.0.1,::1")


def servers_report(peer: str, header: list[str]) -> str | None:
    """What Streamlit reports for a connection from `peer` carrying `header`."""
    if peer in C.LOOPBACK:
        picked = C._servers_pick(C.hops(header)) if header else peer
        return None if picked in C.LOOPBACK else picked
    return peer


def test_no_header_is_the_connection_and_loopback_is_one_client():
    """A loopback connection with no address in a header is this machine: a browser here,
    an SSH tunnel or a local proxy that adds no header look the same, so all count as one
    (issue 49's review: 60 fresh header-less sessions filled all 50 rooms)."""
    assert C.client_address("203.0.113.7", [], NONE) == "203.0.113.7"
    for trusted in (NONE, LOCAL):
        assert C.client_address(None, [], trusted) == C.LOCAL
        assert C.client_address("::1", [], trusted) == C.LOCAL
        for empty in ([","], [" , "], [""], [",", ""]):  # a header that lists nobody
            assert C.client_address(None, empty, trusted) == C.LOCAL
            assert C.client_address("", empty, trusted) == C.LOCAL


def test_made_up_addresses_through_loopback_are_one_client_unless_trusted():
    rng = random.Random(0)
    seen = set()
    for _ in range(50):
        forged = [f"198.51.{rng.randrange(256)}.{rng.randrange(1, 255)}"]
        reported = servers_report("127.0.0.1", forged)
        assert reported == forged[0]  # what Streamlit alone would count
        seen.add(C.client_address(reported, forged, NONE))
    assert seen == {C.PROXIED}


def test_a_trusted_local_proxy_gives_the_client_it_saw():
    header = ["198.51.100.4, 203.0.113.9"]  # the client lied on the left; nginx appended
    reported = servers_report("127.0.0.1", header)
    assert C.client_address(reported, header, LOCAL) == "203.0.113.9"


def test_a_direct_client_cannot_pick_its_address_with_a_header():
    for trusted in (NONE, LOCAL):
        header = ["10.9.8.7"]
        reported = servers_report("203.0.113.50", header)
        assert C.client_address(reported, header, trusted) == "203.0.113.50"


def test_a_trusted_network_proxy_is_walked_through_to_the_first_untrusted_hop():
    trusted = C.trusted_proxies("10.0.0.0/8, not-an-address, ")
    assert len(trusted) == 1
    header = ["1.2.3.4, 192.0.2.8, 10.1.1.1"]  # client, then two proxies; the peer 10.0.0.2
    reported = servers_report("10.0.0.2", header)
    assert C.client_address(reported, header, trusted) == "192.0.2.8"
    header = ["10.3.3.3"]  # every hop trusted: the nearest
    assert C.client_address(servers_report("10.0.0.2", header), header, trusted) == "10.0.0.2"


def test_a_dual_stack_server_s_mapped_addresses_are_the_ipv4_ones():
    """`streamlit run` listens on :: as well: an IPv4 peer arrives as ::ffff:a.b.c.d, and
    neither Streamlit nor uvicorn then takes the header (the review of issue 49 saw
    ip_address '::ffff:127.0.0.1' with the header untouched)."""
    mapped = "::ffff:127.0.0.1"
    assert C.client_address(mapped, [], NONE) == C.LOCAL  # localhost: one client
    header = ["198.51.100.4, 203.0.113.9"]
    assert C.client_address(mapped, header, LOCAL) == "203.0.113.9"  # nginx on this host
    assert C.client_address(mapped, header, C.trusted_proxies("127.0.0.0/8")) == "203.0.113.9"
    assert C.client_address(mapped, header, NONE) == C.PROXIED  # untrusted: one client
    lb = C.trusted_proxies("10.0.0.0/8")  # a balancer elsewhere, seen as ::ffff:10.0.0.5
    assert C.client_address("::ffff:10.0.0.5", ["192.0.2.8"], lb) == "192.0.2.8"
    assert C.client_address("::ffff:203.0.113.7", [], NONE) == "203.0.113.7"  # one spelling
    seen = {C.client_address(mapped, [f"198.51.100.{i}"], NONE) for i in range(1, 40)}
    assert seen == {C.PROXIED}  # made-up headers through a mapped loopback buy nothing


def test_a_long_or_odd_header_is_read_from_its_right_end_only():
    header = [", ".join(f"192.0.2.{i % 250}" for i in range(10_000)) + ", [2001:db8::1]:443"]
    assert len(C.hops(header)) == C.MAX_HOPS
    reported = servers_report("127.0.0.1", header)
    assert C.client_address(reported, header, LOCAL) == "2001:db8::1"
    assert C.client_address("x", ["garbage, ,"], NONE) == "x"
