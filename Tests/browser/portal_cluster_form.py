#!/usr/bin/env python3
"""The portal's cluster start form and a cluster desktop's card, in a real browser; one JSON object
on stdout. Run by PortalTests against a deskd whose [slurm] commands are a stand-in Slurm (shell
scripts: sinfo offers partitions, sbatch takes the job, squeue shows it running with its time
left, scontrol takes an extension), so the page's own behaviour is what is looked at.

    portal_cluster_form.py --url BASE --user U --password P --screenshots DIR

As U: logs in, chooses the cluster, partition "short" (MaxTime 0:30:00) and a time of 1:00:00
(the page must refuse it at the field, sending nothing), then 0:20:00 and 2 cores, starts; waits
for the card's job, node and time left; presses Extend and reads the time left again. Screenshots:
cluster-form.png, cluster-card.png.
"""

import argparse
import json
import os
import sys

# portal_in_browser runs this script again in the test venv (Playwright's) when it is not there.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from portal_in_browser import audit, harness, log_in, sync_playwright, wait_for  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    for name in ["--url", "--user", "--password", "--screenshots"]:
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    result = {"steps": [], "error": None}
    step = result["steps"].append
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=harness.CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_context(viewport={"width": 1100, "height": 900}, bypass_csp=True).new_page()
            log_in(page, args.url, args.user, args.password)
            wait_for(page, lambda: page.is_visible("#start-where-row"), 20, "the cluster choice in the start form")
            page.select_option("#start-where", "cluster")
            wait_for(page, lambda: page.is_visible("#cluster-fields"), 5, "the cluster's fields")
            result["partitions"] = page.locator("#start-partition option").all_inner_texts()
            page.select_option("#start-partition", "short")
            result["timeHint"] = page.inner_text("#start-time-hint")
            result["gpusShown"] = page.is_visible("#start-gpus-row")
            page.fill("#start-time", "1:00:00")
            page.click("#start-submit")
            result["tooLong"] = wait_for(page, lambda: page.inner_text("#desktops-error").strip(), 5, "the refusal at the field")
            result["tooLongInvalid"] = page.get_attribute("#start-time", "aria-invalid")
            result["cardsAfterRefusal"] = page.locator("article.card").count()
            result["axeForm"] = audit(page)
            page.screenshot(path=os.path.join(args.screenshots, "cluster-form.png"), full_page=True)
            step("the form refused a time over the partition's")

            page.fill("#start-time", "0:20:00")
            page.fill("#start-cores", "2")
            page.click("#start-submit")
            # The start answers once the job runs or [slurm] start_wait has passed.
            wait_for(page, lambda: page.is_enabled("#start-submit") and "started" in page.inner_text("#announce"), 30, "the start's answer")
            card = page.locator("article.card").first
            wait_for(page, lambda: card.count() > 0 and "Time left" in card.inner_text(), 30, "the cluster desktop's card with its time left")
            result["card"] = card.inner_text()
            before = card.locator(".time-left").inner_text()
            step("started on the cluster")
            grown = lambda: card.locator(".time-left").inner_text().startswith("4") or "h" in card.locator(".time-left").inner_text()  # noqa: E731
            card.get_by_role("button", name="Extend 30 min").click()
            try:
                wait_for(page, lambda: "longer" in page.inner_text("#announce") or grown(), 5, "the extension's answer")
            except TimeoutError:
                # The live updates redrew the card under the click (a loaded machine): the click
                # went to a button no longer in the page, and nothing was asked. Once more, on
                # the card as it is now.
                result["clickedAgain"] = True
                card.get_by_role("button", name="Extend 30 min").click()
            wait_for(page, grown, 15, "the time left to grow")
            result["timeLeft"] = [before, card.locator(".time-left").inner_text()]
            result["announced"] = page.inner_text("#announce")
            page.screenshot(path=os.path.join(args.screenshots, "cluster-card.png"), full_page=True)
            step("extended")
        except Exception as error:  # reported, not raised
            result["error"] = f"{type(error).__name__}: {error}"[:600]
        finally:
            browser.close()
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    sys.exit(1 if result["error"] else 0)


if __name__ == "__main__":
    main()
