// A call's audio over the server's built-in relay: the call's WebSocket carries 20 ms frames of
// 8 kHz 16-bit PCM both ways (the RelayAudioFrame schema); an AudioWorklet (relay-worklet.js)
// filters and decimates the microphone and plays what arrives through a 60 ms jitter buffer.
//
//   const audio = new RelayAudio({ deviceId });
//   await audio.join(call.media);   // the media token from accept/join or /media-token
//   audio.setMuted(true);
//   audio.leave();

const WORKLET_URL = new URL("./relay-worklet.js", import.meta.url);

export class RelayAudio {
  /**
   * @param {{ baseURL?: string, deviceId?: string, onClose?: (code: number) => void, record?: boolean, processing?: boolean }} options
   *   `record`: keep every frame sent and received with its time (for tests: `sent`, `received`).
   *   `processing`: the browser's echo cancellation, noise suppression and gain control (on by
   *   default; off to measure the signal path itself).
   */
  constructor({ baseURL = location.origin, deviceId = undefined, onClose = () => {}, record = false, processing = true } = {}) {
    this.baseURL = baseURL;
    this.processing = processing;
    this.deviceId = deviceId;
    this.onClose = onClose;
    this.record = record;
    this.muted = false;
    /** @type {{t: number, pcm: Int16Array}[]} */
    this.sent = [];
    /** @type {{t: number, pcm: Int16Array}[]} */
    this.received = [];
    /** What the speaker played, in 20 ms pieces at the context's rate (with `record`). */
    /** @type {{t: number, samples: Float32Array}[]} */
    this.played = [];
    this.sampleRate = 0;
    this.socket = null;
    this.context = null;
    this.stream = null;
    this.node = null;
    this.closed = false;
  }

  /** The microphones the browser offers (labels once the user allowed one). */
  static async microphones() {
    const devices = await navigator.mediaDevices.enumerateDevices();
    return devices.filter((device) => device.kind === "audioinput");
  }

  /**
   * Opens the microphone and the call's socket. Throws when either fails (the caller ends the call).
   * @param {{ url: string, token: string }} media
   */
  async join(media) {
    const socketURL = new URL(media.url, this.baseURL);
    socketURL.protocol = socketURL.protocol === "https:" ? "wss:" : "ws:";
    socketURL.searchParams.set("token", media.token);
    this.stream = await navigator.mediaDevices.getUserMedia({
      audio: {
        deviceId: this.deviceId ? { exact: this.deviceId } : undefined,
        echoCancellation: this.processing,
        noiseSuppression: this.processing,
        autoGainControl: this.processing,
        channelCount: 1,
      },
    });
    this.context = new AudioContext({ sampleRate: 48000, latencyHint: "interactive" });
    await this.context.audioWorklet.addModule(WORKLET_URL);
    this.node = new AudioWorkletNode(this.context, "switchboard-relay", {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      outputChannelCount: [1],
    });
    this.context.createMediaStreamSource(this.stream).connect(this.node);
    this.node.connect(this.context.destination);
    await this.context.resume();
    const socket = new WebSocket(socketURL);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = () => reject(new Error("the call's audio socket did not open"));
      socket.onclose = (event) => reject(new Error(`the call's audio socket closed (${event.code})`));
    });
    socket.onerror = null;
    socket.onclose = (event) => {
      if (!this.closed) this.onClose(event.code);
      this.leave();
    };
    socket.onmessage = (message) => {
      if (!(message.data instanceof ArrayBuffer)) return;
      if (this.record) this.received.push({ t: performance.timeOrigin + performance.now(), pcm: new Int16Array(message.data.slice(0)) });
      if (this.node) this.node.port.postMessage(message.data, [message.data]);
    };
    this.sampleRate = this.context.sampleRate;
    if (this.record) this.node.port.postMessage({ record: true });
    this.node.port.onmessage = (message) => {
      if (message.data && message.data.played) {
        this.played.push({ t: performance.timeOrigin + performance.now(), samples: new Float32Array(message.data.played) });
        return;
      }
      /** @type {ArrayBuffer} */
      let frame = message.data;
      if (this.muted) frame = new ArrayBuffer(frame.byteLength);
      if (this.record) this.sent.push({ t: performance.timeOrigin + performance.now(), pcm: new Int16Array(frame.slice(0)) });
      if (socket.readyState === WebSocket.OPEN && socket.bufferedAmount < 16 * 320) socket.send(frame);
    };
  }

  /** Muted: silence is sent in place of the microphone (the relay keeps its pace). */
  setMuted(muted) {
    this.muted = muted;
  }

  /** Closes the socket and the microphone; idempotent. */
  leave() {
    if (this.closed) return;
    this.closed = true;
    if (this.socket && this.socket.readyState <= WebSocket.OPEN) this.socket.close(1000);
    if (this.stream) this.stream.getTracks().forEach((track) => track.stop());
    if (this.context) this.context.close().catch(() => {});
    this.node = null;
  }
}
