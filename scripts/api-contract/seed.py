"""Seeds the server under test for scripts/api-contract.sh, so that schemathesis finds real
resources to read, change and link between, not only unknown ids.

Usage: seed.py BASE_URL USERNAME PASSWORD

Creates the contract account USERNAME and three more: a friend (a conversation with messages
both ways), a group owned by the contract account with the friend in it (with a message), and a
stranger whose friend request to the contract account is still pending. Prints the ids of what
it made as one JSON object; exits non-zero, saying which step failed, otherwise.
"""

import json
import sys
import urllib.error
import urllib.request


def request(base, method, path, body=None, token=None, extra_headers=None):
    """(status, decoded JSON body or None) of one request."""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    headers.update(extra_headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    prepared = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(prepared, timeout=10) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    return status, (json.loads(text) if text else None)


def call(base, method, path, body=None, token=None):
    """The decoded answer of a request that must succeed; exits saying what failed otherwise."""
    status, answer = request(base, method, path, body, token)
    if not 200 <= status < 300:
        sys.exit(f"seed: {method} {path} answered {status}: {answer}")
    return answer


def main():
    base, username, password = sys.argv[1:4]

    def register(name, secret):
        return call(base, "POST", "/auth/register", {"username": name, "password": secret, "displayName": name.title()})

    me = register(username, password)
    friend = register(username + "-friend", password)
    stranger = register(username + "-stranger", password)
    token, friend_token = me["token"], friend["token"]

    request = call(base, "POST", "/friend-requests", {"userId": me["user"]["id"]}, token=friend_token)
    conversation = call(base, "POST", f"/friend-requests/{request['id']}/accept", token=token)["conversationId"]
    for text, sender in [("hello", token), ("hi there", friend_token), ("how are you?", token)]:
        call(base, "POST", f"/conversations/{conversation}/messages", {"text": text}, token=sender)

    group = call(base, "POST", "/groups", {"name": "Seeded group", "memberIds": [friend["user"]["id"]]}, token=token)
    call(base, "POST", f"/groups/{group['id']}/messages", {"text": "welcome"}, token=friend_token)

    call(base, "POST", "/friend-requests", {"userId": me["user"]["id"]}, token=stranger["token"])
    print(json.dumps({
        "conversation": conversation, "group": group["id"], "friend": friend["user"]["id"], "friendToken": friend_token,
        "contract": me["user"]["id"],
    }))


if __name__ == "__main__":
    main()
