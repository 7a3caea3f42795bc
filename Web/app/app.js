// The softphone at /app/: sign in, friends, calls through the built-in relay, recent calls.
// Text from the server is only ever set with textContent. The session's token lives in this
// tab's sessionStorage: it survives a reload of the tab, is not shared with other tabs (two tabs
// can be two users) and is gone when the tab closes.

import { SwitchboardClient, SwitchboardError, EventFeed } from "/sdk/switchboard.js";
import { CallCoordinator } from "/sdk/calls.js";
import { RelayAudio } from "/sdk/relay-audio.js";

/** @param {string} id @returns {any} an element of this page */
const $ = (id) => document.getElementById(id);
const client = new SwitchboardClient();
const state = {
  user: null,
  feed: null,
  calls: null,
  /** @type {Map<string, string>} user id → display name */
  names: new Map(),
  friends: [],
  ringtone: null,
  timer: null,
  signingUp: false,
};

// For tests: the page's audio keeps every frame it sent and received (window.switchboard).
const query = new URLSearchParams(location.search);
const record = query.has("record");
// `?raw`: no echo cancellation, noise suppression or gain control (to measure the path itself).
const processing = !query.has("raw");
/** @type {any} */ (window).switchboard = { client, state, audios: [] };

function show(error) {
  $("error").textContent = error ? (error instanceof SwitchboardError ? `${error.message} (${error.code})` : String(error.message || error)) : "";
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function button(text, action, className) {
  const node = element("button", text, className);
  node.addEventListener("click", async () => {
    node.disabled = true;
    try {
      show(null);
      await action();
    } catch (error) {
      show(error);
    } finally {
      node.disabled = false;
    }
  });
  return node;
}

// Signing in

$("signup-toggle").addEventListener("click", () => {
  state.signingUp = !state.signingUp;
  $("signin-form").classList.toggle("signup", state.signingUp);
  $("signin-submit").textContent = state.signingUp ? "Create account" : "Sign in";
  $("signup-toggle").textContent = state.signingUp ? "I have an account" : "Create an account instead";
});

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(/** @type {HTMLFormElement} */ (event.target));
  const username = String(form.get("username")), password = String(form.get("password"));
  try {
    show(null);
    const session = state.signingUp
      ? await client.register(username, password, String(form.get("displayName") || username))
      : await client.login(username, password);
    sessionStorage.setItem("switchboard.token", session.token);
    await signedIn(session.user, session.eventCursor);
  } catch (error) {
    show(error);
  }
});

$("sign-out").addEventListener("click", async () => {
  await signOut(true);
});

async function signedIn(user, cursor) {
  state.user = user;
  state.names.set(user.id, user.displayName);
  $("who").textContent = `${user.displayName} (@${user.username})`;
  $("signin").hidden = true;
  $("phone").hidden = false;
  $("sign-out").hidden = false;
  state.calls = new CallCoordinator(client, user.id, {
    onChange: renderCall,
    audio: () => {
      const audio = new RelayAudio({ deviceId: $("microphone").value || undefined, record, processing });
      /** @type {any} */ (window).switchboard.audios.push(audio);
      return audio;
    },
  });
  state.feed = new EventFeed(client, {
    after: cursor,
    onEvents: async (events) => {
      await state.calls.handle(events);
      if (events.some((event) => event.kind !== "call_changed" && event.kind !== "message")) await refreshContacts();
      if (events.some((event) => event.kind === "call_changed")) refreshHistory();
    },
    onState: (feedState) => {
      $("connection").dataset.state = feedState;
      $("connection").textContent = feedState;
    },
    onExpired: async () => {
      const me = await client.me();
      await refreshContacts();
      return me.eventCursor;
    },
    onSessionEnded: () => signOut(false),
  });
  state.feed.start();
  await refreshContacts();
  // Calls ringing or running before this page followed them take the event path.
  for (const call of await client.activeCalls()) state.calls.apply(call);
  refreshHistory();
  listMicrophones();
}

async function signOut(tellServer) {
  if (state.calls) state.calls.endAll("completed");
  if (state.feed) state.feed.stop();
  stopRingtone();
  if (tellServer) await client.logout().catch(() => {});
  client.token = null;
  sessionStorage.removeItem("switchboard.token");
  state.user = null;
  $("phone").hidden = true;
  $("signin").hidden = false;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  $("call").hidden = true;
}

// The browser went offline: a call cannot go on (the relay's socket is gone or about to go);
// end it here now, and tell the server when the network is back.
window.addEventListener("offline", () => {
  if (state.calls) state.calls.endAll("failed");
});

// Contacts

async function refreshContacts() {
  const [friends, requests] = await Promise.all([client.friends(), client.friendRequests()]);
  state.friends = friends;
  const list = $("friends");
  list.replaceChildren();
  for (const friend of friends) {
    state.names.set(friend.user.id, friend.user.displayName);
    const item = element("li");
    item.append(element("span", `${friend.user.displayName} (@${friend.user.username})`));
    item.append(
      button("Call", () => state.calls.place("conversation", friend.conversationId, friend.user.displayName), "go"),
    );
    item.dataset.username = friend.user.username;
    list.append(item);
  }
  if (friends.length === 0) list.append(element("li", "No friends yet: send a request below.", "muted"));
  const pending = $("requests");
  pending.replaceChildren();
  for (const request of requests.incoming) {
    const item = element("li");
    item.append(element("span", `${request.from.displayName} (@${request.from.username}) wants to be friends`));
    const actions = element("span");
    actions.append(
      button("Accept", async () => {
        await client.acceptFriendRequest(request.id);
        await refreshContacts();
      }),
      button("Decline", async () => {
        await client.declineFriendRequest(request.id);
        await refreshContacts();
      }),
    );
    item.append(actions);
    pending.append(item);
  }
  for (const request of requests.outgoing) {
    pending.append(element("li", `Sent to ${request.to.displayName} (@${request.to.username})`, "muted"));
  }
}

$("add-friend").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = /** @type {HTMLInputElement} */ (/** @type {HTMLFormElement} */ (event.target).elements.namedItem("username"));
  try {
    show(null);
    await client.sendFriendRequest(input.value.trim());
    input.value = "";
    await refreshContacts();
  } catch (error) {
    show(error);
  }
});

async function refreshHistory() {
  const calls = [];
  for (const friend of state.friends.slice(0, 20)) {
    try {
      for (const call of await client.callHistory("conversation", friend.conversationId)) {
        calls.push({ call, name: friend.user.displayName });
      }
    } catch {}
  }
  calls.sort((a, b) => (b.call.endedAt || "").localeCompare(a.call.endedAt || ""));
  const list = $("history");
  list.replaceChildren();
  for (const { call, name } of calls.slice(0, 20)) {
    const outgoing = call.createdBy === state.user.id;
    const seconds = call.answeredAt ? Math.round((Date.parse(call.endedAt) - Date.parse(call.answeredAt)) / 1000) : 0;
    const item = element("li");
    item.append(element("span", `${outgoing ? "To" : "From"} ${name}`));
    item.append(element("span", call.answeredAt ? `${duration(seconds)}` : call.endReason || "", "muted"));
    item.append(element("span", new Date(call.endedAt).toLocaleString(), "muted"));
    list.append(item);
  }
  if (calls.length === 0) list.append(element("li", "No calls yet.", "muted"));
}

// The call on screen

function renderCall(call) {
  const live = state.calls.live;
  const shown = live[0] || call;
  const box = $("call");
  box.hidden = live.length === 0;
  box.dataset.stage = shown.stage;
  box.dataset.callId = shown.id;
  const name = state.names.get(shown.peerName) || shown.peerName || "Call";
  $("call-title").textContent = name;
  $("call-status").textContent = {
    ringing: "Incoming call…",
    answering: "Answering…",
    dialing: "Calling…",
    connecting: "Connecting…",
    active: shown.muted ? "Connected, muted" : "Connected",
    ended: "Call ended",
  }[shown.stage];
  $("call-answer").hidden = !(shown.direction === "incoming" && shown.stage === "ringing");
  $("call-mute").hidden = shown.stage !== "active";
  $("call-mute").textContent = shown.muted ? "Unmute" : "Mute";
  $("call-end").textContent = shown.stage === "ringing" ? "Decline" : shown.stage === "dialing" ? "Cancel" : "Hang up";
  if (live.some((c) => c.direction === "incoming" && c.stage === "ringing")) startRingtone();
  else stopRingtone();
  clearInterval(state.timer);
  if (shown.stage === "active") {
    const tick = () => ($("call-timer").textContent = duration(Math.round((Date.now() - shown.startedAt) / 1000)));
    tick();
    state.timer = setInterval(tick, 1000);
  } else {
    $("call-timer").textContent = "";
  }
  if (call.stage === "ended") refreshHistory();
}

$("call-answer").addEventListener("click", () => state.calls.answer($("call").dataset.callId));
$("call-end").addEventListener("click", () => state.calls.hangUp($("call").dataset.callId));
$("call-mute").addEventListener("click", () => {
  const call = state.calls.calls.get($("call").dataset.callId);
  if (call) state.calls.setMuted(call.id, !call.muted);
});

function duration(seconds) {
  const m = Math.floor(seconds / 60), s = seconds % 60;
  return `${m}:${String(s).padStart(2, "0")}`;
}

// A ringtone made by the page (two tones, on and off), no audio file.
function startRingtone() {
  if (state.ringtone) return;
  try {
    const context = new AudioContext();
    const gain = context.createGain();
    gain.gain.value = 0;
    gain.connect(context.destination);
    for (const frequency of [440, 480]) {
      const tone = context.createOscillator();
      tone.frequency.value = frequency;
      tone.connect(gain);
      tone.start();
    }
    let on = false;
    const interval = setInterval(() => {
      on = !on;
      gain.gain.setTargetAtTime(on ? 0.08 : 0, context.currentTime, 0.01);
    }, 1000);
    state.ringtone = { context, interval };
  } catch {}
}

function stopRingtone() {
  if (!state.ringtone) return;
  clearInterval(state.ringtone.interval);
  state.ringtone.context.close().catch(() => {});
  state.ringtone = null;
}

async function listMicrophones() {
  try {
    const select = $("microphone");
    const chosen = select.value;
    select.replaceChildren(element("option", "Default"));
    /** @type {HTMLOptionElement} */ (select.firstChild).value = "";
    for (const device of await RelayAudio.microphones()) {
      const option = element("option", device.label || `Microphone ${select.length}`);
      option.value = device.deviceId;
      select.append(option);
    }
    select.value = chosen;
  } catch {}
}

// A reload of this tab keeps its session.
const saved = sessionStorage.getItem("switchboard.token");
if (saved) {
  client.token = saved;
  client
    .me()
    .then((me) => signedIn(me.user, me.eventCursor))
    .catch(() => sessionStorage.removeItem("switchboard.token"));
}
