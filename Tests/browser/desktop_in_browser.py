#!/usr/bin/env python3
"""Opens a desktop in a real browser, the way a user would, and says what it saw.

The end-to-end tests call this as a subprocess and read one JSON object from stdout:

    desktop_in_browser.py open URL [--screenshot PNG] [--canvas-png PNG] [--type TEXT]
                                   [--timeout S] [--settle S] [--expect-refusal]
                                   [--ignore-view-only] [--viewport WxH] [--stay S]
    desktop_in_browser.py check

`open` launches Debian's headless Chromium (/usr/bin/chromium, through Playwright for Python,
never a browser Playwright downloads), opens URL (a noVNC page: deskd's gateway, or websockify
serving /usr/share/novnc in the harness's self-test), waits for noVNC to connect and for its
canvas to have a size, reads the canvas's pixels and reports

    {"connected": bool, "refused": bool, "width": n, "height": n, "distinctColours": n,
     "nonBlank": bool, "status": noVNC's status text, "httpStatus": n, "title": ...,
     "pageText": ..., "typed": TEXT or null, "screenshot": PNG or null, "console": [...],
     "webSockets": [{"url", "framesSent", "framesReceived", "closed", "error"}],
     "error": null or a sentence}

`--type TEXT` clicks the middle of the canvas (with no window manager, X gives the keys to the
window under the pointer), types TEXT and presses Enter; whether the keys reached anything is
for the caller to check (a file an xterm's shell wrote, or did not). `--ignore-view-only` sets
view_only=0 in the URL first, so noVNC itself sends every key and click the way a hostile
client would, and only the server can drop them. `--expect-refusal` is for a link that must
not open (a one-time link used twice): "refused" is true when the page was an HTTP error or
not noVNC at all, or noVNC said why it stopped ("Failed to connect to server", "New
connection has been rejected with reason: ..."); the page's words are in "status" and
"pageText". A page still connecting at the timeout, or a server that does not answer, is not
a refusal: "error" says so.

Exit status: 0 when the outcome is the one asked for (connected and not blank; or, with
--expect-refusal, refused), 1 when it is not, 2 when the harness itself cannot run (no
Playwright, no Chromium, bad arguments) or the browser stopped answering. The JSON is printed
in every case. `--canvas-png` saves the canvas's own pixels (toDataURL), `--screenshot` the
page as a user sees it, noVNC's control bar included.

`--stay S` keeps a connected page open up to S more seconds, for a caller that looks at the
server meanwhile (a viewer count, a kill): it ends early when the server closes the connection,
and "droppedAfter" says after how many seconds that was (null: still connected), and
"statusAfterStay" what noVNC said then. "stayStarted" is printed to stderr when the stay begins.

`check` prints {"ready": bool, "reason": ...}: whether Playwright and Chromium are there, so a
test can skip with a clear message instead of failing.

Playwright is looked for in this Python, then in the venv scripts/install-deps makes
(/opt/deskd-test-venv, or $DESKD_TEST_VENV), which the harness re-executes itself in.
"""

import argparse
import json
import os
import re
import signal
import sys
import time
import urllib.parse

CHROMIUM = os.environ.get("DESKD_TEST_CHROMIUM", "/usr/bin/chromium")
VENV = os.environ.get("DESKD_TEST_VENV", "/opt/deskd-test-venv")

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright
except ImportError:
    venv_python = os.path.join(VENV, "bin", "python3")
    if os.access(venv_python, os.X_OK) and os.environ.get("DESKD_HARNESS_IN_VENV") != "1":
        os.environ["DESKD_HARNESS_IN_VENV"] = "1"
        os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])
    sync_playwright = None
    PlaywrightError = Exception


def emit(result, status):
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    sys.stdout.flush()
    sys.exit(status)


def readiness():
    if sync_playwright is None:
        return f"Playwright for Python is not installed here or in {VENV} (scripts/install-deps makes that venv)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no browser at {CHROMIUM} (Debian's chromium package; scripts/install-deps installs it)"
    return None


# In the page: noVNC's state, its status line and the canvas's pixels. The visible canvas is
# same-origin, so getImageData works; colours are counted as 24-bit RGB (alpha is always 255).
PAGE_STATE = """() => {
    const root = document.documentElement;
    const status = document.getElementById('noVNC_status');
    const canvas = document.querySelector('#noVNC_container canvas');
    const state = {
        isNoVNC: status !== null,
        connected: root.classList.contains('noVNC_connected'),
        connecting: root.classList.contains('noVNC_connecting') || root.classList.contains('noVNC_reconnecting'),
        status: status ? status.textContent : null,
        statusError: status ? status.classList.contains('noVNC_status_error') : false,
        width: canvas ? canvas.width : 0,
        height: canvas ? canvas.height : 0,
        distinctColours: 0,
    };
    if (canvas && canvas.width > 0 && canvas.height > 0) {
        const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        const colours = new Set();
        for (let i = 0; i < data.length; i += 4) {
            colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
        }
        state.distinctColours = colours.size;
    }
    return state;
}"""

CANVAS_PNG = """() => {
    const canvas = document.querySelector('#noVNC_container canvas');
    return canvas && canvas.width > 0 ? canvas.toDataURL('image/png') : null;
}"""


def without_view_only(url):
    """The same URL with view_only=0 in its fragment (where noVNC reads it) and its query. The
    other parameters stay byte for byte (a token may hold '+', '=' or '%')."""
    parts = urllib.parse.urlsplit(url)

    def rewrite(text, always):
        items = [item for item in text.split("&") if item]
        kept = [item for item in items if item.split("=", 1)[0] != "view_only"]
        return "&".join(kept + ["view_only=0"]) if always or kept != items else text

    return urllib.parse.urlunsplit(parts._replace(query=rewrite(parts.query, False), fragment=rewrite(parts.fragment, True)))


def watch(socket, sockets):
    """Counts a WebSocket's frames each way and notes how it ended: with --type, framesSent
    shows the browser did send input, whatever the server did with it."""
    entry = {"url": socket.url, "framesSent": 0, "framesReceived": 0, "closed": False, "error": None}
    sockets.append(entry)

    def count(key):
        def bump(_):
            entry[key] += 1
        return bump

    socket.on("framesent", count("framesSent"))
    socket.on("framereceived", count("framesReceived"))
    socket.on("close", lambda _: entry.update(closed=True))
    socket.on("socketerror", lambda error: entry.update(error=str(error)[:300]))


def open_desktop(args):
    result = {
        "url": args.url, "connected": False, "refused": False, "width": 0, "height": 0,
        "distinctColours": 0, "nonBlank": False, "status": None, "httpStatus": None,
        "title": None, "pageText": None, "typed": None, "screenshot": None, "canvasPNG": None,
        "console": [], "webSockets": [], "error": None, "droppedAfter": None, "statusAfterStay": None,
    }
    reason = readiness()
    if reason:
        result["error"] = reason
        emit(result, 2)
    match = re.fullmatch(r"(\d+)x(\d+)", args.viewport)
    if not match:
        result["error"] = f"--viewport wants WIDTHxHEIGHT, not {args.viewport!r}"
        emit(result, 2)
    url = without_view_only(args.url) if args.ignore_view_only else args.url
    result["url"] = url
    # Whatever happens in the browser, the caller gets its JSON: a hard deadline well past the
    # harness's own, in case Chromium or Playwright's driver stops answering.
    def give_up(*_):
        # Playwright's driver ends the browser when this process's pipes to it close.
        result["error"] = "the browser stopped answering"
        json.dump(result, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
        sys.stdout.flush()
        os._exit(2)

    signal.signal(signal.SIGALRM, give_up)
    signal.alarm(int(args.timeout + args.settle + args.stay) + 30)
    deadline = time.monotonic() + args.timeout
    browser = None
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                # --no-sandbox: Chromium's sandbox cannot run as root, which CI is.
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            )
            context = browser.new_context(
                ignore_https_errors=True,  # the tests' gateways use throwaway self-signed certificates
                viewport={"width": int(match.group(1)), "height": int(match.group(2))},
            )
            page = context.new_page()
            page.on("console", lambda message: result["console"].append(f"{message.type}: {message.text}"[:300]))
            page.on("pageerror", lambda error: result["console"].append(f"pageerror: {error}"[:300]))
            page.on("websocket", lambda socket: watch(socket, result["webSockets"]))
            opens_through_gateway = urllib.parse.urlparse(url).path.endswith("/open")
            if opens_through_gateway and args.ignore_view_only:
                # deskd's /open page adds view_only=1 for a view-only link on its way to noVNC;
                # a hostile page would not, so the page is served with that taken out and only
                # the gateway is left to drop the keys.
                def without_view_only_page(route):
                    response = route.fetch()
                    body = response.text().replace("'&view_only=1'", "'&view_only=0'")
                    route.fulfill(response=response, body=body)
                page.route("**/open", without_view_only_page)
            response = page.goto(url, wait_until="load", timeout=max(1.0, deadline - time.monotonic()) * 1000)
            result["httpStatus"] = response.status if response else None
            # deskd's gateway opens on /open, which trades the link's token for a cookie and then
            # moves on to noVNC's page: wait for that, or for the page to say it refused.
            if opens_through_gateway:
                while time.monotonic() < deadline:
                    try:
                        if "/vnc.html" in page.url:
                            page.wait_for_load_state("load", timeout=max(1.0, deadline - time.monotonic()) * 1000)
                            break
                        said = page.evaluate("() => document.body ? document.body.innerText : ''")
                        if re.search(r"already used|expired|refused|cannot|could not", said, re.IGNORECASE):
                            break  # the page refused the link and stays
                    except PlaywrightError:
                        pass  # the page navigated while it was looked at
                    page.wait_for_timeout(50)
            result["title"] = page.title()

            state = page.evaluate(PAGE_STATE)
            while time.monotonic() < deadline:
                state = page.evaluate(PAGE_STATE)
                if not state["isNoVNC"]:
                    break  # not noVNC's page at all: an error page, a refusal
                if state["connected"] and state["width"] > 0 and state["height"] > 0:
                    break
                if state["statusError"] or (not state["connecting"] and state["status"] and "Disconnected" in state["status"]):
                    break  # noVNC gave up: refused, or nothing to connect to
                page.wait_for_timeout(100)

            result["connected"] = bool(state["connected"] and state["width"] > 0)
            if result["connected"]:
                # The first framebuffer update (and, with resize=remote, the one after the
                # resize) arrives after the connection: wait until the canvas shows more than
                # one colour, or give up after --settle seconds and report what it shows.
                settle = time.monotonic() + args.settle
                while time.monotonic() < settle:
                    state = page.evaluate(PAGE_STATE)
                    if state["distinctColours"] > 1:
                        page.wait_for_timeout(500)  # let the rest of the update land
                        state = page.evaluate(PAGE_STATE)
                        break
                    page.wait_for_timeout(100)
                if args.type is not None:
                    page.mouse.click(state["width"] / 2, state["height"] / 2)
                    page.focus("#noVNC_container canvas")
                    page.keyboard.type(args.type, delay=20)
                    page.keyboard.press("Enter")
                    page.wait_for_timeout(500)  # the keys travel on after the browser sent them
                    result["typed"] = args.type
                    state = page.evaluate(PAGE_STATE)
                result["connected"] = bool(state["connected"] and state["width"] > 0)

            result["width"] = state["width"]
            result["height"] = state["height"]
            result["distinctColours"] = state["distinctColours"]
            result["nonBlank"] = state["distinctColours"] > 1
            result["status"] = state["status"]
            result["pageText"] = page.evaluate("() => document.body ? document.body.innerText : ''")[:2000]
            http_refused = result["httpStatus"] is not None and result["httpStatus"] >= 400
            result["refused"] = not result["connected"] and (http_refused or not state["isNoVNC"] or state["statusError"]
                                                             or bool(state["status"]))
            if args.canvas_png:
                data_url = page.evaluate(CANVAS_PNG)
                if data_url:
                    import base64
                    with open(args.canvas_png, "wb") as file:
                        file.write(base64.b64decode(data_url.split(",", 1)[1]))
                    result["canvasPNG"] = args.canvas_png
            if args.screenshot:
                # animations="disabled" ends noVNC's control bar's slide, so the picture is still.
                page.screenshot(path=args.screenshot, animations="disabled")
                result["screenshot"] = args.screenshot
            if not result["connected"] and not result["refused"]:
                result["error"] = f"noVNC did not connect within {args.timeout:g} s (status: {state['status']!r})"
            if result["connected"] and args.stay > 0:
                sys.stderr.write("stayStarted\n")
                sys.stderr.flush()
                began = time.monotonic()
                while time.monotonic() < began + args.stay:
                    state = page.evaluate(PAGE_STATE)
                    if not state["connected"]:
                        result["droppedAfter"] = round(time.monotonic() - began, 3)
                        break
                    page.wait_for_timeout(100)
                page.wait_for_timeout(200)  # noVNC's words on the disconnect
                result["statusAfterStay"] = page.evaluate(PAGE_STATE)["status"]
            browser.close()
            browser = None
    except (PlaywrightError, OSError) as error:
        result["error"] = f"{type(error).__name__}: {str(error).strip()[:1000]}"
        try:
            if browser is not None:
                browser.close()
        except Exception:
            pass
    finally:
        signal.alarm(0)
    result["console"] = result["console"][-20:]
    if args.expect_refusal:
        emit(result, 0 if result["refused"] else 1)
    emit(result, 0 if result["connected"] and result["nonBlank"] and result["error"] is None else 1)


def main():
    parser = argparse.ArgumentParser(description="Open a desktop in headless Chromium and report what noVNC showed, as JSON.")
    commands = parser.add_subparsers(dest="command", required=True)
    opening = commands.add_parser("open", help="open a noVNC URL and read back its canvas")
    opening.add_argument("url")
    opening.add_argument("--screenshot", metavar="PNG", help="save a screenshot of the page")
    opening.add_argument("--canvas-png", metavar="PNG", help="save the canvas itself (the desktop, pixel for pixel)")
    opening.add_argument("--type", metavar="TEXT", help="click the canvas, type TEXT, press Enter")
    opening.add_argument("--timeout", type=float, default=20, metavar="S", help="seconds to wait for noVNC to connect (20)")
    opening.add_argument("--settle", type=float, default=5, metavar="S", help="seconds to wait for a picture after connecting (5)")
    opening.add_argument("--expect-refusal", action="store_true", help="succeed only if the page refuses to connect")
    opening.add_argument("--ignore-view-only", action="store_true", help="set view_only=0 in the URL, so noVNC sends input anyway")
    opening.add_argument("--viewport", default="1280x800", metavar="WxH", help="the browser window's size (1280x800)")
    opening.add_argument("--stay", type=float, default=0, metavar="S",
                         help="keep a connected page open up to S seconds, ending early if the server closes it")
    commands.add_parser("check", help="say whether Playwright and Chromium are there")
    try:
        args = parser.parse_args()
    except SystemExit as exit:
        if exit.code:
            emit({"error": "bad arguments (see --help)"}, 2)
        raise
    if args.command == "check":
        reason = readiness()
        emit({"ready": reason is None, "reason": reason, "chromium": CHROMIUM, "python": sys.executable}, 0 if reason is None else 2)
    open_desktop(args)


if __name__ == "__main__":
    main()
