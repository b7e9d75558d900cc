#!/usr/bin/env python3
"""The portal's file view in a real browser; one JSON object on stdout.

    portal_files_in_browser.py --url BASE --user U --password P --files F1 F2 ... --cancel BIG --screenshots DIR

Debian's headless Chromium (Playwright for Python) logs in as U, whose desktop is running,
opens Files on its card, picks F1… in the upload control (they go into the folder the view
opened at, ~/Downloads) and waits for each row to say "Uploaded as …"; uploads F1 again and
takes "Keep both"; starts BIG and cancels it halfway; sorts by size; downloads F1 back through
its Download link (the caller compares the bytes). axe-core audits the open file view.
Screenshots: files.png (the view), uploading.png (an upload in progress)."""

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
