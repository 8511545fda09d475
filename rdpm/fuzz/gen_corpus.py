#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Seed corpus of the parser fuzzer: one well-formed request of each type
(and a few near misses). Byte 0 is the fd count the fuzzer attaches."""
import os
import struct
import sys

MAGIC, VER = 0x4d504452, 1
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def msg(name, fds, typ, body, version=VER, length=None):
    hdr = struct.pack("<IHHII", MAGIC, version, typ, length or 16 + len(body), 1)
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([fds]) + hdr + body)


ifname = b"eth1".ljust(16, b"\0")
v4 = bytes([10, 99, 0, 2]) + bytes(12)
v6 = bytes(15) + b"\1"
msg("hello", 0, 1, struct.pack("<HHI", 1, 1, 0))
msg("hello_v9", 0, 1, struct.pack("<HHI", 1, 9, 0), version=9)
msg("register", 1, 2, ifname + struct.pack("<II", 2, 0))
msg("register_nofd", 0, 2, ifname + struct.pack("<II", 0, 0))
msg("steer4", 0, 3, struct.pack("<IB3x", 1, 2) + bytes(16) + v4 + struct.pack("<HH", 0, 5000))
msg("steer6", 0, 3, struct.pack("<IB3x", 1, 10) + v6 + v6 + struct.pack("<HH", 40000, 5000))
msg("unsteer", 0, 4, struct.pack("<I", 1))
msg("unregister", 0, 5, struct.pack("<I", 1))
msg("status", 0, 6, struct.pack("<I", 1))
msg("drain", 0, 7, ifname)
msg("reload", 0, 8, b"")
msg("window", 1, 9, struct.pack("<IIQ", 1, 0, 1 << 20))
msg("join", 0, 10, ifname + struct.pack("<IIQ", 14, 0, 1 << 20))
msg("bad_length", 0, 1, struct.pack("<HHI", 1, 1, 0), length=100)

# fuzz_owner: flags (bit 0 IPv6, 1 listening, 2 dual), the socket's local
# and peer address and port, a request (family byte % 3: none, 4, 6) and a
# third flow, as struct input in fuzz_owner.c lays them out.
if len(sys.argv) > 2:
    own = sys.argv[2]
    os.makedirs(own, exist_ok=True)
    a4 = lambda *b: bytes(b) + bytes(12)
    mapped = bytes(10) + b"\xff\xff" + bytes([10, 99, 0, 2])

    def owner(name, flags, local, peer, lport, pport, rfam, src, dst, sport, dport,
              xfam=1, xsrc=bytes(16), xdst=bytes(16), xsport=0, xdport=5000):
        with open(os.path.join(own, name), "wb") as f:
            f.write(bytes([flags]) + local + peer + struct.pack("<HH", lport, pport) +
                    bytes([rfam]) + src + dst + struct.pack("<HH", sport, dport) +
                    bytes([xfam]) + xsrc + xdst + struct.pack("<HH", xsport, xdport))

    z = bytes(16)
    owner("listen4_any", 2, z, z, 5000, 0, 0, z, z, 0, 0)
    owner("listen4_narrow", 2, z, z, 5000, 0, 1, a4(10, 99, 0, 1), a4(10, 99, 0, 2), 0, 5000)
    owner("listen4_other_port", 2, z, z, 5000, 0, 1, z, z, 0, 5001)
    owner("conn4", 0, a4(10, 99, 0, 2), a4(10, 99, 0, 1), 5000, 40000, 1, z, z, 0, 0,
          1, a4(10, 99, 0, 1), a4(10, 99, 0, 2), 40000, 5000)
    owner("dual6_v4", 7, z, z, 5000, 0, 1, z, a4(10, 99, 0, 2), 0, 5000)
    owner("dual6_mapped", 7, z, z, 5000, 0, 2, z, mapped, 0, 5000)
    owner("mapped_listener", 3, mapped, z, 5000, 0, 1, z, a4(10, 99, 0, 2), 0, 0)
    owner("conn6", 1, v6, bytes(15) + b"\2", 5000, 40000, 2, z, v6, 0, 5000, 2, z, v6, 0, 5000)
