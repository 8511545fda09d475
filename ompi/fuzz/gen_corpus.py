#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Seed corpus of the wire fuzzer: byte 0 picks the check (0 hello, 1
frame, 2 put, 3 control stream), then what fuzz_wire.c reads. The hellos carry a correct MAC
under the fuzzer's key, so the accepting path is reached."""
import hashlib
import hmac
import os
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
KEY = b"devtcp fuzz key, 32 bytes long.\0"


def put(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def hello(kind, index, to_vpid=0, version=3):
    h = struct.pack("!IHBBIIII", 0x64747062, version, kind, index, 7, 1, 7, to_vpid) + bytes(range(16))
    tup = bytes([2]) + bytes([127, 0, 0, 1]) + bytes(12) + bytes([127, 0, 0, 1]) + bytes(12) + \
        struct.pack("!HH", 40000, 5000)
    mac = hmac.new(KEY, h + tup, hashlib.sha256).digest()
    # the C struct devtcp_tuple has one byte of padding before the ports
    ctup = tup[:33] + b"\0" + tup[33:]
    return h + mac + ctup


def frame(tag, flags, link, ctrl, data):
    return struct.pack("=BBBBIQ", tag, flags, link, 0, ctrl, data)


limits = struct.pack("=IQB", 266240, 262144, 2) + bytes([0xff] * 32)
put("hello_ctrl", b"\0" + hello(1, 0) + b"\1")
put("hello_data", b"\0" + hello(2, 1) + b"\1")
put("hello_v2", b"\0" + hello(1, 0, version=2) + b"\1")
put("hello_other", b"\0" + hello(1, 0, to_vpid=3) + b"\1")
put("frame_msg", b"\1" + frame(65, 0, 0, 100, 4096) + limits)
put("frame_bye", b"\1" + frame(0, 1, 0, 0, 0) + limits)
put("frame_put", b"\1" + frame(0, 2, 1, 16, 1 << 20) + limits)
put("frame_short", b"\1" + frame(0xee, 0, 0, 0, 0) + limits)
put("put_in", b"\2" + struct.pack("=QQQQQB", 1, 0x10100, 256, 0x10000, 4096, 3))
put("put_out", b"\2" + struct.pack("=QQQQQB", 1, 0x10f00, 512, 0x10000, 4096, 3))
put("put_wrap", b"\2" + struct.pack("=QQQQQB", 1, 2**64 - 8, 16, 0x10000, 4096, 3))
# control streams: limits, how (piece size, EOF bit), then frames
msg = frame(65, 0, 0, 20, 0) + bytes(range(20))
putf = frame(0, 2, 1, 16, 4096) + struct.pack("=QQ", 1, 0x10000)
put("stream_msgs", b"\3" + limits + b"\x0f" + msg + putf + msg + frame(0, 1, 0, 0, 0))
put("stream_bytes", b"\3" + limits + b"\x80" + msg + msg)
put("stream_bad", b"\3" + limits + b"\x07" + msg + frame(0xee, 0, 0, 8, 0) + bytes(8))
