#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Measures the pace at which a device lets frames go, with no transport in
the way: the sender queues COUNT datagrams at once (its buffer holds them
all, so it never waits for the device), and the receiver takes each one's
kernel receive time (SO_TIMESTAMPNS). Between the first arrival and the
last, COUNT - 1 frames crossed, whatever the processes' scheduling: a
late timer or a late reader moves one end by its lateness, it does not
idle the link as a sender that waits does (TCP's).

  udp_pace.py recv PORT COUNT   prints "listening", then
                                "datagrams N in-order N span_ns S"
  udp_pace.py send ADDR PORT COUNT SIZE
"""
import socket
import struct
import sys

SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
SO_TIMESTAMPNS = 35
BUF = 16 << 20


def recv(port, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, BUF)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", port))
    print("listening", flush=True)
    s.settimeout(60)
    got = in_order = 0
    first = last = None
    try:
        while got < count:
            data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(16))
            stamp = None
            for level, kind, val in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", val[:16])
                    stamp = sec * 1000000000 + nsec
            if stamp is None:
                sys.exit("udp_pace: a datagram without a receive time")
            if struct.unpack("!I", data[:4])[0] == got:
                in_order += 1
            if first is None:
                first = stamp
            last = stamp
            got += 1
    except socket.timeout:
        pass
    print("datagrams %d in-order %d span_ns %d" % (got, in_order, (last or 0) - (first or 0)))


def send(addr, port, count, size):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, BUF)
    for i in range(count):
        s.sendto(struct.pack("!I", i) + bytes(size - 4), (addr, port))


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(int(sys.argv[2]), int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
