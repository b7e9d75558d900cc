#!/usr/bin/env python3
"""The portal's file view in a real browser; one JSON object on stdout.

    portal_files_in_browser.py --url BASE --user U --password P --files F1 F2 ... --cancel BIG --screenshots DIR

Debian's headless Chromium (Playwright for Python) logs in as U, whose desktop is running,
opens Files on its card, picks F1… in the upload control (they go into the folder the view
opened at, ~/Downloads) and waits for each row to say "Uploaded as …"; uploads F1 again and
takes "Keep both"; starts BIG and cancels it halfway; sorts by size; downloads F1 back through
its Download link (the caller compares the bytes). axe-core audits the open file view.
Screenshots: files.png (the view), uploading.png (an upload in progress).

Then the desktop's own page (noVNC, opened with the card's Open): files dropped on it (a real
drop event with a DataTransfer of File objects made in the page) go into the upload folder,
with the page's overlay saying so; the same name dropped again is asked about and replaced; a
name the portal refuses shows its sentence. axe-core audits the overlay. A view-only link's
page, and pages that name the desktop without its owner's login, offer no drop at all.
Screenshots: desktop-drop-hint.png (files dragged over the page), desktop-drop-uploading.png
(an upload under way, when one was caught), desktop-drop.png (the overlay at the end).
"Dropped" holds each dropped file's SHA-256 for the caller to compare with what is on disk."""

import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import portal_in_browser as portal  # noqa: E402  (re-runs this script in the test venv when needed)


def files_walk(browser, args, result, step):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, bypass_csp=True, accept_downloads=True)
    page = context.new_page()
    page.on("console", lambda m: result["console"].append(f"{m.type}: {m.text}"[:300]))
    page.on("pageerror", lambda e: result["console"].append(f"pageerror: {e}"[:300]))
    portal.log_in(page, args.url, args.user, args.password)
    portal.wait_for(page, lambda: page.locator("article.card button.files").count() > 0, 30, "a card with Files")
    step("logged in")
    page.locator("article.card button.files").first.click()
    portal.wait_for(page, lambda: page.is_visible("#files-view"), 10, "the file view")
    portal.wait_for(page, lambda: any(w in page.inner_text("#files-status") for w in ("entries", "entry", "does not exist yet")), 10, "the first listing")
    result["openedAt"] = page.inner_text("#files-path")
    result["openedStatus"] = page.inner_text("#files-status")
    step("opened the file view")

    page.set_input_files("#files-input", args.files)
    names = [os.path.basename(f) for f in args.files]
    shot = False
    started = time.monotonic()

    def statuses():
        return {n: page.locator(f"#files-uploads li.upload[data-name='{n}'] .upload-status").first.inner_text() for n in names}

    def all_done():
        nonlocal shot
        now = statuses()
        if not shot and any("MB/s" in s for s in now.values()):
            page.screenshot(path=os.path.join(args.screenshots, "uploading.png"))
            shot = True
        return now if all("Uploaded as" in s or "failed" in s.lower() for s in now.values()) else None
    result["uploaded"] = portal.wait_for(page, all_done, 600, "the uploads")
    result["uploadSeconds"] = time.monotonic() - started
    result["uploadingShot"] = shot
    step("uploaded")

    # The same name again: the page asks, and Keep both makes a copy.
    page.set_input_files("#files-input", [args.files[0]])
    again = page.locator(f"#files-uploads li.upload[data-name='{names[0]}']").last
    portal.wait_for(page, lambda: again.locator(".keep-both").count() > 0, 20, "the question about a taken name")
    result["askedAbout"] = again.locator(".upload-status").inner_text()
    again.locator(".keep-both").click()
    result["keptBoth"] = portal.wait_for(page, lambda: "Uploaded as" in again.locator(".upload-status").inner_text() and again.locator(".upload-status").inner_text(), 30, "keep both")
    step("kept both")

    # A large upload, cancelled once it is under way.
    page.set_input_files("#files-input", [args.cancel])
    big = page.locator(f"#files-uploads li.upload[data-name='{os.path.basename(args.cancel)}']").last
    portal.wait_for(page, lambda: "MB/s" in big.locator(".upload-status").inner_text(), 60, "the large upload under way")
    big.locator(".cancel").click()
    result["cancelled"] = portal.wait_for(page, lambda: "Cancelled" in big.locator(".upload-status").inner_text() and big.locator(".upload-status").inner_text(), 20, "the cancel")
    step("cancelled one")

    page.locator("#files-table th[data-sort='size'] button").click()
    page.wait_for_timeout(300)
    result["sortedBySize"] = page.locator("#files-table th[data-sort='size']").get_attribute("aria-sort")
    result["rows"] = page.locator("#files-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.name)")
    page.screenshot(path=os.path.join(args.screenshots, "files.png"))
    result["axeFiles"] = portal.audit(page)
    step("audited the file view")

    with page.expect_download(timeout=60000) as waiting:
        page.locator(f"#files-table tbody tr[data-name='{names[0]}'] a").click()
    download = waiting.value
    target = os.path.join(args.screenshots, "downloaded-" + names[0])
    download.save_as(target)
    result["downloaded"] = target
    step("downloaded one back")

    desktop_drop_walk(browser, context, page, args, result, step)


# Files made in the page and dropped on it: a DataTransfer of File objects, and the drag's
# events dispatched on noVNC's canvas as the browser would (dragenter, dragover, then drop
# unless only hovering). Each file is {name, text} or {name, megabytes} (a 1 MiB pattern
# repeated). Whether the page cancelled each event (as a drop target does) is returned.
DROP = """([files, drop]) => {
    const pattern = new Uint8Array(1 << 20);
    for (let i = 0; i < pattern.length; i++) pattern[i] = (i * 7 + 3) & 255;
    const transfer = new DataTransfer();
    for (const f of files) {
        const parts = f.text !== undefined ? [f.text] : Array(f.megabytes).fill(pattern);
        transfer.items.add(new File(parts, f.name, { type: 'application/octet-stream' }));
    }
    const target = document.querySelector('#noVNC_container canvas') || document.body;
    const box = target.getBoundingClientRect();
    const at = { clientX: box.left + box.width / 2, clientY: box.top + box.height / 2 };
    const cancelled = {};
    for (const type of drop ? ['dragenter', 'dragover', 'drop'] : ['dragenter', 'dragover']) {
        const event = new DragEvent(type, Object.assign({ bubbles: true, cancelable: true, composed: true, dataTransfer: transfer }, at));
        cancelled[type] = !target.dispatchEvent(event);
    }
    return cancelled;
}"""


def pattern_sha256(megabytes):
    chunk = bytes((i * 7 + 3) & 255 for i in range(1 << 20))
    digest = hashlib.sha256()
    for _ in range(megabytes):
        digest.update(chunk)
    return digest.hexdigest()


def drop_state(page):
    return page.evaluate("""() => ({
        offer: document.documentElement.dataset.deskdDrop || null,
        hint: !!document.getElementById('deskd-drop-hint') && getComputedStyle(document.getElementById('deskd-drop-hint')).display !== 'none',
        overlay: !!document.getElementById('deskd-drop'),
    })""")


def desktop_drop_walk(browser, context, page, args, result, step):
    shots = args.screenshots
    page.locator("#files-close").click()
    card = page.locator("article.card:not(.ended)").first
    with context.expect_page() as opened:
        card.get_by_role("button", name="Open").click()
    desktop = opened.value
    desktop.on("console", lambda m: result["console"].append(f"desktop {m.type}: {m.text}"[:300]))
    desktop.on("pageerror", lambda e: result["console"].append(f"desktop pageerror: {e}"[:300]))
    portal.desktop_shown(desktop, 30)
    session = desktop.evaluate("() => new URLSearchParams(location.hash.slice(1)).get('deskd_session')")
    result["desktopSession"] = session
    result["desktopOffer"] = portal.wait_for(desktop, lambda: desktop.evaluate("() => document.documentElement.dataset.deskdDrop") in ("offered", "off")
                                             and desktop.evaluate("() => document.documentElement.dataset.deskdDrop"), 15, "the drop's check")
    step("opened the desktop's page from the card")

    # Dragged over: the page says where a drop goes.
    desktop.evaluate(DROP, [[{"name": "hover.txt", "text": "x"}], False])
    result["dropHint"] = portal.wait_for(desktop, lambda: desktop.is_visible("#deskd-drop-hint") and desktop.inner_text("#deskd-drop-hint"), 5, "the drop hint")
    desktop.screenshot(path=os.path.join(shots, "desktop-drop-hint.png"))
    step("the page offered the drop")

    note, big, bad = "desk note.txt", "desk big.bin", ".."
    first, second = "dropped on the desktop\n", "dropped again, replacing it\n"
    cancelled = desktop.evaluate(DROP, [[{"name": note, "text": first}, {"name": big, "megabytes": 256}, {"name": bad, "text": "no"}], True])
    result["dropCancelled"] = cancelled

    def status(name):
        return desktop.locator(f"#deskd-drop li.upload[data-name='{name}'] .upload-status").last.inner_text()
    shot = False

    def all_done():
        nonlocal shot
        now = {n: status(n) for n in (note, big, bad)}
        if not shot and "MB/s" in now[big]:
            desktop.screenshot(path=os.path.join(shots, "desktop-drop-uploading.png"))
            shot = True
        if not all(desktop.locator(f"#deskd-drop li.upload[data-name='{n}']").last.evaluate("r => r.classList.contains('done')")
                   for n in (note, big, bad)):
            return None
        # Read again once every row is done: a row may have finished since `now` was read.
        return {n: status(n) for n in (note, big, bad)}
    result["dropped"] = portal.wait_for(desktop, all_done, 300, "the dropped files' uploads")
    result["dropUploadingShot"] = shot
    result["dropHintAfter"] = drop_state(desktop)["hint"]
    step("dropped three files on the desktop's page")

    # The same name again: asked about, and replaced.
    desktop.evaluate(DROP, [[{"name": note, "text": second}], True])
    again = desktop.locator(f"#deskd-drop li.upload[data-name='{note}']").last
    portal.wait_for(desktop, lambda: again.locator(".replace").count() > 0, 20, "the question about a taken name on the desktop's page")
    result["dropAskedAbout"] = again.locator(".upload-status").inner_text()
    result["dropAskButtons"] = again.locator("button").all_inner_texts()
    again.locator(".replace").click()
    result["dropReplaced"] = portal.wait_for(desktop, lambda: "Uploaded as" in again.locator(".upload-status").inner_text()
                                             and again.locator(".upload-status").inner_text(), 30, "the replace")
    desktop.wait_for_timeout(300)
    desktop.screenshot(path=os.path.join(shots, "desktop-drop.png"))
    from axe_playwright_python.sync_playwright import Axe
    audit = Axe().run(desktop, context="#deskd-drop")
    result["axeDrop"] = [{"id": v["id"], "impact": v.get("impact"), "nodes": len(v.get("nodes", [])), "help": v.get("help")}
                         for v in audit.response.get("violations", []) if v.get("impact") in ("serious", "critical")]
    result["dropOverlay"] = desktop.inner_text("#deskd-drop")
    result["dropExpected"] = {note: hashlib.sha256(second.encode()).hexdigest(), big: pattern_sha256(256)}
    step("replaced one on the desktop's page and audited the overlay")

    # No drop for anyone else: a view-only link's page, ...
    card.get_by_role("button", name="Share view-only").click()
    card.get_by_role("button", name="Make a view-only link").click()
    share = portal.wait_for(page, lambda: card.locator(".share input[readonly]").input_value(), 10, "the view-only link")
    stranger = browser.new_context(viewport={"width": 1000, "height": 700})
    viewer = stranger.new_page()
    viewer.goto(share, wait_until="load")
    portal.desktop_shown(viewer, 30)
    portal.wait_for(viewer, lambda: drop_state(viewer)["offer"] == "off", 10, "the view-only page's drop check")
    refused = {"viewOnly": dict(drop_state(viewer), cancelled=viewer.evaluate(DROP, [[{"name": "not-mine.txt", "text": "no"}], True]))}
    # ... the page naming the desktop, in a browser logged in as nobody (deskd refuses its listing), ...
    viewer.goto(args.url + "/vnc.html#deskd_session=" + session, wait_until="load")
    portal.wait_for(viewer, lambda: drop_state(viewer)["offer"] == "off", 10, "the stranger's drop check")
    refused["stranger"] = dict(drop_state(viewer), cancelled=viewer.evaluate(DROP, [[{"name": "not-mine.txt", "text": "no"}], True]))
    stranger.close()
    # ... and a view-only page in the owner's own browser.
    own = context.new_page()
    own.goto(args.url + "/vnc.html#view_only=1&deskd_session=" + session, wait_until="load")
    portal.wait_for(own, lambda: drop_state(own)["offer"] == "off", 10, "the owner's view-only drop check")
    refused["ownViewOnly"] = dict(drop_state(own), cancelled=own.evaluate(DROP, [[{"name": "not-mine.txt", "text": "no"}], True]))
    own.close()
    result["dropRefused"] = refused
    step("no drop offered to a view-only link, a stranger or a view-only page")


def main():
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--files", nargs="+", required=True)
    parser.add_argument("--cancel", required=True)
    parser.add_argument("--screenshots", required=True)
    return portal.walk(files_walk, parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
