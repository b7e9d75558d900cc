#!/usr/bin/env python3
"""Plays another user against a cluster desktop's hops, and says what it got. One JSON object out.

    hop_intruder.py raw HOST PORT                 connect and speak RFB first, as a viewer would
    hop_intruder.py forge HOST PORT ROLE SESSION  a hop handshake for SESSION with a key it
                                                  does not hold (role report: posing as the
                                                  job; role relay: asking the job for its desktop)

{"connected": bool, "challenged": bool, "accepted": bool, "rfb": bool, "received": "first bytes"}
"accepted" is true only if the other side said OK; "rfb" if any RFB greeting came back. The
cluster tests run this as a second user, in the login machine's network namespace.
"""
import hashlib
import hmac
import json
import os
import socket
import sys


def read_all(sock, limit=4096, timeout=3.0):
    sock.settimeout(timeout)
    data = b""
    try:
        while len(data) < limit:
            chunk = sock.recv(limit - len(data))
            if not chunk:
                break
            data += chunk
    except (socket.timeout, OSError):
        pass
    return data


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out = {"connected": False, "challenged": False, "accepted": False, "rfb": False, "received": ""}
    try:
        sock = socket.create_connection((host, port), timeout=3)
    except OSError as error:
        out["error"] = str(error)
        print(json.dumps(out))
        return
    out["connected"] = True
    if mode == "raw":
        sock.sendall(b"RFB 003.008\n")
        data = read_all(sock)
    else:
        role, session = sys.argv[4], sys.argv[5]
        nonce = os.urandom(32).hex()
        sock.sendall(f"DESKHOP1 {role} {session} {nonce}\n".encode())
        first = b""
        sock.settimeout(3)
        try:
            while not first.endswith(b"\n") and len(first) < 300:
                chunk = sock.recv(1)
                if not chunk:
                    break
                first += chunk
        except (socket.timeout, OSError):
            pass
        out["challenged"] = len(first.strip().split(b" ")) == 2
        data = first
        if out["challenged"]:
            server_nonce = first.strip().split(b" ")[0].decode()
            wrong_key = os.urandom(32)
            proof = hmac.new(wrong_key, f"client|{role}|{session}|{nonce}|{server_nonce}".encode(), hashlib.sha256).hexdigest()
            try:
                sock.sendall(proof.encode() + b"\n")
            except OSError:
                pass
            rest = read_all(sock)
            out["accepted"] = rest.startswith(b"OK\n")
            data += rest
    out["rfb"] = b"RFB " in data
    out["received"] = data[:200].decode("latin-1")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
