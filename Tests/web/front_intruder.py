#!/usr/bin/env python3
"""Plays a taken-over deskd-web: a process of web.user's on deskd's front socket, sending what it
likes. Prints one JSON object saying what deskd gave it. Run as web.user (setpriv), by
WebFrontTests, with the front socket and a live link's token (made by the session's owner).

What it must get: the listening sockets and settings (a front needs them), a cookie for the live
link's token and then, redeeming it, the grant with the desktop's socket, once. What it must not:
a cookie for a made-up token, a grant or a desktop for a made-up cookie, a second use of the token
or the cookie, a desktop asked for by relay number (no such request since redeem carries it); and
a record that is not a request ends its connection, not deskd."""
import json
import socket
import sys

LIMIT = 1 << 20


def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(15)
    sock.connect(path)
    return sock


def receive(sock):
    data, fds, _, _ = socket.recv_fds(sock, LIMIT, 4)
    if not data and not fds:
        return None, []
    return json.loads(data), fds


class Front:
    def __init__(self, path):
        self.sock = connect(path)
        self.call = 0
        self.events = []   # deskd's own events (setup, listen), with how many descriptors came

    def ask(self, kind, **fields):
        self.call += 1
        fields["call"] = self.call
        self.sock.send(json.dumps({kind: fields}).encode())
        while True:
            event, fds = receive(self.sock)
            if event is None:
                raise EOFError("deskd closed the front socket")
            (name, body), = event.items()
            if body.get("call") == self.call:
                return name, body, fds
            self.events.append((name, len(fds)))
            for fd in fds:
                socket.close(fd)


def rfb_after_login(fd):
    """The socket deskd handed over is past VNC authentication: ClientInit, then ServerInit."""
    sock = socket.socket(fileno=fd)
    sock.settimeout(10)
    sock.sendall(b"\x01")  # ClientInit, shared
    head = b""
    while len(head) < 24:
        chunk = sock.recv(24 - len(head))
        if not chunk:
            break
        head += chunk
    width, height = int.from_bytes(head[0:2], "big"), int.from_bytes(head[2:4], "big")
    length = int.from_bytes(head[20:24], "big")
    name = sock.recv(length).decode(errors="replace") if len(head) == 24 else ""
    sock.close()
    return {"width": width, "height": height, "name": name}


def main():
    path, token = sys.argv[1], sys.argv[2]
    result = {}
    front = Front(path)

    name, body, fds = front.ask("exchange", token="not-a-token-" + "x" * 40)
    result["madeUpToken"] = body.get("cookie")
    name, body, fds = front.ask("redeem", cookie="not-a-cookie-" + "y" * 40)
    result["madeUpCookie"] = body.get("grant")
    result["madeUpCookieSockets"] = len(fds)
    for fd in fds:
        socket.close(fd)
    # Asking for a relay's desktop by number was a request once (before redeem carried the
    # desktop): now it is none, and ends the connection that sends it.
    asker = Front(path)
    asker.sock.send(json.dumps({"connect": {"call": 1, "relay": 1}}).encode())
    result["connectByNumber"] = "answered"
    try:
        while True:
            event, fds = receive(asker.sock)
            for fd in fds:
                socket.close(fd)
            if event is None:
                result["connectByNumber"] = "closed"
                break
            if "connected" in event or "redeemed" in event:
                break
    except OSError as error:
        result["connectByNumber"] = f"error {error}"

    name, body, fds = front.ask("exchange", token=token)
    cookie = body.get("cookie")
    result["liveTokenGaveACookie"] = cookie is not None
    name, body, fds = front.ask("exchange", token=token)
    result["liveTokenTwice"] = body.get("cookie")
    if cookie:
        name, body, fds = front.ask("redeem", cookie=cookie)
        result["grant"] = body.get("grant")
        result["refusal"] = body.get("refusal")
        result["desktopSocket"] = len(fds)
        if len(fds) == 1:
            result["serverInit"] = rfb_after_login(fds[0])
        else:
            for fd in fds:
                socket.close(fd)
        # A cookie is one browser's, once: a second redeem gets no grant and no desktop.
        name, again, fds = front.ask("redeem", cookie=cookie)
        result["cookieTwice"] = again.get("grant")
        result["desktopTwice"] = len(fds)
        for fd in fds:
            socket.close(fd)
    result["events"] = front.events

    # Not a request: deskd ends this connection and serves on (a new one is answered).
    front.sock.send(b"{ this is not json")
    try:
        event, _ = receive(front.sock)
        result["afterGarbage"] = "closed" if event is None else "answered"
    except OSError as error:
        result["afterGarbage"] = f"error {error}"
    # Counts that would overflow deskd's arithmetic, and a listener deskd never passed: each ends
    # that connection, and deskd serves on.
    for label, record in [
        ("afterHugeCounts", {"counts": {"_0": {"connectionsOpen": -(1 << 63), "connectionsOpenedTotal": 0, "relaysOpen": 0,
                                               "relaysOpenedTotal": 0, "exchangesAccepted": 0, "refused": {}, "cut": {}}}}),
        ("afterMadeUpListener", {"listenerFailed": {"listener": "x" * 4000, "reason": "made up"}}),
    ]:
        bad = Front(path)
        bad.sock.send(json.dumps(record).encode())
        try:
            while True:
                event, fds = receive(bad.sock)
                for fd in fds:
                    socket.close(fd)
                if event is None:
                    result[label] = "closed"
                    break
        except OSError as error:
            result[label] = f"error {error}"
    again = Front(path)
    name, body, fds = again.ask("exchange", token="still-not-a-token")
    result["servedAfterGarbage"] = name == "exchanged"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
