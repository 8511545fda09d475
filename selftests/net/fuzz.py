#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Random requests at devtcp's control surface for a bounded time.

  fuzz.py DEV PEER_NS SECONDS [SEED]

Run inside the namespace of DEV (one end of a pair whose other end is in
PEER_NS). Each operation is one of: a new pair from random (often invalid)
link attributes, a changelink with random faults, ethtool rings, header
split, channels, RSS table/key/contexts and ntuple rules with random
values, an MTU change, link down/up, a queue restart, and a devmem
binding made and torn down (sometimes under a stream). Every request must
be accepted or refused; none may hang (60 s). Prints each operation kind
with how often it was accepted and refused, and exits 1 if any hung or
crashed its helper. Kernel reports are the caller's to count (dmesg).
SEED (default: random, printed) replays a run.
"""
import os
import random
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import genl  # noqa: E402

NETLINK_ROUTE = 0
RTM_NEWLINK, RTM_DELLINK = 16, 17
NLM_F_CREATE, NLM_F_EXCL = 0x400, 0x200
IFLA_IFNAME, IFLA_MTU, IFLA_LINKINFO, IFLA_NET_NS_FD = 3, 4, 18, 28
IFLA_NUM_TX_QUEUES, IFLA_NUM_RX_QUEUES, IFLA_ADDRESS = 31, 32, 1
IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
IFLA_DEVTCP_PEER, IFLA_DEVTCP_FAULT = 1, 2
# IFLA_DEVTCP_FAULT_*: (type, struct format)
FAULTS = [(2, "I"), (3, "I"), (4, "I"), (5, "I"), (6, "I"), (7, "I"), (8, "I"),
          (9, "Q"), (10, "Q"), (11, "B")]
RINGS_TCP_DATA_SPLIT = 11
CH_RX, CH_TX, CH_OTHER, CH_COMBINED = 6, 7, 8, 9
NLA_F_NESTED = 0x8000
TIMEOUT = 60

DEVTCP = "/devtcp/selftests/net/"
rng = random.Random()


def pick_u32():
    return rng.choice([0, 1, 2, 3, 7, 8, 63, 64, 65, 255, 256, 1023, 1024, 1025, 4095,
                       4096, 4097, 9000, 9001, 65535, 2**31 - 1, 2**31, 2**32 - 1,
                       rng.randrange(2**32)])


def small(top):
    return rng.choice([0, 1, rng.randrange(top + 3)])


def ifinfo(index=0, flags=0, change=0):
    return struct.pack("BxHiII", 0, 0, index, flags, change)


def junk_attr():
    """An attribute of a random type with a payload of a random length."""
    return genl.attr(rng.randrange(16), os.urandom(rng.choice([0, 1, 2, 3, 4, 5, 8, 9, 16])))


def fault_attrs():
    out = b""
    for ftype, fmt in rng.sample(FAULTS, rng.randrange(len(FAULTS) + 1)):
        if rng.random() < 0.1:
            out += genl.attr(ftype, os.urandom(rng.randrange(9)))  # wrong size
            continue
        val = rng.choice([0, 0, 1, 100, 10000, pick_u32()])
        if ftype == 11:
            val &= 0xff
        elif ftype in (2, 3, 5, 6):  # ppm: mostly gentle, sometimes all
            val = rng.choice([0, 10, 1000, 10000, 999999, 1000000, 1000001, pick_u32()])
        elif ftype in (7, 8):  # us: keep most frames moving
            val = rng.choice([0, 10, 1000, 100000, pick_u32()])
        elif ftype == 9:
            val = rng.choice([0, 1, 1000, 10**6, 10**9, 2**64 - 1])
        elif fmt == "Q":
            val = rng.randrange(2**64)
        out += genl.attr(ftype, struct.pack(fmt, val))
    if rng.random() < 0.1:
        out += junk_attr()
    return genl.attr(IFLA_DEVTCP_FAULT | NLA_F_NESTED, out)


def link_attrs(name, peer_ns_fd):
    """IFLA_* attributes for one end of a new pair, each maybe absent or bad."""
    a = b""
    if rng.random() < 0.95:
        a += genl.attr(IFLA_IFNAME, name.encode() + b"\0")
    if rng.random() < 0.05:
        a += genl.attr(IFLA_IFNAME, b"x" * rng.randrange(14, 40) + b"\0")
    for t in (IFLA_NUM_TX_QUEUES, IFLA_NUM_RX_QUEUES):
        if rng.random() < 0.4:
            a += genl.attr(t, struct.pack("I", rng.choice([0, 1, 2, 8, 64, 65, pick_u32()])))
    if rng.random() < 0.3:
        a += genl.attr(IFLA_MTU, struct.pack("I", rng.choice([0, 67, 68, 1500, 9000, 9001,
                                                              pick_u32()])))
    if rng.random() < 0.1:
        a += genl.attr(IFLA_ADDRESS, os.urandom(rng.choice([6, 6, 5, 7])))
    if peer_ns_fd is not None and rng.random() < 0.5:
        a += genl.attr(IFLA_NET_NS_FD, struct.pack("I", peer_ns_fd))
    return a


class Fuzz:
    def __init__(self, dev, peer_ns):
        self.dev, self.peer_ns = dev, peer_ns
        self.rt = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
        self.ge = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, genl.NETLINK_GENERIC)
        for s in (self.rt, self.ge):
            s.setsockopt(genl.SOL_NETLINK, genl.NETLINK_EXT_ACK, 1)
            s.settimeout(TIMEOUT)
        self.ethtool = genl.family(self.ge, "ethtool")
        self.ns_fd = os.open(f"/run/netns/{peer_ns}", os.O_RDONLY)
        self.stats = {}
        self.hung = []
        self.created = 0
        self.last_bind_error = ""

    def count(self, kind, ok):
        acc, ref = self.stats.get(kind, (0, 0))
        self.stats[kind] = (acc + ok, ref + (not ok))

    def rtnl(self, mtype, flags, body):
        try:
            genl.transact(self.rt, mtype, body, genl.NLM_F_ACK | flags, hdr=16)
            return True
        except socket.timeout:
            raise
        except OSError:
            return False

    def ifindex(self, name):
        try:
            with open(f"/sys/class/net/{name}/ifindex") as f:
                return int(f.read())
        except OSError:
            return 0

    def run(self, kind, argv, timeout=TIMEOUT):
        try:
            r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            self.hung.append(" ".join(argv))
            return
        if r.returncode < 0:
            self.hung.append(f"{' '.join(argv)}: killed by signal {-r.returncode}")
        self.count(kind, r.returncode == 0)

    def ethtool_cli(self, kind, *args):
        self.run(kind, ["ethtool", *args])

    # --- operations ---

    def op_newlink(self):
        a, b = "fz0", "fzp0"
        peer = ifinfo(flags=rng.choice([0, 0, 1]), change=rng.choice([0, 0, 1])) + \
            link_attrs(b, self.ns_fd)
        if rng.random() < 0.05:
            peer = peer[:rng.randrange(16)]  # shorter than struct ifinfomsg
        data = b""
        if rng.random() < 0.9:
            data += genl.attr(IFLA_DEVTCP_PEER, peer)
        if rng.random() < 0.5:
            data += fault_attrs()
        if rng.random() < 0.05:
            data += junk_attr()
        info = genl.attr(IFLA_INFO_KIND, b"devtcp\0") + genl.attr(IFLA_INFO_DATA | NLA_F_NESTED, data)
        body = ifinfo() + link_attrs(a, None) + genl.attr(IFLA_LINKINFO | NLA_F_NESTED, info)
        ok = self.rtnl(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body)
        self.count("link create", ok)
        if not ok:
            return
        self.created += 1
        # Whatever got made (a name may have been left to the kernel): use
        # it a little, then delete every devtcp device but the pair under test.
        for name in os.listdir("/sys/class/net"):
            if name == self.dev or not os.path.exists(f"/sys/class/net/{name}/devtcp"):
                continue
            self.run("link use", ["ip", "link", "set", name, "up"])
            if rng.random() < 0.5:
                self.run("link use", ["ethtool", "-S", name])
            ok = self.rtnl(RTM_DELLINK, 0, ifinfo(self.ifindex(name)))
            self.count("link delete", ok)

    def op_changelink(self):
        data = fault_attrs()
        if rng.random() < 0.1:
            data += genl.attr(IFLA_DEVTCP_PEER, ifinfo())
        info = genl.attr(IFLA_INFO_KIND, b"devtcp\0") + genl.attr(IFLA_INFO_DATA | NLA_F_NESTED, data)
        body = ifinfo(self.ifindex(self.dev)) + genl.attr(IFLA_LINKINFO | NLA_F_NESTED, info)
        self.count("link faults", self.rtnl(RTM_NEWLINK, 0, body))

    def op_mtu(self):
        body = ifinfo(self.ifindex(self.dev)) + \
            genl.attr(IFLA_MTU, struct.pack("I", rng.choice([68, 1500, 4000, 9000, pick_u32()])))
        self.count("mtu", self.rtnl(RTM_NEWLINK, 0, body))

    def op_updown(self):
        up = 1  # IFF_UP
        idx = self.ifindex(self.dev)
        self.count("down/up", self.rtnl(RTM_NEWLINK, 0, ifinfo(idx, 0, up)) and
                   self.rtnl(RTM_NEWLINK, 0, ifinfo(idx, up, up)))

    def ethtool_genl(self, kind, cmd, body):
        header = genl.attr(genl.RINGS_HEADER | NLA_F_NESTED,
                           genl.attr(genl.HEADER_DEV_NAME, self.dev.encode() + b"\0"))
        try:
            genl.request(self.ge, self.ethtool, cmd, header + body, genl.NLM_F_ACK)
            self.count(kind, True)
        except socket.timeout:
            raise
        except OSError:
            self.count(kind, False)

    def op_rings(self):
        body = b""
        for t in (genl.RINGS_RX, genl.RINGS_TX, genl.RINGS_HDS_THRESH):
            if rng.random() < 0.5:
                body += genl.attr(t, struct.pack("I", pick_u32()))
        if rng.random() < 0.4:
            body += genl.attr(RINGS_TCP_DATA_SPLIT, struct.pack("B", rng.randrange(4)))
        self.ethtool_genl("rings/hds", genl.ETHTOOL_MSG_RINGS_SET, body)

    def op_channels(self):
        body = b""
        for t in (CH_RX, CH_TX, CH_OTHER, CH_COMBINED):
            if rng.random() < (0.8 if t == CH_COMBINED else 0.15):
                body += genl.attr(t, struct.pack("I", rng.choice([0, 1, 2, 4, 7, 8, 64, 65,
                                                                  pick_u32()])))
        self.ethtool_genl("channels", genl.ETHTOOL_MSG_CHANNELS_SET, body)

    def op_rxfh(self):
        d = self.dev
        choice = rng.randrange(6)
        if choice == 0:
            self.ethtool_cli("rss table", "-X", d, "equal", str(small(8)))
        elif choice == 1:
            self.ethtool_cli("rss table", "-X", d, "weight",
                             *[str(rng.randrange(3)) for _ in range(rng.randrange(1, 11))])
        elif choice == 2:
            key = os.urandom(rng.choice([40, 40, 39, 41, 0]))
            self.ethtool_cli("rss key", "-X", d, "hkey", ":".join(f"{x:02x}" for x in key)
                             or "00")
        elif choice == 3:
            self.ethtool_cli("rss hfunc", "-X", d, "hfunc", rng.choice(["toeplitz", "xor", "crc32"]))
        elif choice == 4:
            self.ethtool_cli("rss context", "-X", d, "context", "new", "equal", str(small(8)))
        else:
            self.ethtool_cli("rss context", "-X", d, "context", str(small(20)), "delete")

    def op_ntuple(self):
        d = self.dev
        choice = rng.randrange(4)
        if choice == 0:
            self.ethtool_cli("ntuple on/off", "-K", d, "ntuple", rng.choice(["on", "on", "off"]))
        elif choice == 1:
            self.ethtool_cli("ntuple delete", "-N", d, "delete", str(small(260)))
        else:
            args = ["-N", d, "flow-type", rng.choice(["tcp4", "udp4", "tcp6", "udp6", "ip4"])]
            if rng.random() < 0.7:
                args += ["dst-port", str(rng.choice([5001, 5002, rng.randrange(65536)]))]
            if rng.random() < 0.3:
                args += ["src-port", str(rng.randrange(65536))]
            if rng.random() < 0.2 and "6" not in args[3]:
                args += ["dst-ip", "10.99.0.2"]
            args += ["action", str(rng.choice([-1, 0, 1, 3, 7, 8, 64, small(10)]))]
            if rng.random() < 0.2:
                args += ["context", str(small(17))]
            if rng.random() < 0.3:
                args += ["loc", str(small(260))]
            self.ethtool_cli("ntuple insert", *args)

    def op_restart(self):
        q = small(9)
        try:
            with open(f"/sys/class/net/{self.dev}/devtcp/restart_rx_queue", "w") as f:
                f.write(str(q))
            self.count("queue restart", True)
        except OSError:
            self.count("queue restart", False)

    def op_bind(self):
        """A devmem receiver bound to a random queue, killed soon after."""
        n = len([x for x in os.listdir(f"/sys/class/net/{self.dev}/queues") if x[:3] == "rx-"])
        q, port = rng.choice([small(9), rng.randrange(n)]), rng.choice([5001, 5002])
        if rng.random() < 0.7 and n > 1:  # as a devmem user would prepare it
            self.ethtool_cli("bind prepare", "-G", self.dev, "tcp-data-split", "on")
            self.ethtool_cli("bind prepare", "-X", self.dev, "weight",
                             *["0" if i == q else "1" for i in range(n)])
        rx = subprocess.Popen([DEVTCP + "devmem_rx", "-i", self.dev, "-q", str(q), "-p", str(port),
                               "-n", "4000000000"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        listening = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = rx.stdout.readline()
            if not line or "listening" in line:
                listening = bool(line)
                break
            self.last_bind_error = line.strip()
        tx = None
        if listening and rng.random() < 0.7:
            tx = subprocess.Popen(["ip", "netns", "exec", self.peer_ns, DEVTCP + "tcp_stream",
                                   "send", "-a", "10.99.0.2", "-p", str(port), "-n", "4000000000"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.choice([0, 0.2, 1]))
        for p in (rx, tx):
            if p:
                p.kill()
        try:
            rx.communicate(timeout=TIMEOUT)
            if tx:
                tx.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.hung.append(f"devmem_rx -q {q} did not exit after SIGKILL")
            return
        self.count("devmem bind", listening)

    OPS = [("op_newlink", 3), ("op_changelink", 3), ("op_mtu", 1), ("op_updown", 1),
           ("op_rings", 3), ("op_channels", 3), ("op_rxfh", 3), ("op_ntuple", 3),
           ("op_restart", 2), ("op_bind", 2)]


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    dev, peer_ns, seconds = argv[1], argv[2], float(argv[3])
    seed = int(argv[4]) if len(argv) > 4 else random.SystemRandom().randrange(2**32)
    rng.seed(seed)
    print(f"fuzz: seed {seed}, {seconds:.0f} s on {dev}", flush=True)
    fz = Fuzz(dev, peer_ns)
    names = [n for n, w in Fuzz.OPS for _ in range(w)]
    end = time.monotonic() + seconds
    ops = 0
    while time.monotonic() < end and not fz.hung:
        name = rng.choice(names)
        try:
            getattr(fz, name)()
        except socket.timeout:
            fz.hung.append(f"{name}: no netlink answer in {TIMEOUT} s")
        ops += 1
    print(f"fuzz: {ops} operations in {seconds:.0f} s (seed {seed}), {fz.created} pairs created")
    for kind in sorted(fz.stats):
        acc, ref = fz.stats[kind]
        print(f"fuzz:   {kind:15s} {acc:6d} accepted {ref:6d} refused")
    if fz.last_bind_error:
        print(f"fuzz: a refused binding said: {fz.last_bind_error}")
    for h in fz.hung:
        print(f"fuzz: HUNG: {h}")
    return 1 if fz.hung else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
