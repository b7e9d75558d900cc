#!/usr/bin/env python3
"""deskd-job's self-test, without Slurm (issue 29).

Runs the built deskd-job as a throwaway user, exactly as a Slurm job's script would (its spec,
one line of JSON, on stdin; no privileges), against this script playing both of deskd's parts:

- deskd's report listener: the hop server for role `report` (HMAC-SHA256 over the transcript,
  as Sources/DeskCore/Slurm/HopHandshake.swift documents), then the job's JSON lines;
- the gateway: the hop client for role `relay` to the port the job reports, then RFB through
  the relay up to a successful VNC authentication (DES, RFC 6143, with VNC's bit-reversed key).

What it shows: `ready` and `viewers` lines, a relay that logs in to Xvnc, a client without the
key that gets no byte of RFB, viewers counted (relays and straight connections to the socket),
SIGUSR1 turning into `warned` and an xmessage window on the desktop, and every way the job ends
(SIGTERM, the xstartup's exit, deskd's `end`, Xvnc's death, a failed start, a bad spec) leaving
no process of the user's and no private directory behind, within Slurm's KillWait. Also: the
report line made again after deskd drops it or is not there yet, and the relay's cap.

Run as root, from the repository, after `swift build --product deskd-job`:

    python3 Tests/cluster/job-selftest.py                # every check (~40 s)
    python3 Tests/cluster/job-selftest.py --bench        # and the relay's throughput
    python3 Tests/cluster/job-selftest.py -k term,relay  # only the scenarios named

Needs Debian's tigervnc-standalone-server (Xtigervnc), x11-utils (xmessage, xwininfo) and
passwd (useradd). The user (deskt-job1 unless --user) is created if missing and left for the
next run. The user must run nothing else while the test runs: it counts the user's processes.
"""

import argparse
import hashlib
import hmac
import json
import os
import pwd
import queue
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KILL_WAIT = 5.0  # Slurm's KillWait in the lab: the job must be gone well within it


# ---------------------------------------------------------------------------------------------
# DES, for VNC authentication (the standard library has none; RFC 6143 section 7.2.2)

_PC1 = [57, 49, 41, 33, 25, 17, 9, 1, 58, 50, 42, 34, 26, 18, 10, 2, 59, 51, 43, 35, 27, 19, 11, 3, 60, 52, 44, 36,
        63, 55, 47, 39, 31, 23, 15, 7, 62, 54, 46, 38, 30, 22, 14, 6, 61, 53, 45, 37, 29, 21, 13, 5, 28, 20, 12, 4]
_PC2 = [14, 17, 11, 24, 1, 5, 3, 28, 15, 6, 21, 10, 23, 19, 12, 4, 26, 8, 16, 7, 27, 20, 13, 2,
        41, 52, 31, 37, 47, 55, 30, 40, 51, 45, 33, 48, 44, 49, 39, 56, 34, 53, 46, 42, 50, 36, 29, 32]
_SHIFTS = [1, 1, 2, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 2, 2, 1]
_IP = [58, 50, 42, 34, 26, 18, 10, 2, 60, 52, 44, 36, 28, 20, 12, 4, 62, 54, 46, 38, 30, 22, 14, 6, 64, 56, 48, 40, 32, 24, 16, 8,
       57, 49, 41, 33, 25, 17, 9, 1, 59, 51, 43, 35, 27, 19, 11, 3, 61, 53, 45, 37, 29, 21, 13, 5, 63, 55, 47, 39, 31, 23, 15, 7]
_FP = [40, 8, 48, 16, 56, 24, 64, 32, 39, 7, 47, 15, 55, 23, 63, 31, 38, 6, 46, 14, 54, 22, 62, 30, 37, 5, 45, 13, 53, 21, 61, 29,
       36, 4, 44, 12, 52, 20, 60, 28, 35, 3, 43, 11, 51, 19, 59, 27, 34, 2, 42, 10, 50, 18, 58, 26, 33, 1, 41, 9, 49, 17, 57, 25]
_E = [32, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 8, 9, 10, 11, 12, 13, 12, 13, 14, 15, 16, 17,
      16, 17, 18, 19, 20, 21, 20, 21, 22, 23, 24, 25, 24, 25, 26, 27, 28, 29, 28, 29, 30, 31, 32, 1]
_P = [16, 7, 20, 21, 29, 12, 28, 17, 1, 15, 23, 26, 5, 18, 31, 10, 2, 8, 24, 14, 32, 27, 3, 9, 19, 13, 30, 6, 22, 11, 4, 25]
_S = [
    [14, 4, 13, 1, 2, 15, 11, 8, 3, 10, 6, 12, 5, 9, 0, 7, 0, 15, 7, 4, 14, 2, 13, 1, 10, 6, 12, 11, 9, 5, 3, 8,
     4, 1, 14, 8, 13, 6, 2, 11, 15, 12, 9, 7, 3, 10, 5, 0, 15, 12, 8, 2, 4, 9, 1, 7, 5, 11, 3, 14, 10, 0, 6, 13],
    [15, 1, 8, 14, 6, 11, 3, 4, 9, 7, 2, 13, 12, 0, 5, 10, 3, 13, 4, 7, 15, 2, 8, 14, 12, 0, 1, 10, 6, 9, 11, 5,
     0, 14, 7, 11, 10, 4, 13, 1, 5, 8, 12, 6, 9, 3, 2, 15, 13, 8, 10, 1, 3, 15, 4, 2, 11, 6, 7, 12, 0, 5, 14, 9],
    [10, 0, 9, 14, 6, 3, 15, 5, 1, 13, 12, 7, 11, 4, 2, 8, 13, 7, 0, 9, 3, 4, 6, 10, 2, 8, 5, 14, 12, 11, 15, 1,
     13, 6, 4, 9, 8, 15, 3, 0, 11, 1, 2, 12, 5, 10, 14, 7, 1, 10, 13, 0, 6, 9, 8, 7, 4, 15, 14, 3, 11, 5, 2, 12],
    [7, 13, 14, 3, 0, 6, 9, 10, 1, 2, 8, 5, 11, 12, 4, 15, 13, 8, 11, 5, 6, 15, 0, 3, 4, 7, 2, 12, 1, 10, 14, 9,
     10, 6, 9, 0, 12, 11, 7, 13, 15, 1, 3, 14, 5, 2, 8, 4, 3, 15, 0, 6, 10, 1, 13, 8, 9, 4, 5, 11, 12, 7, 2, 14],
    [2, 12, 4, 1, 7, 10, 11, 6, 8, 5, 3, 15, 13, 0, 14, 9, 14, 11, 2, 12, 4, 7, 13, 1, 5, 0, 15, 10, 3, 9, 8, 6,
     4, 2, 1, 11, 10, 13, 7, 8, 15, 9, 12, 5, 6, 3, 0, 14, 11, 8, 12, 7, 1, 14, 2, 13, 6, 15, 0, 9, 10, 4, 5, 3],
    [12, 1, 10, 15, 9, 2, 6, 8, 0, 13, 3, 4, 14, 7, 5, 11, 10, 15, 4, 2, 7, 12, 9, 5, 6, 1, 13, 14, 0, 11, 3, 8,
     9, 14, 15, 5, 2, 8, 12, 3, 7, 0, 4, 10, 1, 13, 11, 6, 4, 3, 2, 12, 9, 5, 15, 10, 11, 14, 1, 7, 6, 0, 8, 13],
    [4, 11, 2, 14, 15, 0, 8, 13, 3, 12, 9, 7, 5, 10, 6, 1, 13, 0, 11, 7, 4, 9, 1, 10, 14, 3, 5, 12, 2, 15, 8, 6,
     1, 4, 11, 13, 12, 3, 7, 14, 10, 15, 6, 8, 0, 5, 9, 2, 6, 11, 13, 8, 1, 4, 10, 7, 9, 5, 0, 15, 14, 2, 3, 12],
    [13, 2, 8, 4, 6, 15, 11, 1, 10, 9, 3, 14, 5, 0, 12, 7, 1, 15, 13, 8, 10, 3, 7, 4, 12, 5, 6, 11, 0, 14, 9, 2,
     7, 11, 4, 1, 9, 12, 14, 2, 0, 6, 10, 13, 15, 3, 5, 8, 2, 1, 14, 7, 4, 10, 8, 13, 15, 12, 9, 0, 3, 5, 6, 11],
]


def _permute(value, table, width):
    out = 0
    for position in table:
        out = (out << 1) | ((value >> (width - position)) & 1)
    return out


def des_encrypt_block(key8, block8):
    key = _permute(int.from_bytes(key8, "big"), _PC1, 64)
    c, d = key >> 28, key & 0xFFFFFFF
    subkeys = []
    for shift in _SHIFTS:
        c = ((c << shift) | (c >> (28 - shift))) & 0xFFFFFFF
        d = ((d << shift) | (d >> (28 - shift))) & 0xFFFFFFF
        subkeys.append(_permute((c << 28) | d, _PC2, 56))
    data = _permute(int.from_bytes(block8, "big"), _IP, 64)
    left, right = data >> 32, data & 0xFFFFFFFF
    for subkey in subkeys:
        mixed = _permute(right, _E, 32) ^ subkey
        sboxed = 0
        for box in range(8):
            six = (mixed >> (42 - 6 * box)) & 0x3F
            row, column = ((six >> 5) << 1) | (six & 1), (six >> 1) & 0xF
            sboxed = (sboxed << 4) | _S[box][row * 16 + column]
        left, right = right, left ^ _permute(sboxed, _P, 32)
    return _permute((right << 32) | left, _FP, 64).to_bytes(8, "big")


def vnc_response(password, challenge):
    """VNC authentication's answer: the challenge DES-encrypted with the password (8 bytes, NUL
    padded) as the key, each key byte's bits reversed (VNC's historical quirk)."""
    key = password.encode()[:8].ljust(8, b"\0")
    key = bytes(int(f"{byte:08b}"[::-1], 2) for byte in key)
    return des_encrypt_block(key, challenge[:8]) + des_encrypt_block(key, challenge[8:16])


# FIPS 81's example, and the VNC password file value DESIGN.md records (`secret12`), before any use.
assert des_encrypt_block(bytes.fromhex("0123456789abcdef"), b"Now is t").hex() == "3fa40e8a984d4815"
assert des_encrypt_block(bytes.fromhex("e84ad660c4721ae0"), b"secret12").hex() == "24b5ae4ce15503c6"


# ---------------------------------------------------------------------------------------------
# The hop (HopHandshake) and RFB, as bytes

def mac(key, side, role, session, nonce_client, nonce_server):
    return hmac.new(key, f"{side}|{role}|{session}|{nonce_client}|{nonce_server}".encode(), hashlib.sha256).hexdigest()


def read_line(sock, limit=256):
    """One line, a byte at a time, so nothing after it (RFB) is taken from the socket."""
    line = b""
    while not line.endswith(b"\n"):
        byte = sock.recv(1)
        if not byte:
            raise EOFError(f"closed after {line!r}")
        line += byte
        if len(line) > limit:
            raise ValueError("line too long")
    return line[:-1].decode()


def recv_exact(sock, count):
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError(f"closed after {len(data)} of {count} bytes")
        data += chunk
    return bytes(data)


def hop_client(address, port, session, key, role="relay"):
    """The gateway's side of the relay hop: a socket with the handshake done."""
    sock = socket.create_connection((address, port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the gateway's NIO channel has it
    nonce = secrets.token_hex(32)
    sock.sendall(f"DESKHOP1 {role} {session} {nonce}\n".encode())
    server_nonce, server_mac = read_line(sock).split(" ")
    if not hmac.compare_digest(server_mac, mac(key, "server", role, session, nonce, server_nonce)):
        raise AssertionError("the job does not hold the session's key")
    sock.sendall((mac(key, "client", role, session, nonce, server_nonce) + "\n").encode())
    if read_line(sock) != "OK":
        raise AssertionError("the job refused the proof")
    return sock


def vnc_login(sock, password):
    """RFB up to ServerInit: (security types, (width, height, bits per pixel, desktop name))."""
    version = recv_exact(sock, 12)
    assert version == b"RFB 003.008\n", version
    sock.sendall(version)
    count = recv_exact(sock, 1)[0]
    types = list(recv_exact(sock, count))
    assert 2 in types, f"no VNC authentication among {types}"
    sock.sendall(b"\x02")
    challenge = recv_exact(sock, 16)
    sock.sendall(vnc_response(password, challenge))
    result = struct.unpack(">I", recv_exact(sock, 4))[0]
    assert result == 0, f"VNC authentication failed ({result})"
    sock.sendall(b"\x01")  # shared
    header = recv_exact(sock, 24)
    width, height = struct.unpack(">HH", header[:4])
    name = recv_exact(sock, struct.unpack(">I", header[20:24])[0]).decode()
    return types, (width, height, header[4], name)


def pull_framebuffers(sock, width, height, bits_per_pixel, count):
    """Asks for the whole screen in raw encoding `count` times; bytes per second received."""
    sock.settimeout(60)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.sendall(struct.pack(">BxHi", 2, 1, 0))  # SetEncodings: raw only
    sink = memoryview(bytearray(4 << 20))
    received = 0
    start = time.perf_counter()
    for _ in range(count):
        sock.sendall(struct.pack(">BBHHHH", 3, 0, 0, 0, width, height))  # not incremental: all of it
        while True:
            kind = recv_exact(sock, 1)[0]
            if kind == 0:
                break
            if kind == 2:  # Bell
                continue
            if kind == 3:  # ServerCutText
                recv_exact(sock, 3)
                recv_exact(sock, struct.unpack(">I", recv_exact(sock, 4))[0])
                continue
            raise AssertionError(f"unexpected server message {kind}")
        rectangles = struct.unpack(">xH", recv_exact(sock, 3))[0]
        for _ in range(rectangles):
            _, _, w, h, encoding = struct.unpack(">HHHHi", recv_exact(sock, 12))
            assert encoding == 0, encoding
            left = w * h * bits_per_pixel // 8
            while left:
                n = sock.recv_into(sink[:min(left, len(sink))])
                if not n:
                    raise EOFError("closed during an update")
                left -= n
                received += n
    return received / (time.perf_counter() - start)


def round_trips(sock, count):
    """The median time to ask for a 1x1 update and have it (what a key press's echo waits on)."""
    sock.sendall(struct.pack(">BxHi", 2, 1, 0))  # SetEncodings: raw only
    times = []
    for _ in range(count):
        start = time.perf_counter()
        sock.sendall(struct.pack(">BBHHHH", 3, 0, 0, 0, 1, 1))
        assert recv_exact(sock, 1) == b"\0"
        for _ in range(struct.unpack(">xH", recv_exact(sock, 3))[0]):
            _, _, w, h, _ = struct.unpack(">HHHHi", recv_exact(sock, 12))
            recv_exact(sock, w * h * 4)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


# ---------------------------------------------------------------------------------------------
# deskd's report listener

class FakeDeskd:
    """deskd's end of the report hop on 127.0.0.1: authenticates the job, then queues its lines
    (and an `EOF` mark when a connection ends)."""

    def __init__(self, session, key, port=0):
        self.session, self.key = session, key
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.lines = queue.Queue()
        self.connections = []
        self.refused = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.settimeout(10)
            magic, role, session, nonce = read_line(conn).split(" ")
            if magic != "DESKHOP1" or role != "report" or session != self.session:
                self.refused.append("hello")
                conn.close()
                return
            server_nonce = secrets.token_hex(32)
            conn.sendall(f"{server_nonce} {mac(self.key, 'server', role, session, nonce, server_nonce)}\n".encode())
            if not hmac.compare_digest(read_line(conn), mac(self.key, "client", role, session, nonce, server_nonce)):
                self.refused.append("proof")
                conn.close()
                return
            conn.sendall(b"OK\n")
            conn.settimeout(None)
            self.connections.append(conn)
            for raw in conn.makefile("rb"):
                assert len(raw) <= 4096, "a report line over JobReport.maxLineBytes"
                self.lines.put(json.loads(raw))
        except (OSError, EOFError, ValueError):
            pass
        self.lines.put("EOF")

    def expect(self, event, timeout=10, **fields):
        """The next line of `event` (with `fields`), skipping others; fails after `timeout`."""
        deadline = time.monotonic() + timeout
        skipped = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {event} {fields or ''} within {timeout} s (saw {skipped})")
            if line == "EOF" and event == "EOF":
                return line
            if isinstance(line, dict) and line.get("event") == event and all(line.get(k) == v for k, v in fields.items()):
                return line
            skipped.append(line)

    def send(self, command, conn=-1):
        self.connections[conn].sendall((json.dumps(command) + "\n").encode())

    def drop(self):
        """deskd going away: the listener and every connection."""
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread, which holds the port until then
        self.listener.close()
        for conn in self.connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()


# ---------------------------------------------------------------------------------------------
# The user and the job

class User:
    def __init__(self, name):
        if subprocess.run(["id", name], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        entry = pwd.getpwnam(name)
        self.name, self.uid, self.gid, self.home = name, entry.pw_uid, entry.pw_gid, entry.pw_dir

    def processes(self):
        """The user's processes that run (zombies hold nothing but a pid: PID 1 here reaps none)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
            except OSError:
                continue
            if int(fields["Uid"].split()[0]) == self.uid and not fields["State"].strip().startswith(("Z", "X")):
                found.append((int(entry), fields["Name"].strip()))
        return found

    def run(self, argv, env):
        return subprocess.run(argv, user=self.uid, group=self.gid, extra_groups=[], env=env, capture_output=True, text=True, timeout=20)


# Each desktop opens its display, as every real one does: the job reports `ready` once a process
# of the desktop holds a connection to it (its first X client), as deskd does for a local one.
XSTARTUP_STUBBORN = """#!/bin/sh
# A desktop that tries to outlive its job: a double-forked process (reparented away from this
# script) and a child that ignores SIGTERM, then the session itself, on its display.
( sleep 1000 & )
sh -c 'trap "" TERM; sleep 1000' &
exec xterm -e sleep 100000
"""

# A session that ends by itself (a logout): xterm runs its command only once it holds the
# display, so the desktop is ready before it ends.
XSTARTUP_LOGOUT = """#!/bin/sh
( sleep 1000 & )
exec xterm -e sleep 2
"""

# A session manager that aborts before it reaches its display (gnome-session without systemd
# does): a failed start, never `ready`.
XSTARTUP_ABORTS = """#!/bin/sh
sleep 0.5
kill -ABRT $$
"""


class Job:
    """deskd-job as a Slurm job runs it: as the user, no privileges, the spec on stdin."""

    def __init__(self, binary, user, deskd, xstartup=XSTARTUP_STUBBORN, password="s3cret!x", tmpdir="/tmp", wrapper=None, **overrides):
        self.user, self.password = user, password
        self.spec = {
            "version": 1, "session": deskd.session, "key": deskd.key.hex(), "password": password,
            "report": f"127.0.0.1:{deskd.port}", "xvnc": "/usr/bin/Xtigervnc", "xvncOptions": [],
            "xstartup": xstartup, "desktop": "selftest", "geometry": "1024x768", "depth": 24, "warnSeconds": 600,
        }
        self.spec.update(overrides)
        env = {"PATH": "/usr/bin:/bin", "HOME": user.home, "SLURM_JOB_ID": "4242", "TMPDIR": tmpdir}
        self.started = time.monotonic()
        if wrapper:
            # Root sets the stage (a mount namespace, say), then becomes the user: setpriv execs.
            argv = wrapper + ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", "--", binary]
            credentials = {}
        else:
            argv, credentials = [binary], {"user": user.uid, "group": user.gid, "extra_groups": []}
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        env=env, cwd=user.home, **credentials)
        self.process.stdin.write((json.dumps(self.spec) + "\n").encode())
        self.process.stdin.close()
        self.process.stdin = None  # said all there is: communicate() must not touch it
        self.stderr = b""

    def wait(self, timeout=KILL_WAIT):
        try:
            _, self.stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"deskd-job did not end within {timeout} s")
        return self.process.returncode

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# ---------------------------------------------------------------------------------------------
# Checks

def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"    ok: {what}")


def assert_clean(user, ready, job, display=None):
    """Nothing of the user's runs; the private directory and Xvnc's files in /tmp are gone."""
    deadline = time.monotonic() + 1
    while user.processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = user.processes()
    check(not left, f"no process of {user.name} left (found {left})")
    if ready:
        directory = os.path.dirname(ready["socket"])
        check(not os.path.exists(directory), f"the private directory {directory} is gone")
        display = ready["display"]
    if display:
        check(not os.path.exists(f"/tmp/.X{display}-lock") and not os.path.exists(f"/tmp/.X11-unix/X{display}"),
              f"Xvnc's lock and socket for :{display} are gone")


def start_and_ready(args, user, xstartup=XSTARTUP_STUBBORN, **options):
    deskd = FakeDeskd(secrets.token_hex(16), secrets.token_bytes(32))
    job = Job(args.job, user, deskd, xstartup=xstartup, **options)
    ready = deskd.expect("ready", timeout=25)
    elapsed = time.monotonic() - job.started
    check(ready["node"] == os.uname().nodename and ready["address"] == "127.0.0.1" and ready["port"] > 0
          and ready["display"] >= 1 and ready["socket"].endswith("/rfb.sock"),
          f"ready in {elapsed:.2f} s: {json.dumps(ready, sort_keys=True)}")
    deskd.expect("viewers", viewers=0)
    return deskd, job, ready


def scenario_relay(args, user):
    """The relay logs in to Xvnc; a client without the key gets nothing; viewers are counted."""
    deskd, job, ready = start_and_ready(args, user)
    try:
        sock = hop_client(ready["address"], ready["port"], deskd.session, deskd.key)
        types, (width, height, bpp, name) = vnc_login(sock, job.password)
        check(types == [2] and (width, height) == (1024, 768) and name == f"{user.name}'s desktop ({os.uname().nodename})",
              f"through the relay: RFB 003.008, security types {types}, VNC authentication passed, {width}x{height}x{bpp} '{name}'")
        deskd.expect("viewers", viewers=1)
        check(True, "viewers 1 while the relay is up")

        straight = socket.socket(socket.AF_UNIX)
        straight.connect(ready["socket"])  # what `ssh -L PORT:SOCKET node` does
        check(straight.recv(12) == b"RFB 003.008\n", "a connection straight to the socket (an ssh tunnel's) answers RFB")
        deskd.expect("viewers", viewers=2, timeout=5)
        check(True, "viewers 2 with the tunnel's, counted within the 2 s census")
        straight.close()
        sock.close()
        deskd.expect("viewers", viewers=0, timeout=5)
        check(True, "viewers 0 once both are gone")

        # Without the key: a wrong key, another session, a non-hop client. None sees RFB.
        for label, session, key in [("a wrong key", deskd.session, secrets.token_bytes(32)),
                                    ("another session's id", secrets.token_hex(16), deskd.key)]:
            raw = socket.create_connection((ready["address"], ready["port"]), timeout=10)
            nonce = secrets.token_hex(32)
            raw.sendall(f"DESKHOP1 relay {session} {nonce}\n".encode())
            received = b""
            try:
                first = read_line(raw)
                received += first.encode() + b"\n"
                server_nonce = first.split(" ")[0]
                raw.sendall((mac(key, "client", "relay", session, nonce, server_nonce) + "\n").encode())
            except EOFError:
                pass
            raw.settimeout(8)
            while True:
                chunk = raw.recv(4096)
                if not chunk:
                    break
                received += chunk
            raw.close()
            check(b"RFB" not in received and b"OK" not in received,
                  f"{label}: refused, the connection closed, no RFB byte ({len(received)} bytes of handshake only)")
        raw = socket.create_connection((ready["address"], ready["port"]), timeout=10)
        raw.sendall(b"RFB 003.008\n")
        raw.settimeout(8)
        received = raw.recv(4096)
        raw.close()
        check(received == b"", "a plain VNC viewer (no hop): closed without a byte")

        # The cap: 32 connections at once (these stall in the handshake), the 33rd closed at once.
        # The job takes the 32 on a thread of their own each: on a loaded machine the last may be
        # counted a moment later, so the 33rd is tried again (closed each time) for up to 10 s.
        stalled = [socket.create_connection((ready["address"], ready["port"]), timeout=10) for _ in range(32)]
        refused, deadline = False, time.monotonic() + 10
        while not refused and time.monotonic() < deadline:
            time.sleep(0.3)
            extra = socket.create_connection((ready["address"], ready["port"]), timeout=10)
            # Closed "at once" is within a few seconds on a machine busy building: the job's own
            # thread for the 33rd may be scheduled late, and a wait that gives up too soon is no refusal.
            extra.settimeout(3)
            try:
                refused = extra.recv(1) == b""
            except socket.timeout:
                refused = False
            extra.close()
        check(refused, "a 33rd concurrent connection is closed at once (the cap is 32)")
        for s in stalled:
            s.close()
        time.sleep(0.3)
        sock = hop_client(ready["address"], ready["port"], deskd.session, deskd.key)
        vnc_login(sock, job.password)
        sock.close()
        check(True, "the relay serves again once they are gone")
    finally:
        job.process.send_signal(signal.SIGTERM)
        job.wait()
    assert_clean(user, ready, job)


def scenario_term(args, user):
    """SIGTERM (scancel) ends the desktop, a double-forked and a TERM-ignoring process too."""
    deskd, job, ready = start_and_ready(args, user)
    time.sleep(0.3)
    names = sorted(name for _, name in user.processes())
    check(names.count("sleep") == 3, f"the desktop runs, with its stubborn children: {names}")
    started = time.monotonic()
    job.process.send_signal(signal.SIGTERM)
    ending = deskd.expect("ending")
    status = job.wait()
    elapsed = time.monotonic() - started
    deskd.expect("EOF", timeout=2)
    check(status == 0 and elapsed < KILL_WAIT - 1,
          f"SIGTERM: `ending` ({ending['message']}), exit status {status} after {elapsed:.2f} s, the report line closed")
    assert_clean(user, ready, job)


def scenario_scancel(args, user):
    """SIGTERM to every process of the job at once, as slurmstepd sends it for scancel."""
    deskd, job, ready = start_and_ready(args, user)
    time.sleep(0.3)
    started = time.monotonic()
    for pid, _ in user.processes():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # ended meanwhile: xterm's child goes with xterm
    ending = deskd.expect("ending")
    status = job.wait()
    elapsed = time.monotonic() - started
    check(status == 0 and "SIGTERM" in ending["message"],
          f"all at once: `ending` ({ending['message']}), exit status {status} after {elapsed:.2f} s")
    assert_clean(user, ready, job)


def scenario_warning(args, user):
    """SIGUSR1 (Slurm's --signal=B:USR1@N): `warned`, and an xmessage window on the desktop."""
    scratch = os.path.join(user.home, "job-scratch")
    os.makedirs(scratch, exist_ok=True)
    os.chown(scratch, user.uid, user.gid)
    deskd, job, ready = start_and_ready(args, user, warnSeconds=300, tmpdir=scratch)
    try:
        check(ready["socket"].startswith(scratch + "/deskd-job-"), f"the private directory is under $TMPDIR ({scratch})")
        job.process.send_signal(signal.SIGUSR1)
        warned = deskd.expect("warned")
        check("about 5 minutes" in warned["message"], f"warned: {warned['message']}")
        env = {"PATH": "/usr/bin:/bin", "DISPLAY": f":{ready['display']}",
               "XAUTHORITY": os.path.join(os.path.dirname(ready["socket"]), "Xauthority")}
        deadline, tree = time.monotonic() + 5, ""
        while time.monotonic() < deadline:
            result = user.run(["xwininfo", "-root", "-children"], env)
            tree = result.stdout + result.stderr
            if "deskd: time nearly up" in tree:
                break
            time.sleep(0.1)
        window = next((line.strip() for line in tree.splitlines() if "deskd: time nearly up" in line), None)
        check(window is not None, f"xwininfo -root -children, as {user.name}, shows the warning: {window}")
        check(job.process.poll() is None, "the desktop goes on after the warning")
    finally:
        job.process.send_signal(signal.SIGTERM)
        job.wait()
    assert_clean(user, ready, job)


def scenario_logout(args, user):
    """The desktop's xstartup ending (a logout) ends the job, with status 0."""
    deskd, job, ready = start_and_ready(args, user, xstartup=XSTARTUP_LOGOUT)
    ending = deskd.expect("ending", timeout=5)
    status = job.wait()
    check(status == 0 and "logged out" in ending["message"], f"logout: `ending` ({ending['message']}), exit status {status}")
    assert_clean(user, ready, job)


def scenario_end_command(args, user):
    """deskd's `end` command."""
    deskd, job, ready = start_and_ready(args, user)
    deskd.send({"command": "accepted"})
    time.sleep(0.2)
    check(job.process.poll() is None, "`accepted` changes nothing")
    deskd.send({"command": "end"})
    ending = deskd.expect("ending")
    status = job.wait()
    check(status == 0 and "deskd asked" in ending["message"], f"`end` from deskd: `ending` ({ending['message']}), exit status {status}")
    assert_clean(user, ready, job)


def scenario_xvnc_dies(args, user):
    """Xvnc killed under the desktop: the job ends it all (status 1), and clears Xvnc's lock."""
    deskd, job, ready = start_and_ready(args, user)
    xvnc = next(pid for pid, name in user.processes() if name.startswith("Xtigervnc") or name.startswith("Xvnc"))
    os.kill(xvnc, signal.SIGKILL)
    ending = deskd.expect("ending")
    status = job.wait()
    check(status == 1 and "Xvnc killed by signal 9" in ending["message"], f"Xvnc SIGKILLed: `ending` ({ending['message']}), exit status {status}")
    assert_clean(user, ready, job)


def scenario_reconnect(args, user):
    """deskd not there yet, deskd restarting, deskd misbehaving: the report line is made again.

    Each new line starts with `ready` and the viewer count again, so a restarted deskd adopts the job.
    """
    session, key = secrets.token_hex(16), secrets.token_bytes(32)
    placeholder = socket.socket()
    placeholder.bind(("127.0.0.1", 0))
    port = placeholder.getsockname()[1]
    placeholder.close()  # nothing listens there: the job's first attempts fail

    class Absent:
        pass
    absent = Absent()
    absent.session, absent.key, absent.port = session, key, port
    job = Job(args.job, user, absent)
    try:
        time.sleep(2.5)
        deskd = FakeDeskd(session, key, port=port)
        ready = deskd.expect("ready", timeout=10)
        check(True, f"deskd there only 2.5 s after the start: ready arrives once it listens (display :{ready['display']})")
        deskd.expect("viewers", viewers=0)
        deskd.drop()
        dropped = time.monotonic()
        time.sleep(0.5)
        deskd = FakeDeskd(session, key, port=port)
        again = deskd.expect("ready", timeout=10)
        deskd.expect("viewers", viewers=0)
        check(again == ready, f"after deskd dropped the line: ready and viewers again, {time.monotonic() - dropped:.1f} s later")
        deskd.connections[-1].sendall(b"x" * 5000 + b"\n")
        deskd.expect("EOF", timeout=5)
        check(True, "a line over 4096 bytes from deskd: the job closes the line")
        deskd.expect("ready", timeout=10)
        check(True, "and makes it again")
    finally:
        job.process.send_signal(signal.SIGTERM)
        job.wait()
    assert_clean(user, ready, job)


def scenario_failures(args, user):
    """A start that cannot succeed: `failed`, exit status 1; a bad spec: exit status 2."""
    deskd = FakeDeskd(secrets.token_hex(16), secrets.token_bytes(32))
    job = Job(args.job, user, deskd, xvnc="/usr/bin/no-such-Xvnc")
    failed = deskd.expect("failed")
    status = job.wait()
    check(status == 1 and "no-such-Xvnc" in failed["message"], f"Xvnc missing: `failed` ({failed['message']}), exit status {status}")
    check(job.stderr.decode().count("\n") == 1, f"one sentence on stderr: {job.stderr.decode().strip()}")
    assert_clean(user, None, job)

    deskd = FakeDeskd(secrets.token_hex(16), secrets.token_bytes(32))
    job = Job(args.job, user, deskd, xstartup="#!/bin/sh\nexec /usr/bin/no-such-desktop\n")
    failed = deskd.expect("failed")
    status = job.wait()
    check(status == 1 and "no-such-desktop" in failed["message"], f"desktop that cannot start: `failed` ({failed['message']}), exit status {status}")
    assert_clean(user, None, job)

    deskd = FakeDeskd(secrets.token_hex(16), secrets.token_bytes(32))
    job = Job(args.job, user, deskd, xstartup=XSTARTUP_ABORTS)
    failed = deskd.expect("failed")
    status = job.wait()
    check(status == 1 and "signal 6" in failed["message"] and "before it reached its display" in failed["message"],
          f"desktop that aborts before its display: `failed` ({failed['message']}), exit status {status}")
    assert_clean(user, None, job)

    # A node whose /tmp has no .X11-unix (a fresh tmpfs here, in a mount namespace of its own).
    # The job runs from a copy outside /tmp: that fresh /tmp would hide a build under /tmp (a CI
    # clone there), and the job would never start.
    outside = tempfile.mkdtemp(dir="/var/tmp", prefix="deskd-job-selftest-")
    try:
        os.chmod(outside, 0o755)
        program = shutil.copy(args.job, outside)
        deskd = FakeDeskd(secrets.token_hex(16), secrets.token_bytes(32))
        job = Job(program, user, deskd, wrapper=["unshare", "--mount", "--propagation=private", "sh", "-c",
                                                 'mount -t tmpfs -o mode=1777 none /tmp && exec "$@"', "sh"])
        failed = deskd.expect("failed")
        status = job.wait()
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    check(status == 1 and "/tmp/.X11-unix is missing" in failed["message"], f"no /tmp/.X11-unix: `failed` ({failed['message']}), exit status {status}")
    assert_clean(user, None, job)

    bad = subprocess.run([args.job], input=b'{"version": 1, "session": "nope"}\n', capture_output=True,
                         user=user.uid, group=user.gid, extra_groups=[], env={"PATH": "/usr/bin:/bin"})
    check(bad.returncode == 2 and bad.stderr.decode().count("\n") == 1, f"a bad spec: exit status 2, {bad.stderr.decode().strip()}")


def scenario_bench(args, user):
    """The relay's throughput against a viewer on Xvnc's socket itself: whole-screen raw updates."""
    deskd, job, ready = start_and_ready(args, user, geometry="3840x2160")
    try:
        results = {}
        for label in ["socket", "relay", "socket", "relay"]:
            if label == "relay":
                sock = hop_client(ready["address"], ready["port"], deskd.session, deskd.key)
            else:
                sock = socket.socket(socket.AF_UNIX)
                sock.connect(ready["socket"])
            _, (width, height, bpp, _) = vnc_login(sock, job.password)
            rate = pull_framebuffers(sock, width, height, bpp, args.frames)
            sock.close()
            results.setdefault(label, []).append(rate)
        best = {label: max(rates) for label, rates in results.items()}
        print(f"    {args.frames} raw updates of {width}x{height}x{bpp}: straight to Xvnc's socket {best['socket'] / 1e6:.0f} MB/s, "
              f"through the relay {best['relay'] / 1e6:.0f} MB/s ({best['relay'] / best['socket']:.2f}x)")
        trips = {}
        for label in ["socket", "relay"]:
            if label == "relay":
                sock = hop_client(ready["address"], ready["port"], deskd.session, deskd.key)
            else:
                sock = socket.socket(socket.AF_UNIX)
                sock.connect(ready["socket"])
            vnc_login(sock, job.password)
            trips[label] = round_trips(sock, 300)
            sock.close()
        print(f"    1x1 update round trip (median of 300): straight {trips['socket'] * 1e6:.0f} µs, through the relay {trips['relay'] * 1e6:.0f} µs")
    finally:
        job.process.send_signal(signal.SIGTERM)
        job.wait()
    assert_clean(user, ready, job)


SCENARIOS = {
    "relay": scenario_relay, "term": scenario_term, "scancel": scenario_scancel, "warning": scenario_warning, "logout": scenario_logout,
    "end": scenario_end_command, "xvnc": scenario_xvnc_dies, "reconnect": scenario_reconnect, "failures": scenario_failures,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--job", default=os.path.join(REPO, ".build/debug/deskd-job"), help="the deskd-job binary")
    parser.add_argument("--user", default="deskt-job1")
    parser.add_argument("-k", dest="only", help="comma-separated scenarios: " + ", ".join(SCENARIOS))
    parser.add_argument("--bench", action="store_true", help="also measure the relay's throughput")
    parser.add_argument("--frames", type=int, default=30, help="updates per throughput run")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("job-selftest: run as root (it acts as a throwaway user)")
    args.job = os.path.abspath(args.job)
    user = User(args.user)
    if user.processes():
        sys.exit(f"job-selftest: {user.name} already runs {user.processes()}; the test counts that user's processes")
    chosen = args.only.split(",") if args.only else list(SCENARIOS)
    if args.bench:
        chosen.append("bench")
    failures = 0
    for name in chosen:
        scenario = SCENARIOS.get(name) or (scenario_bench if name == "bench" else None)
        if scenario is None:
            sys.exit(f"job-selftest: no scenario {name}")
        print(f"{name}: {scenario.__doc__.splitlines()[0]}")
        try:
            scenario(args, user)
        except Exception:
            failures += 1
            traceback.print_exc()
            for pid, _ in user.processes():  # leave nothing for the next scenario
                os.kill(pid, signal.SIGKILL)
    print("job-selftest: " + ("all passed" if not failures else f"{failures} scenario(s) failed"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
