"""Schemathesis hooks for scripts/api-contract.sh: signing in (and again after a generated
logout), event reads that answer at once, and real calls and friend requests to work on.

Loaded with SCHEMATHESIS_HOOKS=contract_hooks (PYTHONPATH set by the script). Reads:
  CONTRACT_BASE_URL      the server under test, http://127.0.0.1:<port>
  CONTRACT_USERNAME      the account the script registered
  CONTRACT_PASSWORD      its password
  CONTRACT_ADMIN_KEY     the server's adminKey
  CONTRACT_SEEDED        the JSON file of ids seed.py printed
"""

import json
import os
import secrets
import uuid
from datetime import datetime, timedelta, timezone

import jsonschema_rs
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
    # The generated logins fail by the thousand from 127.0.0.1, and the server throttles failed
    # logins per client address: this one comes from another client (the server trusts
    # X-Forwarded-For from loopback), as a user's own phone elsewhere would.
    status, session = request(
        BASE_URL, "POST", "/auth/login", {"username": USERNAME, "password": PASSWORD},
        extra_headers={"X-Forwarded-For": "192.0.2.250"})
    if status != 200:
        raise RuntimeError(f"cannot sign in as {USERNAME}: {status} {session}")
    return session["token"]


def schemes(case) -> set:
    """The security schemes the operation names (an empty set for public operations)."""
    names = set()
    for requirement in case.operation.definition.raw.get("security", []) or []:
        names.update(requirement.keys())
    return names


# The token all cases share, as get() last made it (keep_devices_apart keeps logouts off it).
SHARED_SESSION = {"token": None}


# Should the cached session end all the same, the next request gets 401, and schemathesis
# (retry_on=[401]) drops the cached token, calls get() again and replays it.
@schemathesis.auth(refresh_interval=3600, retry_on=[401])
class SwitchboardAuth:
    def get(self, case, context):
        SHARED_SESSION["token"] = login()
        return SHARED_SESSION["token"]

    def set(self, case, token, context):
        wanted = schemes(case)
        if not wanted:
            return
        if case.headers is None:
            case.headers = {}
        case.headers["Authorization"] = f"Bearer {ADMIN_KEY if 'adminKey' in wanted else token}"


def is_cursor(value):
    """Whether `value` is sent as a valid event cursor (digits, at most 2^53 - 1)."""
    text = str(value)
    return not isinstance(value, bool) and text.isascii() and text.isdigit() and len(text) <= 16 and int(text) <= 2**53 - 1


def shortened(value):
    """A valid `wait` made at most LONGEST_WAIT_SECONDS; anything invalid is left as generated."""
    if isinstance(value, list):
        return [shortened(item) for item in value]
    if not isinstance(value, bool) and is_cursor(value) and len(str(value)) <= 2 and int(str(value)) <= 25:
        return min(int(str(value)), LONGEST_WAIT_SECONDS)
    return value


def newest_event_id(case):
    """The newest event id of the account the case is signed in as (0 when unknown)."""
    authorization = (case.headers or {}).get("Authorization", "")
    if not authorization.startswith("Bearer "):
        return 0
    status, me = request(BASE_URL, "GET", "/me", token=authorization[len("Bearer "):])
    return me["eventCursor"] if status == 200 else 0


@schemathesis.hook("before_call")
def keep_event_reads_short(context, case, kwargs):
    """Right before a generated POST /calls/{id}/media-token is sent, a valid `wait` is capped
    at LONGEST_WAIT_SECONDS as well. Right before a generated GET /events or /events/stream is sent (whichever phase made it):
    a valid cursor is moved back to just before the account's newest event, so there is always
    an event to answer with at once, and a valid `wait` is capped at LONGEST_WAIT_SECONDS.
    Without this a long poll holds up to 25 s and a stream sends nothing but heartbeats until
    the read gives up, and a busy machine turns that into timeouts. Valid values stay valid and
    invalid ones stay as generated, so each case tests what it was generated to test."""
    operation = case.operation
    if operation.method.upper() == "POST" and operation.path == "/calls/{id}/media-token":
        # The caller's held token request holds while its call rings (up to the ring timeout).
        if case.query and "wait" in case.query:
            case.query = {**case.query, "wait": shortened(case.query["wait"])}
        return
    if operation.method.upper() == "GET" and operation.path in ("/e2ee/conversations/{id}/events", "/e2ee/groups/{id}/events"):
        # `after` may not pass the device's newest sequence (it would acknowledge items not
        # written yet), which the schema cannot say: a valid one becomes 0, valid for any device.
        if case.query and "after" in case.query and is_cursor(case.query["after"]):
            case.query = {**case.query, "after": 0}
        return
    if operation.method.upper() != "GET" or operation.path not in ("/events", "/events/stream"):
        return
    query = dict(case.query or {})
    newest = newest_event_id(case)
    if newest > 0 and "after" in query and is_cursor(query["after"]):
        query["after"] = min(int(str(query["after"])), newest - 1)
    if operation.path == "/events":
        query["wait"] = shortened(query["wait"]) if "wait" in query else LONGEST_WAIT_SECONDS
    case.query = query
    resume = (case.headers or {}).get("Last-Event-ID")
    if newest > 0 and resume is not None and is_cursor(resume):
        case.headers["Last-Event-ID"] = str(min(int(str(resume)), newest - 1))


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


# A date-time as the document's format has it (what the fuzzer drew as valid).
IS_DATE_TIME = jsonschema_rs.Draft202012Validator({"type": "string", "format": "date-time"}, validate_formats=True).is_valid


def in_the_coming_year(body):
    """`body` with its valid `startsAt` moved to a moment the server takes: the fuzzer draws
    date-times from years 1 to 9999, and a start must lie in the coming year by the server's
    clock (a rule JSON Schema cannot say). An invalid `startsAt` stays as drawn."""
    if not isinstance(body, dict) or not isinstance(body.get("startsAt"), str) or not IS_DATE_TIME(body["startsAt"]):
        return st.just(body)
    return st.integers(60, 365 * 86400).map(lambda seconds: {
        **body, "startsAt": (datetime.now(timezone.utc) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")})


@schemathesis.hook
def flatmap_body(context, body):
    operation = context.operation
    if operation is not None and operation.method.upper() == "POST" and operation.path == "/calls":
        # A ring list must name the scope's other members, which the fuzzer cannot know: a
        # drawn list becomes "all", so the case stays valid (the lists are tested in Swift).
        # (Only a list the schema allows: an invalid one stays as drawn, to be refused.)
        ring = body.get("ring") if isinstance(body, dict) else None
        if isinstance(ring, list) and len(ring) <= 1000 and all(isinstance(item, str) for item in ring):
            body = {**body, "ring": "all"}
        return with_seeded_scope(body)
    if operation is not None and operation.method.upper() == "POST" and operation.path == "/groups/{id}/scheduled-calls":
        return in_the_coming_year(body)
    return st.just(body)


@schemathesis.hook
def flatmap_query(context, query):
    operation = context.operation
    if operation is not None and operation.path in ("/calls/current", "/calls/history"):
        return with_seeded_scope(query)
    return st.just(query)


HEX_DIGITS = set("0123456789abcdefABCDEF")


def is_push_token(value):
    """Whether `value` is a push token the server takes: 64 to 400 hex digits, even length."""
    return isinstance(value, str) and 64 <= len(value) <= 400 and len(value) % 2 == 0 and set(value) <= HEX_DIGITS


@schemathesis.hook("before_call")
def keep_devices_apart(context, case, kwargs):
    """Two things the server does on purpose would make a device the fuzzer just registered
    vanish before the stateful phase deletes it, which schemathesis reads as "created resource
    not found" (ST302):
      - a token belongs to one installation, so registering it for another deviceId removes the
        first row, and generation repeats tokens often (64 zeros above all);
      - logout unbinds the session's devices, and every generated POST /auth/logout ended the
        one session all cases share.
    So a valid token is swapped for a fresh one of the same length, and a generated logout
    signed in with the shared session ends a session made for it just then instead. Both stay exactly as
    valid as generated (tests/ cover the token move and the unbinding); anything invalid is
    left alone."""
    operation = case.operation
    method = operation.method.upper()
    if method == "POST" and operation.path == "/voip/devices" and isinstance(case.body, dict):
        token = case.body.get("pushToken")
        if is_push_token(token):
            case.body = {**case.body, "pushToken": secrets.token_hex(len(token) // 2)}
    elif method == "POST" and operation.path == "/auth/logout":
        shared = SHARED_SESSION["token"]
        if shared is not None and (case.headers or {}).get("Authorization") == f"Bearer {shared}":
            case.headers = {**case.headers, "Authorization": f"Bearer {login()}"}


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
            if cls.group is None:
                return None
            status, current = request(BASE_URL, "GET", f"/calls/current?scopeKind=group&scopeId={cls.group}", token=cls.token)
            if status == 200 and current is not None:
                return current["id"]
            body = {"scopeKind": "group", "scopeId": cls.group, "mode": "video", "clientId": str(uuid.uuid4())}
            status, call = request(BASE_URL, "POST", "/calls", body, token=cls.token)
            if status == 201 and call["state"] == "ringing":
                return call["id"]
            cls.group = None  # this caller can no longer ring the account: the next try is a new one
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


@schemathesis.hook("before_call")
def one_copy_per_device(context, case, kwargs):
    """A generated E2EE send may list one device twice (with other ciphertext), which the
    server refuses (400, each device once) and the schema cannot say: only the first copy for
    a device is kept. Anything else stays as generated."""
    operation = case.operation
    if operation.method.upper() != "POST" or operation.path not in ("/e2ee/conversations/{id}/messages", "/e2ee/groups/{id}/messages"):
        return
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("recipients"), list):
        return
    seen, kept = set(), []
    for recipient in body["recipients"]:
        device = recipient.get("deviceId") if isinstance(recipient, dict) else None
        key = device.lower() if isinstance(device, str) else None
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        kept.append(recipient)
    if kept:
        case.body = {**body, "recipients": kept}
