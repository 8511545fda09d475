#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Seed corpus of the daemon fuzzer (fuzz_daemon.c): scripts of clients
saying HELLO and then using a buffer (REGISTER with a memfd, JOIN) with
STEER, WINDOW, UNSTEER, UNREGISTER, STATUS, DRAIN, RELOAD, fds where none
is taken, disconnects and reconnects. A record is a control byte (client
in bits 0-1, fd kind in 2-4, action in 5-7), then a 2-byte length and the
message for a send."""
import os
import struct
import sys

MAGIC, VER = 0x4d504452, 1
NONE, PIPE, MEMFD, NULL, UNIX, TCP, TWO, MANY = range(8)
SEND, FIXUP, DISCONNECT, RECONNECT = 0, 4, 6, 7
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
fz0 = b"fz0".ljust(16, b"\0")
fz1 = b"fz1".ljust(16, b"\0")


def ctl(client, kind=NONE, act=SEND):
    return bytes([client | kind << 2 | act << 5])


def req(client, typ, body, kind=NONE, mid=1):
    m = struct.pack("<IHHII", MAGIC, VER, typ, 16 + len(body), mid) + body
    return ctl(client, kind) + struct.pack("<H", len(m)) + m


def hello(client):
    return req(client, 1, struct.pack("<HHI", 1, 1, 0))


def steer(client, handle, port):
    v4 = bytes([10, 99, 0, 2]) + bytes(12)
    return req(client, 3, struct.pack("<IB3x", handle, 2) + bytes(16) + v4 +
               struct.pack("<HH", 0, port))


def write(name, *records):
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"".join(records))


write("hello_all", hello(0), hello(1), hello(2), hello(3))
write("register_steer", hello(1), req(1, 2, fz0 + struct.pack("<II", 1, 0), MEMFD),
      steer(1, 1, 5000), req(1, 4, struct.pack("<I", 1)), req(1, 5, struct.pack("<I", 1)))
write("join_window", hello(1), req(1, 10, fz0 + struct.pack("<IIQ", 0, 0, 1 << 16)),
      req(1, 9, struct.pack("<IIQ", 1, 0, 1 << 16), TCP), steer(1, 1, 6000),
      hello(2), req(2, 10, fz0 + struct.pack("<IIQ", 12, 0, 1 << 16)))
# The admin steers with a listener on 127.0.0.1 (the flow it holds); the
# listener is closed once sent, and the re-check removes the rule.
write("steer_proven", hello(0), req(0, 2, fz0 + struct.pack("<II", 1, 0), MEMFD),
      req(0, 3, struct.pack("<IB3x", 1, 0) + bytes(36), TCP))
write("join_loop", hello(1), *[req(1, 10, fz0 + struct.pack("<IIQ", 0, 0, 4096), mid=i)
                               for i in range(5)])
write("status_drain_reload", hello(0), req(0, 6, struct.pack("<I", 1)),
      req(0, 7, fz0), req(0, 8, b""), hello(1), req(1, 6, struct.pack("<I", 0)))
write("fds_refused", req(1, 1, struct.pack("<HHI", 1, 1, 0), MANY),
      req(2, 6, struct.pack("<I", 1), UNIX), hello(3), req(3, 2, fz1 + bytes(8), TWO),
      ctl(1, PIPE) + b"\0\0")
write("disconnect", hello(1), req(1, 2, fz0 + bytes(8), MEMFD),
      ctl(1, act=DISCONNECT), ctl(1, act=RECONNECT) + b"\2", hello(1))
