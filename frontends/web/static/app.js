// pinetime-emu's web view: the watch on a canvas, fed by a WebSocket.
// Frames arrive as binary messages (a 4-byte big-endian sequence number,
// then a PNG of the whole screen); everything else is JSON (docs/web.md).
// The canvas keeps the screen's own pixels (240x240 on the PineTime); CSS
// scales it with nearest-neighbour sampling, so it stays crisp.
"use strict";

const $ = (id) => document.getElementById(id);
const canvas = $("screen");
const ctx = canvas.getContext("2d");
// what the tests (and the curious) can read: window.pinetime
const state = window.pinetime = {
  ws: null, hello: null, status: null, lastSeq: 0, frames: 0, scale: 2,
  playing: false, pointer: null, keysHeld: new Set(),
};
const MAX_CONSOLE = 2000;     // chunks kept in the console pane
const MAX_LOG = 500;

// ------------------------------------------------------------------ socket
function connect() {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const ws = new WebSocket(scheme + location.host + "/ws");
  ws.binaryType = "arraybuffer";
  state.ws = ws;
  ws.onopen = () => setConn("connected", true);
  ws.onclose = () => {
    setConn("disconnected: retrying", false);
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string") onMessage(JSON.parse(ev.data));
    else onFrame(ev.data);
  };
}

function send(msg) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(msg));
}

function setConn(text, ok) {
  const c = $("conn");
  c.textContent = text;
  c.className = "conn " + (ok ? "ok" : "bad");
}

// ------------------------------------------------------------------ frames
let chain = Promise.resolve();
function decode(blob) {
  if (window.createImageBitmap) {
    return createImageBitmap(blob, {colorSpaceConversion: "none", premultiplyAlpha: "none"});
  }
  return new Promise((resolve, reject) => {          // older browsers
    const img = new Image();
    img.onload = () => { URL.revokeObjectURL(img.src); resolve(img); };
    img.onerror = reject;
    img.src = URL.createObjectURL(blob);
  });
}

function onFrame(buf) {
  const seq = new DataView(buf).getUint32(0);
  const blob = new Blob([new Uint8Array(buf, 4)], {type: "image/png"});
  chain = chain.then(() => decode(blob)).then((img) => {
    if (seq > state.lastSeq) {
      if (canvas.width !== img.width || canvas.height !== img.height) {
        canvas.width = img.width;
        canvas.height = img.height;
        applyScale();
      }
      ctx.drawImage(img, 0, 0);
      state.lastSeq = seq;
      state.frames++;
    }
    if (img.close) img.close();
  }).catch((e) => console.warn("frame", seq, e));
}

// ------------------------------------------------------------------ messages
function onMessage(m) {
  if (m.t === "hello") hello(m);
  else if (m.t === "status") showStatus(m);
  else if (m.t === "console") appendConsole(m.stream, m.text);
  else if (m.t === "log") appendLog(m.text);
}

function hello(h) {
  state.hello = h;
  document.title = `pinetime-emu — ${h.board}` + (h.firmware ? ` — ${h.firmware}` : "");
  $("title").textContent = `pinetime-emu: ${h.board}`;
  $("firmware").textContent = h.firmware || "";
  $("watch").hidden = !h.screen;
  $("noscreen").hidden = !!h.screen;
  $("watch").classList.toggle("pinetime", !!h.touch);
  $("side").hidden = !h.side_button;
  $("phone").hidden = !h.phone;
  $("help").hidden = !h.touch;
  if (h.screen) {
    canvas.width = h.screen.width;
    canvas.height = h.screen.height;
  }
  if (!state.scaleChosen) state.scale = h.scale || 2;
  $("scale").value = String(state.scale);
  applyScale();
  const bb = $("boardbuttons");
  bb.textContent = "";
  h.buttons.forEach((label, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = `button ${label} (hold; key: ${label.toLowerCase()})`;
    b.id = "board-button-" + i;
    holdable(b, (down) => send({t: "board_button", index: i, down}));
    bb.appendChild(b);
  });
  const stream = $("stream");
  stream.textContent = "";
  if (h.uart) stream.add(new Option("UART console", "uart"));
  if (h.phone) stream.add(new Option("Bluetooth REPL (phone)", "phone"));
  $("consoleform").hidden = stream.options.length === 0;
  $("fast").checked = !h.realtime;
}

function showStatus(s) {
  state.status = s;
  const parts = [`t=${s.time.toFixed(3)} s`, `${s.speed.toFixed(2)}× real time`];
  if (!s.realtime) parts.push("fast");
  if (s.paused) parts.push("paused");
  if (s.backlight !== undefined) parts.push(`backlight ${s.backlight}/3`);
  if (s.motor) parts.push("motor on");
  if (s.halted) parts.push("halted by the debugger");
  if (s.stopped) parts.push("STOPPED: " + s.stopped);
  parts.push(`${s.clients} tab${s.clients === 1 ? "" : "s"}`);
  $("status").textContent = parts.join(" · ");
  $("watch").classList.toggle("buzz", !!s.motor);
  $("side").classList.toggle("down", !!s.side_button);
  (s.buttons || []).forEach((down, i) => {
    const b = $("board-button-" + i);
    if (b) b.classList.toggle("down", down);
  });
  $("fast").checked = !s.realtime;
  $("pause").checked = !!s.paused;
  if (s.phone_connected !== undefined) {
    $("phonestate").textContent = s.phone_connected ? "connected" : "not connected";
  }
}

function clean(text) {
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r\n/g, "\n").replace(/\r/g, "");
}

function appendConsole(stream, text) {
  const pre = $("console");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  let t = clean(text);
  // a backspace takes back the character before it (line editing echoes)
  while (t.includes("\b")) {
    const i = t.indexOf("\b");
    if (i === 0) {
      const last = pre.lastChild;
      if (last && last.textContent) last.textContent = last.textContent.slice(0, -1);
      t = t.slice(1);
    } else {
      t = t.slice(0, i - 1) + t.slice(i + 1);
    }
  }
  if (!t) return;
  const span = document.createElement("span");
  span.className = stream;
  span.textContent = t;
  pre.appendChild(span);
  while (pre.childNodes.length > MAX_CONSOLE) pre.removeChild(pre.firstChild);
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

function appendLog(text) {
  const pre = $("log");
  const line = document.createElement("div");
  line.textContent = text;
  pre.appendChild(line);
  while (pre.childNodes.length > MAX_LOG) pre.removeChild(pre.firstChild);
  pre.scrollTop = pre.scrollHeight;
}

// ------------------------------------------------------------------ input
function panelXY(ev) {
  const r = canvas.getBoundingClientRect();
  const x = Math.floor((ev.clientX - r.left) * canvas.width / r.width);
  const y = Math.floor((ev.clientY - r.top) * canvas.height / r.height);
  return {x: Math.min(Math.max(x, 0), canvas.width - 1),
          y: Math.min(Math.max(y, 0), canvas.height - 1)};
}

canvas.addEventListener("pointerdown", (ev) => {
  if (ev.button !== 0) return;
  canvas.setPointerCapture(ev.pointerId);
  const p = panelXY(ev);
  state.pointer = p;
  send({t: "pointer", kind: "down", x: p.x, y: p.y});
  canvas.focus();
  ev.preventDefault();
});
canvas.addEventListener("pointermove", (ev) => {
  if (!state.pointer) return;
  const p = panelXY(ev);
  if (p.x === state.pointer.x && p.y === state.pointer.y) return;
  state.pointer = p;
  send({t: "pointer", kind: "move", x: p.x, y: p.y});
});
function pointerUp(ev) {
  if (!state.pointer) return;
  const p = panelXY(ev);
  state.pointer = null;
  send({t: "pointer", kind: "up", x: p.x, y: p.y});
}
canvas.addEventListener("pointerup", pointerUp);
canvas.addEventListener("pointercancel", pointerUp);
canvas.addEventListener("contextmenu", (ev) => ev.preventDefault());

// a button held while the mouse (or finger) is down on it
function holdable(el, fn) {
  let down = false;
  const set = (d) => { if (d !== down) { down = d; fn(d); } };
  el.addEventListener("pointerdown", (ev) => {
    el.setPointerCapture(ev.pointerId);
    set(true);
    ev.preventDefault();
  });
  el.addEventListener("pointerup", () => set(false));
  el.addEventListener("pointercancel", () => set(false));
  el.addEventListener("lostpointercapture", () => set(false));
}
holdable($("side"), (down) => send({t: "button", down}));

function typing(ev) {
  const tag = (ev.target && ev.target.tagName) || "";
  return tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA";
}
const ARROWS = {ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right"};
function keyButton(ev) {
  const h = state.hello;
  if (!h) return null;
  if (h.side_button && (ev.key === " " || ev.key === "b" || ev.key === "B")) {
    return {t: "button"};
  }
  const i = h.buttons.findIndex((l) => l.toLowerCase() === ev.key.toLowerCase());
  return i >= 0 ? {t: "board_button", index: i} : null;
}
document.addEventListener("keydown", (ev) => {
  if (typing(ev) || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ARROWS[ev.key] && state.hello && state.hello.touch) {
    send({t: "swipe", dir: ARROWS[ev.key]});
    ev.preventDefault();
    return;
  }
  const b = keyButton(ev);
  if (b && !ev.repeat && !state.keysHeld.has(ev.key)) {
    state.keysHeld.add(ev.key);
    send(Object.assign({down: true}, b));
    ev.preventDefault();
  }
});
document.addEventListener("keyup", (ev) => {
  if (!state.keysHeld.has(ev.key)) return;
  state.keysHeld.delete(ev.key);
  const b = keyButton(ev);
  if (b) send(Object.assign({down: false}, b));
});

// ------------------------------------------------------------------ controls
function applyScale() {
  canvas.style.width = canvas.width * state.scale + "px";
  canvas.style.height = canvas.height * state.scale + "px";
  document.documentElement.style.setProperty("--scale", state.scale);
}
$("scale").addEventListener("change", () => {
  state.scale = Number($("scale").value);
  state.scaleChosen = true;
  applyScale();
});
$("fast").addEventListener("change", () => send({t: "fast", on: $("fast").checked}));
$("pause").addEventListener("change", () => send({t: "pause", on: $("pause").checked}));
$("save").addEventListener("click", () => {
  canvas.toBlob((blob) => {
    const a = document.createElement("a");
    const t = state.status ? Math.round(state.status.time * 1000) : 0;
    a.download = `pinetime-${t}ms.png`;
    a.href = URL.createObjectURL(blob);
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }, "image/png");
});

function phone(action, extra) { send(Object.assign({t: "phone", action}, extra || {})); }
$("notify").addEventListener("submit", (ev) => {
  ev.preventDefault();
  phone("notify", {title: $("ntitle").value, body: $("nbody").value});
});
$("call").addEventListener("submit", (ev) => {
  ev.preventDefault();
  phone("call", {name: $("cname").value, number: $("cnumber").value});
});
$("cend").addEventListener("click", () => phone("end_call"));
$("music").addEventListener("submit", (ev) => {
  ev.preventDefault();
  state.playing = !state.playing;
  phone("music", {artist: $("martist").value, track: $("mtrack").value, playing: state.playing});
  $("mplay").textContent = state.playing ? "Pause" : "Play";
});
$("settime").addEventListener("click", () => {
  const now = new Date();
  // the watch keeps local time: the wall-clock fields of this computer
  phone("set_time", {unix: Math.floor(now.getTime() / 1000) - now.getTimezoneOffset() * 60});
});
$("pconnect").addEventListener("click", () => phone("connect"));
$("pdisconnect").addEventListener("click", () => phone("disconnect"));
$("consoleform").addEventListener("submit", (ev) => {
  ev.preventDefault();
  send({t: "console", stream: $("stream").value, text: $("line").value + "\r"});
  $("line").value = "";
});
$("ctrlc").addEventListener("click", () => send({t: "console", stream: $("stream").value, text: "\x03"}));

connect();
