#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Hostile Ethernet frames at the receiving end of a devtcp pair.

  frame_fuzz.py -i DEV --dst-mac MAC [-t SECONDS] [-n FRAMES] [-s SEED]
                [--phase NAME] [--ports P,...] [--go FILE] [--dump]

Run in the namespace of DEV (the sending end, with CAP_NET_RAW). Frames go
out of DEV to MAC (the other end) through an AF_PACKET SOCK_RAW socket
(bypassing the qdisc, so that a frame the socket accepted reached the
driver), and some through AF_INET SOCK_RAW sockets (IPPROTO_UDP, IPPROTO_TCP
and IPPROTO_RAW, which is IP_HDRINCL) to --dst4. The first frame of every run
is the reproducer of the __pskb_pull_tail BUG: a 4-byte UDP "datagram" from
socket(AF_INET, SOCK_RAW, IPPROTO_UDP) to --dst4. Then every variant of every
class once (every IPv4 IHL 0-15, every TCP data offset 0-15, ...), taking the
classes in turn so that a short run has some of each, then classes and
variants at random, until SECONDS or FRAMES. With --go, the first frame
waits until FILE exists (the caller's set-up then overlaps Python's start).

Classes: short Ethernet frames (< 14 bytes: the socket may refuse them),
truncated headers, IPv4 IHL, IPv4 total length, IPv4 options, TCP data
offset, TCP options, short UDP, wrong UDP length, IPv4 fragments, IPv6
extension headers, oversized headers, VLAN tags, zero payload, maximum
size (up to the MTU, jumbo when it is raised), oversized frames (beyond the
MTU: refused), good and bad TCP/UDP checksums, random bytes, mutated frames,
and the AF_INET raw ones. TCP/UDP frames go to --ports (so that ntuple rules
for them steer the frames too) from source ports below 32768, outside the
ephemeral range of the streams beside; SYN is never set towards --ports.

Each frame is judged as the receiving device must judge it, by the bytes on
the wire (for AF_INET sockets, the frame the kernel builds around the
payload): "malformed" only when it certainly is by the device's rules (a
length field pointing past the frame: IPv4 IHL or total length, IPv6
payload length; TCP data offset < 5 or past the segment; a UDP segment < 8
bytes; an IPv4 IHL < 5), untagged, IPv4 or IPv6 without extension headers,
and not a fragment; "maybe" when it is odd in a way the device may or may not
count (frames < 14 bytes, truncated fixed headers, VLAN tags, extension
headers, UDP length fields); "csum_bad" when it is well formed, checksummed
TCP or UDP (no options, fragments or extension headers) with a wrong
checksum. Prints per class the frames sent, refused by the sending socket,
and judged malformed / maybe / csum_bad, then machine-readable lines:

  ff-class CLASS SENT REFUSED MALFORMED MAYBE CSUM_BAD
  ff-total SENT REFUSED MALFORMED MAYBE CSUM_BAD

SEED (default: random, printed) and NAME seed the generator together: the
same SEED and NAME give the same frames in the same order (the time bound
only cuts the sequence; -n the frame count printed replays it exactly).
--dump prints the frames instead of sending them (hex, one a line, with
their class and verdict; give it the run's --mtu, which sizes some frames).
Exit 0, or 1 if a socket could not be opened.
"""
import argparse
import errno
import os
import random
import socket
import struct
import sys
import time

ETH_P_IP, ETH_P_IPV6, ETH_P_ARP = 0x0800, 0x86dd, 0x0806
ETH_P_8021Q, ETH_P_8021AD = 0x8100, 0x88a8
TCP, UDP, NONXT = 6, 17, 59
HOP, ROUTING, FRAG6, DSTOPTS = 0, 43, 44, 60
SOL_PACKET, PACKET_QDISC_BYPASS = 263, 20
IP_RECVERR = 11
SYN = 0x02
YES, MAYBE, NO = "yes", "maybe", "no"

rng = random.Random()


# --- checksums ---

def sum16(b):
    """The one's complement sum of B's 16-bit words, modulo 0xffff (so 0, not
    0xffff, for a sum that folds to 0xffff: 2**16 is 1 modulo 0xffff)."""
    return int.from_bytes(b + b"\0" * (len(b) & 1), "big") % 0xffff


def pseudo(src, dst, proto, length):
    if len(src) == 4:
        return sum16(src + dst + struct.pack("!BBH", 0, proto, length & 0xffff))
    return sum16(src + dst + struct.pack("!IxxxB", length, proto))


def csum_ok(ph, seg):
    """The sum over the pseudo-header and SEG (never all zero: the protocol
    is in it) folds to 0xffff."""
    return (ph + sum16(seg)) % 0xffff == 0


def csum_of(s):
    """The checksum field for a sum S (modulo 0xffff) taken with it zero."""
    return 0 if s == 0 else 0xffff - s


def with_csum(seg, at, ph, mode, udp4=False):
    """SEG with its checksum field at AT set: "good", "bad", "zero" or "random"."""
    if len(seg) < at + 2:
        return seg
    seg = seg[:at] + b"\0\0" + seg[at + 2:]
    good = csum_of((ph + sum16(seg)) % 0xffff)
    if udp4 and good == 0:
        good = 0xffff
    c = good
    if mode == "zero":
        c = 0
    elif mode == "random":
        c = rng.randrange(0x10000)
    elif mode == "bad":
        while True:
            c = good ^ rng.randrange(1, 0x10000)
            t = seg[:at] + struct.pack("!H", c) + seg[at + 2:]
            if c and not csum_ok(ph, t):
                break
    return seg[:at] + struct.pack("!H", c) + seg[at + 2:]


def ip_hdr_csum(h):
    return h[:10] + struct.pack("!H", csum_of(sum16(h[:10] + b"\0\0" + h[12:]))) + h[12:]


# --- the judge: what the receiving device must make of a frame ---

def be16(f, at):
    return (f[at] << 8) | f[at + 1]


def judge_l4(f, at, seg_ip, seg_fr, proto, ph, plain):
    """L4 at AT, the segment SEG_IP bytes long by the IP header (SEG_FR by
    the frame, >= SEG_IP). PLAIN: no IPv4 options or IPv6 extension header
    before it (the checksum's pseudo-header is certain)."""
    if proto == TCP:
        def bad(seg):
            if seg < 13:
                return None		# no data offset to judge by
            doff = f[at + 12] >> 4
            return doff < 5 or doff * 4 > seg
        b_ip, b_fr = bad(seg_ip), bad(seg_fr)
        if b_ip and b_fr:
            return YES, False
        if b_ip is None or b_ip or b_fr:
            return MAYBE, False
        return NO, plain and seg_ip == seg_fr and not csum_ok(ph, f[at:at + seg_ip])
    if proto == UDP:
        if seg_fr < 8:
            return YES, False
        if seg_ip < 8:
            return MAYBE, False
        ulen = be16(f, at + 4)
        if ulen > seg_ip or ulen < 8:
            return MAYBE, False
        check = be16(f, at + 6)
        return NO, (plain and ulen == seg_ip == seg_fr and check != 0 and
                    not csum_ok(ph, f[at:at + seg_ip]))
    return NO, False


def judge_ip4(f, at):
    avail = len(f) - at
    if avail < 1 or f[at] >> 4 != 4:
        return MAYBE, False
    ihl = (f[at] & 15) * 4
    if ihl < 20:
        return YES, False
    if avail < 20 or ihl > avail:
        return YES, False		# IHL points past the frame
    tot = be16(f, at + 2)
    if tot > avail:
        return YES, False
    if tot < ihl:
        return MAYBE, False
    if be16(f, at + 6) & 0x3fff:
        return NO, False		# a fragment: no L4 header to judge
    proto = f[at + 9]
    ph = pseudo(f[at + 12:at + 16], f[at + 16:at + 20], proto, tot - ihl)
    return judge_l4(f, at + ihl, tot - ihl, avail - ihl, proto, ph, ihl == 20)


def judge_ip6(f, at):
    avail = len(f) - at
    if avail < 40 or f[at] >> 4 != 6:
        return MAYBE, False
    plen = be16(f, at + 4)
    if plen > avail - 40:
        return YES, False
    nxt, off, exts = f[at + 6], at + 40, 0
    end = at + 40 + plen
    while nxt in (HOP, ROUTING, DSTOPTS, FRAG6):
        exts += 1
        if nxt == FRAG6 or end - off < 2 or exts > 8:
            return (MAYBE if end - off < 8 else NO), False
        elen = (f[off + 1] + 1) * 8
        if elen > end - off:
            return MAYBE, False
        nxt, off = f[off], off + elen
    if nxt not in (TCP, UDP):
        return NO, False
    ph = pseudo(f[at + 8:at + 24], f[at + 24:at + 40], nxt, end - off)
    v, bad = judge_l4(f, off, end - off, len(f) - off, nxt, ph, exts == 0)
    if exts and v == YES:
        v = MAYBE
    return v, bad


def judge(f):
    """(malformed: YES, MAYBE or NO; checksum certainly wrong) of frame F."""
    if len(f) < 14:
        return MAYBE, False
    et, at = be16(f, 12), 14
    tagged = False
    while et in (ETH_P_8021Q, ETH_P_8021AD):
        if len(f) < at + 4:
            return MAYBE, False
        tagged, et, at = True, be16(f, at + 2), at + 4
    if et == ETH_P_IP:
        v, bad = judge_ip4(f, at)
    elif et == ETH_P_IPV6:
        v, bad = judge_ip6(f, at)
    else:
        return NO, False
    if tagged:
        return (MAYBE if v != NO else NO), False
    return v, bad


# --- frame builders ---

class Ctx:
    def __init__(self, a):
        self.dev = a.dev
        self.dst_mac = bytes.fromhex(a.dst_mac.replace(":", ""))
        self.src_mac = bytes.fromhex(a.src_mac.replace(":", ""))
        self.src4, self.dst4 = socket.inet_aton(a.src4), socket.inet_aton(a.dst4)
        self.src6 = socket.inet_pton(socket.AF_INET6, a.src6)
        self.dst6 = socket.inet_pton(socket.AF_INET6, a.dst6)
        self.dst4_str = a.dst4
        self.ports = a.ports
        self.mtu = a.mtu


def eth(c, et, body, tags=()):
    t = b"".join(struct.pack("!HH", tpid, rng.randrange(0x10000)) for tpid in tags)
    return c.dst_mac + c.src_mac + t + struct.pack("!H", et) + body


def sport():
    return rng.choice([0, 1, rng.randrange(1, 1024), rng.randrange(1024, 32768)])


def dport(c):
    return rng.choice(c.ports) if rng.random() < 0.9 else rng.randrange(0x10000)


def tcp_seg(c, payload=b"", opts=b"", doff=None, dst_port=None):
    dp = dport(c) if dst_port is None else dst_port
    flags = rng.choice([0x10, 0x18, 0x11, 0x04, 0x14, 0x00, 0x29, rng.randrange(256)])
    if dp in c.ports:
        flags &= ~SYN
    if doff is None:
        opts += b"\0" * (-len(opts) % 4)
        doff = min(15, (20 + len(opts)) // 4)
    hdr = struct.pack("!HHIIBBHHH", sport(), dp, rng.randrange(2**32), rng.randrange(2**32),
                      (doff & 15) << 4 | (rng.randrange(16) if rng.random() < 0.05 else 0),
                      flags, rng.choice([0, 512, 65535, rng.randrange(65536)]), 0,
                      rng.choice([0, 0, rng.randrange(65536)]))
    return hdr + opts + payload


def udp_seg(c, payload=b"", ulen=None):
    return struct.pack("!HHHH", sport(), dport(c), (8 + len(payload) if ulen is None else ulen)
                       & 0xffff, 0) + payload


def l4_csum(seg, proto, src, dst, mode="good", length=None):
    ph = pseudo(src, dst, proto, len(seg) if length is None else length)
    return with_csum(seg, 16 if proto == TCP else 6, ph, mode, udp4=proto == UDP and len(src) == 4)


def ip4(c, proto, l4, ihl=None, opts=b"", tot=None, frag=None, ver=4, src=None, dst=None,
        hcsum=True):
    if ihl is None:
        opts += b"\0" * (-len(opts) % 4)
        ihl = min(15, 5 + len(opts) // 4)
    if frag is None:
        frag = rng.choice([0, 0x4000])
    if tot is None:
        tot = 20 + len(opts) + len(l4)
    h = struct.pack("!BBHHHBBH4s4s", (ver & 15) << 4 | (ihl & 15), rng.choice([0, 0, 0x10, 0xff]),
                    tot & 0xffff, rng.randrange(65536), frag & 0xffff,
                    rng.choice([64, 64, 1, 0, 255]), proto, 0,
                    src or c.src4, dst or c.dst4) + opts
    if hcsum:
        h = ip_hdr_csum(h)
    return h + l4


def ip6(c, nxt, body, plen=None, src=None, dst=None):
    return struct.pack("!IHBB", 6 << 28 | rng.randrange(256) << 20 | rng.randrange(1 << 20),
                       (len(body) if plen is None else plen) & 0xffff, nxt,
                       rng.choice([64, 255, 1, 0])) + (src or c.src6) + (dst or c.dst6) + body


def l4_v4(c, proto, payload, mode="good", **kw):
    seg = tcp_seg(c, payload, **kw) if proto == TCP else udp_seg(c, payload, **kw)
    return l4_csum(seg, proto, c.src4, c.dst4, mode)


def l4_v6(c, proto, payload, mode="good", **kw):
    seg = tcp_seg(c, payload, **kw) if proto == TCP else udp_seg(c, payload, **kw)
    return l4_csum(seg, proto, c.src6, c.dst6, mode)


def payload(n):
    return rng.randbytes(max(0, n))


def small_payload():
    return payload(rng.choice([0, 0, 1, 7, 8, rng.randrange(64), rng.randrange(512)]))


def valid(c, kind=None, size=None, mode="good", tags=()):
    """A well-formed TCP or UDP frame over IPv4 or IPv6: (frame, header length)."""
    kind = kind or rng.choice(["tcp4", "udp4", "tcp6", "udp6"])
    proto = TCP if kind[:3] == "tcp" else UDP
    v6 = kind[3] == "6"
    hl = 14 + 4 * len(tags) + (40 if v6 else 20) + (20 if proto == TCP else 8)
    room = c.mtu + 14 + 4 * len(tags) - hl
    n = rng.randrange(min(room, 1400) + 1) if size is None else max(0, min(room, size - hl))
    if v6:
        f = eth(c, ETH_P_IPV6, ip6(c, proto, l4_v6(c, proto, payload(n), mode)), tags)
    else:
        f = eth(c, ETH_P_IP, ip4(c, proto, l4_v4(c, proto, payload(n), mode)), tags)
    return f, hl


# --- frame classes: each makes a list of ("pkt" | socket kind, bytes) ---

def pkt(f):
    return [("pkt", f)]


def c_eth_short(c, v):
    f = (c.dst_mac + c.src_mac + b"\x08\x00")[:v] if rng.random() < 0.7 else payload(v)
    return pkt(f)


def c_truncated(c, v):
    kind = ["tcp4", "udp4", "tcp6", "udp6"][v % 4]
    tags = [(), (ETH_P_8021Q,)][v // 4]
    f, hl = valid(c, kind, tags=tags)
    if rng.random() < 0.3:		# or with IPv4 options / TCP options
        proto = TCP if kind[:3] == "tcp" else UDP
        if kind[3] == "4":
            f = eth(c, ETH_P_IP, ip4(c, proto, l4_v4(c, proto, b""), opts=b"\x01" * 20), tags)
        else:
            f = eth(c, ETH_P_IPV6, ip6(c, HOP, ext_opts(proto, 2) + l4_v6(c, proto, b"")), tags)
        hl = len(f)
    return pkt(f[:rng.randrange(14, hl)])


def c_ip4_ihl(c, v):
    proto = rng.choice([TCP, UDP])
    l4 = l4_v4(c, proto, small_payload())
    opts = b""
    if v > 5 and rng.random() < 0.7:	# the options the IHL claims are there
        opts = rng.choice([b"\x01", b"\x00"]) * ((v - 5) * 4)
    f = ip4(c, proto, l4, ihl=v, opts=opts,
            tot=rng.choice([None, None, 20 + len(l4), v * 4 + len(l4)]))
    return pkt(eth(c, ETH_P_IP, f))


def c_ip4_totlen(c, v):
    proto = rng.choice([TCP, UDP])
    l4 = l4_v4(c, proto, small_payload())
    exact = 20 + len(l4)
    tot = [0, 1, 19, 20, exact - 1, exact // 2, exact + 1, exact + 8, exact + 100, 65535,
           c.mtu, c.mtu + 1][v]
    return pkt(eth(c, ETH_P_IP, ip4(c, proto, l4, tot=tot)))


def ip4_opt(v):
    addrs = payload(4 * rng.randrange(1, 9))
    return [
        b"\x01" * 3 + b"\x00",					# NOPs, EOL
        bytes([7, 3 + len(addrs), 4]) + addrs,			# record route
        bytes([7, 0, 4]) + addrs,				# RR, length 0
        bytes([7, 1]),						# RR, length 1
        bytes([7, 40, 4]) + addrs[:8],				# RR, past the header
        bytes([68, 12, 5, 0x01]) + payload(8),			# timestamp
        bytes([68, 36, 37, 0xf3]) + payload(32),		# timestamp, pointer past
        bytes([131, 3 + len(addrs), 4]) + addrs,		# loose source route
        bytes([137, 3 + len(addrs), rng.randrange(256)]) + addrs,	# strict, any pointer
        bytes([148, 4, 0, 0]),					# router alert
        bytes([rng.randrange(2, 256), rng.choice([0, 1, 2, 39, 40, 255])]) + payload(6),
        bytes([130, 11]) + payload(9),				# security
        bytes([134, rng.randrange(6, 40)]) + payload(30),	# CIPSO
        payload(40),						# anything
        b"\x00" + payload(rng.randrange(1, 39)),		# EOL, then anything
    ][v][:40]


def c_ip4_opts(c, v):
    proto = rng.choice([TCP, UDP])
    return pkt(eth(c, ETH_P_IP, ip4(c, proto, l4_v4(c, proto, small_payload()),
                                    opts=ip4_opt(v))))


def tcp_in_ip(c, seg, v6):
    if v6:
        return eth(c, ETH_P_IPV6, ip6(c, TCP, l4_csum(seg, TCP, c.src6, c.dst6)))
    return eth(c, ETH_P_IP, ip4(c, TCP, l4_csum(seg, TCP, c.src4, c.dst4)))


def c_tcp_doff(c, v):
    room = max(0, v * 4 - 20)
    how = rng.randrange(3)
    if how == 0:	# the options the data offset claims, and a payload
        seg = tcp_seg(c, small_payload(), opts=b"\x01" * room, doff=v)
    elif how == 1:	# a bare 20-byte header: offsets > 5 point past it
        seg = tcp_seg(c, doff=v)
    else:		# the segment ends inside the claimed options
        seg = tcp_seg(c, opts=b"\x01" * rng.randrange(room + 1), doff=v)
    return pkt(tcp_in_ip(c, seg, rng.random() < 0.3))


def tcp_opt(v):
    return [
        bytes([2, 0]),				# MSS, length 0
        bytes([2, 1]),				# MSS, length 1
        bytes([2, 4, 5, 0xb4]),			# MSS
        bytes([3, 3, 7, 4, 2, 8, 10]) + payload(8),	# WS, SACK-permitted, TS
        bytes([5, rng.choice([0, 1, 10, 34])]) + payload(8),	# SACK
        bytes([rng.randrange(6, 256), 40]) + payload(2),	# past the header
        bytes([8, 9]) + payload(7),		# TS, wrong length
        bytes([19, 18]) + payload(16),		# MD5
        bytes([29, rng.randrange(0, 40)]) + payload(14),	# TCP-AO
        bytes([30, rng.randrange(0, 40)]) + payload(20),	# MPTCP
        bytes([34, rng.choice([2, 3, 10, 18, 40])]) + payload(16),	# fast open
        b"\x01" * 39 + bytes([2]),		# a kind with no length byte left
        payload(40),
    ][v][:40]


def c_tcp_opts(c, v):
    seg = tcp_seg(c, small_payload(), opts=tcp_opt(v))
    return pkt(tcp_in_ip(c, seg, rng.random() < 0.3))


def udp_in_ip(c, seg, v6):
    if v6:
        return eth(c, ETH_P_IPV6, ip6(c, UDP, l4_csum(seg, UDP, c.src6, c.dst6)))
    return eth(c, ETH_P_IP, ip4(c, UDP, l4_csum(seg, UDP, c.src4, c.dst4)))


def c_udp_short(c, v):
    seg = udp_seg(c, b"")[:v] if rng.random() < 0.5 else payload(v)
    return pkt(udp_in_ip(c, seg, rng.random() < 0.3))


def c_udp_len(c, v):
    p = small_payload()
    seg = 8 + len(p)
    ulen = [0, 1, 7, 8, seg - 1, seg + 1, seg + 100, 65535, seg][v]
    return pkt(udp_in_ip(c, udp_seg(c, p, ulen=ulen), rng.random() < 0.3))


def frag4(c, proto, body, off, more, ident, **kw):
    return eth(c, ETH_P_IP, ip4(c, proto, body, frag=(0x2000 if more else 0) | (off & 0x1fff),
                                **kw))


def c_ip4_frag(c, v):
    proto = rng.choice([TCP, UDP])
    ident = rng.randrange(65536)
    dgram = l4_v4(c, proto, payload(rng.randrange(16, 600)),
                  mode=rng.choice(["good", "good", "bad"]))
    n8 = len(dgram) // 8
    if v == 0:		# first
        return pkt(frag4(c, proto, dgram[:8 * max(1, n8 // 2)], 0, True, ident))
    if v == 1:		# middle
        return pkt(frag4(c, proto, payload(8 * rng.randrange(1, 20)), rng.randrange(1, 300),
                         True, ident))
    if v == 2:		# last
        return pkt(frag4(c, proto, payload(rng.randrange(1, 200)), rng.randrange(1, 300),
                         False, ident))
    if v == 3:		# overlapping
        return pkt(frag4(c, proto, dgram[:24], 0, True, ident)) + \
            pkt(frag4(c, proto, payload(32), 1, False, ident))
    if v == 4:		# tiny: the TCP header split over two fragments
        return pkt(frag4(c, proto, dgram[:8], 0, True, ident)) + \
            pkt(frag4(c, proto, dgram[8:], 1, False, ident))
    if v == 5:		# past 64 KiB
        return pkt(frag4(c, proto, payload(rng.randrange(8, 400)), 0x1fff, False, ident))
    if v == 6:		# evil bit, DF with MF, a zero-length fragment
        return pkt(eth(c, ETH_P_IP, ip4(c, proto, payload(rng.choice([0, 8])),
                                        frag=rng.choice([0x8000, 0x6000, 0x2000 | 1]))))
    # the whole datagram in three fragments, maybe out of order
    cut1, cut2 = 8 * max(1, n8 // 3), 8 * max(2, 2 * n8 // 3)
    parts = [(0, dgram[:cut1], True), (cut1 // 8, dgram[cut1:cut2], True),
             (cut2 // 8, dgram[cut2:], False)]
    if rng.random() < 0.3:
        rng.shuffle(parts)
    return [x for o, b, m in parts for x in pkt(frag4(c, proto, b, o, m, ident))]


def padn(n):
    """N bytes of valid option padding (PadN options, a Pad1 for one byte)."""
    out = b""
    while n > 0:
        k = 1 if n == 1 else min(n, 257) if n - min(n, 257) != 1 else 255
        out += b"\0" if k == 1 else bytes([1, k - 2]) + b"\0" * (k - 2)
        n -= k
    return out


def ext_opts(nxt, units=0):
    """A hop-by-hop or destination options header of (UNITS + 1) * 8 bytes."""
    n = (units + 1) * 8 - 2
    body = rng.choice([padn(n),						# PadN
                       b"\0" * n,						# Pad1s
                       bytes([5, 2, 0, 0]) + padn(n - 4),			# router alert
                       bytes([0xc2, 4]) + payload(4) + b"\0" * (n - 6),	# jumbo
                       bytes([rng.randrange(256), rng.randrange(256)]) + payload(n - 2)])
    return bytes([nxt, units]) + body


def ext_routing(nxt, units=None):
    units = rng.choice([0, 2, 4, 16]) if units is None else units
    return bytes([nxt, units, rng.choice([0, 2, 3, 4, rng.randrange(256)]),
                  rng.randrange(4)]) + payload((units + 1) * 8 - 4)


def ext_frag(nxt):
    return bytes([nxt, 0]) + struct.pack("!HI", rng.choice([0, 1, 8 << 3 | 1, 0xfff8]),
                                         rng.randrange(2**32))


def ext(kind, nxt):
    if kind == ROUTING:
        return ext_routing(nxt)
    if kind == FRAG6:
        return ext_frag(nxt)
    return ext_opts(nxt, rng.choice([0, 0, 1, 3]))


def v6_chain(kinds, proto, tail):
    out = tail
    for i in range(len(kinds) - 1, -1, -1):
        out = ext(kinds[i], kinds[i + 1] if i + 1 < len(kinds) else proto) + out
    return out


def c_ip6_ext(c, v):
    proto = rng.choice([TCP, UDP])
    l4 = l4_v6(c, proto, small_payload(), mode=rng.choice(["good", "good", "bad"]))
    if v < 4:		# one of each: hop-by-hop, routing, destination options, fragment
        kinds = [[HOP], [ROUTING], [DSTOPTS], [FRAG6]][v]
    elif v == 4:	# a chain
        kinds = [rng.choice([HOP, ROUTING, DSTOPTS, FRAG6]) for _ in range(rng.randrange(2, 6))]
    elif v == 5:	# longer than the device walks
        kinds = [DSTOPTS] * rng.randrange(8, 14)
    elif v == 6:	# hop-by-hop not first
        kinds = [DSTOPTS, HOP]
    else:
        kinds = [rng.choice([HOP, ROUTING, DSTOPTS])]
    body = v6_chain(kinds, proto, l4)
    plen = None
    if v == 7:		# an extension header's length past the frame
        body = bytes([proto, rng.choice([8, 64, 255])]) + payload(6) + l4
    elif v == 8:	# the payload length past the frame
        plen = len(body) + rng.choice([1, 8, 100, 65535 - len(body)])
    elif v == 9:	# ... short of it
        plen = rng.randrange(len(body))
    elif v == 10:	# no next header, or nothing after the last extension
        body = v6_chain(kinds, NONXT, b"" if rng.random() < 0.5 else payload(16))
    return pkt(eth(c, ETH_P_IPV6, ip6(c, kinds[0] if v not in (7,) else HOP, body, plen=plen)))


def c_big_headers(c, v):
    """The largest headers: IPv4 and TCP with 40 bytes of options each; IPv6
    extension headers beyond the device's header buffer (when the MTU allows)."""
    if v == 0:
        seg = l4_csum(tcp_seg(c, small_payload(), opts=b"\x01" * 40), TCP, c.src4, c.dst4)
        return pkt(eth(c, ETH_P_IP, ip4(c, TCP, seg, opts=b"\x01" * 40)))
    if v == 1:
        seg = l4_csum(tcp_seg(c, small_payload(), opts=b"\x01" * 40), TCP, c.src6, c.dst6)
        return pkt(eth(c, ETH_P_IPV6, ip6(c, HOP, ext_opts(TCP, 3) + seg)))
    room = c.mtu - 40 - 60 - rng.randrange(64)
    units = max(0, min(255, room // 8 - 1))
    proto = rng.choice([TCP, UDP])
    l4 = l4_v6(c, proto, b"", opts=b"\x01" * 40) if proto == TCP else l4_v6(c, UDP, b"")
    if v == 2:		# one option header as long as the frame allows (2 KiB at most)
        body = ext_opts(proto, units) + l4
        return pkt(eth(c, ETH_P_IPV6, ip6(c, DSTOPTS, body)))
    # many of them
    n = max(1, min(8, room // 264))
    body = b"".join(bytes([DSTOPTS if i < n - 1 else proto, min(32, units)]) +
                    b"\0" * ((min(32, units) + 1) * 8 - 2) for i in range(n)) + l4
    return pkt(eth(c, ETH_P_IPV6, ip6(c, DSTOPTS, body)))


def c_vlan(c, v):
    tags = [(ETH_P_8021Q,), (ETH_P_8021AD, ETH_P_8021Q), (ETH_P_8021Q, ETH_P_8021Q),
            (ETH_P_8021AD,), (ETH_P_8021AD, ETH_P_8021Q, ETH_P_8021Q)][v % 5]
    inner = gen_one(c, rng.choice(INNER))[0][1]
    f = inner[:12] + b"".join(struct.pack("!HH", t, rng.randrange(0x10000)) for t in tags) + \
        inner[12:]
    if v >= 5:		# cut inside the tags
        f = f[:rng.randrange(13, 14 + 4 * len(tags))]
    return pkt(f)


def c_zero_payload(c, v):
    return pkt(valid(c, ["tcp4", "udp4", "tcp6", "udp6"][v], size=0)[0])


def c_max_size(c, v):
    size = c.mtu + 14 - (0 if v < 4 else rng.randrange(1, 64))
    return pkt(valid(c, ["tcp4", "udp4", "tcp6", "udp6"][v % 4], size=size)[0])


def c_oversize(c, v):
    size = [c.mtu + 15, c.mtu + 18, c.mtu + 19, 9014, 9018, 65535][v]
    tags = (ETH_P_8021Q,) if v in (1, 2, 4) else ()
    f = valid(c, size=size, tags=tags)[0]
    return pkt(f + payload(size - len(f)))


def c_csum_good(c, v):
    f = valid(c, ["tcp4", "udp4", "tcp6", "udp6"][v % 4])[0]
    if v == 4:		# UDP over IPv4 without a checksum
        f = eth(c, ETH_P_IP, ip4(c, UDP, l4_v4(c, UDP, small_payload(), mode="zero")))
    return pkt(f)


def c_csum_bad(c, v):
    return pkt(valid(c, ["tcp4", "udp4", "tcp6", "udp6"][v], mode="bad")[0])


def c_random(c, v):
    et = [ETH_P_IP, ETH_P_IPV6, ETH_P_8021Q, ETH_P_8021AD, ETH_P_ARP, rng.randrange(65536)][v]
    n = rng.choice([0, 1, 20, 40, rng.randrange(128), rng.randrange(c.mtu + 1)])
    return pkt(eth(c, et, payload(n)))


def c_mutated(c, v):
    f = bytearray(valid(c)[0] if v else gen_one(c, rng.choice(INNER))[0][1])
    for _ in range(rng.randrange(1, 5)):
        i = rng.randrange(14, min(len(f), 100)) if len(f) > 14 else 0
        if i < len(f):
            f[i] = rng.randrange(256) if rng.random() < 0.5 else f[i] ^ (1 << rng.randrange(8))
    return pkt(bytes(f))


# AF_INET raw sockets: the kernel builds the IP header around the payload
# ("udp", "tcp"), or takes it from the payload ("hdrincl").

def c_inet_udp(c, v):
    p = [lambda: b"\x12\x34\x56\x78",
         lambda: payload(rng.randrange(8)),
         lambda: udp_seg(c, small_payload(), ulen=rng.choice([0, 1, 7, 65535])),
         lambda: l4_csum(udp_seg(c, small_payload()), UDP, c.src4, c.dst4),
         lambda: l4_csum(udp_seg(c, small_payload()), UDP, c.src4, c.dst4, "bad"),
         lambda: udp_seg(c, payload(c.mtu))][v]()		# fragmented by the kernel
    return [("udp", p)]


def c_inet_tcp(c, v):
    p = [lambda: payload(rng.randrange(20)),
         lambda: tcp_seg(c, small_payload(), doff=rng.randrange(5)),
         lambda: tcp_seg(c, doff=rng.randrange(6, 16)),
         lambda: l4_csum(tcp_seg(c, small_payload()), TCP, c.src4, c.dst4),
         lambda: l4_csum(tcp_seg(c, small_payload()), TCP, c.src4, c.dst4, "bad"),
         lambda: l4_csum(tcp_seg(c, small_payload(), opts=tcp_opt(rng.randrange(13))), TCP,
                         c.src4, c.dst4)][v]()
    return [("tcp", p)]


def c_inet_hdrincl(c, v):
    proto = rng.choice([TCP, UDP, TCP, UDP, 1, rng.randrange(256)])
    if proto in (TCP, UDP):
        l4 = l4_v4(c, proto, small_payload(), mode=rng.choice(["good", "bad"]))
        if rng.random() < 0.3:
            l4 = l4[:rng.randrange(len(l4) + 1)]
    else:
        l4 = small_payload()
    opts = b"\x01" * ((v - 5) * 4) if v > 5 and rng.random() < 0.7 else b""
    h = ip4(c, proto, l4, ihl=v, opts=opts,
            frag=rng.choice([0, 0x4000, 0x4000, 0x2000, rng.randrange(65536)]))
    if rng.random() < 0.2:
        h = h[:12] + b"\0\0\0\0" + h[16:]	# the kernel fills in the source
    return [("hdrincl", h)]


# name: (function, variants, weight)
CLASSES = {
    "eth_short": (c_eth_short, 14, 1),
    "truncated": (c_truncated, 8, 4),
    "ip4_ihl": (c_ip4_ihl, 16, 4),
    "ip4_totlen": (c_ip4_totlen, 12, 3),
    "ip4_opts": (c_ip4_opts, 15, 3),
    "tcp_doff": (c_tcp_doff, 16, 4),
    "tcp_opts": (c_tcp_opts, 13, 3),
    "udp_short": (c_udp_short, 8, 3),
    "udp_len": (c_udp_len, 9, 3),
    "ip4_frag": (c_ip4_frag, 8, 3),
    "ip6_ext": (c_ip6_ext, 11, 4),
    "big_headers": (c_big_headers, 4, 1),
    "vlan": (c_vlan, 8, 3),
    "zero_payload": (c_zero_payload, 4, 2),
    "max_size": (c_max_size, 8, 2),
    "oversize": (c_oversize, 6, 1),
    "csum_good": (c_csum_good, 5, 2),
    "csum_bad": (c_csum_bad, 4, 3),
    "random": (c_random, 6, 3),
    "mutated": (c_mutated, 4, 3),
    "inet_udp": (c_inet_udp, 6, 2),
    "inet_tcp": (c_inet_tcp, 6, 2),
    "inet_hdrincl": (c_inet_hdrincl, 16, 2),
}
# Classes whose frames the VLAN and mutation classes wrap.
INNER = ["truncated", "ip4_ihl", "ip4_totlen", "ip4_opts", "tcp_doff", "tcp_opts",
         "udp_short", "udp_len", "ip4_frag", "ip6_ext", "zero_payload", "csum_good",
         "csum_bad"]


def gen_one(c, name, v=None):
    fn, nvar, _ = CLASSES[name]
    return fn(c, rng.randrange(nvar) if v is None else v)


# --- sending ---

class Sender:
    def __init__(self, c, dump, inet):
        self.c, self.dump, self.inet = c, dump, inet
        self.socks = {}
        if dump:
            return
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        s.bind((c.dev, 0))
        s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
        self.socks["pkt"] = s
        if not inet:
            return
        for kind, proto in (("udp", socket.IPPROTO_UDP), ("tcp", socket.IPPROTO_TCP),
                            ("hdrincl", socket.IPPROTO_RAW)):
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, proto)
            # Report drops (ENOBUFS), which raw sockets otherwise hide.
            s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
            s.setblocking(True)
            self.socks[kind] = s

    def wire(self, kind, data):
        """The frame that a socket of KIND makes of DATA (its model), or None
        where the kernel would fragment it."""
        c = self.c
        if kind == "pkt":
            return data
        hdr = c.dst_mac + c.src_mac + b"\x08\x00"
        if kind == "hdrincl":
            d = bytearray(data)
            if len(d) >= 20 and (d[0] & 15) >= 5:	# raw_send_hdrinc() fills these in
                d[2:4] = struct.pack("!H", len(d))
                if d[12:16] == b"\0\0\0\0":
                    d[12:16] = c.src4
                d = bytearray(ip_hdr_csum(bytes(d)))
            return hdr + bytes(d)
        if len(data) + 20 > c.mtu:
            return None
        proto = UDP if kind == "udp" else TCP
        return hdr + ip4(c, proto, data, frag=0x4000)

    def send(self, kind, data):
        """None when sent, else the errno that refused it."""
        if self.dump:
            return None
        s = self.socks[kind]
        for attempt in range(200):
            try:
                if kind == "pkt":
                    s.send(data)
                else:
                    # A pending ICMP error (IP_RECVERR) would fail the next send.
                    s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    s.sendto(data, (self.c.dst4_str, 0))
                return None
            except OSError as e:
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN) or attempt == 199:
                    return e.errno
                time.sleep(0.001 * min(attempt + 1, 20))	# the rings are full: wait
        return errno.ENOBUFS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-i", "--dev", required=True)
    ap.add_argument("--dst-mac", required=True)
    ap.add_argument("--src-mac")
    ap.add_argument("--src4", default="10.99.0.1")
    ap.add_argument("--dst4", default="10.99.0.2")
    ap.add_argument("--src6", default="fd99::1")
    ap.add_argument("--dst6", default="fd99::2")
    ap.add_argument("--ports", default="5001,7,9",
                    type=lambda s: [int(x) for x in s.split(",") if x])
    ap.add_argument("--mtu", type=int)
    ap.add_argument("-t", "--seconds", type=float, default=30)
    ap.add_argument("-n", "--frames", type=int, default=10**9)
    ap.add_argument("-s", "--seed", type=int)
    ap.add_argument("--phase", default="")
    ap.add_argument("--no-inet", action="store_true", help="AF_PACKET only")
    ap.add_argument("--go", help="start once this file exists")
    ap.add_argument("--dump", action="store_true", help="print the frames, send nothing")
    a = ap.parse_args()
    if a.src_mac is None:
        a.src_mac = "02:00:00:00:00:01" if a.dump else \
            open(f"/sys/class/net/{a.dev}/address").read().strip()
    if a.mtu is None:
        a.mtu = 1500 if a.dump else int(open(f"/sys/class/net/{a.dev}/mtu").read())
    seed = random.SystemRandom().randrange(2**32) if a.seed is None else a.seed
    rng.seed(f"{seed}:{a.phase}")
    c = Ctx(a)
    tag = f"seed {seed}" + (f" phase {a.phase}" if a.phase else "")
    print(f"frame_fuzz: {tag}: {a.dev} (MTU {a.mtu}) to {a.dst_mac}, ports "
          f"{','.join(map(str, a.ports))}, {a.seconds:.0f} s or {a.frames} frames", flush=True)
    try:
        tx = Sender(c, a.dump, not a.no_inet)
    except OSError as e:
        print(f"frame_fuzz: cannot open the sockets: {e}")
        return 1

    if a.go:
        deadline = time.monotonic() + 600
        while not os.path.exists(a.go):
            if time.monotonic() > deadline:
                print(f"frame_fuzz: {a.go} did not appear in 600 s")
                return 1
            time.sleep(0.01)
    stats = {}		# class: [sent, refused, malformed, maybe, csum_bad]
    errnos = {}
    names = [n for n, (_, _, w) in CLASSES.items() for _ in range(w)
             if not (a.no_inet and n.startswith("inet_"))]
    # The reproducer first, then every variant of every class once, the
    # classes in turn.
    plan = [("inet_udp", 0)] if not a.no_inet else []
    plan += [(n, v) for v in range(max(x[1] for x in CLASSES.values()))
             for n in CLASSES if n in names and v < CLASSES[n][1]]
    frames = 0
    t0 = time.monotonic()
    end = t0 + a.seconds
    while frames < a.frames and time.monotonic() < end:
        name, v = plan.pop(0) if plan else (rng.choice(names), None)
        st = stats.setdefault(name, [0, 0, 0, 0, 0])
        for kind, data in gen_one(c, name, v):
            if frames >= a.frames:
                break
            frames += 1
            w = tx.wire(kind, data)
            verdict, bad = judge(w) if w is not None else (NO, False)
            if a.dump:
                print(f"{frames} {name} {kind} {verdict}{' csum_bad' if bad else ''} "
                      f"{data.hex()}" + (f" wire {w.hex()}" if kind != "pkt" and w else ""))
            err = tx.send(kind, data)
            if frames == 1 and kind == "udp":
                print(f"frame_fuzz: frame 1, the reproducer: AF_INET SOCK_RAW IPPROTO_UDP "
                      f"{data.hex()} to {a.dst4}: "
                      f"{'sent' if err is None else 'refused: ' + os.strerror(err)}", flush=True)
            if err is not None:
                st[1] += 1
                errnos[err] = errnos.get(err, 0) + 1
                continue
            st[0] += 1
            st[2] += verdict == YES
            st[3] += verdict == MAYBE
            st[4] += bad
    secs = time.monotonic() - t0
    print(f"frame_fuzz: {frames} frames in {secs:.1f} s ({tag}; -n {frames} replays them)")
    print(f"frame_fuzz:   {'class':14s} {'sent':>8s} {'refused':>8s} {'malformed':>9s} "
          f"{'maybe':>7s} {'csum_bad':>8s}")
    tot = [0] * 5
    for name in CLASSES:
        if name not in stats:
            continue
        st = stats[name]
        tot = [x + y for x, y in zip(tot, st)]
        print(f"frame_fuzz:   {name:14s} {st[0]:8d} {st[1]:8d} {st[2]:9d} {st[3]:7d} {st[4]:8d}")
    print(f"frame_fuzz:   {'total':14s} {tot[0]:8d} {tot[1]:8d} {tot[2]:9d} {tot[3]:7d} "
          f"{tot[4]:8d}")
    if errnos:
        print("frame_fuzz: refused with: " + ", ".join(
            f"{errno.errorcode.get(e, e)} {n}" for e, n in sorted(errnos.items())))
    for name in CLASSES:
        if name in stats:
            print("ff-class", name, *stats[name])
    print("ff-total", *tot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
