"""Schemathesis hooks for scripts/api-contract.sh: authentication and short long polls.

Loaded with SCHEMATHESIS_HOOKS=contract_hooks (PYTHONPATH set by the script). Reads:
  CONTRACT_BASE_URL      the server under test, http://127.0.0.1:<port>
  CONTRACT_USERNAME      the account the script registered
  CONTRACT_PASSWORD      its password
  CONTRACT_ADMIN_KEY     the server's adminKey
  CONTRACT_SEEDED        the JSON file of ids seed.py printed
"""

import json
import os
import urllib.request
import uuid

import schemathesis
from hypothesis import strategies as st

from seed import request

BASE_URL = os.environ["CONTRACT_BASE_URL"]
USERNAME = os.environ["CONTRACT_USERNAME"]
PASSWORD = os.environ["CONTRACT_PASSWORD"]
ADMIN_KEY = os.environ["CONTRACT_ADMIN_KEY"]
with open(os.environ["CONTRACT_SEEDED"]) as seeded_file:
    SEEDED = json.load(seeded_file)
# The seeded conversation (with a friend) and group (with a member): scopes a call can ring in.
SEEDED_SCOPES = [("conversation", SEEDED["conversation"]), ("group", SEEDED["group"])]

# The longest a generated long poll may hold: the document allows 0-25 s, and the server holds
# an empty poll for all of it, so the suite would spend minutes waiting. Shorter is still valid.
LONGEST_WAIT_SECONDS = 1


def login() -> str:
    """A fresh bearer token for the contract account (a new session each time)."""
    body = json.dumps({"username": USERNAME, "password": PASSWORD}).encode()
    request = urllib.request.Request(
        BASE_URL + "/auth/login", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["token"]


def schemes(case) -> set:
    """The security schemes the operation names (an empty set for public operations)."""
    names = set()
    for requirement in case.operation.definition.raw.get("security", []) or []:
        names.update(requirement.keys())
    return names


# A generated POST /auth/logout ends the cached session: the next request then gets 401, and
# schemathesis (retry_on=[401]) drops the cached token, calls get() again and replays it.
@schemathesis.auth(refresh_interval=3600, retry_on=[401])
class SwitchboardAuth:
    def get(self, case, context):
        return login()

    def set(self, case, token, context):
        wanted = schemes(case)
        if not wanted:
            return
        if case.headers is None:
            case.headers = {}
        case.headers["Authorization"] = f"Bearer {ADMIN_KEY if 'adminKey' in wanted else token}"


def shortened(value):
    """A valid `wait` made at most LONGEST_WAIT_SECONDS; anything invalid is left as generated."""
    if isinstance(value, list):
        return [shortened(item) for item in value]
    if isinstance(value, bool):
        return value
    text = str(value)
    if text.isascii() and text.isdigit() and len(text) <= 2 and int(text) <= 25:
        return min(int(text), LONGEST_WAIT_SECONDS)
    return value


@schemathesis.hook("before_call")
def shorten_long_polls(context, case, kwargs):
    """Gives every generated GET /events a short `wait`, right before it is sent (whichever phase
    made the case), so an empty long poll answers within LONGEST_WAIT_SECONDS."""
    operation = case.operation
    if operation.method.upper() != "GET" or operation.path != "/events":
        return
    query = dict(case.query or {})
    query["wait"] = shortened(query["wait"]) if "wait" in query else LONGEST_WAIT_SECONDS
    case.query = query


def with_seeded_scope(values):
    """`values` as generated, or with the scope swapped for a seeded one, so that calls really
    start and the call routes get real calls to work on. Only a valid scope is swapped (for
    another valid one), so a case stays as valid or invalid as it was generated."""
    if not isinstance(values, dict) or values.get("scopeKind") not in ("conversation", "group"):
        return st.just(values)
    if not isinstance(values.get("scopeId"), str) or not values["scopeId"]:
        return st.just(values)
    swapped = [{**values, "scopeKind": kind, "scopeId": scope} for kind, scope in SEEDED_SCOPES]
    return st.sampled_from([values, *swapped])


@schemathesis.hook
def flatmap_body(context, body):
    operation = context.operation
    if operation is not None and operation.method.upper() == "POST" and operation.path == "/calls":
        return with_seeded_scope(body)
    return st.just(body)


@schemathesis.hook
def flatmap_query(context, query):
    operation = context.operation
    if operation is not None and operation.path in ("/calls/current", "/calls/history"):
        return with_seeded_scope(query)
    return st.just(query)


# Placeholders some generated cases carry instead of an id; before_call swaps them for a call
# that rings the contract account, or a friend request sent to it, made just then. Without them
# no generated request could answer a call or a friend request: the account is always the
# caller or the sender of what it made itself.
INCOMING_CALL = "incoming-call"
INCOMING_REQUEST = "incoming-friend-request"


def placeholder_for(operation):
    if operation.path == "/calls/{id}" or operation.path.startswith("/calls/{id}/"):
        return INCOMING_CALL
    if operation.path in ("/friend-requests/{id}/accept", "/friend-requests/{id}/decline"):
        return INCOMING_REQUEST
    return None


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    placeholder = placeholder_for(context.operation) if context.operation is not None else None
    if placeholder is None or not isinstance(path_parameters, dict) or not isinstance(path_parameters.get("id"), str):
        return st.just(path_parameters)
    return st.sampled_from([path_parameters, {**path_parameters, "id": placeholder}])


class Caller:
    """A peer of the contract account who rings it in a group of their own, so nothing the
    fuzzer does to the account's seeded group, friends or blocks stops the next ring (a new
    peer takes over when this one cannot call any more)."""

    token = None
    group = None

    @classmethod
    def start_over(cls):
        cls.token = cls.group = None
        name = "caller-" + uuid.uuid4().hex[:12]
        body = {"username": name, "password": PASSWORD, "displayName": name}
        status, session = request(BASE_URL, "POST", "/auth/register", body)
        if status != 201:
            return
        status, sent = request(BASE_URL, "POST", "/friend-requests", {"userId": SEEDED["contract"]}, token=session["token"])
        if status != 201:
            return
        status, _ = request(BASE_URL, "POST", f"/friend-requests/{sent['id']}/accept", token=login())
        if status != 200:
            return
        group_body = {"name": f"{name}'s group", "memberIds": [SEEDED["contract"]]}
        status, group = request(BASE_URL, "POST", "/groups", group_body, token=session["token"])
        if status == 201:
            cls.token, cls.group = session["token"], group["id"]

    @classmethod
    def ring(cls):
        """The live call of the caller's group, started now (ringing the contract account) when
        there is none; None when no call could be started."""
        for _ in range(2):
            if cls.group is None:
                cls.start_over()
                continue
            status, current = request(BASE_URL, "GET", f"/calls/current?scopeKind=group&scopeId={cls.group}", token=cls.token)
            if status == 200 and current is not None:
                return current["id"]
            body = {"scopeKind": "group", "scopeId": cls.group, "mode": "video", "clientId": str(uuid.uuid4())}
            status, call = request(BASE_URL, "POST", "/calls", body, token=cls.token)
            if status == 201 and call["state"] == "ringing":
                return call["id"]
            cls.start_over()
        return None


def incoming_friend_request():
    """A friend request to the contract account from a user registered just now."""
    name = "peer-" + uuid.uuid4().hex[:12]
    status, session = request(BASE_URL, "POST", "/auth/register", {"username": name, "password": PASSWORD, "displayName": name})
    if status != 201:
        return None
    status, sent = request(BASE_URL, "POST", "/friend-requests", {"userId": SEEDED["contract"]}, token=session["token"])
    return sent["id"] if status == 201 else None


@schemathesis.hook("before_call")
def resolve_placeholders(context, case, kwargs):
    makers = {INCOMING_CALL: Caller.ring, INCOMING_REQUEST: incoming_friend_request}
    placeholder = (case.path_parameters or {}).get("id")
    if placeholder in makers:
        # A made-up id (404) when nothing could be made: still a valid request.
        case.path_parameters = {**case.path_parameters, "id": makers[placeholder]() or str(uuid.uuid4())}
