#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Helper of the RSS tests: N TCP flows with distinct source ports, flow k
carrying (k + 1) * UNIT bytes, and the Toeplitz hash a NIC computes for them.

  flows.py recv PORT N UNIT           accept N flows and drain them
  flows.py send ADDR PORT N UNIT SPORT0   flow k from source port SPORT0 + k
  flows.py queues KEYHEX INDIR SRC DST PORT N SPORT0
      print "queue bytes" for each flow as the receiving NIC must place it
"""
import socket
import sys


def toeplitz(key, data):
    kbits = int.from_bytes(key, "big")
    klen = len(key) * 8
    h = 0
    for i, byte in enumerate(data):
        for b in range(8):
            if byte & (0x80 >> b):
                pos = i * 8 + b
                h ^= (kbits >> (klen - 32 - pos)) & 0xFFFFFFFF
    return h


def recv(port, n, unit):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("", port))
    ls.listen(n)
    print("listening", flush=True)
    total = 0
    for _ in range(n):
        s, _ = ls.accept()
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            total += len(b)
        s.close()
    want = sum((k + 1) * unit for k in range(n))
    print(f"received {total} of {want} bytes")
    return 0 if total == want else 1


def send(addr, port, n, unit, sport0):
    buf = b"x" * unit
    for k in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", sport0 + k))
        s.connect((addr, port))
        for _ in range(k + 1):
            s.sendall(buf)
        s.close()
    return 0


def queues(keyhex, indir, src, dst, port, n, sport0):
    key = bytes.fromhex(keyhex.replace(":", ""))
    table = [int(q) for q in indir.split(",")]
    for k in range(n):
        data = (socket.inet_aton(src) + socket.inet_aton(dst) +
                (sport0 + k).to_bytes(2, "big") + port.to_bytes(2, "big"))
        print(table[toeplitz(key, data) % len(table)], k)
    return 0


def main(a):
    if a[1] == "recv":
        return recv(int(a[2]), int(a[3]), int(a[4]))
    if a[1] == "send":
        return send(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]))
    if a[1] == "queues":
        return queues(a[2], a[3], a[4], a[5], int(a[6]), int(a[7]), int(a[8]))
    print(__doc__, file=sys.stderr)
    return 2


sys.exit(main(sys.argv))
