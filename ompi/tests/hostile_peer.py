#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stranger on a btl/devtcp rank's ports (ompi/tests/hostile_test.sh).

   hostile_peer.py HOST CTRL_PORT DATA_PORT JOBID TIMEOUT
   hostile_peer.py flood HOST CTRL_PORT DATA_PORT STOP   (see flood())

Opens, all at once: hellos that claim rank 1 in the old wire format
(version 2) followed by a frame of an unregistered tag with no control
part, a short control part, a put to a raw address; a hello in the
current format with a forged MAC followed by the same frames; a hello
claiming a rank that is not in the job; and 70 connections that say
nothing (more than the 16 a rank keeps pending from one address). Every
one of them must be closed by the rank within 2 * TIMEOUT + 5 seconds;
the rank's side of the accepted ones must have TCP keepalive on, and at
most 16 of them may wait for their hello at once. Prints one line per
finding; exits 1 on any.
"""
import os
import select
import socket
import struct
import subprocess
import sys
import time



def flood(host, ctrl_port, data_port, stop):
    """Holds 200 idle connections to the rank's ports (150 to the control
    port, 50 to the data port), from 127.0.0.1 (a published address of the
    job's) and 127.0.0.2 (none), opening a new one for each the rank closes,
    until the file STOP exists. Prints how many it opened and the rank
    closed."""
    import selectors
    sel = selectors.DefaultSelector()
    opened = closed = 0

    def open_one(i):
        nonlocal opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((f"127.0.0.{1 + i % 2}", 0))
        s.connect_ex((host, ctrl_port if i < 150 else data_port))
        sel.register(s, selectors.EVENT_READ, i)
        opened += 1

    for i in range(200):
        open_one(i)
    print(f"flood: holding 200 connections", flush=True)
    while not os.path.exists(stop):
        time.sleep(0.05)  # reconnect at most 20 times a second each
        for key, _ in sel.select(0.1):
            s = key.fileobj
            try:
                if s.recv(4096):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            sel.unregister(s)
            s.close()
            closed += 1
            open_one(key.data)
    print(f"flood: opened {opened} connections, the rank closed {closed}", flush=True)
    sys.exit(0 if opened >= 200 else 1)


if sys.argv[1] == "flood":
    flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
host, ctrl_port, data_port, jobid, timeout = sys.argv[1], int(sys.argv[2]), \
    int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
MAGIC = 0x64747062


def hello_v2(kind, vpid, index=0):
    return struct.pack("!IHBBII", MAGIC, 2, kind, index, jobid, vpid)


def hello_v3(kind, vpid):
    # magic, version, kind, index, jobid, vpid, to_jobid, to_vpid, nonce, mac
    return struct.pack("!IHBBIIII", MAGIC, 3, kind, 0, jobid, vpid, jobid, 0) + \
        os.urandom(16) + os.urandom(32)


def frame(tag, flags, link, ctrl_len, data_len):
    return struct.pack("=BBBBIQ", tag, flags, link, 0, ctrl_len, data_len)


bad_tag = frame(0xEE, 0, 0, 0, 0)
short_ctrl = frame(65, 0, 0, 0, 0)
put_raw = frame(0, 2, 0, 8, 8) + struct.pack("=Q", 0x1000)
# The old format's hello is 16 bytes, the current one's 72: what follows
# a forged old one is padded so that the current code reads a whole hello.
pad = lambda b: b + bytes(max(0, 72 - len(b)))
attacks = [
    ("v2 hello as rank 1, then tag 0xEE with no control part", ctrl_port,
     pad(hello_v2(1, 1) + bad_tag)),
    ("v2 hello as rank 1, then a message shorter than any header", ctrl_port,
     pad(hello_v2(1, 1) + short_ctrl)),
    ("v2 data link as rank 1", data_port, pad(hello_v2(2, 1) + struct.pack("=Q", 0))),
    ("v2 hello as rank 1, then a put to address 0x1000", ctrl_port,
     pad(hello_v2(1, 1) + put_raw)),
    ("v2 hello as rank 99 (not in the job)", ctrl_port, hello_v2(1, 99)),
    ("forged v3 hello as rank 1, then tag 0xEE", ctrl_port, hello_v3(1, 1) + bad_tag),
    ("forged v3 hello as rank 1, then a put to address 0x1000", ctrl_port,
     hello_v3(1, 1) + put_raw),
]
findings = 0


def fail(msg):
    global findings
    findings += 1
    print("FAIL:", msg, flush=True)


socks = {}
start = time.monotonic()
for what, port, payload in attacks:
    try:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(payload)
        socks[s] = what
    except OSError as e:
        fail(f"{what}: cannot connect or send: {e}")
for i in range(70):
    try:
        s = socket.create_connection((host, ctrl_port if i < 68 else data_port), timeout=5)
        socks[s] = f"idle connection {i}"
    except OSError as e:
        fail(f"idle connection {i}: cannot connect: {e}")

# The rank's side of what it accepted: keepalive on (ss -o shows its timer).
time.sleep(1)
ss = subprocess.run(["ss", "-tnoH", "state", "established", f"( sport = :{ctrl_port} )"],
                    capture_output=True, text=True).stdout
keepalive = sum("keepalive" in line for line in ss.splitlines())
if keepalive > 16:
    fail(f"{keepalive} connections from one address accepted at once without a hello: "
         "more than 16")
elif keepalive:
    print(f"ok: {keepalive} accepted connections have TCP keepalive on (at most 16 "
          "from one address wait for their hello, older ones are closed)", flush=True)
else:
    fail("no accepted connection has TCP keepalive on:\n" + ss[:500])

limit = 2 * timeout + 5
closed = {}
for s in socks:
    s.setblocking(False)
while len(closed) < len(socks) and time.monotonic() - start < limit:
    open_ = [s for s in socks if s not in closed]
    ready, _, _ = select.select(open_, [], [], 0.2)
    for s in ready:
        try:
            if s.recv(4096):
                continue  # the rank talks back: it should not
        except BlockingIOError:
            continue
        except OSError:
            pass
        closed[s] = time.monotonic() - start
for s, what in socks.items():
    if s in closed:
        if not what.startswith("idle"):
            print(f"ok: {what}: closed by the rank after {closed[s]:.1f} s", flush=True)
    else:
        fail(f"{what}: still open after {limit} s")
idle = [t for s, t in closed.items() if socks[s].startswith("idle")]
if idle:
    print(f"ok: {len(idle)} idle connections closed by the rank, the last after "
          f"{max(idle):.1f} s", flush=True)
for s in socks:
    s.close()
sys.exit(1 if findings else 0)
