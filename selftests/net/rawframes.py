#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Hand-made frames for the parser and checksum tests (malformed_frames.sh,
checksums.sh): sent through an AF_PACKET socket, so that no stack fixes
their lengths or checksums, and captured the same way at the other end.
Frames of a malformed KIND carry its mark (IPv4 ID 0xd700 + k, IPv6 flow
label 0xd7000 + k) for the sniffer to tell them apart.

  rawframes.py send IFNAME DSTMAC KIND COUNT
      COUNT frames of KIND out of IFNAME to DSTMAC, from 10.99.0.1 to
      10.99.0.2 (fd99::1 to fd99::2). Malformed kinds: see KINDS;
      udp4-raw is socket(AF_INET, SOCK_RAW, IPPROTO_UDP).sendto() of 4
      bytes (the kernel makes the frame); stop: a well-formed UDP datagram
      to port 9 that ends a sniff.
  rawframes.py sniff IFNAME SECONDS
      prints "listening", captures the frames IFNAME receives until a stop
      frame or SECONDS, then "seen KIND=N..." (marked frames that got this
      far; "seen none"), "stop N" and "frames N" (all it got)
  rawframes.py udp-xfer TXNS IFNAME DSTMAC PORT COUNT good|bad|mixed|offload|loop [4|6]
      run in the receiving namespace: binds a UDP socket to 10.99.0.2 (or
      fd99::2) PORT there, sends COUNT datagrams of 1000 bytes with a right
      or wrong checksum (mixed: COUNT of each, in turn) from namespace TXNS
      out of IFNAME, drains the socket until it has been idle 1 s and
      prints "delivered N". offload: COUNT of each, in turn, that leave
      the checksum to the sending device (a virtio_net_hdr asking for it:
      CHECKSUM_PARTIAL), their field holding the pseudo-header's sum
      (right) or another value (wrong), as a packet socket may. loop:
      COUNT right ones whose skb says ETH_P_LOOP (sendto's sll_protocol),
      not what their bytes say"
  rawframes.py tcp-bad IFNAME DSTMAC SPORT DPORT COUNT SIZE
      COUNT TCP segments (ACK, SIZE bytes of payload, random sequence
      numbers) from 10.99.0.1:SPORT to 10.99.0.2:DPORT with a wrong
      checksum. SPORT "auto": that of the first connection to DPORT this
      namespace has established (prints "waiting" once it looks, waits
      for one up to 30 s, prints "sport N"), so that the segments go the
      moment it is up
  rawframes.py csum-capture IFNAME SECONDS
      prints "listening", captures the IPv4/IPv6 TCP and UDP frames IFNAME
      receives until a stop datagram (UDP to port 9, "rawframes-stop") or
      SECONDS and checks each one's checksum over the captured bytes;
      prints "udp4 N bad N tcp4 N bad N udp6 N bad N tcp6 N bad N" and
      the first bad ones

DEVTCP_TIME_SCALE multiplies the idle wait of udp-xfer.
"""
import os
import random
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_VNET_HDR = 15
ETH_P_LOOP = 0x0060
VIRTIO_NET_HDR_F_NEEDS_CSUM = 1
SO_RCVBUFFORCE = 33
CLONE_NEWNET = 0x40000000

SRC4, DST4 = "10.99.0.1", "10.99.0.2"
SRC6, DST6 = "fd99::1", "fd99::2"
STOP = b"rawframes-stop"
MARK4, MARK6 = 0xD700, 0xD7000
SCALE = float(os.environ.get("DEVTCP_TIME_SCALE", "1"))


def csum(data):
    """The Internet checksum's ones' complement sum, folded, not inverted."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def pseudo4(src, dst, proto, length):
    return socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, proto, length)


def pseudo6(src, dst, proto, length):
    return (socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) +
            struct.pack("!IxxxB", length, proto))


def l4_check(pseudo, seg):
    """The checksum field's value for @seg (its field zeroed)."""
    return (~csum(pseudo + seg)) & 0xFFFF or 0xFFFF


def ipv4(proto, payload, ident, tot_len=None, ihl=5, src=SRC4, dst=DST4):
    tot = 20 + len(payload) if tot_len is None else tot_len
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot, ident, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", (~csum(h)) & 0xFFFF) + h[12:]
    return h + payload


def ipv6(nexthdr, payload, label, payload_len=None, src=SRC6, dst=DST6):
    plen = len(payload) if payload_len is None else payload_len
    return struct.pack("!IHBB16s16s", 0x60000000 | label, plen, nexthdr, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def tcp(sport, dport, payload, doff=5, seq=1, ack=1, flags=0x18, options=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4, flags, 65535, 0, 0) + \
        options + payload


def udp(sport, dport, payload, length=None):
    ulen = 8 + len(payload) if length is None else length
    return struct.pack("!HHHH", sport, dport, ulen, 0) + payload


def with_check(seg, at, pseudo, bad=False):
    c = l4_check(pseudo, seg)
    if bad:
        c ^= 0x00FF	# never its equivalent (0 and 0xffff are)
    return seg[:at] + struct.pack("!H", c) + seg[at + 2:]


def udp4_ok(sport, dport, payload, bad=False, src=SRC4, dst=DST4):
    seg = udp(sport, dport, payload)
    return with_check(seg, 6, pseudo4(src, dst, 17, len(seg)), bad)


def udp6_ok(sport, dport, payload, bad=False):
    seg = udp(sport, dport, payload)
    return with_check(seg, 6, pseudo6(SRC6, DST6, 17, len(seg)), bad)


def pad(frame):
    return frame + bytes(max(0, 60 - len(frame)))


# Malformed kinds: name -> (L3 ethertype, builder of the L3 packet for mark k).
# Each is malformed by the receiving NIC's rules (kernel/parse.c); comments
# say why.
KINDS = {
    # TCP data offset 4 (16 bytes) < 5
    "tcp-doff-small": (ETH_P_IP, lambda k: ipv4(6, tcp(40000, 7, b"x" * 8, doff=4), MARK4 + k)),
    # a UDP segment of 4 bytes by the IP total length, in a 60-byte frame
    "udp-short": (ETH_P_IP, lambda k: ipv4(17, b"\x12\x34\x00\x07" + bytes(16), MARK4 + k,
                                            tot_len=24)),
    # IPv4 total length 1000, 36 bytes present
    "ip4-totlen": (ETH_P_IP, lambda k: ipv4(17, udp4_ok(40000, 7, b"y" * 8), MARK4 + k,
                                             tot_len=1000)),
    # IHL 4 (16 bytes) < 5
    "ip4-ihl": (ETH_P_IP, lambda k: ipv4(17, udp4_ok(40000, 7, b"y" * 8), MARK4 + k, ihl=4)),
    # IPv6 payload length 1000, 16 bytes present
    "ip6-paylen": (ETH_P_IPV6, lambda k: ipv6(17, udp6_ok(40000, 7, b"y" * 8), MARK6 + k,
                                               payload_len=1000)),
    # a hop-by-hop header of 168 bytes (length 20) in a payload of 24
    "ip6-ext": (ETH_P_IPV6, lambda k: ipv6(0, struct.pack("!BB", 17, 20) + bytes(6) +
                                            udp6_ok(40000, 7, b"y" * 8), MARK6 + k)),
    # TCP data offset 15 (60 bytes), a segment of 24
    "tcp-doff-past": (ETH_P_IP, lambda k: ipv4(6, tcp(40000, 7, b"z" * 4, doff=15), MARK4 + k)),
}
KIND_NAMES = list(KINDS) + ["udp4-raw"]


def packet_socket(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    return s


def eth(s, dstmac, ethertype, l3):
    src = s.getsockname()[4]
    return bytes.fromhex(dstmac.replace(":", "")) + src + struct.pack("!H", ethertype) + l3


def stop_frame(s, dstmac):
    return pad(eth(s, dstmac, ETH_P_IP, ipv4(17, udp4_ok(40001, 9, STOP), 0xD7FF)))


def send(ifname, dstmac, kind, count):
    if kind == "udp4-raw":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        for _ in range(count):
            s.sendto(b"\x12\x34\x56\x78", (DST4, 0))
        return 0
    s = packet_socket(ifname)
    for _ in range(count):
        if kind == "stop":
            s.send(stop_frame(s, dstmac))
        else:
            ethertype, build = KINDS[kind]
            s.send(pad(eth(s, dstmac, ethertype, build(KIND_NAMES.index(kind)))))
    return 0


def classify(f):
    """KIND_NAMES entry of a marked frame, "stop", or None."""
    if len(f) < 34:
        return None
    ethertype = struct.unpack_from("!H", f, 12)[0]
    if ethertype == ETH_P_IP:
        tot, ident = struct.unpack_from("!HH", f, 16)
        if ident == 0xD7FF:
            return "stop"
        if MARK4 <= ident < MARK4 + len(KIND_NAMES):
            return KIND_NAMES[ident - MARK4]
        if f[23] == 17 and tot == 24 and f[26:30] == socket.inet_aton(SRC4):
            return "udp4-raw"
    elif ethertype == ETH_P_IPV6:
        label = struct.unpack_from("!I", f, 14)[0] & 0xFFFFF
        if MARK6 <= label < MARK6 + len(KIND_NAMES):
            return KIND_NAMES[label - MARK6]
    return None


def capture(ifname, seconds, each):
    """Calls each(frame) for every frame IFNAME receives until it returns
    True or SECONDS pass."""
    s = packet_socket(ifname)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    print("listening", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            f, addr = s.recvfrom(1 << 17)
        except socket.timeout:
            break
        if addr[2] != PACKET_OUTGOING and each(f):
            return True
    return False


def sniff(ifname, seconds):
    seen = {}
    stops = [0]
    frames = [0]

    def each(f):
        frames[0] += 1
        kind = classify(f)
        if kind == "stop":
            stops[0] += 1
            return True
        if kind:
            seen[kind] = seen.get(kind, 0) + 1
        return False

    capture(ifname, seconds, each)
    print("seen " + (" ".join("%s=%d" % kv for kv in sorted(seen.items())) or "none"))
    print("stop %d" % stops[0])
    print("frames %d" % frames[0])
    return 0


def setns(name):
    """Moves this thread to network namespace NAME (ip netns's)."""
    fd = os.open("/run/netns/" + name, os.O_RDONLY)
    if hasattr(os, "setns"):
        os.setns(fd, CLONE_NEWNET)
    else:	# before Python 3.12
        import ctypes
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns " + name)
    os.close(fd)


def udp_xfer(txns, ifname, dstmac, port, count, quality, family):
    v6 = family == "6"
    r = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    r.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    r.bind((DST6 if v6 else DST4, port))
    setns(txns)	# r stays in this namespace
    s = packet_socket(ifname)
    offload = quality == "offload"
    if offload:
        s.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    payload = bytes(i % 251 for i in range(1000))
    if quality in ("mixed", "offload"):
        kinds = [True, False] * count
    else:
        kinds = [quality == "bad"] * count
    to = (ifname, ETH_P_LOOP) if quality == "loop" else None
    for i, bad in enumerate(kinds):
        seg = udp(41000 + i, port, payload)
        pseudo = (pseudo6(SRC6, DST6, 17, len(seg)) if v6 else
                  pseudo4(SRC4, DST4, 17, len(seg)))
        if offload:
            # the field's value the stack leaves for the device: the
            # pseudo-header's sum (a wrong one: never its equivalent)
            seed = csum(pseudo) ^ (0x00FF if bad else 0)
            seg = seg[:6] + struct.pack("!H", seed) + seg[8:]
        else:
            seg = with_check(seg, 6, pseudo, bad)
        if v6:
            f = eth(s, dstmac, ETH_P_IPV6, ipv6(17, seg, 0))
        else:
            f = eth(s, dstmac, ETH_P_IP, ipv4(17, seg, 0x1000 + i))
        if offload:
            start = 14 + (40 if v6 else 20)
            f = struct.pack("=BBHHHH", VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, start, 6) + f
        if to:
            s.sendto(f, to)
        else:
            s.send(f)
    r.settimeout(1.0 * SCALE)
    got = 0
    try:
        while True:
            got += r.recv(65536) == payload
    except socket.timeout:
        pass
    print("delivered %d" % got)
    return 0


def established_sport(dport, seconds):
    """Local port of an established IPv4 connection to @dport, or None."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local, remote, state = fields[1], fields[2], fields[3]
                if state == "01" and int(remote.split(":")[1], 16) == dport:
                    return int(local.split(":")[1], 16)
        time.sleep(0.02)
    return None


def tcp_bad(ifname, dstmac, sport, dport, count, size):
    s = packet_socket(ifname)
    if sport == "auto":
        print("waiting for a connection to port %d" % dport, flush=True)
        sport = established_sport(dport, 30)
        if sport is None:
            print("no connection to port %d" % dport)
            return 1
        print("sport %d" % sport, flush=True)
    sport = int(sport)
    payload = bytes(0xEE for _ in range(size))
    rnd = random.Random(sport)
    for i in range(count):
        seg = tcp(sport, dport, payload, seq=rnd.getrandbits(32), ack=rnd.getrandbits(32),
                  flags=0x18)
        seg = with_check(seg, 16, pseudo4(SRC4, DST4, 6, len(seg)), bad=True)
        s.send(eth(s, dstmac, ETH_P_IP, ipv4(6, seg, 0x2000 + i)))
    return 0


def check_l4(f):
    """(kind, right, description, is-stop) of a captured TCP/UDP frame, or None."""
    ethertype = struct.unpack_from("!H", f, 12)[0] if len(f) >= 14 else 0
    if ethertype == ETH_P_IP and len(f) >= 34:
        ihl = (f[14] & 15) * 4
        tot, frag = struct.unpack_from("!H", f, 16)[0], struct.unpack_from("!H", f, 20)[0]
        proto = f[23]
        if proto not in (6, 17) or frag & 0x3FFF or 14 + tot > len(f):
            return None
        src, dst = socket.inet_ntoa(f[26:30]), socket.inet_ntoa(f[30:34])
        seg = f[14 + ihl:14 + tot]
        pseudo = pseudo4(src, dst, proto, len(seg))
        kind = ("tcp4" if proto == 6 else "udp4")
    elif ethertype == ETH_P_IPV6 and len(f) >= 54:
        plen, proto = struct.unpack_from("!HB", f, 18)
        if proto not in (6, 17) or 54 + plen > len(f):
            return None
        src = socket.inet_ntop(socket.AF_INET6, f[22:38])
        dst = socket.inet_ntop(socket.AF_INET6, f[38:54])
        seg = f[54:54 + plen]
        pseudo = pseudo6(src, dst, proto, len(seg))
        kind = ("tcp6" if proto == 6 else "udp6")
    else:
        return None
    at = 16 if proto == 6 else 6
    if len(seg) < at + 2:
        return None
    field = struct.unpack_from("!H", seg, at)[0]
    ok = field != 0 and csum(pseudo + seg) == 0xFFFF
    ports = struct.unpack_from("!HH", seg)
    desc = "%s %s:%d > %s:%d len %d check 0x%04x (right: 0x%04x)" % (
        kind, src, ports[0], dst, ports[1], len(seg), field,
        l4_check(pseudo, seg[:at] + b"\0\0" + seg[at + 2:]))
    return kind, ok, desc, proto == 17 and seg[8:] == STOP


def csum_capture(ifname, seconds):
    counts = {k: [0, 0] for k in ("udp4", "tcp4", "udp6", "tcp6")}
    bad = []

    def each(f):
        r = check_l4(f)
        if not r:
            return False
        kind, ok, desc, stop = r
        counts[kind][0] += 1
        if not ok:
            counts[kind][1] += 1
            bad.append(desc)
        return stop

    stopped = capture(ifname, seconds, each)
    print(" ".join("%s %d bad %d" % (k, v[0], v[1]) for k, v in counts.items()))
    print("stop %d" % stopped)
    for d in bad[:10]:
        print("bad checksum: " + d)
    return 0


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "send" and len(argv) == 6:
        return send(argv[2], argv[3], argv[4], int(argv[5]))
    if cmd == "sniff" and len(argv) == 4:
        return sniff(argv[2], float(argv[3]))
    if cmd == "udp-xfer" and len(argv) in (8, 9):
        return udp_xfer(argv[2], argv[3], argv[4], int(argv[5]), int(argv[6]), argv[7],
                        argv[8] if len(argv) == 9 else "4")
    if cmd == "tcp-bad" and len(argv) == 8:
        return tcp_bad(argv[2], argv[3], argv[4], *map(int, argv[5:8]))
    if cmd == "csum-capture" and len(argv) == 4:
        return csum_capture(argv[2], float(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
