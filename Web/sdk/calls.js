// The browser's call coordinator, with the Swift SDK's rules: a ring from the event stream is
// reported once; answer, decline and hang up go to the server; every failure path ends the call
// here and on the server; an answer must have its audio within the answer deadline; a dial
// that nobody answers is cancelled after the dial timeout.
//
//   const calls = new CallCoordinator(client, userId, { onChange: (call) => render(call) });
//   feed's onEvents: (events) => calls.handle(events)
//   await calls.place("conversation", conversationId);   calls.answer(id);   calls.hangUp(id);

import { SwitchboardError, sleep } from "./switchboard.js";
import { RelayAudio } from "./relay-audio.js";

/**
 * A call as the page sees it: `direction` is "incoming" or "outgoing"; `stage` one of
 * "ringing", "answering", "dialing", "connecting", "active", "ended".
 * @typedef {{
 *   id: string, direction: string, stage: string,
 *   info: any, peerName: string, startedAt: number | null, muted: boolean, endReason: string | null,
 * }} PageCall
 */

export class CallCoordinator {
  /**
   * @param {import("./switchboard.js").SwitchboardClient} client
   * @param {string} userId
   * @param {{
   *   onChange?: (call: PageCall) => void,
   *   answerDeadlineMs?: number, dialTimeoutMs?: number,
   *   audio?: (call: PageCall) => RelayAudio,
   * }} options
   */
  constructor(client, userId, { onChange = () => {}, answerDeadlineMs = 10000, dialTimeoutMs = 45000, audio } = {}) {
    this.client = client;
    this.userId = userId;
    this.onChange = onChange;
    this.answerDeadlineMs = answerDeadlineMs;
    this.dialTimeoutMs = dialTimeoutMs;
    this.makeAudio = audio || (() => new RelayAudio({ baseURL: client.baseURL }));
    /** @type {Map<string, PageCall & {audio?: RelayAudio, timer?: any}>} */
    this.calls = new Map();
  }

  /** Calls not yet ended. */
  get live() {
    return [...this.calls.values()].filter((call) => call.stage !== "ended");
  }

  /** Events from the feed: each changed call is read again. */
  async handle(events) {
    const ids = new Set(events.filter((event) => event.kind === "call_changed" && event.callId).map((e) => e.callId));
    for (const id of ids) await this.refresh(id);
  }

  /** Reads a call and applies what the server says. */
  async refresh(id) {
    let info;
    try {
      info = await this.client.call(id);
    } catch (error) {
      if (error instanceof SwitchboardError && error.status === 404) this.end(id, "failed", null);
      return;
    }
    this.apply(info);
  }

  /** The server's view of a call. */
  apply(info) {
    const known = this.calls.get(info.id);
    const mine = info.invitations.find((invitation) => invitation.userId === this.userId);
    if (!known) {
      // A ring for us, reported once.
      if (info.state !== "ringing" || info.createdBy === this.userId || !mine || mine.state !== "ringing") return;
      this.calls.set(info.id, {
        id: info.id,
        direction: "incoming",
        stage: "ringing",
        info,
        peerName: info.createdBy,
        startedAt: null,
        muted: false,
        endReason: null,
      });
      this.changed(info.id);
      return;
    }
    if (known.stage === "ended") return;
    known.info = info;
    if (info.state === "ended") return this.end(info.id, info.endReason || "ended", null);
    if (known.direction === "incoming" && mine) {
      if (mine.state === "accepted" && known.stage === "ringing") return this.end(info.id, "answered_elsewhere", null);
      if (mine.state === "declined" && known.stage === "ringing") return this.end(info.id, "declined_elsewhere", null);
      if (mine.state === "missed" || mine.state === "cancelled") return this.end(info.id, mine.state, null);
    }
    this.changed(info.id);
  }

  /** Places an audio call in a conversation or group; resolves with its id once created. */
  async place(scopeKind, scopeId, peerName = "") {
    const info = await this.client.createCall(scopeKind, scopeId, "audio");
    if (info.state === "ended") throw new SwitchboardError(409, "CALL_BUSY", "the other side is busy");
    const call = {
      id: info.id,
      direction: "outgoing",
      stage: "dialing",
      info,
      peerName,
      startedAt: null,
      muted: false,
      endReason: null,
    };
    this.calls.set(info.id, call);
    call.timer = setTimeout(() => {
      if (call.stage === "dialing") this.end(call.id, "unanswered", "cancel");
    }, this.dialTimeoutMs);
    this.changed(info.id);
    this.waitForAnswer(call);
    return info.id;
  }

  /** Holds a media-token request until the callee answers (or the call ends), then joins. */
  async waitForAnswer(call) {
    while (call.stage === "dialing") {
      try {
        const media = await this.client.mediaToken(call.id, 25);
        if (call.stage !== "dialing") return;
        call.stage = "connecting";
        this.changed(call.id);
        await this.join(call, media);
        return;
      } catch (error) {
        if (call.stage !== "dialing") return;
        // 403: still ringing when the hold ran out, or ended (the events tell); else a pause.
        if (error instanceof SwitchboardError && error.status === 403) {
          await this.refresh(call.id);
          continue;
        }
        await sleep(1000);
      }
    }
  }

  /** The user answered: accept with the media token, then join the audio. */
  async answer(id) {
    const call = this.calls.get(id);
    if (!call || call.stage !== "ringing" || call.direction !== "incoming") return;
    call.stage = "answering";
    this.changed(id);
    const deadline = setTimeout(() => {
      if (call.stage === "answering" || call.stage === "connecting") this.end(id, "failed", "leave");
    }, this.answerDeadlineMs);
    try {
      const info = await this.client.accept(id);
      if (call.stage === "ended") return;
      call.info = info;
      const media = info.media || (await this.client.mediaToken(id));
      call.stage = "connecting";
      this.changed(id);
      await this.join(call, media);
    } catch (error) {
      // Anything that failed ends the call here and there.
      if (call.stage !== "ended") this.end(id, "failed", error instanceof SwitchboardError && error.status === 409 ? null : "leave");
    } finally {
      clearTimeout(deadline);
    }
  }

  async join(call, media) {
    const audio = this.makeAudio(call);
    call.audio = audio;
    audio.onClose = () => {
      if (call.stage !== "ended") this.refresh(call.id).then(() => this.end(call.id, "failed", "leave"));
    };
    try {
      await audio.join(media);
    } catch (error) {
      this.end(call.id, "failed", "leave");
      return;
    }
    if (call.stage === "ended") return audio.leave();
    clearTimeout(call.timer);
    call.stage = "active";
    call.startedAt = Date.now();
    call.audio.setMuted(call.muted);
    this.changed(call.id);
  }

  /** The user declined a ring. */
  decline(id) {
    const call = this.calls.get(id);
    if (!call || call.stage !== "ringing") return;
    this.end(id, "declined", "decline");
  }

  /** The user hung up (or cancelled their dial). */
  hangUp(id) {
    const call = this.calls.get(id);
    if (!call || call.stage === "ended") return;
    if (call.stage === "ringing") return this.decline(id);
    this.end(id, "completed", call.direction === "outgoing" && call.stage === "dialing" ? "cancel" : "leave");
  }

  setMuted(id, muted) {
    const call = this.calls.get(id);
    if (!call) return;
    call.muted = muted;
    if (call.audio) call.audio.setMuted(muted);
    this.changed(id);
  }

  /** The network went away (or the page is closing): every live call ends here and, when it can, there. */
  endAll(reason = "failed") {
    for (const call of this.live) this.end(call.id, reason, call.stage === "ringing" ? "decline" : call.direction === "outgoing" && call.stage === "dialing" ? "cancel" : "leave");
  }

  /**
   * Ends a call here: its audio closes, the page is told; `server` names what the server is
   * sent (decline, leave, cancel), retried a few times when no answer comes.
   */
  end(id, reason, server) {
    const call = this.calls.get(id);
    if (!call || call.stage === "ended") return;
    call.stage = "ended";
    call.endReason = reason;
    clearTimeout(call.timer);
    if (call.audio) call.audio.leave();
    this.changed(id);
    if (server) this.withdraw(id, server);
  }

  async withdraw(id, action, attempt = 0) {
    try {
      await this.client[action](id);
    } catch (error) {
      const retry = error instanceof SwitchboardError && (error.status === 0 || error.status === 429 || error.status >= 500);
      if (retry && attempt < 4) {
        await sleep(1000 * 2 ** attempt);
        return this.withdraw(id, action, attempt + 1);
      }
    }
  }

  changed(id) {
    const call = this.calls.get(id);
    if (call) this.onChange(call);
  }
}
