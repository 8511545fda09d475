#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Speaks the netdev and ethtool generic netlink families for tests, so
tests check kernel state independently of the project's own C library (and
of the VM's ethtool 6.14, which cannot set hds-thresh).

  genl.py page-pools IFINDEX          "pools N inflight N detached N held N" of a
                                      device (held: pages out of detached pools)
  genl.py page-pools all              the same for every pool of the namespace,
                                      also those of devices gone (kept by lo)
  genl.py queues IFINDEX              one line "rx|tx ID napi NAPI_ID" per queue
  genl.py dmabufs IFINDEX             one line "rx ID dmabuf N" per RX queue (0: none)
  genl.py qstats IFINDEX              one line "rx|tx ID packets N bytes N" per queue
  genl.py qstats IFINDEX NAME...      one line "rx ID NAME N..." per RX queue, NAME an
                                      RX counter of QSTATS_RX (rx-hw-drops, rx-csum-bad...);
                                      "-" for one the driver does not report
  genl.py hds-thresh IFNAME           "hds-thresh N max N"
  genl.py set-hds-thresh IFNAME N     set it; on error print the extack, exit 1
  genl.py set-channels IFNAME N       combined channels; errors as above
  genl.py set-rings IFNAME RX TX      ring sizes; errors as above

DEVTCP_FAIL_NTH=N makes the Nth kernel allocation of the set-* request fail
(kernels with CONFIG_FAULT_INJECTION); "fault: injected" or "fault: not
reached" on stderr says whether it came that far. DEVTCP_FAIL_NTH=count
fails nothing and prints "fault: N allocations", the request's count.
"""
import os
import socket
import struct
import sys

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLM_F_CAPPED = 0x100
NLM_F_ACK_TLVS = 0x200
NETLINK_EXT_ACK = 11
NLMSGERR_ATTR_MSG = 1
SOL_NETLINK = 270
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3

CMD_PAGE_POOL_GET = 5
CMD_QUEUE_GET = 10
CMD_QSTATS_GET = 12
QS_IFINDEX, QS_QUEUE_TYPE, QS_QUEUE_ID, QS_SCOPE = 1, 2, 3, 4
QS_RX_PACKETS, QS_RX_BYTES, QS_TX_PACKETS, QS_TX_BYTES = 8, 9, 10, 11
QSTATS_SCOPE_QUEUE = 1
# The RX counters of NETDEV_A_QSTATS_* (uapi/linux/netdev.h, the same in 6.12 and 7.x).
QSTATS_RX = {"rx-packets": 8, "rx-bytes": 9, "rx-alloc-fail": 12, "rx-hw-drops": 13,
             "rx-hw-drop-overruns": 14, "rx-csum-complete": 15, "rx-csum-unnecessary": 16,
             "rx-csum-none": 17, "rx-csum-bad": 18, "rx-hw-gro-packets": 19,
             "rx-hw-gro-bytes": 20, "rx-hw-gro-wire-packets": 21, "rx-hw-gro-wire-bytes": 22,
             "rx-hw-drop-ratelimits": 23}
PP_ID, PP_IFINDEX, PP_NAPI, PP_INFLIGHT, PP_INFLIGHT_MEM, PP_DETACH = 1, 2, 3, 4, 5, 6
Q_ID, Q_IFINDEX, Q_TYPE, Q_NAPI, Q_DMABUF = 1, 2, 3, 4, 5

ETHTOOL_MSG_RINGS_GET, ETHTOOL_MSG_RINGS_SET = 15, 16
ETHTOOL_MSG_CHANNELS_SET = 18
RINGS_HEADER, RINGS_RX, RINGS_TX, RINGS_HDS_THRESH, RINGS_HDS_THRESH_MAX = 1, 6, 9, 17, 18
CHANNELS_COMBINED_COUNT = 9
HEADER_DEV_NAME = 2


def attrs(buf):
    out = {}
    while len(buf) >= 4:
        alen, atype = struct.unpack_from("HH", buf)
        out[atype & 0x3FFF] = buf[4:alen]
        buf = buf[(alen + 3) & ~3:]
    return out


def attr(atype, data):
    return struct.pack("HH", 4 + len(data), atype) + data + b"\0" * ((-len(data)) % 4)


def send(sock, data, fail):
    """Sends a request; with @fail, DEVTCP_FAIL_NTH is armed right before it."""
    nth = os.environ.get("DEVTCP_FAIL_NTH") if fail else None
    if not nth:
        sock.send(data)
        return
    # "count": arm far beyond the request, and what is left says how many
    # allocations it made.
    arm = 1 << 30 if nth == "count" else int(nth)
    fd = os.open("/proc/thread-self/fail-nth", os.O_RDWR)
    os.write(fd, str(arm).encode())
    try:
        sock.send(data)
    finally:
        left = int(os.pread(fd, 32, 0))
        os.write(fd, b"0")
        os.close(fd)
        if nth == "count":
            print(f"fault: {arm - left} allocations", file=sys.stderr)
        else:
            print("fault: " + ("injected" if left == 0 else "not reached"), file=sys.stderr)


def request(sock, family, cmd, payload, flags, fail=False):
    """A generic netlink request: the replies' attributes, or OSError."""
    return transact(sock, family, struct.pack("BBH", cmd, 1, 0) + payload, flags, fail)


def transact(sock, mtype, msg, flags, fail=False, hdr=4):
    """Any netlink request (@hdr: bytes of the family's header in replies)."""
    send(sock, struct.pack("IHHII", 16 + len(msg), mtype, NLM_F_REQUEST | flags, 1, 0) + msg, fail)
    msgs = []
    while True:
        data = sock.recv(1 << 20)
        while data:
            mlen, mtype, mflags, _, _ = struct.unpack_from("IHHII", data)
            body = data[16:mlen]
            data = data[(mlen + 3) & ~3:]
            if mtype == NLMSG_DONE:
                return msgs
            if mtype == NLMSG_ERROR:
                err = struct.unpack_from("i", body)[0]
                if err:
                    msg = ""
                    if mflags & NLM_F_ACK_TLVS:
                        # error code, the request (only its header if
                        # capped), then the TLVs
                        req_len = 16 if mflags & NLM_F_CAPPED else struct.unpack_from("I", body, 4)[0]
                        tlvs = attrs(body[4 + req_len:])
                        msg = tlvs.get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode()
                    raise OSError(-err, os.strerror(-err) + (": " + msg if msg else ""))
                return msgs
            msgs.append(attrs(body[hdr:]))
            if not flags & NLM_F_DUMP:
                return msgs


def family(sock, name):
    reply = request(sock, GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                    attr(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"), 0)
    return struct.unpack("H", reply[0][CTRL_ATTR_FAMILY_ID][:2])[0]


def u32(a):
    return struct.unpack("I", a[:4])[0]


def uint(a):
    """netlink "uint": 4 or 8 bytes."""
    return struct.unpack("Q" if len(a) == 8 else "I", a)[0]


def rings(sock, argv):
    fam = family(sock, "ethtool")
    header = attr(RINGS_HEADER | 0x8000, attr(HEADER_DEV_NAME, argv[2].encode() + b"\0"))
    sets = {
        "set-hds-thresh": (ETHTOOL_MSG_RINGS_SET, lambda: attr(RINGS_HDS_THRESH, struct.pack("I", int(argv[3])))),
        "set-rings": (ETHTOOL_MSG_RINGS_SET, lambda: attr(RINGS_RX, struct.pack("I", int(argv[3])))
                      + attr(RINGS_TX, struct.pack("I", int(argv[4])))),
        "set-channels": (ETHTOOL_MSG_CHANNELS_SET, lambda: attr(CHANNELS_COMBINED_COUNT,
                                                                struct.pack("I", int(argv[3])))),
    }
    if argv[1] in sets:
        cmd, body = sets[argv[1]]
        try:
            request(sock, fam, cmd, header + body(), NLM_F_ACK, fail=True)
        except OSError as e:
            print(f"{argv[1]}: {e.strerror}", file=sys.stderr)
            return 1
        return 0
    r = request(sock, fam, ETHTOOL_MSG_RINGS_GET, header, 0)[0]
    print(f"hds-thresh {u32(r[RINGS_HDS_THRESH])} max {u32(r[RINGS_HDS_THRESH_MAX])}")
    return 0


def main(argv):
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
    if argv[1] in ("hds-thresh", "set-hds-thresh", "set-rings", "set-channels"):
        return rings(sock, argv)
    fam = family(sock, "netdev")
    ifindex = 0 if argv[2] == "all" else int(argv[2])
    if argv[1] == "page-pools":
        pools = inflight = detached = held = 0
        for pp in request(sock, fam, CMD_PAGE_POOL_GET, b"", NLM_F_DUMP):
            if not ifindex or (PP_IFINDEX in pp and u32(pp[PP_IFINDEX]) == ifindex):
                n = uint(pp[PP_INFLIGHT]) if PP_INFLIGHT in pp else 0
                pools += 1
                inflight += n
                detached += PP_DETACH in pp
                held += n if PP_DETACH in pp else 0
        print(f"pools {pools} inflight {inflight} detached {detached} held {held}")
        return 0
    if argv[1] == "queues":
        for q in request(sock, fam, CMD_QUEUE_GET, attr(Q_IFINDEX, struct.pack("I", ifindex)),
                         NLM_F_DUMP):
            kind = "rx" if u32(q[Q_TYPE]) == 0 else "tx"
            napi = u32(q[Q_NAPI]) if Q_NAPI in q else 0
            print(f"{kind} {u32(q[Q_ID])} napi {napi}")
        return 0
    if argv[1] == "dmabufs":
        for q in request(sock, fam, CMD_QUEUE_GET, attr(Q_IFINDEX, struct.pack("I", ifindex)),
                         NLM_F_DUMP):
            if u32(q[Q_TYPE]) == 0:
                print(f"rx {u32(q[Q_ID])} dmabuf {u32(q[Q_DMABUF]) if Q_DMABUF in q else 0}")
        return 0
    if argv[1] == "qstats":
        req = attr(QS_IFINDEX, struct.pack("I", ifindex)) + \
            attr(QS_SCOPE, struct.pack("I", QSTATS_SCOPE_QUEUE))
        names = argv[3:]
        if any(n not in QSTATS_RX for n in names):
            print(f"qstats: known counters: {' '.join(QSTATS_RX)}", file=sys.stderr)
            return 2
        for q in request(sock, fam, CMD_QSTATS_GET, req, NLM_F_DUMP):
            rx = u32(q[QS_QUEUE_TYPE]) == 0
            if names:
                if rx:
                    print(f"rx {u32(q[QS_QUEUE_ID])} " + " ".join(
                        f"{n} {uint(q[QSTATS_RX[n]]) if QSTATS_RX[n] in q else '-'}"
                        for n in names))
                continue
            pk, by = (QS_RX_PACKETS, QS_RX_BYTES) if rx else (QS_TX_PACKETS, QS_TX_BYTES)
            print(f"{'rx' if rx else 'tx'} {u32(q[QS_QUEUE_ID])} "
                  f"packets {uint(q.get(pk, bytes(4)))} bytes {uint(q.get(by, bytes(4)))}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
