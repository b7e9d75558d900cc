#!/usr/bin/env python3
"""A cluster desktop's owner moves files through the login node's gateway (issue 50).

Run on the lab's login machine (its network) by ClusterTests: logs in to the portal as the
owner, uploads a file into ~/Downloads, lists the folder, and downloads back both that file
and one the test made on the node. Prints one JSON object of what it saw.

    files_through_login.py BASE USER PASSWORD SESSION CONTENT_FROM_NODE_PATH
"""
import hashlib
import http.client
import json
import sys
import urllib.parse


def main():
    base, user, password, session, node_path = sys.argv[1:6]
    url = urllib.parse.urlparse(base)
    origin = f"{url.scheme}://{url.netloc}"

    def call(method, path, body=None, raw=None, cookie=None, csrf=None):
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        headers = {"Origin": origin}
        if cookie:
            headers["Cookie"] = cookie
        if csrf:
            headers["X-Deskd-CSRF"] = csrf
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        connection.close()
        kind = response.getheader("Content-Type", "")
        return response.status, dict(response.getheaders()), (json.loads(payload) if kind.startswith("application/json") and payload else payload)

    result = {}
    status, headers, answer = call("POST", "/api/login", {"user": user, "password": password})
    result["login"] = status
    cookie = headers.get("Set-Cookie", "").split(";")[0]
    csrf = answer["identity"]["csrf"]
    content = b"up through the login node's gateway\n" * 1000
    status, _, answer = call("POST", f"/api/files/{session}/uploads",
                             {"folder": "Downloads", "name": "from the browser.txt", "size": len(content), "exists": "replace"}, cookie=cookie, csrf=csrf)
    result["begin"] = status
    if status == 201:
        status, _, answer = call("PUT", f"/api/files/{session}/uploads/{answer['upload']}", raw=content, cookie=cookie, csrf=csrf)
        result["put"] = status
        result["uploaded"] = answer
    status, _, answer = call("GET", f"/api/files/{session}/list?" + urllib.parse.urlencode({"path": "Downloads"}), cookie=cookie)
    result["listing"] = sorted(e["name"] for e in answer.get("entries", [])) if status == 200 else status
    status, _, body = call("GET", f"/api/files/{session}/download?" + urllib.parse.urlencode({"path": node_path}), cookie=cookie)
    result["fromNode"] = body.decode(errors="replace") if status == 200 else status
    result["uploadedSha256"] = hashlib.sha256(content).hexdigest()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
