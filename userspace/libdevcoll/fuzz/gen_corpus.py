#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# Seeds for fuzz_wire: the selector byte (0x80: sign it), then the message.
import os, struct, sys

AUTH, WIRE = 0xdc0a7431, 0xdc011ec7
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
sa4 = struct.pack('<H', 2) + struct.pack('>H', 5000) + bytes([127, 0, 0, 1])
reg = struct.pack('<4I', AUTH, 2, 4, 0) + bytes(16) + sa4.ljust(128, b'\0') + bytes(32)
hello = struct.pack('<4IQ', AUTH, 3, 1, 1, 42) + bytes(32)
hdr = struct.pack('<2I4B I3Q2I', WIRE, 1, 1, 0, 10, 0, 0, 4, 64, 0, 64, 0)
abort = struct.pack('<2I4B I3Q2I', WIRE, 0, 15, 0, 0, 0, 0, 5, 0, 0, 20, 1)
seeds = {
    'reg_signed': bytes([0x81]) + reg,
    'reg_plain': bytes([0x00]) + reg,
    'hello_signed': bytes([0x82]) + hello,
    'hello_plain': bytes([0x01]) + hello,
    'hdr_chunk': bytes([0x02]) + hdr,
    'hdr_abort': bytes([0x02]) + abort,
}
for name, b in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(b)
