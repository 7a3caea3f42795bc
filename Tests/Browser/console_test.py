#!/usr/bin/env python3
"""The operator console at /console/ in a real browser: a ring to an invalid VoIP token fails
at the push service, and the console shows that failure with its reason, the call in its
charts, and the user's device with its last failure.

The push service is `switchboard-dev push-emulator` (cleartext HTTP/2 on loopback) told to
answer every push 400 BadDeviceToken; the server sends its APNs pushes there.

usage: console_test.py SWITCHBOARD_BINARY OUT_DIR   (switchboard-dev beside the binary)
"""

import json
import os
import subprocess
import sys
import tempfile
import uuid

from selenium.webdriver.common.by import By

from browser_support import Server, api, browser, register, wait_for

ADMIN_KEY = "console-test-admin-key-0123"


def main():
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="switchboard-console-")
    key = os.path.join(work, "AuthKey.p8")
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key],
                   check=True, capture_output=True)
    faults = os.path.join(work, "faults.json")
    with open(faults, "w") as handle:
        json.dump({"faults": [{"kind": "badDeviceToken"}]}, handle)
    emulator = subprocess.Popen(
        [os.path.join(os.path.dirname(binary), "switchboard-dev"), "push-emulator", "--listen", "127.0.0.1:0",
         "--faults", faults],
        stdout=subprocess.PIPE, stderr=open(os.path.join(out, "emulator.log"), "w"), text=True)
    server = None
    driver = None
    try:
        address = json.loads(emulator.stdout.readline())["address"]
        server = Server(binary, work, out, env={
            "SWITCHBOARD_ADMIN_KEY": ADMIN_KEY,
            "SWITCHBOARD_APNS_TEAM_ID": "TEAM123456",
            "SWITCHBOARD_APNS_KEY_ID": "KEY1234567",
            "SWITCHBOARD_APNS_KEY_FILE": key,
            "SWITCHBOARD_APNS_SANDBOX_URL": f"http://{address}",
            "SWITCHBOARD_APNS_PRODUCTION_URL": f"http://{address}",
        })
        base = server.base
        alice, bob = register(base, "alice"), register(base, "bob")
        request = api(base, "POST", "/friend-requests", {"username": "bob"}, alice["token"])
        api(base, "POST", f"/friend-requests/{request['id']}/accept", None, bob["token"])
        token = "ab" * 32
        api(base, "POST", "/voip/devices",
            {"deviceId": str(uuid.uuid4()), "pushToken": token, "environment": "sandbox"}, bob["token"])
        conversation = api(base, "GET", "/friends", None, alice["token"])[0]["conversationId"]
        call = api(base, "POST", "/calls",
                   {"scopeKind": "conversation", "scopeId": conversation, "mode": "audio",
                    "clientId": str(uuid.uuid4())}, alice["token"])
        wait_for("the ring's failure", lambda: api(
            base, "GET", "/admin/push/status", None, ADMIN_KEY)["newestFailures"])

        driver = browser(os.devnull)
        driver.get(base + "/console/")
        wait_for("the key form", lambda: driver.find_element(By.NAME, "key").is_displayed())
        driver.find_element(By.NAME, "key").send_keys(ADMIN_KEY)
        driver.find_element(By.CSS_SELECTOR, "#key-form button").click()
        failures = wait_for("the failure in the console", lambda: [
            row.text for row in driver.find_elements(By.CSS_SELECTOR, "#push-failures tbody tr")
            if "BadDeviceToken" in row.text])
        assert token[-8:] in failures[0] or "…" in failures[0], failures
        # The call is live (it still rings), and drawn in the calls-per-minute chart.
        wait_for("the live call", lambda: call["id"][:8] in driver.find_element(By.ID, "live-calls").text)
        wait_for("a bar for the call", lambda: driver.find_elements(By.CSS_SELECTOR, "#chart-calls rect.bar"))
        channels = driver.find_element(By.ID, "push-channels").text
        assert "ios-voip" in channels, channels
        # The user's device, with its last failure.
        driver.find_element(By.NAME, "userId").send_keys(bob["user"]["id"])
        driver.find_element(By.CSS_SELECTOR, "#devices-form button").click()
        wait_for("Bob's device", lambda: "BadDeviceToken" in driver.find_element(By.ID, "devices").text
                 or "ios-voip" in driver.find_element(By.ID, "devices").text)
        driver.save_screenshot(os.path.join(out, "console.png"))
        print(f"console: the push failure shows with its reason: {failures[0]}")
    finally:
        if driver:
            driver.quit()
        if server:
            server.stop()
        emulator.terminate()
        try:
            emulator.wait(timeout=10)
        except subprocess.TimeoutExpired:
            emulator.kill()


if __name__ == "__main__":
    main()
