#!/usr/bin/env python3
"""The portal's single sign-on and the end of logins whose password changed, from a script; one
JSON object on stdout. Run by PortalTests against a deskd whose gateway is BASE (on 127.0.0.1),
with web.trusted_proxies = ["127.0.0.1"] and web.sso_header = "X-Remote-User".

    portal_sso.py BASE SIGNED-ON OTHER OTHER-PASSWORD NEW-PASSWORD NAMED-LINK-TOKEN

NAMED-LINK-TOKEN is a link SIGNED-ON made for OTHER only: OTHER's password login must not open it
through the proxy while the proxy names SIGNED-ON, and opens it without the proxy.

The "proxy" is this script connecting from 127.0.0.1; a browser writing the header itself is
this script connecting from 127.0.0.2, which the gateway also answers on loopback but does not
trust. Reports what each got. Then (as root) it gives OTHER a new password with chpasswd and
later locks the account with usermod -L, to see OTHER's portal logins end; the test unlocks it."""

import base64
import http.client
import json
import os
import socket
import subprocess
import threading
import time
import sys
import urllib.parse


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from portal_api import call as api_call  # noqa: E402


def call(base, method, path, body=None, headers=None, source="127.0.0.1"):
    """A request from `source`: 127.0.0.1 is the trusted proxy, 127.0.0.2 anyone else."""
    return api_call(base, method, path, body, headers, origin=True, source=source)


def cookie_of(headers):
    value = headers.get("Set-Cookie", "")
    return value.split(";")[0].split("=", 1)[1] if value.startswith("deskd_web=") else None


def upgrade(base, headers, source):
    """A WebSocket upgrade to /websockify with `headers`; the status line's code."""
    url = urllib.parse.urlparse(base)
    with socket.create_connection((url.hostname, url.port), timeout=10, source_address=(source, 0)) as s:
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET /websockify HTTP/1.1", f"Host: {url.netloc}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", f"Origin: {url.scheme}://{url.netloc}",
                 "Cookie: deskd_gateway=made-up"] + [f"{k}: {v}" for k, v in headers.items()]
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return int(s.recv(4096).split(b" ", 2)[1])


def events(base, headers):
    """GET /api/events, read on a thread; `wait(text, seconds)` says how long until `text` arrived
    (or None if it did not)."""
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    connection.request("GET", "/api/events", headers=headers)
    response = connection.getresponse()
    seen = []
    lock = threading.Condition()

    def read():
        try:
            while True:
                line = response.fp.readline()
                if not line:
                    break
                with lock:
                    seen.append((time.monotonic(), line.decode().rstrip("\r\n")))
                    lock.notify_all()
        except OSError:
            pass

    threading.Thread(target=read, daemon=True).start()

    def wait(text, seconds, since):
        """Seconds from `since` (time.monotonic()) to the first `text` after it."""
        with lock:
            while True:
                for when, line in seen:
                    if line == text and when >= since:
                        return round(when - since, 2)
                if time.monotonic() - since > seconds:
                    return None
                lock.wait(0.2)

    return {"headers": {"status": response.status, "type": response.getheader("Content-Type")}, "wait": wait,
            "lines": lambda: [line for _, line in seen]}


def main():
    base, signed_on, other, other_password, new_password, named_token = sys.argv[1:7]
    result = {}
    proxied = {"X-Remote-User": signed_on, "X-Forwarded-For": "198.51.100.7"}
    status, headers, _ = call(base, "POST", "/api/login", {"user": other, "password": other_password}, source="127.0.0.2")
    viewer_cookie = cookie_of(headers)
    # OTHER's login cookie, brought through the proxy while the proxy names SIGNED-ON: no login of
    # OTHER's for a link for OTHER only. Without the proxy, the same cookie opens it.
    def exchange(headers, source):
        url = urllib.parse.urlparse(base)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30, source_address=(source, 0))
        connection.request("POST", "/exchange", body=named_token, headers={"Origin": f"{url.scheme}://{url.netloc}", **headers})
        response = connection.getresponse()
        response.read()
        return response.status
    result["namedLinkUnderAnotherSignedOnUser"] = exchange({"Cookie": f"deskd_web={viewer_cookie}", "X-Remote-User": signed_on}, "127.0.0.1")
    result["namedLinkForItsViewer"] = exchange({"Cookie": f"deskd_web={viewer_cookie}"}, "127.0.0.2")

    # Through the trusted proxy: the page's first request logs the signed-on user in.
    status, headers, answer = call(base, "GET", "/api/session", headers=proxied)
    cookie = cookie_of(headers)
    identity = (answer or {}).get("identity") or {}
    result["proxied"] = {"status": status, "user": identity.get("user"), "singleSignOn": identity.get("singleSignOn"),
                         "cookie": cookie is not None}
    sent = {**proxied, "Cookie": f"deskd_web={cookie}", "X-Deskd-CSRF": identity.get("csrf", "")}
    status, _, answer = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=sent)
    result["proxiedList"] = {"status": status, "users": sorted({s["user"] for s in (answer or {}).get("sessions", [])})}
    # Live updates: the stream says "change" when the desktop ends, and "logout" when the login does.
    result["eventsWithoutLogin"] = call(base, "GET", "/api/events")[0]
    stream = events(base, {**proxied, "Cookie": f"deskd_web={cookie}"})
    result["eventsHeaders"] = stream["headers"]
    display = ((answer or {}).get("sessions") or [{}])[0].get("display")
    since = time.monotonic()
    status, _, _ = call(base, "POST", "/api/request", {"version": 1, "command": "kill", "display": display}, headers=sent)
    result["killThroughAPI"] = status
    result["changeSeconds"] = stream["wait"]("event: change", 20, since)
    result["listAfterKill"] = len((call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=sent)[2] or {}).get("sessions", []))
    # The proxy now names someone else for the same browser: that login is not theirs.
    status, _, _ = call(base, "POST", "/api/request", {"version": 1, "command": "list"},
                        headers={**sent, "X-Remote-User": other})
    result["otherUserSameCookie"] = status
    # Names the proxy may not sign on: root (deny_users) and no account at all.
    result["root"] = call(base, "GET", "/api/session", headers={**proxied, "X-Remote-User": "root"})[0]
    result["nobodyHere"] = call(base, "GET", "/api/session", headers={**proxied, "X-Remote-User": "no-such-account-x"})[0]
    since = time.monotonic()
    call(base, "POST", "/api/logout", {}, headers=sent)
    result["logoutSeconds"] = stream["wait"]("event: logout", 20, since)
    result["streamLines"] = stream["lines"]()[:12]

    # Not from the proxy: the header is refused on every route, the cookie or not.
    forged = {"X-Remote-User": signed_on}
    result["forgedSession"] = call(base, "GET", "/api/session", headers=forged, source="127.0.0.2")[0]
    result["forgedRequest"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"},
                                   headers={**forged, "Cookie": f"deskd_web={cookie}", "X-Deskd-CSRF": identity.get("csrf", "")},
                                   source="127.0.0.2")[0]
    result["forgedPage"] = call(base, "GET", "/", headers=forged, source="127.0.0.2")[0]
    result["forgedOpen"] = call(base, "GET", "/open", headers=forged, source="127.0.0.2")[0]
    result["forgedUpgrade"] = upgrade(base, forged, "127.0.0.2")
    # Without the header, 127.0.0.2 is any browser: the page, and no login.
    result["plainSession"] = call(base, "GET", "/api/session", source="127.0.0.2")[0]

    # A password login, and what becomes of it when the password changes, then when it is locked.
    status, headers, answer = call(base, "POST", "/api/login", {"user": other, "password": other_password}, source="127.0.0.2")
    other_cookie = cookie_of(headers)
    csrf = ((answer or {}).get("identity") or {}).get("csrf", "")
    with_login = {"Cookie": f"deskd_web={other_cookie}", "X-Deskd-CSRF": csrf}
    result["otherLogin"] = status
    result["beforeChange"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=with_login, source="127.0.0.2")[0]
    subprocess.run(["/usr/sbin/chpasswd"], input=f"{other}:{new_password}\n", text=True, check=True)
    result["afterChange"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=with_login, source="127.0.0.2")[0]
    status, headers, answer = call(base, "POST", "/api/login", {"user": other, "password": new_password}, source="127.0.0.2")
    with_login = {"Cookie": f"deskd_web={cookie_of(headers)}", "X-Deskd-CSRF": ((answer or {}).get("identity") or {}).get("csrf", "")}
    result["newLogin"] = status
    result["newLoginWorks"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=with_login, source="127.0.0.2")[0]
    subprocess.run(["/usr/sbin/usermod", "-L", other], check=True)
    result["afterLock"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=with_login, source="127.0.0.2")[0]
    print(json.dumps(result), flush=True)


main()
