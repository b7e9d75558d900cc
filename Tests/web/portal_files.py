#!/usr/bin/env python3
"""The portal's file calls from a script: the owner's uploads and downloads, and everything a
second user, another site and a view-only link try against them; one JSON object on stdout.
Run by FilesTests against a deskd whose gateway is BASE.

    portal_files.py BASE OWNER OWNER-PASSWORD OWNER-SESSION OTHER OTHER-PASSWORD OTHER-SESSION BIG-FILE SHARE-TOKEN

BIG-FILE is uploaded and downloaded back (sha256 compared); SHARE-COOKIE is the cookie a
view-only link (`deskctl url --view-only`): the cookie its exchange gives must open no file call."""

import hashlib
import http.client
import io
import json
import os
import pwd
import socket
import sys
import tarfile
import time
import urllib.parse

BASE = None


def connection():
    url = urllib.parse.urlparse(BASE)
    return http.client.HTTPConnection(url.hostname, url.port, timeout=120)


def origin():
    url = urllib.parse.urlparse(BASE)
    return f"{url.scheme}://{url.netloc}"


def call(method, path, body=None, cookie=None, csrf=None, headers=None, raw=None, length=None, with_origin=True):
    c = connection()
    sent = dict(headers or {})
    if with_origin:
        sent["Origin"] = origin()
    if cookie:
        sent["Cookie"] = cookie
    if csrf:
        sent["X-Deskd-CSRF"] = csrf
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    if length is not None:
        sent["Content-Length"] = str(length)
    c.request(method, path, body=data, headers=sent)
    response = c.getresponse()
    payload = response.read()
    c.close()
    try:
        answer = json.loads(payload) if payload and response.getheader("Content-Type", "").startswith("application/json") else payload
    except ValueError:
        answer = payload
    return response.status, dict(response.getheaders()), answer


def login(user, password):
    status, headers, answer = call("POST", "/api/login", {"user": user, "password": password})
    cookie = headers.get("Set-Cookie", "").split(";")[0]
    return cookie, answer["identity"]["csrf"]


def q(**fields):
    return urllib.parse.urlencode(fields, quote_via=urllib.parse.quote)


def code(answer):
    return answer.get("error", {}).get("code") if isinstance(answer, dict) else None


def upload(session, cookie, csrf, name, data=None, path=None, folder="Downloads", exists="ask"):
    size = len(data) if data is not None else os.path.getsize(path)
    status, _, answer = call("POST", f"/api/files/{session}/uploads", {"folder": folder, "name": name, "size": size, "exists": exists}, cookie, csrf)
    if status != 201:
        return {"begin": status, "code": code(answer), "message": answer.get("error", {}).get("message") if isinstance(answer, dict) else None}
    upload_id = answer["upload"]
    started = time.monotonic()
    if data is not None:
        status, _, answer = call("PUT", f"/api/files/{session}/uploads/{upload_id}", raw=data, cookie=cookie, csrf=csrf)
    else:
        with open(path, "rb") as f:
            status, _, answer = call("PUT", f"/api/files/{session}/uploads/{upload_id}", raw=f, cookie=cookie, csrf=csrf, length=size)
    return {"begin": 201, "put": status, "answer": answer, "seconds": time.monotonic() - started, "id": upload_id}


def download(session, cookie, path, headers=None, into=None):
    c = connection()
    sent = {"Cookie": cookie, **(headers or {})}
    c.request("GET", f"/api/files/{session}/download?" + q(path=path), headers=sent)
    response = c.getresponse()
    digest = hashlib.sha256()
    total = 0
    first = b""
    started = time.monotonic()
    while True:
        chunk = response.read(1 << 20)
        if not chunk:
            break
        if len(first) < 65536:
            first += chunk[:65536 - len(first)]
        digest.update(chunk)
        total += len(chunk)
        if into is not None:
            into.write(chunk)
    c.close()
    return {"status": response.status, "headers": dict(response.getheaders()), "bytes": total, "sha256": digest.hexdigest(),
            "first": first, "seconds": time.monotonic() - started}


def listing(session, cookie, path=""):
    status, _, answer = call("GET", f"/api/files/{session}/list?" + q(path=path), cookie=cookie, with_origin=False)
    return status, answer


def cut_upload(session, cookie, csrf, name, size, send):
    """Begins an upload of `size` bytes, sends `send` of them and drops the connection."""
    status, _, answer = call("POST", f"/api/files/{session}/uploads", {"folder": "Downloads", "name": name, "size": size, "exists": "ask"}, cookie, csrf)
    if status != 201:
        return status
    url = urllib.parse.urlparse(BASE)
    s = socket.create_connection((url.hostname, url.port))
    head = (f"PUT /api/files/{session}/uploads/{answer['upload']} HTTP/1.1\r\nHost: {url.netloc}\r\nOrigin: {origin()}\r\n"
            f"Cookie: {cookie}\r\nX-Deskd-CSRF: {csrf}\r\nContent-Length: {size}\r\n\r\n")
    s.sendall(head.encode())
    chunk = b"x" * 65536
    left = send
    while left > 0:
        s.sendall(chunk[:min(left, len(chunk))])
        left -= min(left, len(chunk))
    time.sleep(0.3)
    s.close()
    return 201


def main():
    global BASE
    BASE, owner, owner_password, owner_session, other, other_password, other_session, big, share_token = sys.argv[1:10]
    result = {}
    status, headers, _ = call("POST", "/exchange", raw=share_token.encode())
    result["shareExchange"] = status
    share_cookie = headers.get("Set-Cookie", "").split(";")[0]
    cookie, csrf = login(owner, owner_password)
    other_cookie, other_csrf = login(other, other_password)

    # The owner's own calls.
    status, answer = listing(owner_session, cookie)
    result["homeListing"] = {"status": status, "names": sorted(e["name"] for e in answer.get("entries", []))} if status == 200 else {"status": status, "answer": answer}
    result["small"] = upload(owner_session, cookie, csrf, "hello world.txt", b"hello from the browser\n")
    result["again"] = upload(owner_session, cookie, csrf, "hello world.txt", b"second\n")
    result["keepBoth"] = upload(owner_session, cookie, csrf, "hello world.txt", b"second\n", exists="keep")
    # What an upload makes is the owner's alone; a replace keeps the mode the owner gave the old file.
    downloads = os.path.join(pwd.getpwnam(owner).pw_dir, "Downloads")
    result["uploadMode"] = oct(os.stat(os.path.join(downloads, "hello world.txt")).st_mode & 0o7777)
    os.chmod(os.path.join(downloads, "hello world.txt"), 0o640)
    result["replace"] = upload(owner_session, cookie, csrf, "hello world.txt", b"replaced\n", exists="replace")
    result["replacedMode"] = oct(os.stat(os.path.join(downloads, "hello world.txt")).st_mode & 0o7777)
    result["empty"] = upload(owner_session, cookie, csrf, "empty.txt", b"")
    result["badName"] = upload(owner_session, cookie, csrf, "../escape.txt", b"x")
    result["dotDot"] = upload(owner_session, cookie, csrf, "..", b"x")
    result["badFolder"] = upload(owner_session, cookie, csrf, "x.txt", b"x", folder="../other")
    status, _, answer = call("POST", f"/api/files/{owner_session}/uploads", {"folder": "Downloads", "name": "huge.bin", "size": 1 << 50, "exists": "ask"}, cookie, csrf)
    result["tooLarge"] = {"status": status, "code": code(answer)}
    status, answer = listing(owner_session, cookie, "Downloads")
    result["downloadsListing"] = sorted((e["name"], e["type"], e["size"]) for e in answer.get("entries", [])) if status == 200 else status

    # The big file, up and back.
    with open(big, "rb") as f:
        source = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            source.update(chunk)
    result["bigSha256"] = source.hexdigest()
    big_up = upload(owner_session, cookie, csrf, "big.bin", path=big, exists="replace")
    result["bigUpload"] = {k: big_up.get(k) for k in ["begin", "put", "answer", "seconds"]}
    big_down = download(owner_session, cookie, "Downloads/big.bin")
    result["bigDownload"] = {"status": big_down["status"], "bytes": big_down["bytes"], "sha256": big_down["sha256"], "seconds": big_down["seconds"],
                             "acceptRanges": big_down["headers"].get("Accept-Ranges"), "disposition": big_down["headers"].get("Content-Disposition"),
                             "csp": big_down["headers"].get("Content-Security-Policy"), "nosniff": big_down["headers"].get("X-Content-Type-Options")}
    part = download(owner_session, cookie, "Downloads/big.bin", {"Range": "bytes=1000-1999"})
    with open(big, "rb") as f:
        f.seek(1000)
        expected = hashlib.sha256(f.read(1000)).hexdigest()
    result["range"] = {"status": part["status"], "bytes": part["bytes"], "matches": part["sha256"] == expected,
                       "contentRange": part["headers"].get("Content-Range")}
    stale = download(owner_session, cookie, "Downloads/big.bin", {"Range": "bytes=0-9", "If-Range": "\"not-this-one\""})
    result["staleIfRange"] = {"status": stale["status"], "bytes": stale["bytes"]}
    result["pastEnd"] = download(owner_session, cookie, "Downloads/big.bin", {"Range": f"bytes={os.path.getsize(big) + 10}-"})["status"]
    small = download(owner_session, cookie, "Downloads/hello world.txt")
    # A resume with the file's ETag gets its range; a file rewritten since (the same bytes, the
    # same second) or a date as If-Range gets the whole file.
    tag = small["headers"].get("ETag")
    resumed = download(owner_session, cookie, "Downloads/hello world.txt", {"Range": "bytes=2-4", "If-Range": tag})
    by_date = download(owner_session, cookie, "Downloads/hello world.txt", {"Range": "bytes=2-4", "If-Range": small["headers"].get("Last-Modified")})
    with open(os.path.join(downloads, "hello world.txt"), "r+b") as f:
        f.write(b"replaced\n")
    rewritten = download(owner_session, cookie, "Downloads/hello world.txt", {"Range": "bytes=2-4", "If-Range": tag})
    result["resume"] = {"tagged": resumed["status"], "taggedBytes": resumed["first"].decode(), "byDate": by_date["status"], "rewritten": rewritten["status"]}
    result["smallBack"] = small["first"].decode(errors="replace")
    archive = download(owner_session, cookie, "Downloads", into=None)
    result["archiveStatus"] = archive["status"]
    buffer = io.BytesIO()
    small_folder = download(owner_session, cookie, "Downloads/sub", into=buffer)
    result["folderArchive"] = {"status": small_folder["status"], "type": small_folder["headers"].get("Content-Type"),
                               "disposition": small_folder["headers"].get("Content-Disposition")}
    if small_folder["status"] == 200:
        buffer.seek(0)
        with tarfile.open(fileobj=buffer) as tar:
            result["folderArchive"]["members"] = sorted(m.name for m in tar.getmembers())
            result["folderArchive"]["linkKept"] = [m.name for m in tar.getmembers() if m.issym()]
    result["missing"] = download(owner_session, cookie, "Downloads/not-there")["status"]
    # Planted by the test: a symbolic link to OTHER's private file, and a hard link to root's.
    result["ownerSymlinkToOthers"] = download(owner_session, cookie, "to-other-secret")["status"]
    result["ownerHardLinkToRoots"] = download(owner_session, cookie, "root-hardlink")["status"]
    result["fifo"] = download(owner_session, cookie, "a-fifo")["status"]

    # A cut upload leaves nothing.
    result["cutBegin"] = cut_upload(owner_session, cookie, csrf, "cut.bin", 20 << 20, 5 << 20)
    time.sleep(1.0)
    status, answer = listing(owner_session, cookie, "Downloads")
    result["afterCut"] = sorted(e["name"] for e in answer.get("entries", [])) if status == 200 else status

    # The other user, against the owner's desktop: nothing, whatever the call.
    attempts = {
        "list": listing(owner_session, other_cookie)[0],
        "listDownloads": listing(owner_session, other_cookie, "Downloads")[0],
        "download": download(owner_session, other_cookie, "Downloads/hello world.txt")["status"],
        "range": download(owner_session, other_cookie, "Downloads/big.bin", {"Range": "bytes=0-9"})["status"],
        "archive": download(owner_session, other_cookie, "Downloads")["status"],
        "begin": upload(owner_session, other_cookie, other_csrf, "planted.txt", b"x").get("begin"),
    }
    result["otherOnOwners"] = attempts
    result["otherOnOwnersCode"] = code(call("GET", f"/api/files/{owner_session}/list?path=", cookie=other_cookie, with_origin=False)[2])
    # The other user's own desktop: their home only, by path; the owner's files by a link they plant.
    result["otherUp"] = listing(other_session, other_cookie, "..")[0]
    result["otherAbsolute"] = listing(other_session, other_cookie, "/etc")[0]
    result["otherEncodedDots"] = call("GET", f"/api/files/{other_session}/list?path=%2E%2E%2F", cookie=other_cookie, with_origin=False)[0]
    result["otherSymlinkToOwners"] = download(other_session, other_cookie, "to-owner-secret")["status"]
    result["otherListsOwnHome"] = listing(other_session, other_cookie)[0]
    # The owner's pending upload, taken by the other user's browser: no such upload for them.
    begun = call("POST", f"/api/files/{owner_session}/uploads", {"folder": "Downloads", "name": "stolen.txt", "size": 5, "exists": "ask"}, cookie, csrf)
    stolen = call("PUT", f"/api/files/{owner_session}/uploads/{begun[2]['upload']}", raw=b"stole", cookie=other_cookie, csrf=other_csrf)
    result["stolenPending"] = stolen[0]
    wrong_token = call("PUT", f"/api/files/{owner_session}/uploads/{begun[2]['upload']}", raw=b"stole", cookie=cookie, csrf="not-the-token")
    result["pendingWithoutToken"] = wrong_token[0]

    # Another site, a missing token, no login, a view-only link's cookie.
    result["foreignBegin"] = call("POST", f"/api/files/{owner_session}/uploads", {"folder": "Downloads", "name": "f.txt", "size": 1, "exists": "ask"}, cookie, csrf,
                                  headers={"Origin": "https://evil.example"}, with_origin=False)[0]
    result["crossSiteDownload"] = download(owner_session, cookie, "Downloads/hello world.txt", {"Sec-Fetch-Site": "cross-site"})["status"]
    result["sameSiteDownload"] = download(owner_session, cookie, "Downloads/hello world.txt", {"Sec-Fetch-Site": "same-site"})["status"]
    result["beginWithoutToken"] = call("POST", f"/api/files/{owner_session}/uploads", {"folder": "Downloads", "name": "f.txt", "size": 1, "exists": "ask"}, cookie)[0]
    result["noLogin"] = listing(owner_session, "")[0]
    result["shareCookieList"] = listing(owner_session, share_cookie)[0]
    result["shareCookieDownload"] = download(owner_session, share_cookie, "Downloads/hello world.txt")["status"]
    result["shareCookieBegin"] = call("POST", f"/api/files/{owner_session}/uploads", {"folder": "Downloads", "name": "v.txt", "size": 1, "exists": "ask"}, share_cookie, csrf)[0]
    result["madeUpSession"] = listing("0123456789abcdef0123456789abcdef", cookie)[0]
    # Large folders: a listing is one record on deskd's sockets, so long names mean fewer entries
    # (said by "truncated"), and a folder of thousands lists rather than fails.
    for folder, count, width in (("many", 3000, 12), ("long", 4100, 250)):
        path = os.path.join(downloads, folder)
        os.mkdir(path, 0o755)
        for n in range(count):
            open(os.path.join(path, str(n).rjust(width, "x")), "w").close()
        status, answer = listing(owner_session, cookie, f"Downloads/{folder}")
        result[f"{folder}Listing"] = {"status": status, "entries": len(answer.get("entries", [])), "truncated": answer.get("truncated")}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
