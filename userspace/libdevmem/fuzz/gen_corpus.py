#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# Seeds for fuzz_cmsg: bytes received (3 bytes, then one unused), dma-buf id
# (1), size/64 (3), then
# cmsgs as the kernel lays them out on x86-64 (SOL_SOCKET 1,
# SCM_DEVMEM_LINEAR 78, SCM_DEVMEM_DMABUF 79).
import os, struct, sys

def cmsg(typ, off, size, token, dmabuf):
    data = struct.pack('<QIII', off, size, token, dmabuf)
    return struct.pack('<Qii', 16 + len(data), 1, typ) + data

def seed(nbytes, dmabuf, size, *cms):
    return struct.pack('<I', nbytes) + bytes([dmabuf]) + struct.pack('<I', size // 64)[:3] + b''.join(cms)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
seeds = {
    'mixed': seed(100 + 4096 + 200, 3, 65536, cmsg(78, 0, 100, 0, 0), cmsg(79, 8192, 4096, 7, 3),
                  cmsg(78, 0, 200, 0, 0)),
    'foreign': seed(4096, 3, 65536, cmsg(79, 0, 4096, 8, 9)),
    'beyond': seed(4096, 3, 65536, cmsg(79, 65000, 4096, 9, 3)),
    'undeclared': seed(8192, 0, 0, cmsg(79, 0, 4096, 1, 5), cmsg(79, 4096, 4096, 2, 5)),
    'plain': seed(64, 0, 0),
}
for name, b in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(b)

# Seeds for fuzz_rx: mode (1: recv_upto), bytes (2), dma-buf id (1),
# size/64 (2), then cmsgs.
def rx_seed(mode, nbytes, dmabuf, size, *cms):
    return bytes([mode]) + struct.pack('<H', nbytes) + bytes([dmabuf]) + struct.pack('<H', size // 64) + b''.join(cms)

out_rx = sys.argv[2]
os.makedirs(out_rx, exist_ok=True)
rx_seeds = {
    'overrun': rx_seed(0, 4096, 3, 65536, cmsg(79, 0, 4096, 1, 3), cmsg(79, 4096, 4096, 2, 3)),
    'refused': rx_seed(0, 8192, 3, 16384, cmsg(79, 0, 4096, 7, 9), cmsg(79, 4096, 4096, 8, 3)),
    'mixed_upto': rx_seed(1, 100 + 4096, 3, 65536, cmsg(78, 0, 100, 0, 0), cmsg(79, 8192, 4096, 7, 3)),
    'foreign_len': rx_seed(0, 4096, 3, 65536, cmsg(79, 0, 4096, 1, 3),
                           struct.pack('<Qii', 4000, 1, 29)),
}
for name, b in rx_seeds.items():
    with open(os.path.join(out_rx, name), 'wb') as f:
        f.write(b)
