#!/usr/bin/env python3
"""The browser SDK's event feed: when `/events/stream` cannot be had (blocked here through the
browser's DevTools), the feed falls back to the long poll and the page still rings; when the
network comes back after going away, it streams again from where it was (Last-Event-ID) and
the page rings again.

usage: feed_test.py SWITCHBOARD_BINARY OUT_DIR
"""

import os
import sys
import tempfile
import uuid

from selenium.webdriver.common.by import By

from browser_support import Server, api, browser, register, stage, wait_for


def ring(base, caller, conversation):
    return api(base, "POST", "/calls", {"scopeKind": "conversation", "scopeId": conversation, "mode": "audio",
                                        "clientId": str(uuid.uuid4())}, caller["token"])


def main():
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="switchboard-feed-")
    server = Server(binary, work, out)
    base = server.base
    driver = None
    try:
        alice, bob = register(base, "alice"), register(base, "bob")
        request = api(base, "POST", "/friend-requests", {"username": "bob"}, alice["token"])
        api(base, "POST", f"/friend-requests/{request['id']}/accept", None, bob["token"])
        conversation = api(base, "GET", "/friends", None, bob["token"])[0]["conversationId"]

        driver = browser(os.devnull)
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/events/stream*"]})
        driver.get(base + "/app/")
        wait_for("the sign-in form", lambda: driver.find_element(By.NAME, "username").is_displayed())
        driver.find_element(By.NAME, "username").send_keys("alice")
        driver.find_element(By.NAME, "password").send_keys("alice-password")
        driver.find_element(By.ID, "signin-submit").click()
        # Three failed streams (3 s, 6 s and 12 s apart), then the long poll.
        wait_for("the long poll", lambda: driver.find_element(By.ID, "connection").text == "polling", limit=90)
        call = ring(base, bob, conversation)
        wait_for("a ring through the long poll", lambda: stage(driver) == "ringing")
        api(base, "POST", f"/calls/{call['id']}/cancel", None, bob["token"])
        wait_for("the cancel through the long poll", lambda: stage(driver) in (None, "ended"))
        print("feed: without the stream, the long poll carried a ring and its cancel")

        # The stream again, then the network goes away and comes back: it resumes and rings.
        driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        driver.refresh()
        wait_for("the stream", lambda: driver.find_element(By.ID, "connection").text == "streaming")
        driver.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
        wait_for("the stream lost", lambda: driver.find_element(By.ID, "connection").text != "streaming")
        call = ring(base, bob, conversation)  # happens while the page is offline
        driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=-1)
        wait_for("the stream back", lambda: driver.find_element(By.ID, "connection").text == "streaming", limit=90)
        wait_for("the ring that came while offline", lambda: stage(driver) == "ringing")
        api(base, "POST", f"/calls/{call['id']}/cancel", None, bob["token"])
        wait_for("its cancel", lambda: stage(driver) in (None, "ended"))
        driver.save_screenshot(os.path.join(out, "feed-resumed.png"))
        print("feed: after the network came back, the stream resumed and delivered what happened meanwhile")
    finally:
        if driver:
            driver.quit()
        server.stop()


if __name__ == "__main__":
    main()
