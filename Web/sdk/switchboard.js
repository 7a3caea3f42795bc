// Switchboard's browser SDK: the API client, the event feed and the call coordinator.
// Plain ES modules, no build step: import it from the server that serves it (/sdk/).
//
//   import { SwitchboardClient, EventFeed, CallCoordinator } from "/sdk/switchboard.js";
//   const client = new SwitchboardClient();
//   const session = await client.login("alice", "password");
//   const feed = new EventFeed(client, { after: session.eventCursor, onEvents: (events) => … });
//   feed.start();

/** A failed request, in the SPEC's error shape. `status` 0: no answer came back. */
export class SwitchboardError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   * @param {string | null} [field]
   */
  constructor(status, code, message, field = null) {
    super(message || code);
    this.name = "SwitchboardError";
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** The HTTP API: JSON in and out, the session's bearer token, errors as SwitchboardError. */
export class SwitchboardClient {
  /**
   * @param {{ baseURL?: string, token?: string | null }} options
   */
  constructor({ baseURL = globalThis.location ? globalThis.location.origin : "", token = null } = {}) {
    this.baseURL = baseURL.replace(/\/$/, "");
    /** @type {string | null} */
    this.token = token;
  }

  /**
   * One request. `body` (when not undefined) is sent as JSON.
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {{ signal?: AbortSignal }} options
   * @returns {Promise<any>}
   */
  async request(method, path, body, { signal } = {}) {
    /** @type {Record<string, string>} */
    const headers = { Accept: "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(this.baseURL + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        cache: "no-store",
      });
    } catch (error) {
      if (signal && signal.aborted) throw error;
      throw new SwitchboardError(0, "TRANSPORT", "no answer from the server");
    }
    const text = await response.text();
    let json = null;
    if (text) {
      try {
        json = JSON.parse(text);
      } catch {
        throw new SwitchboardError(response.status, "BAD_RESPONSE", "the answer is not JSON");
      }
    }
    if (!response.ok) {
      const error = (json && json.error) || {};
      throw new SwitchboardError(
        response.status,
        error.code || `HTTP_${response.status}`,
        error.message || response.statusText,
        error.field || null,
      );
    }
    return json;
  }

  // Accounts
  /** @returns {Promise<{token: string, user: any, eventCursor: number}>} */
  async register(username, password, displayName) {
    const session = await this.request("POST", "/auth/register", { username, password, displayName });
    this.token = session.token;
    return session;
  }
  /** @returns {Promise<{token: string, user: any, eventCursor: number}>} */
  async login(username, password) {
    const session = await this.request("POST", "/auth/login", { username, password });
    this.token = session.token;
    return session;
  }
  async logout() {
    try {
      await this.request("POST", "/auth/logout");
    } finally {
      this.token = null;
    }
  }
  me() {
    return this.request("GET", "/me");
  }

  // Friends
  friends() {
    return this.request("GET", "/friends");
  }
  friendRequests() {
    return this.request("GET", "/friend-requests");
  }
  /** @param {string} username */
  sendFriendRequest(username) {
    return this.request("POST", "/friend-requests", { username });
  }
  acceptFriendRequest(id) {
    return this.request("POST", `/friend-requests/${encodeURIComponent(id)}/accept`);
  }
  declineFriendRequest(id) {
    return this.request("POST", `/friend-requests/${encodeURIComponent(id)}/decline`);
  }

  // Calls
  createCall(scopeKind, scopeId, mode = "audio", clientId = crypto.randomUUID()) {
    return this.request("POST", "/calls", { scopeKind, scopeId, mode, clientId });
  }
  call(id) {
    return this.request("GET", `/calls/${encodeURIComponent(id)}`);
  }
  activeCalls() {
    return this.request("GET", "/calls/active");
  }
  callHistory(scopeKind, scopeId) {
    const query = new URLSearchParams({ scopeKind, scopeId });
    return this.request("GET", `/calls/history?${query}`);
  }
  /** Accepts, with the media token in the same answer (`call.media`). */
  accept(id) {
    return this.request("POST", `/calls/${encodeURIComponent(id)}/accept`, { mediaToken: true });
  }
  decline(id) {
    return this.request("POST", `/calls/${encodeURIComponent(id)}/decline`);
  }
  leave(id) {
    return this.request("POST", `/calls/${encodeURIComponent(id)}/leave`);
  }
  cancel(id) {
    return this.request("POST", `/calls/${encodeURIComponent(id)}/cancel`);
  }
  /** The media token; with `wait` (seconds, ≤ 25) the caller's request is held until the answer. */
  mediaToken(id, wait = 0, signal = undefined) {
    const query = wait > 0 ? `?wait=${wait}` : "";
    return this.request("POST", `/calls/${encodeURIComponent(id)}/media-token${query}`, undefined, { signal });
  }
  /** The long poll: events after `after`, waiting up to `wait` seconds for the first. */
  events(after, wait = 20, signal = undefined) {
    return this.request("GET", `/events?after=${after}&wait=${wait}`, undefined, { signal });
  }
}

/**
 * The event feed: Server-Sent Events read with `fetch` (so the bearer header goes with them),
 * resumed with `Last-Event-ID` after a break, falling back to the long poll when streaming
 * fails three times in a row. The cursor advances only after `onEvents` has handled a batch.
 * A cursor older than the server keeps (410) asks `onExpired` for a new one (a snapshot).
 * It follows the browser's network: going offline drops the connection at once (a dead one
 * could otherwise look open for a long time), and coming back online reconnects at once
 * instead of at the end of a retry pause.
 */
export class EventFeed {
  /**
   * @param {SwitchboardClient} client
   * @param {{
   *   after: number,
   *   onEvents: (events: any[]) => (void | Promise<void>),
   *   onState?: (state: "connecting" | "streaming" | "polling" | "waiting" | "stopped") => void,
   *   onExpired?: () => Promise<number>,
   *   onSessionEnded?: () => void,
   * }} options
   */
  constructor(client, { after, onEvents, onState = () => {}, onExpired, onSessionEnded = () => {} }) {
    this.client = client;
    this.cursor = after;
    this.onEvents = onEvents;
    this.onState = onState;
    this.onExpired = onExpired || (async () => (await client.me()).eventCursor);
    this.onSessionEnded = onSessionEnded;
    this.running = false;
    this.failures = 0;
    this.streamFailures = 0;
    /** @type {AbortController | null} */
    this.abort = null;
    /** Ends the current retry pause early (the network came back). */
    this.wake = () => {};
    this.offline = () => {
      if (this.abort) this.abort.abort();
    };
    this.online = () => this.wake();
  }

  start() {
    if (this.running) return;
    this.running = true;
    if (globalThis.addEventListener) {
      globalThis.addEventListener("offline", this.offline);
      globalThis.addEventListener("online", this.online);
    }
    this.loop();
  }

  stop() {
    this.running = false;
    if (globalThis.removeEventListener) {
      globalThis.removeEventListener("offline", this.offline);
      globalThis.removeEventListener("online", this.online);
    }
    if (this.abort) this.abort.abort();
    this.wake();
    this.onState("stopped");
  }

  /** Waits `ms`, or while the browser is offline until it is back, or until woken. */
  pause(ms) {
    return new Promise((resolve) => {
      const offline = globalThis.navigator && globalThis.navigator.onLine === false;
      const timer = offline ? null : setTimeout(resolve, ms);
      this.wake = () => {
        if (timer) clearTimeout(timer);
        this.wake = () => {};
        resolve();
      };
    });
  }

  async loop() {
    while (this.running) {
      this.abort = new AbortController();
      try {
        if (this.streamFailures < 3) {
          this.onState("connecting");
          await this.stream(this.abort.signal);
        } else {
          this.onState("polling");
          const page = await this.client.events(this.cursor, 20, this.abort.signal);
          await this.deliver(page.events);
          this.failures = 0;
          // Now and then, try the stream again.
          if (Math.random() < 0.1) this.streamFailures = 0;
        }
      } catch (error) {
        if (!this.running) return;
        if (error && error.name === "AbortError") {
          // The browser went offline: wait for it to come back, then go on at once.
          this.onState("waiting");
          await this.pause(3000);
          continue;
        }
        if (error instanceof SwitchboardError && error.status === 401) {
          this.running = false;
          this.onState("stopped");
          this.onSessionEnded();
          return;
        }
        if (error instanceof SwitchboardError && error.status === 410) {
          try {
            this.cursor = await this.onExpired();
            this.failures = 0;
            continue;
          } catch {
            // The snapshot failed: wait as after any failure.
          }
        }
        this.failures += 1;
        this.streamFailures += 1;
        this.onState("waiting");
        // About 3 s, then longer while it keeps failing (up to 30 s), with jitter.
        const pause = Math.min(3000 * 2 ** Math.min(this.failures - 1, 4), 30000) * (0.75 + Math.random() * 0.5);
        await this.pause(pause);
      }
    }
  }

  /** Delivers events after the cursor, in order; the cursor moves once they were handled. */
  async deliver(events) {
    const fresh = events.filter((event) => event.id > this.cursor);
    if (fresh.length === 0) return;
    await this.onEvents(fresh);
    this.cursor = Math.max(this.cursor, fresh[fresh.length - 1].id);
  }

  /** Reads `/events/stream` until it ends (a failure throws). */
  async stream(signal) {
    /** @type {Record<string, string>} */
    const headers = { Accept: "text/event-stream", "Last-Event-ID": String(this.cursor) };
    if (this.client.token) headers.Authorization = `Bearer ${this.client.token}`;
    let response;
    try {
      response = await fetch(`${this.client.baseURL}/events/stream?after=${this.cursor}`, {
        headers,
        signal,
        cache: "no-store",
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new SwitchboardError(0, "TRANSPORT", "no answer from the server");
    }
    if (!response.ok) {
      let error = {};
      try {
        error = (await response.json()).error || {};
      } catch {}
      throw new SwitchboardError(response.status, error.code || `HTTP_${response.status}`, error.message || "");
    }
    this.onState("streaming");
    this.failures = 0;
    this.streamFailures = 0;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    /** @type {any[]} */
    let batch = [];
    let data = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new SwitchboardError(0, "TRANSPORT", "the stream ended");
      buffer += value;
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, "");
        buffer = buffer.slice(newline + 1);
        if (line === "") {
          if (data) batch.push(JSON.parse(data));
          data = "";
          continue;
        }
        if (line.startsWith("data:")) data += line.slice(5).trimStart();
      }
      // Everything whole that arrived in this read is one batch.
      if (batch.length > 0) {
        const events = batch;
        batch = [];
        await this.deliver(events);
      }
    }
  }
}

/** @param {number} ms */
export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
