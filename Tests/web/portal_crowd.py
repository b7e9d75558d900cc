#!/usr/bin/env python3
"""A second local user against the portal, from loopback addresses of its own choosing, beside a
victim who only wants to log in; one JSON object on stdout. Run as root by PortalCrowdTests:
each role runs in a child process with that account's uid and gid (so the kernel, which the
gateway asks who made a connection, sees a real second user), and the parent orders them.

    portal_crowd.py SCENARIO BASE ATTACKER-UID ATTACKER-PASSWORD VICTIM-UID VICTIM-NAME VICTIM-PASSWORD [HELPER-UID]

Scenarios, each one of issue 41's findings (bounded bursts, as the issue reproduced them):
  streams   the attacker logs in and opens 256 event streams, 32 from each of eight addresses;
            while it holds them the victim fetches /, /open and logs in.
  throttle  ten wrong passwords for the victim (five each by the attacker and a helper account)
            throttle the account for 30 s; one more by root once that has run out makes it 60 s; the
            attacker then sends 10,200 logins as "!" from fresh addresses; the victim's right
            password is tried before and after, by root (a stranger to the account: the
            account's own connection is never made to wait for strangers' guesses).
  slots     twenty attacker threads log in as made-up accounts from fresh addresses for 25 s;
            meanwhile the victim logs in twelve times with the right password.
  pending   the attacker, whose password must be changed, logs in 34 times with it (each login
            leaves a question pending); then the victim, whose password must be changed too.
  junk      forty logins as made-up accounts, no cookie, from fresh addresses, all at once.
"""

import http.client
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.parse

BASE = None


def address(index):
    """A loopback address of the attacker's choosing: any of 127.0.0.0/8 will do."""
    return f"127.{(index >> 16) & 255}.{(index >> 8) & 255}.{(index & 255) or 1}"


def call(method, path, body=None, source=None, cookie=None, timeout=60):
    url = urllib.parse.urlparse(BASE)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout, source_address=(source, 0) if source else None)
    headers = {"Origin": f"{url.scheme}://{url.netloc}"}
    if cookie:
        headers["Cookie"] = f"deskd_web={cookie}"
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        text = response.read().decode(errors="replace")
        cookie_set = response.getheader("Set-Cookie") or ""
    except (OSError, http.client.HTTPException) as error:
        return 0, str(error), None
    finally:
        connection.close()
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        answer = text
    new_cookie = cookie_set.split(";")[0].split("=", 1)[1] if cookie_set.startswith("deskd_web=") else None
    return response.status, answer, new_cookie


def message(answer):
    return ((answer or {}).get("error") or {}).get("message") if isinstance(answer, dict) else str(answer)


def login(user, password, source=None):
    status, answer, cookie = call("POST", "/api/login", {"user": user, "password": password}, source=source)
    return status, answer, cookie


def as_user(uid, work, *arguments):
    """Runs `work(*arguments)` in a child with `uid` (and its gid), returning (pid, reader, writer):
    the child writes its result as one JSON line to the reader; the parent may write lines to it."""
    results_read, results_write = os.pipe()
    orders_read, orders_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(results_read)
        os.close(orders_write)
        try:
            import pwd
            entry = pwd.getpwuid(uid)
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(uid)
            out = os.fdopen(results_write, "w", buffering=1)
            orders = os.fdopen(orders_read, "r")
            result = work(out, orders, *arguments)
            out.write(json.dumps(result) + "\n")
        except BaseException as error:  # the parent reports it
            os.write(results_write, (json.dumps({"childError": repr(error)}) + "\n").encode())
        os._exit(0)
    os.close(results_write)
    os.close(orders_read)
    return pid, os.fdopen(results_read, "r"), os.fdopen(orders_write, "w", buffering=1)


def finish(child):
    pid, results, _ = child
    lines = results.read().splitlines()
    os.waitpid(pid, 0)
    return json.loads(lines[-1]) if lines else {"childError": "no result"}


# MARK: streams

def open_stream(cookie, source):
    url = urllib.parse.urlparse(BASE)
    sock = socket.socket()
    sock.settimeout(15)
    try:
        sock.bind((source, 0))
        sock.connect((url.hostname, url.port))
        sock.sendall((f"GET /api/events HTTP/1.1\r\nHost: {url.netloc}\r\nCookie: deskd_web={cookie}\r\n"
                      "Accept: text/event-stream\r\n\r\n").encode())
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(1024)
            if not chunk:
                break
            head += chunk
        status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else 0
    except OSError:
        sock.close()
        return 0, None
    return status, sock


def attacker_streams(out, orders, name, password):
    status, _, cookie = login(name, password, source="127.0.0.1")
    if not cookie:
        return {"loginStatus": status}
    statuses, held = [], []
    for index in range(256):
        # 32 from each of eight addresses, as the issue reproduced it.
        source = f"127.0.{index // 32 + 1}.{index % 32 + 1}"
        code, sock = open_stream(cookie, source)
        statuses.append(code)
        if sock is not None:
            held.append(sock)
    out.write(json.dumps({"ready": True}) + "\n")
    orders.readline()
    for sock in held:
        sock.close()
    return {"loginStatus": status, "streams": statuses.count(200), "tooMany": statuses.count(429),
            "unavailable": statuses.count(503), "refusedAtConnect": statuses.count(0)}


def victim_pages(out, orders, name, password):
    page, _, _ = call("GET", "/")
    opened, _, _ = call("GET", "/open")
    status, answer, cookie = login(name, password)
    return {"page": page, "open": opened, "login": status, "loginMessage": message(answer) if status != 200 else None}


def streams(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, _):
    import pwd
    attacker = as_user(attacker_uid, attacker_streams, pwd.getpwuid(attacker_uid).pw_name, attacker_password)
    ready = json.loads(attacker[1].readline() or "{}")
    victim = finish(as_user(victim_uid, victim_pages, victim_name, victim_password)) if ready.get("ready") else {}
    attacker[2].write("done\n")
    return {"attacker": finish(attacker) if ready.get("ready") else ready, "victim": victim}


# MARK: throttle

def wrong_passwords(out, orders, victim_name, count, first_address):
    return [message(login(victim_name, f"wrong-{random.random()}", source=address(first_address + index))[1]) for index in range(count)]


def flood(out, orders, count, threads):
    answers = {}
    lock = threading.Lock()
    started = time.monotonic()

    def work(offset):
        for index in range(offset, count, threads):
            status, answer, _ = login("!", "x", source=address(1000 + index))
            with lock:
                answers[status] = answers.get(status, 0) + 1

    workers = [threading.Thread(target=work, args=(offset,)) for offset in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {"sent": count, "statuses": {str(key): value for key, value in answers.items()}, "seconds": round(time.monotonic() - started, 1)}


def victim_login(out, orders, name, password):
    status, answer, cookie = login(name, password)
    if cookie:
        call("POST", "/api/logout", cookie=cookie)
    return {"status": status, "message": message(answer) if status != 200 else None}


def throttle(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, helper_uid):
    # Ten wrong passwords from two clients (five each, a client's own allowance) throttle the
    # account for 30 s; once that has run out, one more (root's client) doubles it to 60 s, longer
    # than the flood takes on a slow machine (34 s seen), so it cannot run out during the flood by itself.
    first = finish(as_user(attacker_uid, wrong_passwords, victim_name, 5, 10))
    second = finish(as_user(helper_uid, wrong_passwords, victim_name, 5, 20))
    throttled = finish(as_user(0, wrong_passwords, victim_name, 1, 30))
    time.sleep(seconds_to_wait(throttled[0]) + 1)
    third = throttled + finish(as_user(0, wrong_passwords, victim_name, 1, 31))
    # The right password is tried by root, a stranger to the account: since issue 48 the
    # account's own connection on this host is never made to wait for strangers' guesses.
    before = finish(as_user(0, victim_login, victim_name, victim_password))
    flooded = finish(as_user(attacker_uid, flood, 10_200, 16))
    after = finish(as_user(0, victim_login, victim_name, victim_password))
    return {"wrong": first + second + third, "rightBeforeFlood": before, "flood": flooded, "rightAfterFlood": after}


def seconds_to_wait(refusal):
    """The N of a throttled login's "wait N s" (0 when it says none)."""
    words = (refusal or "").split()
    return int(words[words.index("wait") + 1]) if "wait" in words else 0


# MARK: slots

def made_up_logins(out, orders, seconds, threads):
    counts = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def work(offset):
        index = offset
        while time.monotonic() < deadline:
            status, answer, _ = login(f"nosuch{random.randrange(10**9)}", "guess", source=address(5000 + index))
            index += threads
            with lock:
                key = message(answer) or str(status)
                counts[key] = counts.get(key, 0) + 1

    workers = [threading.Thread(target=work, args=(offset,)) for offset in range(threads)]
    for worker in workers:
        worker.start()
    out.write(json.dumps({"ready": True}) + "\n")
    for worker in workers:
        worker.join()
    return counts


def victim_logins(out, orders, name, password, count):
    results = []
    for _ in range(count):
        started = time.monotonic()
        status, answer, cookie = login(name, password)
        results.append({"status": status, "seconds": round(time.monotonic() - started, 2), "message": message(answer) if status != 200 else None})
        if cookie:
            call("POST", "/api/logout", cookie=cookie)
    return results


def slots(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, _):
    attacker = as_user(attacker_uid, made_up_logins, 25, 20)
    attacker[1].readline()
    time.sleep(2)
    victim = finish(as_user(victim_uid, victim_logins, victim_name, victim_password, 12))
    return {"attacker": finish(attacker), "victim": victim}


# MARK: pending questions

def pending_logins(out, orders, name, password, count):
    outcomes = {}
    for index in range(count):
        status, answer, _ = login(name, password, source=address(9000 + index))
        key = "question" if isinstance(answer, dict) and "question" in answer else (message(answer) or str(status))
        outcomes[key] = outcomes.get(key, 0) + 1
    return outcomes


def victim_question(out, orders, name, password):
    status, answer, _ = login(name, password)
    return {"status": status, "question": (answer or {}).get("question", {}).get("text") if isinstance(answer, dict) else None,
            "message": message(answer)}


def pending(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, _):
    import pwd
    attacker = finish(as_user(attacker_uid, pending_logins, pwd.getpwuid(attacker_uid).pw_name, attacker_password, 34))
    victim = finish(as_user(victim_uid, victim_question, victim_name, victim_password))
    return {"attacker": attacker, "victim": victim}


# MARK: junk

def junk_logins(out, orders, count):
    results = []
    lock = threading.Lock()

    def work(index):
        status, _, _ = login(f"nosuch{random.randrange(10**9)}", "x", source=address(20000 + index))
        with lock:
            results.append(status)

    workers = [threading.Thread(target=work, args=(index,)) for index in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # Wrong accounts are 403; a crowd that fills the logins under way meets 429 first. Either is
    # a refusal; what the test looks at is root's trail after them.
    statuses = {str(status): results.count(status) for status in sorted(set(results))}
    return {"sent": count, "refused": sum(1 for status in results if status in (403, 429)), "statuses": statuses}


def junk(attacker_uid, attacker_password, victim_uid, victim_name, victim_password, _):
    return finish(as_user(attacker_uid, junk_logins, 40))


def main():
    global BASE
    scenario, BASE = sys.argv[1], sys.argv[2]
    attacker_uid, attacker_password = int(sys.argv[3]), sys.argv[4]
    victim_uid, victim_name, victim_password = int(sys.argv[5]), sys.argv[6], sys.argv[7]
    helper_uid = int(sys.argv[8]) if len(sys.argv) > 8 else None
    scenarios = {"streams": streams, "throttle": throttle, "slots": slots, "pending": pending, "junk": junk}
    print(json.dumps(scenarios[scenario](attacker_uid, attacker_password, victim_uid, victim_name, victim_password, helper_uid)))


if __name__ == "__main__":
    main()
