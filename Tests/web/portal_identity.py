#!/usr/bin/env python3
"""Issue 48's portal findings, played by a second local user against a live deskd; one JSON
object on stdout. Run as root by HostTakeoverTests; each role runs with its own account's uid and
gid (portal_crowd.as_user), so the kernel, which the gateway asks who made a connection, sees
real local users.

    portal_identity.py SCENARIO BASE ATTACKER-UID ATTACKER-PASSWORD VICTIM-UID VICTIM-NAME VICTIM-PASSWORD [HELPER-UID]

Scenarios:
  logins    finding 1: the attacker logs in to its own account COUNT times (argument 8), with
            five wrong passwords among them; the test counts deskd's zombie children after.
  pending   finding 1: an account whose password must be changed logs in six times: two
            questions are left pending and four are turned away (each ends its deskd-auth).
  unnamed   finding 2: the attacker holds 32 ordinary connections and 64 from sockets bound to
            lo (SO_BINDTODEVICE, no privilege needed), and sends wrong passwords at the victim's
            account from its own sockets, from bound ones and from ones closed right after
            sending (orphaned);
            then root (a stranger to the account, with its right password) and the victim log in.
  own       finding 2: ten wrong passwords at the victim's account from two other local users
            lock the account; root (a stranger, with the right password) and the victim's own
            connection each log in.
"""

import json
import os
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import portal_crowd  # noqa: E402
from portal_crowd import as_user, finish, login, message  # noqa: E402


def own_logins(out, orders, name, password, count):
    statuses = {}
    for index in range(count):
        # Four wrong passwords among them (a client's fifth failure would make it wait).
        status, answer, cookie = login(name, "wrong-password" if index % 40 == 1 else password)
        key = str(status) if status == 200 else (message(answer) or str(status))
        statuses[key] = statuses.get(key, 0) + 1
        if cookie:
            portal_crowd.call("POST", "/api/logout", cookie=cookie)
    return statuses


def logins(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, count):
    import pwd
    started = time.monotonic()
    result = finish(as_user(attacker_uid, own_logins, pwd.getpwuid(attacker_uid).pw_name, attacker_password, count or 100))
    return {"logins": result, "seconds": round(time.monotonic() - started, 1)}


def pending_logins(out, orders, name, password, count):
    outcomes = {}
    for _ in range(count):
        status, answer, _ = login(name, password)
        key = "question" if isinstance(answer, dict) and "question" in answer else (message(answer) or str(status))
        outcomes[key] = outcomes.get(key, 0) + 1
    return outcomes


def pending(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, _):
    import pwd
    return finish(as_user(attacker_uid, pending_logins, pwd.getpwuid(attacker_uid).pw_name, attacker_password, 6))


# MARK: unnamed

def bound_socket(timeout=10):
    sock = socket.socket()
    sock.settimeout(timeout)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"lo")
    return sock


def request(sock, method, path, body=None):
    url = urllib.parse.urlparse(portal_crowd.BASE)
    data = json.dumps(body).encode() if body is not None else b""
    head = (f"{method} {path} HTTP/1.1\r\nHost: {url.netloc}\r\nOrigin: {url.scheme}://{url.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
    sock.sendall(head.encode() + data)


def status_of(sock):
    try:
        head = sock.recv(4096)
    except OSError:
        return 0
    return int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else 0


def attacker_unnamed(out, orders, victim_name):
    url = urllib.parse.urlparse(portal_crowd.BASE)
    held, statuses = [], {}
    # 96 live connections, each asking for the portal's page: 32 ordinary ones (a client's
    # share), then 64 bound to lo.
    for index in range(96):
        sock = bound_socket() if index >= 32 else socket.socket()
        sock.settimeout(10)
        try:
            sock.connect((url.hostname, url.port))
            request(sock, "GET", "/")
            code = status_of(sock)
        except OSError:
            code = 0
        statuses[str(code)] = statuses.get(str(code), 0) + 1
        held.append(sock)
    answered = statuses.get("200", 0)
    for sock in held:
        sock.close()
    # Wrong passwords at the victim: five from ordinary sockets (the attacker's own allowance),
    # five from bound sockets, then twenty from sockets closed as soon as the request is sent
    # (the peer's socket is orphaned before deskd-web asks). Counted under a second key, these
    # made ten failures at the account, which locks it for everyone else.
    own = [message(login(victim_name, "wrong-password")[1]) for _ in range(5)]
    bound = []
    for _ in range(5):
        sock = bound_socket(30)
        try:
            sock.connect((url.hostname, url.port))
            request(sock, "POST", "/api/login", {"user": victim_name, "password": "wrong-password"})
            bound.append(status_of(sock))
        except OSError:
            bound.append(0)
        sock.close()
    for _ in range(20):
        sock = socket.socket()
        try:
            sock.connect((url.hostname, url.port))
            request(sock, "POST", "/api/login", {"user": victim_name, "password": "wrong-password"})
        except OSError:
            pass
        sock.close()
    time.sleep(2)
    return {"liveAnswered": answered, "liveStatuses": statuses, "ownLogins": own, "boundLogins": bound}


def right_login(out, orders, name, password):
    status, answer, cookie = login(name, password)
    if cookie:
        portal_crowd.call("POST", "/api/logout", cookie=cookie)
    return {"status": status, "message": message(answer) if status != 200 else None}


def unnamed(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, _):
    attacker = finish(as_user(attacker_uid, attacker_unnamed, victim_name))
    stranger = finish(as_user(0, right_login, victim_name, victim_password))
    victim = finish(as_user(victim_uid, right_login, victim_name, victim_password))
    return {"attacker": attacker, "stranger": stranger, "victim": victim}


# MARK: own

def wrong_passwords(out, orders, victim_name, count):
    return [message(login(victim_name, "wrong-password")[1]) for _ in range(count)]


def own(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, helper_uid):
    wrong = finish(as_user(attacker_uid, wrong_passwords, victim_name, 5)) + finish(as_user(helper_uid, wrong_passwords, victim_name, 5))
    stranger = finish(as_user(0, right_login, victim_name, victim_password))
    victim = [finish(as_user(victim_uid, right_login, victim_name, victim_password)) for _ in range(3)]
    return {"wrong": wrong, "stranger": stranger, "victim": victim}


def main():
    scenario, portal_crowd.BASE = sys.argv[1], sys.argv[2]
    attacker_uid, attacker_password = int(sys.argv[3]), sys.argv[4]
    victim_uid, victim_name, victim_password = int(sys.argv[5]), sys.argv[6], sys.argv[7]
    extra = int(sys.argv[8]) if len(sys.argv) > 8 else None
    scenarios = {"logins": logins, "pending": pending, "unnamed": unnamed, "own": own}
    print(json.dumps(scenarios[scenario](attacker_uid, attacker_password, victim_uid, victim_name, victim_password, extra)))


if __name__ == "__main__":
    main()
