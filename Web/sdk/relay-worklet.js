// The relay's audio on the audio thread (an AudioWorklet): the microphone low-pass filtered and
// decimated to 8 kHz, 20 ms frames of 16-bit PCM handed to the page; the frames the page hands
// back interpolated to the context's rate and played through a jitter buffer that starts at
// 60 ms and holds at most 200 ms. The filter is the Swift SDK's: a Kaiser-windowed sinc of 288
// taps (beta 8) cut off at 3,950 Hz at 48 kHz, split into 6 phases for interpolation.

const FACTOR = 6;
const TAPS = 288;
const PHASE_TAPS = TAPS / FACTOR;
const FRAME = 160; // 20 ms at 8 kHz
const FRAME_WIDE = FRAME * FACTOR; // 20 ms at 48 kHz
const TARGET_FRAMES = 3; // 60 ms before playout starts
const MAX_FRAMES = 10; // 200 ms: more is dropped down to the target

function besselI0(x) {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) * (x / (2 * k));
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

function design(cutoff, rate, taps, beta) {
  const middle = (taps - 1) / 2;
  const normalised = (2 * cutoff) / rate;
  const window0 = besselI0(beta);
  const coefficients = new Float64Array(taps);
  let sum = 0;
  for (let i = 0; i < taps; i++) {
    const offset = i - middle;
    const sinc = offset === 0 ? normalised : Math.sin(Math.PI * normalised * offset) / (Math.PI * offset);
    const ratio = (2 * i) / (taps - 1) - 1;
    const window = besselI0(beta * Math.sqrt(Math.max(0, 1 - ratio * ratio))) / window0;
    coefficients[i] = sinc * window;
    sum += coefficients[i];
  }
  return Float32Array.from(coefficients, (value) => value / sum);
}

const PROTOTYPE = design(3950, 48000, TAPS, 8);
const PHASES = Array.from({ length: FACTOR }, (_, phase) =>
  Float32Array.from({ length: PHASE_TAPS }, (_, i) => FACTOR * PROTOTYPE[i * FACTOR + phase]),
);

/** 48 kHz to 8 kHz: the low-pass filter evaluated at every 6th sample. */
class Decimator {
  constructor() {
    this.history = new Float32Array(TAPS * 2);
    this.position = 0;
    this.phase = 0;
  }
  /** Pushes one 48 kHz sample; returns an 8 kHz sample every 6th time, else null. */
  push(sample) {
    this.history[this.position] = sample;
    this.history[this.position + TAPS] = sample;
    this.position = (this.position + 1) % TAPS;
    this.phase = (this.phase + 1) % FACTOR;
    if (this.phase !== 0) return null;
    // The newest TAPS samples, oldest first, start at `position`.
    let sum = 0;
    for (let i = 0; i < TAPS; i++) sum += PROTOTYPE[TAPS - 1 - i] * this.history[this.position + i];
    return sum;
  }
}

/** 8 kHz to 48 kHz: each input sample gives 6 outputs, one per phase. */
class Interpolator {
  constructor() {
    this.history = new Float32Array(PHASE_TAPS * 2);
    this.position = 0;
  }
  /** Writes the 6 outputs of one 8 kHz sample into `out` at `at`. */
  push(sample, out, at) {
    this.history[this.position] = sample;
    this.history[this.position + PHASE_TAPS] = sample;
    this.position = (this.position + 1) % PHASE_TAPS;
    for (let phase = 0; phase < FACTOR; phase++) {
      const taps = PHASES[phase];
      let sum = 0;
      for (let i = 0; i < PHASE_TAPS; i++) sum += taps[PHASE_TAPS - 1 - i] * this.history[this.position + i];
      out[at + phase] = sum;
    }
  }
}

/** Linear conversion between the context's rate and 48 kHz (when the browser chose another). */
class Linear {
  constructor(from, to) {
    this.step = from / to;
    this.position = 0;
    this.last = 0;
  }
  /** Feeds one sample at the source rate; calls `emit` for each output sample due. */
  push(sample, emit) {
    while (this.position <= 1) {
      emit(this.last + (sample - this.last) * this.position);
      this.position += this.step;
    }
    this.position -= 1;
    this.last = sample;
  }
}

class RelayProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.decimator = new Decimator();
    this.interpolator = new Interpolator();
    this.captureRate = sampleRate === 48000 ? null : new Linear(sampleRate, 48000);
    this.playRate = sampleRate === 48000 ? null : new Linear(48000, sampleRate);
    this.frame = new Int16Array(FRAME);
    this.frameFill = 0;
    /** Frames at the context's rate waiting to play, oldest first. */
    this.queue = [];
    this.current = null;
    this.currentAt = 0;
    this.playing = false;
    this.underruns = 0;
    this.dropped = 0;
    /** With `{ record: true }` from the page: what is played goes back in 20 ms pieces. */
    this.recording = null;
    this.recorded = 0;
    this.port.onmessage = (message) => {
      if (message.data && message.data.record) {
        this.recording = new Float32Array(Math.round(sampleRate / 50));
        this.recorded = 0;
        return;
      }
      this.received(message.data);
    };
  }

  /** A frame from the relay (320 bytes of 16-bit PCM). */
  received(buffer) {
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength !== FRAME * 2) return;
    const pcm = new Int16Array(buffer);
    const wide = new Float32Array(FRAME_WIDE);
    for (let i = 0; i < FRAME; i++) this.interpolator.push(pcm[i] / 32768, wide, i * FACTOR);
    let frame = wide;
    if (this.playRate) {
      const out = [];
      for (const sample of wide) this.playRate.push(sample, (value) => out.push(value));
      frame = Float32Array.from(out);
    }
    this.queue.push(frame);
    if (this.queue.length > MAX_FRAMES) {
      this.dropped += this.queue.length - TARGET_FRAMES;
      this.queue.splice(0, this.queue.length - TARGET_FRAMES);
    }
  }

  captured(sample) {
    const narrow = this.decimator.push(sample);
    if (narrow === null) return;
    const clamped = Math.max(-1, Math.min(1, narrow));
    this.frame[this.frameFill++] = Math.round(clamped * 32767);
    if (this.frameFill === FRAME) {
      const buffer = this.frame.buffer;
      this.port.postMessage(buffer, [buffer]);
      this.frame = new Int16Array(FRAME);
      this.frameFill = 0;
    }
  }

  process(inputs, outputs) {
    const input = inputs[0] && inputs[0][0];
    if (input) {
      for (let i = 0; i < input.length; i++) {
        if (this.captureRate) this.captureRate.push(input[i], (value) => this.captured(value));
        else this.captured(input[i]);
      }
    }
    const output = outputs[0];
    const channel = output[0];
    if (!this.playing && this.queue.length >= TARGET_FRAMES) this.playing = true;
    for (let i = 0; i < channel.length; i++) {
      if (this.playing && (!this.current || this.currentAt >= this.current.length)) {
        this.current = this.queue.shift() || null;
        this.currentAt = 0;
        if (!this.current) {
          // Ran dry: silence, and wait for the target again.
          this.playing = false;
          this.underruns += 1;
        }
      }
      channel[i] = this.playing && this.current ? this.current[this.currentAt++] : 0;
    }
    for (let c = 1; c < output.length; c++) output[c].set(channel);
    if (this.recording) {
      for (let i = 0; i < channel.length; i++) {
        this.recording[this.recorded++] = channel[i];
        if (this.recorded === this.recording.length) {
          const size = this.recording.length;
          const piece = this.recording.buffer;
          this.port.postMessage({ played: piece }, [piece]);
          this.recording = new Float32Array(size);
          this.recorded = 0;
        }
      }
    }
    return true;
  }
}

registerProcessor("switchboard-relay", RelayProcessor);
