#!/usr/bin/env python3
"""The web portal's API from a script, the way another site, a second user and a guesser would
try it; one JSON object on stdout. Run by PortalTests against a deskd whose gateway is BASE.

    portal_api.py BASE OWNER OWNER-PASSWORD OTHER OTHER-PASSWORD EXPIRED EXPIRED-PASSWORD OWNER-DISPLAY
                  MUST-CHANGE MUST-CHANGE-PASSWORD NEW-PASSWORD

Reports: the page's security headers; the login cookie's attributes; refusals of a foreign
Origin (login and request), of a POST without Origin, of a request without the CSRF token; the
control protocol's answers through /api/request (list, show, desktops) for OWNER; what OTHER's
list holds and whether OTHER may kill OWNER's display; root refused by the deny list; an expired
account refused; a forced password change answered question by question (the questions PAM
asked, then a login with the new password); logout ending the cookie; and, last, the throttle: wrong passwords until the
portal says to wait, and then the right one refused too."""

import http.client
import json
import sys
import urllib.parse


def call(base, method, path, body=None, headers=None, origin=True, source=None):
    """One request; `source` is the local address to connect from (127.0.0.2 plays another machine)."""
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30, source_address=(source, 0) if source else None)
    sent = dict(headers or {})
    if origin is True:
        sent["Origin"] = f"{url.scheme}://{url.netloc}"
    elif origin:
        sent["Origin"] = origin
    data = json.dumps(body).encode() if body is not None else None
    if data is not None:
        sent["Content-Type"] = "application/json"
    connection.request(method, path, body=data, headers=sent)
    response = connection.getresponse()
    text = response.read().decode()
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        answer = text
    return response.status, dict(response.getheaders()), answer


def login(base, user, password):
    status, headers, answer = call(base, "POST", "/api/login", {"user": user, "password": password})
    cookie = headers.get("Set-Cookie", "")
    value = cookie.split(";")[0].split("=", 1)[1] if cookie.startswith("deskd_web=") else None
    return status, cookie, value, answer


def main():
    base, owner, owner_password, other, other_password, expired, expired_password, display = sys.argv[1:9]
    must_change, must_change_password, new_password = sys.argv[9:12]
    display = int(display)
    result = {}
    status, headers, _ = call(base, "GET", "/", origin=False)
    result["page"] = {"status": status, **{k: headers.get(k) for k in ["Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy", "Cache-Control"]}}

    result["foreignLogin"] = call(base, "POST", "/api/login", {"user": owner, "password": owner_password}, origin="https://evil.example")[0]
    result["loginWithoutOrigin"] = call(base, "POST", "/api/login", {"user": owner, "password": owner_password}, origin=False)[0]

    status, set_cookie, cookie, answer = login(base, owner, owner_password)
    result["ownerLogin"] = status
    result["setCookie"] = set_cookie.replace(cookie or "-", "COOKIE")
    csrf = answer["identity"]["csrf"]
    jar = {"Cookie": f"deskd_web={cookie}"}
    with_csrf = {**jar, "X-Deskd-CSRF": csrf}

    # Bodies at the 16 KiB limit, one made to grow sixfold in the front's record to deskd: refused
    # one by one, and the front stays connected (every browser with it).
    result["hugePassword"] = call(base, "POST", "/api/login", {"user": owner, "password": "x" * 16300})[0]
    url = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    connection.request("POST", "/api/request", body=b"\x01" * 16000,
                       headers={**with_csrf, "Origin": f"{url.scheme}://{url.netloc}", "Content-Type": "application/json"})
    response = connection.getresponse()
    result["controlCharacters"] = response.status
    response.read()
    result["servedAfterHugeBodies"] = call(base, "GET", "/api/session", headers=jar, origin=False)[0]

    result["requestWithoutCSRF"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=jar)[0]
    result["requestForeign"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=with_csrf, origin="https://evil.example")[0]
    result["sessionGETForeign"] = call(base, "GET", "/api/session", headers={**jar, "Sec-Fetch-Site": "cross-site"}, origin=False)[0]
    result["api"] = {}
    # Every verb a user may send, through the API; the test sends the same through deskctl and compares.
    for name, request in [("list", {"command": "list"}), ("show", {"command": "show", "display": display}), ("desktops", {"command": "desktops"}),
                          ("ping", {"command": "ping"}), ("status", {"command": "status"}), ("history", {"command": "history"}),
                          ("logs", {"command": "logs", "display": display, "lines": 5}), ("probe", {"command": "probe", "display": display}),
                          ("showMissing", {"command": "show", "display": 99}), ("killMissing", {"command": "kill", "display": 99}),
                          ("metrics", {"command": "metrics"}), ("badDesktop", {"command": "start", "desktop": "no-such-desktop"}),
                          ("extendLocal", {"command": "extend", "display": display, "extendSeconds": 600}),
                          ("shares", {"command": "url", "display": display, "shares": True})]:
        status, _, answer = call(base, "POST", "/api/request", {"version": 1, **request}, headers=with_csrf)
        result["api"][name] = {"status": status, "answer": answer}

    _, _, other_cookie, other_answer = login(base, other, other_password)
    other_headers = {"Cookie": f"deskd_web={other_cookie}", "X-Deskd-CSRF": other_answer["identity"]["csrf"]}
    result["otherList"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=other_headers)[2]
    result["otherKill"] = call(base, "POST", "/api/request", {"version": 1, "command": "kill", "display": display}, headers=other_headers)[:3:2]
    result["otherShow"] = call(base, "POST", "/api/request", {"version": 1, "command": "show", "display": display}, headers=other_headers)[:3:2]

    result["root"] = login(base, "root", "whatever")[3]
    result["expired"] = login(base, expired, expired_password)[3]

    # A password that must change first: PAM's questions, answered one by one in the same login.
    asked = []
    status, _, answer = call(base, "POST", "/api/login", {"user": must_change, "password": must_change_password})
    answers = {"Current password: ": must_change_password, "New password: ": new_password, "Retype new password: ": new_password}
    for _ in range(6):
        question = (answer or {}).get("question")
        if not question:
            break
        asked.append(question["text"])
        if question["messages"]:
            asked.append("messages: " + " | ".join(question["messages"]))
        status, _, answer = call(base, "POST", "/api/login/answer", {"attempt": question["attempt"], "answer": answers.get(question["text"], "?")})
    asked.append("logged in" if (answer or {}).get("identity") else f"not logged in: {answer}")
    result["forcedChange"] = asked
    result["newPasswordWorks"] = login(base, must_change, new_password)[0] == 200

    call(base, "POST", "/api/logout", {}, headers=jar)
    result["afterLogout"] = call(base, "POST", "/api/request", {"version": 1, "command": "list"}, headers=with_csrf)[0]

    attempts = []
    for _ in range(8):
        status, _, _, answer = login(base, other, "wrong-" + other_password)
        message = (answer or {}).get("error", {}).get("message", "")
        attempts.append(message)
        if "Too many" in message:
            break
    result["throttleAttempts"] = attempts
    result["rightPasswordWhileThrottled"] = login(base, other, other_password)[3]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
