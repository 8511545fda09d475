#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Hostile and plain raw-protocol clients of rdpmd for rdpm/tests/limits_test.sh.

  rdpm_hostile.py fdflood N K        N connections, each a 0-byte message with K fds
  rdpm_hostile.py fdmixed N          N connections sending fds where none is taken:
                                     truncated, oversized, before HELLO, with HELLO and
                                     STATUS, 8 with a REGISTER
  rdpm_hostile.py hold N             N connections, HELLO on each; prints
                                     "hello_ok A refused B", then holds them until
                                     stdin closes
  rdpm_hostile.py hello              one HELLO; exit 0 when answered within 3 s
  rdpm_hostile.py silent SECONDS     connect, say nothing; print "closed after S s"
                                     when rdpmd closes it (exit 0), else exit 1
  rdpm_hostile.py register KIND      HELLO, then REGISTER dtb with an fd of KIND: fifo,
                                     file, unixsock, fuse (an O_PATH fd of a FUSE mount whose
                                     server never answers; run under unshare -m),
                                     rodmabuf / rwdmabuf (a dma-heap buffer opened
                                     read-only / read-write); prints
                                     "errno E after S s: TEXT"; exit 4 when KIND
                                     cannot be made here, with the reason
  rdpm_hostile.py fuseflush          HELLO, then REGISTER dtb with a regular file of a
                                     FUSE mount this process serves, which answers
                                     every FLUSH but those of other processes (the
                                     close() of a passed fd waits for it; run under
                                     unshare -m); then times a new client's HELLO
                                     while a FLUSH waits; prints "errno E after S s:
                                     TEXT; hello after H s; N flush(es) of others
                                     held"; exit 4 when there is no FUSE here
  rdpm_hostile.py fuseflush UID N [S]  the same N times as UID, each held for 1.8 s
                                     (answered after S s), then one more REGISTER:
                                     "...; then: no reply within 1.0 s" (or its
                                     answer)
  rdpm_hostile.py status             HELLO, STATUS (JSON); prints the text
  rdpm_hostile.py linger SECONDS PID passes rdpmd (PID; with a REGISTER, refused) a
                                     TCP socket whose close blocks SECONDS: SO_LINGER
                                     on, unsent data towards a local peer that never
                                     reads (a zero window); closes its own copy, so
                                     rdpmd's is the last; then times a new client's
                                     HELLO: prints "hello after S s" (exit 0 when
                                     answered)
  rdpm_hostile.py lingers UID N PID  as UID, N REGISTERs each passing a socket whose
                                     close lingers an hour (rdpmd, PID, stopped
                                     while it is passed, so the closer's copy is
                                     the last), 1.5 s apart; then one with a pipe:
                                     prints "answered A of N; then: errno E" or
                                     "...; then: no reply within 1.0 s"; holds
                                     the lingering peers 3.5 s after UID's exit
  rdpm_hostile.py lingers UID N PID S   the same, each socket's peer closed S
                                     seconds after it was passed (its close
                                     ends then)
  rdpm_hostile.py wbfuse UID N PID [kill]
                                     as UID, N connections refused at accept, each
                                     carrying a FUSE file whose release waits
                                     (cached writes never completed); then a
                                     REGISTER with a pipe: prints "WRITEs held W;
                                     then: no reply within 1.0 s" (or its errno);
                                     kill: the closer helper is killed 0.3 s after
                                     the closes began
  rdpm_hostile.py lingerflood S N    before HELLO, passes a socket whose close blocks
                                     S seconds (as linger), then N messages of 253
                                     fds; prints "passed F fds in M messages", holds
                                     the blocking peer until stdin closes (rdpmd
                                     stopped by the caller until the line comes)
  rdpm_hostile.py hellos N           N clients one after the other, HELLO each, up
                                     to the first unanswered; prints "answered A of
                                     N, slowest S s"
  rdpm_hostile.py badflood N         HELLO, then N malformed requests (UNSTEER of
                                     flow 0), each answered; prints "refused N pid P"
  rdpm_hostile.py deaf N             N clients, one after the other, each sending
                                     requests and reading no reply until rdpmd closes
                                     it; prints "closed C of N"
  rdpm_hostile.py fds K              HELLO, then a REGISTER with K fds attached;
                                     prints "errno E: TEXT"
  rdpm_hostile.py silenthold N S     N connections that say nothing; prints "open A
                                     closed B" after 0.5 s, holds them S seconds more
  rdpm_hostile.py stuckerr CMD...    runs CMD with its stderr on a 4 KiB pipe that
                                     nobody reads (CMD holds the read end)

The socket is $RDPM_SOCKET. Exit 1 on an unexpected failure.
"""
import array
import ctypes
import errno
import fcntl
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time

MAGIC = 0x4D504452
HELLO, REGISTER, UNSTEER, STATUS = 1, 2, 4, 6
ERROR = 0x4000
HDR = struct.Struct("=IHHII")
SOCK = os.environ.get("RDPM_SOCKET", "/run/rdpm/rdpm.sock")


def msg(mtype, body=b"", mid=1, version=1):
    return HDR.pack(MAGIC, version, mtype, HDR.size + len(body), mid) + body


def hello_msg():
    return msg(HELLO, struct.pack("=HHI", 1, 1, 0))


def register_msg(ifname=b"dtb"):
    return msg(REGISTER, struct.pack("=16sII", ifname, 0, 0))


def register_pipe_then(s):
    """A REGISTER with a pipe on S: "errno E" of its refusal, or "no reply
    within 1.0 s" when rdpmd does not read it (its uid held back)."""
    r, _ = os.pipe()
    s.settimeout(1.0)
    send(s, register_msg(), [r])
    try:
        rep = reply(s)
        return "errno %s" % errno.errorcode.get(rep[1], rep[1])
    except OSError:
        return "no reply within 1.0 s"


def connect(timeout=3.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    s.connect(SOCK)
    return s


def send(s, data, fds=()):
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    s.sendmsg([data], anc)


def reply(s):
    """(type, errno or 0, text) of the next reply that is not an event; None at EOF."""
    while True:
        try:
            data = s.recv(1 << 18)
        except ConnectionResetError:
            # Closed with our request unread: the error comes first, the
            # reason after it.
            data = s.recv(1 << 18)
        if len(data) < HDR.size:
            return None
        _, _, mtype, _, _ = HDR.unpack_from(data)
        if mtype == 0x4001:
            continue
        if mtype == ERROR:
            err, _ = struct.unpack_from("=iI", data, HDR.size)
            text = data[HDR.size + 8:].split(b"\0")[0].decode(errors="replace")
            return mtype, -err, text
        return mtype, 0, data[HDR.size:].split(b"\0")[0].decode(errors="replace")


def say_hello(s):
    try:
        send(s, hello_msg())
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused at accept: the reason is queued
    r = reply(s)
    if not r or r[1]:
        raise OSError(errno.EPROTO, "HELLO refused: %r" % (r,))


def null_fds(k):
    return [os.open("/dev/null", os.O_RDONLY) for _ in range(k)]


def connect_retry(timeout=3.0):
    """connect(), waiting while the listen backlog is full (EAGAIN)."""
    end = time.monotonic() + timeout
    while True:
        try:
            return connect(timeout)
        except BlockingIOError:
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def fdflood(n, k):
    fds = null_fds(k)
    for _ in range(n):
        s = connect_retry()
        send(s, b"", fds)
        s.close()
    for fd in fds:
        os.close(fd)
    print("sent %d empty messages with %d fds each" % (n, k))


def fdmixed(n):
    fds = null_fds(8)
    kinds = 0
    for i in range(n):
        s = connect()
        try:
            mode = i % 6
            if mode == 0:
                send(s, b"xyz", fds)  # shorter than a header
            elif mode == 1:
                send(s, hello_msg() + b"\0" * 2000, fds)  # oversized
            elif mode == 2:
                send(s, register_msg(), fds[:1])  # REGISTER before HELLO
            elif mode == 3:
                send(s, hello_msg(), fds)  # HELLO takes none
            elif mode == 4:
                say_hello(s)
                send(s, msg(STATUS, struct.pack("=I", 1), 2), fds)  # STATUS takes none
            else:
                say_hello(s)
                send(s, register_msg(), fds)  # REGISTER takes one, not 8
            r = reply(s)
            if not r or not r[1]:
                print("mode %d: no error reply: %r" % (mode, r))
                return 1
            kinds |= 1 << mode
        finally:
            s.close()
    for fd in fds:
        os.close(fd)
    print("sent %d messages with fds where none is taken, each refused" % n)
    return 0 if kinds == 0x3F or n < 6 else 1


def hold(n):
    held, ok, refused = [], 0, 0
    for _ in range(n):
        try:
            s = connect(2.0)
            send(s, hello_msg())
            r = reply(s)
        except OSError:
            r = None
        if r and not r[1]:
            ok += 1
            held.append(s)
        else:
            refused += 1
    print("hello_ok %d refused %d" % (ok, refused), flush=True)
    sys.stdin.read()
    return 0


def hello():
    try:
        s = connect(3.0)
        say_hello(s)
    except OSError as e:
        print("no HELLO reply: %s" % e)
        return 1
    print("HELLO answered")
    return 0


def silent(seconds):
    s = connect(seconds)
    t0 = time.monotonic()
    try:
        data = s.recv(4096)
    except socket.timeout:
        print("still open after %.1f s" % seconds)
        return 1
    except ConnectionResetError:
        data = b""
    print("closed after %.2f s%s" % (time.monotonic() - t0, " (with data)" if data else ""))
    return 0


DMA_HEAP_IOCTL_ALLOC = 0xC0184800  # _IOWR('H', 0, struct dma_heap_allocation_data)


def dma_heap_fd(flags):
    heap = "/dev/dma_heap/system"
    try:
        h = os.open(heap, os.O_RDONLY)
    except OSError as e:
        return None, "no %s (%s); udmabuf makes only O_RDWR dma-bufs" % (heap, e.strerror)
    data = bytearray(struct.pack("=QIIQ", 1 << 20, 0, flags | os.O_CLOEXEC, 0))
    fcntl.ioctl(h, DMA_HEAP_IOCTL_ALLOC, data)
    os.close(h)
    return struct.unpack_from("=QIIQ", data)[1], None


def fuse_fd():
    """An O_PATH fd of the root of a FUSE mount whose server never answers
    (not even FUSE_INIT): fstat or fstatfs of it waits until /dev/fuse is
    closed. Returns (fd, fuse device fd, mount point)."""
    libc = ctypes.CDLL(None, use_errno=True)
    d = tempfile.mkdtemp()
    dev = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % dev
    if libc.mount(b"hostile", d.encode(), b"fuse", 0, opts.encode()):
        e = ctypes.get_errno()
        os.close(dev)
        os.rmdir(d)
        raise OSError(e, "mount fuse")
    return os.open(d, os.O_PATH | os.O_CLOEXEC), dev, d


def register(kind):
    cleanup = []
    if kind == "fifo":
        path = tempfile.mktemp()
        os.mkfifo(path)
        fd = os.open(path, os.O_RDWR)
        os.unlink(path)
    elif kind == "file":
        f = tempfile.TemporaryFile()
        f.write(b"x" * 4096)
        fd = os.dup(f.fileno())
    elif kind == "unixsock":
        pair = socket.socketpair()
        fd = os.dup(pair[0].fileno())
    elif kind == "evilname":
        d = tempfile.mkdtemp()
        path = os.path.join(d, "x\n<0>forged")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.unlink(path)
        os.rmdir(d)
    elif kind == "fuse":
        try:
            fd, dev, mnt = fuse_fd()
        except OSError as e:
            print("SKIP: no FUSE mount here: %s" % e)
            return 4
        cleanup = [dev, mnt]
    elif kind in ("rodmabuf", "rwdmabuf"):
        fd, why = dma_heap_fd(os.O_RDONLY if kind == "rodmabuf" else os.O_RDWR)
        if fd is None:
            print("SKIP: no dma-buf can be made here: %s" % why)
            return 4
    else:
        print("unknown kind %s" % kind)
        return 1
    s = connect(3.0)
    say_hello(s)
    t0 = time.monotonic()
    send(s, register_msg(), [fd])
    os.close(fd)
    try:
        r = reply(s)
    except socket.timeout:
        r = None
    elapsed = time.monotonic() - t0
    if cleanup:
        # Aborts the FUSE connection: a daemon stuck in it gets ENOTCONN.
        os.close(cleanup[0])
        ctypes.CDLL(None).umount2(cleanup[1].encode(), 2)
        os.rmdir(cleanup[1])
    if r is None:
        print("no reply after %.2f s" % elapsed)
        return 1
    print("errno %s after %.2f s: %s" % (errno.errorcode.get(r[1], r[1]), elapsed, r[2]))
    return 0


class FuseServer(threading.Thread):
    """A FUSE file system of one regular file, "f", served from this process.
    It answers FLUSH only for this process: a FLUSH from anyone else (the
    close() of a passed copy of the file, in whichever process runs it) is
    held, unanswered, until the mount is aborted."""
    HDR = struct.Struct("=IIQQIIIHH")
    OUT = struct.Struct("=IiQ")
    ATTR = struct.Struct("=QQQQQQIIIIIIIIII")

    def __init__(self, delay=None, writeback=False):
        super().__init__(daemon=True)
        self.delay = delay  # answer others' FLUSH after this long instead
        # Cache writes in the kernel and never complete one: the release
        # of a file with pages to write back then waits, even in an
        # exiting task.
        self.writeback = writeback
        self.writes = 0
        libc = ctypes.CDLL(None, use_errno=True)
        self.mnt = tempfile.mkdtemp()
        self.dev = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        opts = "fd=%d,rootmode=40000,user_id=0,group_id=0" % self.dev
        if libc.mount(b"hostile", self.mnt.encode(), b"fuse", 0, opts.encode()):
            e = ctypes.get_errno()
            os.close(self.dev)
            os.rmdir(self.mnt)
            raise OSError(e, "mount fuse")
        self.held = []
        self.start()

    def attr(self, node):
        mode = 0o40755 if node == 1 else 0o100666
        return self.ATTR.pack(node, 4096, 8, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)

    def answer(self, unique, err=0, body=b""):
        os.write(self.dev, self.OUT.pack(self.OUT.size + len(body), err, unique) + body)

    def run(self):
        while True:
            try:
                req = os.read(self.dev, 1 << 18)
            except OSError:
                return  # aborted
            _, op, unique, node, _, _, pid = self.HDR.unpack_from(req)[:7]
            if op == 26:  # INIT: protocol 7.31
                major, minor, readahead = struct.unpack_from("=III", req, self.HDR.size)
                flags = 1 << 16 if self.writeback else 0  # FUSE_WRITEBACK_CACHE
                self.answer(unique, 0, struct.pack("=IIIIHHIIHHI28x", 7, 31, readahead,
                                                   flags, 0, 0, 4096, 1, 0, 0, 0))
            elif op == 1:  # LOOKUP
                if req[self.HDR.size:].split(b"\0")[0] != b"f":
                    self.answer(unique, -errno.ENOENT)
                else:
                    self.answer(unique, 0, struct.pack("=QQQQII", 2, 0, 60, 60, 0, 0) +
                                self.attr(2))
            elif op == 3:  # GETATTR
                self.answer(unique, 0, struct.pack("=QII", 60, 0, 0) + self.attr(node))
            elif op in (14, 27):  # OPEN, OPENDIR
                self.answer(unique, 0, struct.pack("=QII", 1, 0, 0))
            elif op == 25:  # FLUSH
                if pid == os.getpid():
                    self.answer(unique)
                else:
                    self.held.append(pid)
                    if self.delay is not None:
                        threading.Timer(self.delay, self.answer, (unique,)).start()
            elif op == 15:  # READ: zeros
                off, size = struct.unpack_from("=8xQI", req, self.HDR.size)
                self.answer(unique, 0, bytes(max(0, min(size, 4096 - off))))
            elif op == 16:  # WRITE: never completed
                self.writes += 1
            elif op in (18, 29):  # RELEASE, RELEASEDIR
                self.answer(unique)
            elif op in (2, 36, 42):  # FORGET, INTERRUPT, BATCH_FORGET: no answer
                pass
            else:
                self.answer(unique, -errno.ENOSYS)

    def abort(self):
        """Ends every wait on the mount (the waiters get ENOTCONN)."""
        os.close(self.dev)
        ctypes.CDLL(None).umount2(self.mnt.encode(), 2)
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass  # no longer root (fuseflush UID): the caller's TMPDIR goes


def fuseflush(uid=None, rounds=1, delay=None):
    try:
        fs = FuseServer(delay)
    except OSError as e:
        print("SKIP: no FUSE mount here: %s" % e)
        return 4
    # Opened as the mount's owner; passed as UID, when given.
    fds = [os.open(os.path.join(fs.mnt, "f"), os.O_RDWR | os.O_CLOEXEC)
           for _ in range(rounds + 1)]
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    s = connect(3.0)
    say_hello(s)
    out = []
    for i in range(rounds):
        t0 = time.monotonic()
        send(s, register_msg(), [fds[i]])
        try:
            r = reply(s)
        except socket.timeout:
            r = None
        elapsed = time.monotonic() - t0
        if r is None:
            print("no reply after %.2f s" % elapsed)
            fs.abort()
            return 1
        out.append("errno %s after %.2f s: %s" % (errno.errorcode.get(r[1], r[1]), elapsed,
                                                  r[2]))
        # Whoever closes the passed copy sends a FLUSH, held from here on.
        time.sleep(0.3)
        if i == 0:
            took = timed_hello()
            out.append("hello after %s s" % ("%.2f" % took if took is not None else "never"))
        # Long enough for rdpmd's watchdog (a second) to give up on the closer.
        time.sleep(1.5)
    out.append("%d flush(es) of others held" % len(fs.held))
    if rounds > 1:
        s.settimeout(1.0)
        send(s, register_msg(), [fds[rounds]])
        try:
            r = reply(s)
            out.append("then: errno %s: %s" % (errno.errorcode.get(r[1], r[1]), r[2]))
        except socket.timeout:
            out.append("then: no reply within 1.0 s")
    for fd in fds:
        os.close(fd)  # this process's FLUSH is answered
    fs.abort()
    print("; ".join(out))
    return 0


def status():
    s = connect(3.0)
    say_hello(s)
    send(s, msg(STATUS, struct.pack("=I", 1), 2))
    r = reply(s)
    if not r or r[1]:
        print("STATUS refused: %r" % (r,))
        return 1
    print(r[2])
    return 0


def timed_hello():
    """Seconds a new client waits for its HELLO reply; None: no reply."""
    t0 = time.monotonic()
    try:
        s = connect_retry(5.0)
        say_hello(s)
        s.close()
    except OSError:
        return None
    return time.monotonic() - t0


def stuck_socket(seconds):
    """A TCP socket whose last close blocks SECONDS: SO_LINGER on, unsent data
    towards a local peer that never reads (a zero window); (socket, the
    peer's two sockets, bytes stuck). Closing the peer ends the wait."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    peer.bind(("127.0.0.1", 0))
    peer.listen(1)
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    t.connect(peer.getsockname())
    conn, _ = peer.accept()  # never read: its window closes
    t.setblocking(False)
    sent = 0
    try:
        while True:
            sent += t.send(b"x" * 65536)
    except BlockingIOError:
        pass
    t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, seconds))
    return t, (conn, peer), sent


def linger(seconds, pid):
    t, peer, sent = stuck_socket(seconds)
    s = connect(3.0)
    say_hello(s)
    # rdpmd stopped while the fd is passed and this copy closed: its own
    # copy must be the last one, whenever it reads the message.
    os.kill(pid, signal.SIGSTOP)
    send(s, register_msg(), [t.fileno()])  # refused: not a dma-buf
    t.close()
    os.kill(pid, signal.SIGCONT)
    time.sleep(0.2)
    took = timed_hello()
    try:
        reply(s)
    except OSError:
        pass
    for p in peer:
        p.close()
    if took is None:
        print("hello not answered (%d bytes stuck in the lingering socket)" % sent)
        return 1
    print("hello after %.2f s (%d bytes stuck in the lingering socket)" % (took, sent))
    return 0


def lingers(uid, n, pid, release=None):
    """As UID, N REGISTERs each passing a TCP socket whose last close lingers
    an hour; rdpmd (PID) is stopped while each is passed and the passing
    copies closed, so the closer's copy is the last. Each waits 1.5 s for
    the closer's watchdog. Prints "answered A of N; then: ..." for an
    innocent-looking REGISTER with a pipe after them."""
    socks = [stuck_socket(3600) for _ in range(n)]
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    child = os.fork()
    if not child:
        os.close(from_parent)
        os.close(to_parent)
        for _, peer, _ in socks:
            for p in peer:
                p.close()                   # the parent's to hold or close
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        s = connect(3.0)
        say_hello(s)
        answered = 0
        for i in range(n):
            os.write(from_child, b"s")
            os.read(to_child, 1)            # rdpmd stopped
            send(s, register_msg(), [socks[i][0].fileno()])
            socks[i][0].close()
            os.write(from_child, b"c")
            os.read(to_child, 1)            # rdpmd running again
            s.settimeout(1.0)
            try:
                if reply(s):
                    answered += 1
            except OSError:
                pass
            time.sleep(1.5)
        then = register_pipe_then(s)
        print("answered %d of %d; then: %s" % (answered, n, then), flush=True)
        os._exit(0)
    os.close(to_child)
    os.close(from_child)
    for t, _, _ in socks:
        t.close()                           # the child's copies are the passing ones
    for i in range(n):
        os.read(to_parent, 1)
        os.kill(pid, signal.SIGSTOP)
        os.write(from_parent, b"g")
        os.read(to_parent, 1)
        os.kill(pid, signal.SIGCONT)
        os.write(from_parent, b"g")
        if release is not None:
            # Each close ends just before the watchdog's second: no stall.
            time.sleep(release)
            for p in socks[i][1]:
                p.close()
    _, status = os.waitpid(child, 0)
    # The child's connection is closed, with the two sockets it still held:
    # the peers stay for 3.5 s, so that a close of those would block.
    time.sleep(3.5)
    if release is None:
        for _, peer, _ in socks:
            for p in peer:
                p.close()
    return os.waitstatus_to_exitcode(status)


def children_of(pid):
    """The pids of process PID's children (rdpmd's: its closer helpers)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def wbfuse(uid, rounds, pid, kill_helper=False):
    """As UID: ROUNDS connections, each carrying a file of a FUSE mount that
    caches writes and never completes one, sent while rdpmd (PID) is
    stopped and refused at accept (2 silent connections already:
    max_preauth_per_user); then the file's page is dirtied, so that each
    release waits. With KILL_HELPER the closer helper is killed 0.3 s after
    rdpmd runs again, before its closing children are a second old. Then a
    REGISTER with a pipe on a connection that said HELLO. Prints "WRITEs
    held W; then: ..."."""
    try:
        fs = FuseServer(0, writeback=True)
    except OSError as e:
        print("SKIP: no FUSE mount here: %s" % e)
        return 4
    path = os.path.join(fs.mnt, "f")
    passed = [os.open(path, os.O_RDWR | os.O_CLOEXEC) for _ in range(rounds)]
    dirty = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    child = os.fork()
    if not child:
        os.close(from_parent)
        os.close(to_parent)
        os.close(dirty)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        silent = [connect(3.0) for _ in range(2)]
        time.sleep(0.3)
        os.write(from_child, b"s")
        os.read(to_child, 1)                # rdpmd stopped
        conns = []
        for fd in passed:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            c.connect(os.environ["RDPM_SOCKET"])
            send(c, hello_msg(), [fd])
            os.close(fd)                    # a clean page yet: its FLUSH ends
            conns.append(c)
        os.write(from_child, b"c")          # the parent dirties the page
        os.read(to_child, 1)                # rdpmd running again
        time.sleep(2.5)                     # each closing child reported stuck
        s = connect(3.0)
        say_hello(s)
        then = register_pipe_then(s)
        os.write(from_child, ("then: %s" % then).encode())
        os._exit(0)
    os.close(to_child)
    os.close(from_child)
    for fd in passed:
        os.close(fd)
    os.read(to_parent, 1)
    os.kill(pid, signal.SIGSTOP)
    os.write(from_parent, b"g")
    os.read(to_parent, 1)
    os.pwrite(dirty, b"x" * 64, 0)          # dirty: every release waits now
    os.kill(pid, signal.SIGCONT)
    os.write(from_parent, b"g")
    if kill_helper:
        time.sleep(0.3)
        for helper in children_of(pid):
            os.kill(helper, signal.SIGKILL)
    then = os.read(to_parent, 200).decode()
    _, status = os.waitpid(child, 0)
    print("WRITEs held %d; %s" % (fs.writes, then))
    fs.abort()                              # the waiting releases end
    return os.waitstatus_to_exitcode(status)


def lingerflood(seconds, n):
    """Before any HELLO: a socket whose close blocks SECONDS, then N messages
    of 253 fds each (as many as go without blocking); prints "passed F fds
    in M messages", then holds the peer (the close stays blocked) until
    stdin closes. The caller stops rdpmd (SIGSTOP) until the line comes,
    so that rdpmd's copy of the socket is the last one."""
    t, peer, _ = stuck_socket(seconds)
    s = connect(3.0)
    send(s, register_msg(), [t.fileno()])  # before HELLO: refused, fd kept
    t.close()
    null = os.open("/dev/null", os.O_RDONLY)
    s.setblocking(False)
    passed, msgs = 1, 1
    for _ in range(n):
        try:
            send(s, register_msg(), [null] * 253)
        except (BlockingIOError, OSError):
            break
        passed += 253
        msgs += 1
    os.close(null)
    print("passed %d fds in %d messages" % (passed, msgs), flush=True)
    sys.stdin.read()
    s.close()
    for p in peer:
        p.close()
    return 0


def hellos(n):
    ok = []
    for _ in range(n):
        t = timed_hello()
        if t is None:
            break  # a stalled rdpmd: the rest would wait as long
        ok.append(t)
    print("answered %d of %d, slowest %.2f s" % (len(ok), n, max(ok) if ok else 0))
    return 0


def badflood(n):
    s = connect(5.0)
    say_hello(s)
    refused = 0
    for i in range(n):
        send(s, msg(UNSTEER, struct.pack("=I", 0), i + 2))
        r = reply(s)
        if r and r[1]:
            refused += 1
    print("refused %d pid %d" % (refused, os.getpid()))
    return 0 if refused == n else 1


def deaf(n):
    """n clients, each sending requests and reading no reply until rdpmd
    closes it."""
    closed = 0
    for _ in range(n):
        s = connect(5.0)
        say_hello(s)
        try:
            for i in range(100000):
                send(s, msg(UNSTEER, struct.pack("=I", 0), i + 2))
        except OSError:
            closed += 1
        s.close()
    print("closed %d of %d" % (closed, n))
    return 0 if closed == n else 1


def fds(k):
    s = connect(3.0)
    say_hello(s)
    f = null_fds(k)
    send(s, register_msg(), f)
    for fd in f:
        os.close(fd)
    r = reply(s)
    if not r:
        print("no reply")
        return 1
    print("errno %s: %s" % (errno.errorcode.get(r[1], r[1]), r[2]))
    return 0


def silenthold(n, seconds):
    held = [connect(3.0) for _ in range(n)]
    time.sleep(0.5)
    closed = 0
    for s in held:
        s.setblocking(False)
        try:
            while s.recv(1 << 16):
                pass  # a refusal's reason, then EOF
            closed += 1
        except BlockingIOError:
            pass
        except ConnectionResetError:
            closed += 1
    print("open %d closed %d" % (n - closed, closed), flush=True)
    time.sleep(seconds)
    return 0


F_SETPIPE_SZ = 1031


def stuckerr(cmd):
    r, w = os.pipe()
    fcntl.fcntl(w, F_SETPIPE_SZ, 4096)
    os.dup2(w, 2)
    os.set_inheritable(r, True)
    os.execv(cmd[0], cmd)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "fdflood" and len(argv) == 4:
        fdflood(int(argv[2]), int(argv[3]))
        return 0
    if cmd == "fdmixed" and len(argv) == 3:
        return fdmixed(int(argv[2]))
    if cmd == "hold" and len(argv) == 3:
        return hold(int(argv[2]))
    if cmd == "hello" and len(argv) == 2:
        return hello()
    if cmd == "silent" and len(argv) == 3:
        return silent(float(argv[2]))
    if cmd == "register" and len(argv) == 3:
        return register(argv[2])
    if cmd == "fuseflush" and len(argv) == 2:
        return fuseflush()
    if cmd == "fuseflush" and len(argv) == 4:
        return fuseflush(int(argv[2]), int(argv[3]))
    if cmd == "fuseflush" and len(argv) == 5:
        return fuseflush(int(argv[2]), int(argv[3]), float(argv[4]))
    if cmd == "status" and len(argv) == 2:
        return status()
    if cmd == "linger" and len(argv) == 4:
        return linger(int(argv[2]), int(argv[3]))
    if cmd == "lingers" and len(argv) == 5:
        return lingers(int(argv[2]), int(argv[3]), int(argv[4]))
    if cmd == "lingers" and len(argv) == 6:
        return lingers(int(argv[2]), int(argv[3]), int(argv[4]), float(argv[5]))
    if cmd == "wbfuse" and len(argv) in (5, 6) and argv[5:] in ([], ["kill"]):
        return wbfuse(int(argv[2]), int(argv[3]), int(argv[4]), argv[5:] == ["kill"])
    if cmd == "lingerflood" and len(argv) == 4:
        return lingerflood(int(argv[2]), int(argv[3]))
    if cmd == "hellos" and len(argv) == 3:
        return hellos(int(argv[2]))
    if cmd == "badflood" and len(argv) == 3:
        return badflood(int(argv[2]))
    if cmd == "deaf" and len(argv) == 3:
        return deaf(int(argv[2]))
    if cmd == "fds" and len(argv) == 3:
        return fds(int(argv[2]))
    if cmd == "silenthold" and len(argv) == 4:
        return silenthold(int(argv[2]), float(argv[3]))
    if cmd == "stuckerr" and len(argv) > 2:
        return stuckerr(argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
