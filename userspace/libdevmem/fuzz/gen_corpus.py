#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# Seeds for fuzz_cmsg: bytes received (4), dma-buf id (1), size/64 (3), then
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
