#!/usr/bin/env python3
"""The web portal in a real browser, as its users would use it; one JSON object on stdout.

    portal_in_browser.py flow --url BASE --user U --password P --viewer V --viewer-password VP
                              --type TEXT --viewer-type TEXT --screenshots DIR [--wait-logout S]

Debian's headless Chromium (through Playwright for Python, as desktop_in_browser.py) opens the
portal at BASE and, as U: logs in with a wrong password first (the page must refuse it), then
with P; reads the portal cookie's flags; starts a desktop with one click on Start (which opens
it in a new tab, noVNC loading while it starts: the tab must show the desktop) and waits for its
card to say ready; makes a view-only link on the card for V alone; opens the desktop with the
card's Open (a new tab: noVNC through the gateway), sees it (its canvas is not blank) and types
TEXT into it. A browser logged in to
nothing opens V's link and must be refused (the link stays V's). Then, in a browser of their
own, V logs in and must see no card, and opens U's view-only link, sees the desktop and types
VIEWER-TYPE (which must not arrive: the caller checks). Back as U: the card lists the share with
its browser, U takes it back, and V's desktop must go. Then U ends the desktop (accepting the
confirmation) and waits for the ended card. With --wait-logout S, U's page then waits up
to S seconds to be logged out for inactivity. Screenshots go to DIR: login.png, cards.png,
desktop.png, viewer.png, ended.png, logged-out.png.

    portal_in_browser.py open --url BASE --user U --password P --desktop NAME --type TEXT --screenshot PNG

logs in as U, starts the desktop NAME from the start form with one click (which opens it:
noVNC through the gateway, in a new tab), waits for its card to say ready, sees the desktop,
types TEXT into it and saves a screenshot of the tab; the desktop is left running for the caller.

Exit status 0 when every step ran (what it saw is for the caller to judge), 1 when one failed
("error" says which), 2 when the harness cannot run.
"""

import argparse
import json
import os
import re
import sys
import time

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # Playwright lives in the venv scripts/install-deps makes: run there
    venv_python = os.path.join(os.environ.get("DESKD_TEST_VENV", "/opt/deskd-test-venv"), "bin", "python3")
    if os.access(venv_python, os.X_OK) and os.environ.get("DESKD_HARNESS_IN_VENV") != "1":
        os.environ["DESKD_HARNESS_IN_VENV"] = "1"
        # The script that was run (this one, or one that imports it) runs again in the venv.
        os.execv(venv_python, [venv_python, os.path.abspath(sys.argv[0])] + sys.argv[1:])
    print(json.dumps({"error": "Playwright for Python is not installed (scripts/install-deps)", "steps": []}))
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import desktop_in_browser as harness  # noqa: E402  (PAGE_STATE, CHROMIUM)


def wait_for(page, predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception:  # the page navigated while it was read
            pass
        page.wait_for_timeout(100)
    raise TimeoutError(f"{what} did not happen within {seconds} s")


def desktop_shown(page, seconds):
    """noVNC connected, with a canvas of more than one colour."""
    def ready():
        state = page.evaluate(harness.PAGE_STATE)
        return state if state["connected"] and state["distinctColours"] > 1 else None
    return wait_for(page, ready, seconds, "the desktop in noVNC")


def type_into(page, text):
    canvas = page.locator("#noVNC_container canvas")
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.keyboard.type(text, delay=20)
    page.keyboard.press("Enter")


def audit(page):
    """axe-core's serious and critical violations on the page as it is now: [(id, impact, nodes)]."""
    from axe_playwright_python.sync_playwright import Axe
    results = Axe().run(page)
    return [{"id": v["id"], "impact": v.get("impact"), "nodes": len(v.get("nodes", [])), "help": v.get("help")}
            for v in results.response.get("violations", []) if v.get("impact") in ("serious", "critical")]


def log_in(page, base, user, password):
    page.goto(base, wait_until="load")
    wait_for(page, lambda: page.is_visible("#login-form"), 15, "the login form")
    page.fill("#login-user", user)
    page.fill("#login-password", password)
    page.click("#login-submit")


def walk(steps, args):
    """Runs `steps(browser, args, result, step)` in a fresh headless Chromium and prints `result`
    as one JSON object; an exception ends the walk, and is reported, with the steps reached."""
    result = {"steps": [], "error": None, "console": []}
    step = lambda name: result["steps"].append(name)  # noqa: E731
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=harness.CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            steps(browser, args, result, step)
        except Exception as error:  # reported, not raised: the caller reads what was reached
            result["error"] = f"{type(error).__name__}: {error}"[:600]
        finally:
            browser.close()
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 1 if result["error"] else 0


def flow(browser, args, result, step):
    shots = args.screenshots
    # bypass_csp: axe-core is injected into the page to audit it; the portal's CSP (which
    # forbids that, as it should) is checked from its headers by the API's test.
    owner = browser.new_context(viewport={"width": 1100, "height": 800}, bypass_csp=True)
    page = owner.new_page()
    page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"[:300]))
    page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"[:300]))

    page.goto(args.url, wait_until="load")
    wait_for(page, lambda: page.is_visible("#login-form"), 15, "the login form")
    result["axeLogin"] = audit(page)
    step("audited the login page")

    log_in(page, args.url, args.user, "not-" + args.password)
    result["wrongPassword"] = wait_for(page, lambda: page.inner_text("#login-error").strip(), 20, "the refusal")
    page.screenshot(path=os.path.join(shots, "login.png"))
    step("refused a wrong password")

    page.fill("#login-password", args.password)
    page.click("#login-submit")
    wait_for(page, lambda: page.is_visible("#desktops-view"), 20, "the desktops view")
    result["user"] = page.inner_text("#user")
    cookies = [c for c in owner.cookies() if c["name"] == "deskd_web"]
    result["cookie"] = {k: cookies[0][k] for k in ("httpOnly", "secure", "sameSite", "path")} if cookies else None
    step("logged in")

    wait_for(page, lambda: page.locator("#start-desktop option").count() > 0, 10, "the desktops to start")
    # One click: Start, with "Open it in a new tab" as the portal checks it, opens the desktop.
    result["startOpens"] = page.is_checked("#start-open")
    with owner.expect_page() as opened:
        page.click("#start-submit")
    started = opened.value
    state = desktop_shown(started, 40)
    result["startTab"] = {"width": state["width"], "colours": state["distinctColours"],
                          "address": started.url, "viewer": started.evaluate("() => document.documentElement.dataset.deskdViewer")}
    started.close()
    step("one click on Start showed the desktop")
    card = page.locator("article.card:not(.ended)").first
    wait_for(page, lambda: "ready" in card.inner_text(), 40, "a ready card")
    # With Start's tab closed the desktop has no viewer again: its card counts down once more.
    wait_for(page, lambda: "Ends unwatched in" in card.inner_text(), 20, "the card's countdown after Start's tab closed")
    result["card"] = card.inner_text()
    result["title"] = page.title()
    result["announced"] = page.inner_text("#announce")
    page.screenshot(path=os.path.join(shots, "cards.png"))
    result["axeCards"] = audit(page)
    step("audited the card list")
    step("started a desktop")

    card.get_by_role("button", name="Share view-only").click()
    card.get_by_label("Only for these accounts").fill(args.viewer)
    card.get_by_role("button", name="Make a view-only link").click()
    share = wait_for(page, lambda: card.locator(".share input[readonly]").input_value(), 10, "the view-only link")
    result["shareLink"] = share.split("#")[0]
    result["shareLabel"] = card.locator(".share label").first.inner_text()
    step("made a view-only link for the viewer")

    stranger = browser.new_context(viewport={"width": 900, "height": 600})
    outsider = stranger.new_page()
    outsider.goto(share, wait_until="load")
    result["strangerSaw"] = wait_for(outsider, lambda: "named people" in outsider.inner_text("body") and outsider.inner_text("body"),
                                     15, "the refusal of a browser logged in as nobody")[:300]
    stranger.close()
    step("a browser logged in as nobody was refused the named link")

    with owner.expect_page() as opened:
        card.get_by_role("button", name="Open").click()
    desktop = opened.value
    state = desktop_shown(desktop, 30)
    result["desktop"] = {"width": state["width"], "height": state["height"], "colours": state["distinctColours"]}
    type_into(desktop, args.type)
    desktop.wait_for_timeout(1500)
    desktop.screenshot(path=os.path.join(shots, "desktop.png"))
    step("opened the desktop and typed")

    viewer = browser.new_context(viewport={"width": 1100, "height": 800})
    other = viewer.new_page()
    log_in(other, args.url, args.viewer, args.viewer_password)
    wait_for(other, lambda: other.is_visible("#desktops-view"), 20, "the viewer's desktops view")
    other.wait_for_timeout(1000)
    result["viewerCards"] = other.locator("article.card").count()
    step("the viewer sees no card")
    watch = viewer.new_page()
    watch.goto(share, wait_until="load")
    state = desktop_shown(watch, 30)
    result["viewerDesktop"] = {"width": state["width"], "height": state["height"]}
    type_into(watch, args.viewer_type)
    watch.wait_for_timeout(1500)
    watch.screenshot(path=os.path.join(shots, "viewer.png"))
    step("the viewer watched and typed")

    # The owner takes that share back, alone: the viewer's desktop goes.
    card.get_by_role("button", name="Share view-only").click()
    # The owner's own Open is a share too (full control): the viewer's is the one named for them.
    share_item = card.locator(".shares li", has_text="for " + args.viewer)
    listed = wait_for(page, lambda: share_item.count() > 0 and share_item.first.inner_text(), 15, "the share in the card's list")
    result["shareListed"] = listed
    result["sharesListed"] = card.locator(".shares li").count()
    share_item.first.get_by_role("button", name="Take back").click()
    wait_for(watch, lambda: not watch.evaluate(harness.PAGE_STATE)["connected"], 20, "the viewer's desktop to go")
    step("took the share back and the viewer's desktop went")

    page.once("dialog", lambda dialog: dialog.accept())
    card.get_by_role("button", name="End").click()
    ended = page.locator("article.card.ended").first
    wait_for(page, lambda: ended.count() > 0 and "Why" in ended.inner_text(), 30, "the ended card with its reason")
    result["endedCard"] = ended.inner_text()
    page.screenshot(path=os.path.join(shots, "ended.png"))
    step("ended the desktop")

    if args.wait_logout:
        started = time.monotonic()
        wait_for(page, lambda: page.is_visible("#login-view"), args.wait_logout, "the logout for inactivity")
        result["loggedOutAfter"] = round(time.monotonic() - started, 1)
        result["loggedOutMessage"] = page.inner_text("#login-error")
        page.screenshot(path=os.path.join(shots, "logged-out.png"))
        step("logged out for inactivity")


def open_started(browser, args, result, step):
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    page = context.new_page()
    page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"[:300]))
    log_in(page, args.url, args.user, args.password)
    wait_for(page, lambda: page.is_visible("#desktops-view"), 20, "the desktops view")
    step("logged in")
    wait_for(page, lambda: page.locator("#start-desktop option").count() > 0, 10, "the desktops to start")
    result["offered"] = page.locator("#start-desktop option").all_inner_texts()
    page.select_option("#start-desktop", args.desktop)
    # One click: Start opens the desktop in a new tab (the portal's default).
    with context.expect_page() as opened:
        page.click("#start-submit")
    desktop = opened.value
    card = page.locator("article.card:not(.ended)").first
    wait_for(page, lambda: "ready" in card.inner_text(), 40, "a ready card")
    result["card"] = card.inner_text()
    step("started " + args.desktop)
    desktop.on("console", lambda m: result["console"].append(f"desktop {m.type}: {m.text}"[:300]))
    state = desktop_shown(desktop, 30)
    result["desktop"] = {"width": state["width"], "height": state["height"], "colours": state["distinctColours"]}
    type_into(desktop, args.type)
    desktop.wait_for_timeout(1500)
    desktop.screenshot(path=args.screenshot)
    result["connectedAfterTyping"] = desktop.evaluate(harness.PAGE_STATE)["connected"]
    step("opened the desktop and typed")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("flow")
    for name in ["--url", "--user", "--password", "--viewer", "--viewer-password", "--type", "--viewer-type", "--screenshots"]:
        f.add_argument(name, required=True)
    f.add_argument("--wait-logout", type=float, default=0)
    o = sub.add_parser("open")
    for name in ["--url", "--user", "--password", "--desktop", "--type", "--screenshot"]:
        o.add_argument(name, required=True)
    args = parser.parse_args()
    sys.exit(walk(flow if args.command == "flow" else open_started, args))


if __name__ == "__main__":
    main()
