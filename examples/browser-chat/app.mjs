// A chat whose context stays inside an 8,000-token window (gpt-4o), with the mock model of
// mock.mjs. Everything compaction stores goes to the browser store (OPFS, or IndexedDB).
//
// Query parameters: backend=opfs|indexeddb (default: openBrowserStore's choice),
// offload=return|manage (default return: the tool's output is offloaded when the tool returns,
// as compactor.wrapTools does; manage: the raw output enters the history and manage() offloads
// it before the next model call), delay=ms (the mock model's thinking time, default 150).
import { createCompactor, createReportRecorder, renderReport, renderReportChart } from 'context-compactor';
import { openBrowserStore } from 'context-compactor/stores/browser';
import * as mock from './mock.mjs';

const params = new URLSearchParams(location.search);
const backendParam = params.get('backend');
const offloadMode = params.get('offload') === 'manage' ? 'manage' : 'return';
const delayMs = Math.max(0, Number(params.get('delay') ?? 150) || 0);
const WINDOW = 8000;
const MODEL = 'gpt-4o';
const CONVERSATION_PATH = '/chat/conversation.json';
const STATE_PATH = '/state/compactor.json';
const SYSTEM = 'You are a helpful assistant in a browser chat demo. You can fetch web pages with fetch_page.';

const $ = (id) => document.getElementById(id);
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the page knows. `context` is what the model is sent (managed); `display` is what the
 * user saw (never compacted). */
let chat;
let store;
let compactor;
let trigger;
/** Records every manage() call for the session chart (createReportRecorder); its calls are saved
 * with the conversation, so the chart survives a reload. */
let report;
/** Where the compaction events being reported come from (see onEvent). */
let eventSource = null;

function freshChat(systemPrompt) {
  return { version: 1, turn: 0, context: [{ role: 'system', content: systemPrompt }], display: [], events: [], toolCalls: [], peak: 0, maxAfterTurn: 0, reportCalls: [] };
}

async function makeCompactor() {
  return createCompactor({
    model: MODEL,
    contextWindow: WINDOW,
    store,
    statePath: STATE_PATH,
    summarize: async (request) => {
      await sleep(Math.min(delayMs, 50));
      return mock.summarize(request);
    },
    onEvent: (event) => {
      report?.onEvent(event); // offloads at tool return reach the chart this way
      const src = eventSource;
      const entry = { n: chat.events.length + 1, turn: chat.turn, via: src?.via ?? 'manage', ...event };
      if (event.strategy === 'offload' && event.status === 'applied') {
        // offloadToolOutput plans over a two-message [call, result] pair: its messageIndex is
        // that pair's, not the conversation's, so we match it by the call we are running.
        const toolCallId = src?.via === 'offloadToolOutput' ? src.toolCallId : toolCallIdOf(src?.input?.[event.messageIndex]);
        const call = chat.toolCalls.find((c) => c.toolCallId === toolCallId);
        if (call) call.path = event.path;
        entry.toolCallId = toolCallId ?? null;
      }
      chat.events.push(entry);
      appendLog(entry);
    },
  });
}

function toolCallIdOf(message) {
  const part = Array.isArray(message?.content) ? message.content.find((p) => p.type === 'tool-result') : undefined;
  return part?.toolCallId;
}

/** One model "step": manage() the context first, as prepareStep does before every model call. */
async function manage() {
  const before = compactor.usage(chat.context).tokens;
  chat.peak = Math.max(chat.peak, before);
  eventSource = { via: 'manage', input: chat.context };
  try {
    const result = await report.manage(compactor, chat.context);
    chat.context = result.messages;
    if (result.stateError) console.warn(result.stateError);
  } finally {
    eventSource = null;
  }
}

async function send(text) {
  text = String(text ?? '').trim();
  if (!text) throw new Error('empty message');
  if (document.body.dataset.busy === '1') throw new Error('a turn is already running');
  setBusy(true);
  try {
    const turn = ++chat.turn;
    chat.peak = 0;
    chat.context.push({ role: 'user', content: text });
    chat.display.push({ role: 'user', text });
    render();
    await sleep(delayMs);
    let seen;
    if (mock.callsTool(turn)) {
      const url = mock.toolUrl(turn, text);
      const toolCallId = `call_${turn}`;
      const intro = mock.toolIntro(url);
      chat.context.push({ role: 'assistant', content: [{ type: 'text', text: intro }, { type: 'tool-call', toolCallId, toolName: 'fetch_page', input: { url } }] });
      chat.display.push({ role: 'assistant', text: intro });
      const raw = mock.toolOutput(url);
      chat.toolCalls.push({ turn, toolCallId, url, chars: raw.length, path: null });
      let output = raw;
      if (offloadMode === 'return') {
        eventSource = { via: 'offloadToolOutput', toolCallId };
        try {
          output = await compactor.offloadToolOutput('fetch_page', toolCallId, raw);
        } finally {
          eventSource = null;
        }
      }
      chat.context.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'fetch_page', output: { type: 'text', value: output } }] });
      const call = chat.toolCalls.at(-1);
      chat.display.push({ role: 'tool', text: `fetch_page(${url}) → ${fmt(raw.length)} characters`, toolCallId });
      render();
      await manage(); // the model is called again with the tool result: manage first
      const result = chat.context.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((p) => p.type === 'tool-result' && p.toolCallId === toolCallId);
      seen = result ? String(result.output.value) : undefined;
      chat.display.at(-1).text += call.path ? ` — offloaded to ${call.path}` : '';
      await sleep(delayMs);
    }
    const answer = mock.reply(turn, text, seen);
    chat.context.push({ role: 'assistant', content: answer });
    chat.display.push({ role: 'assistant', text: answer });
    await manage(); // after every turn: the gauge shows what the next request will cost
    const after = compactor.usage(chat.context).tokens;
    chat.maxAfterTurn = Math.max(chat.maxAfterTurn, after);
    chat.reportCalls = structuredClone(report.calls);
    await store.write(CONVERSATION_PATH, JSON.stringify(chat));
    await renderChart();
    await refreshFiles();
    document.body.dataset.turns = String(chat.turn);
    return state();
  } catch (error) {
    $('error').textContent = `Error: ${error?.message ?? error}`;
    console.error(error);
    throw error;
  } finally {
    setBusy(false);
    render();
  }
}

function setBusy(busy) {
  document.body.dataset.busy = busy ? '1' : '0';
  $('msg').disabled = busy;
  $('send').disabled = busy;
  $('reset').disabled = busy;
  if (!busy) $('msg').focus();
}

// ---------------------------------------------------------------------------------------------
// Rendering

function render() {
  renderMessages();
  renderGauge();
  const s = compactor.stats();
  $('stats').textContent = `turn ${chat.turn} · ${chat.context.length} messages in context · ${s.compactions} compactions · ${fmt(s.tokensSaved)} tokens saved`;
}

function textOf(message) {
  if (typeof message.content === 'string') return message.content;
  return message.content.map((p) => {
    if (p.type === 'text') return p.text;
    if (p.type === 'tool-call') return `→ ${p.toolName}(${JSON.stringify(p.input)})`;
    if (p.type === 'tool-result') return typeof p.output?.value === 'string' ? p.output.value : JSON.stringify(p.output?.value);
    return `[${p.type}]`;
  }).join('\n');
}

function renderMessages() {
  const list = $('messages');
  const showContext = $('show-context').checked;
  const items = showContext
    ? chat.context.map((m) => ({ role: m.role, text: textOf(m), summary: m.role === 'user' && textOf(m).startsWith('[Conversation summary]') }))
    : chat.display;
  list.replaceChildren(...items.map((item) => {
    const div = document.createElement('div');
    div.className = `msg ${item.role}${item.summary ? ' summary' : ''}`;
    const role = document.createElement('span');
    role.className = 'role';
    role.textContent = item.summary ? 'summary (sent as user)' : item.role;
    div.append(role, item.text);
    return div;
  }));
  if (items.length === 0) {
    const div = document.createElement('div');
    div.className = 'msg system';
    div.textContent = 'Say hello. Every 4th question (2nd, 6th, 10th, …) makes the mock model call fetch_page, whose output is ~4,000 tokens: half the window.';
    list.append(div);
  }
  list.scrollTop = list.scrollHeight;
}

function renderGauge() {
  const usage = compactor.usage(chat.context);
  const gauge = $('gauge');
  gauge.dataset.used = String(usage.tokens);
  gauge.dataset.window = String(usage.window);
  gauge.dataset.peak = String(chat.peak);
  const pct = (n) => `${Math.min(100, (n / usage.window) * 100).toFixed(1)}%`;
  const fill = gauge.querySelector('.fill');
  fill.style.width = pct(usage.tokens);
  fill.classList.toggle('high', usage.tokens >= trigger.compactAt);
  gauge.querySelector('.peak').style.width = pct(Math.max(chat.peak, usage.tokens));
  const bar = gauge.querySelector('.bar');
  bar.querySelectorAll('.tick').forEach((t) => t.remove());
  for (const [at, label] of [[trigger.compactAt, 'tier 2 (compact)'], [trigger.summarizeAt, 'tier 3 (summarize)']]) {
    const tick = document.createElement('div');
    tick.className = 'tick';
    tick.style.left = pct(at);
    tick.title = `${label} above ${fmt(at)} tokens`;
    bar.append(tick);
  }
  $('gauge-used').textContent = `${fmt(usage.tokens)} / ${fmt(usage.window)} tokens`;
  $('gauge-pct').textContent = `${(usage.fraction * 100).toFixed(1)}%`;
  $('gauge-note').textContent = chat.peak > usage.tokens
    ? `This turn peaked at ${fmt(chat.peak)} tokens before manage() (hatched). Ticks: compaction at ${fmt(trigger.compactAt)}, summary at ${fmt(trigger.summarizeAt)}.`
    : `Ticks: compaction at ${fmt(trigger.compactAt)}, summary at ${fmt(trigger.summarizeAt)} tokens.`;
}

function appendLog(entry) {
  const log = $('log');
  log.querySelector('.empty')?.remove();
  const li = document.createElement('li');
  li.dataset.strategy = entry.strategy;
  li.dataset.status = entry.status;
  if (entry.path) li.dataset.path = entry.path;
  const strategy = document.createElement('span');
  strategy.className = 'strategy';
  strategy.textContent = entry.strategy;
  const status = document.createElement('span');
  status.className = `status-${entry.status}`;
  status.textContent = entry.status;
  const path = document.createElement('span');
  path.className = 'path';
  path.textContent = entry.path ?? '(no file)';
  li.append(`#${entry.n} turn ${entry.turn} · `, strategy, ' · ', status, ` · saved ${fmt(entry.tokensSaved)} tokens `, path);
  if (entry.error) li.append(` ${entry.error}`);
  li.title = `via ${entry.via}`;
  log.append(li);
  log.scrollTop = log.scrollHeight;
}

/** The session chart: the same SVG as `context-compactor report`, from this session's calls. */
async function renderChart() {
  const panel = $('report');
  panel.dataset.calls = String(report.calls.length);
  if (report.calls.length === 0) {
    panel.querySelector('.chart').textContent = 'No model call yet: send a message.';
    return;
  }
  panel.querySelector('.chart').innerHTML = renderReportChart(await report.data(compactor));
}

/** The full report page (chart and tables), opened in a new tab. */
async function openReport() {
  const data = await report.data(compactor);
  data.title = 'browser chat';
  const url = URL.createObjectURL(new Blob([renderReport(data)], { type: 'text/html' }));
  window.open(url, '_blank');
}

async function refreshFiles() {
  const paths = await store.list('/');
  const files = $('files');
  if (paths.length === 0) {
    const li = document.createElement('li');
    li.className = 'empty';
    li.textContent = 'Empty.';
    files.replaceChildren(li);
    return paths;
  }
  const items = await Promise.all(paths.map(async (path) => {
    const text = (await store.read(path)) ?? '';
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.textContent = path;
    a.title = path;
    a.addEventListener('click', () => openFile(path));
    const size = document.createElement('span');
    size.className = 'size';
    size.textContent = `${fmt(text.length)} chars`;
    li.append(a, size);
    return li;
  }));
  files.replaceChildren(...items);
  return paths;
}

async function openFile(path) {
  const text = (await store.read(path)) ?? '(missing)';
  $('viewer-path').textContent = path;
  $('viewer-body').textContent = text.length > 20000 ? `${text.slice(0, 20000)}\n… (${fmt(text.length - 20000)} more characters)` : text;
  $('viewer').showModal();
}

// ---------------------------------------------------------------------------------------------
// Start, reset, test hook

async function state() {
  return structuredClone({
    ready: document.body.dataset.ready === '1',
    backend: store.backend,
    offloadMode,
    turn: chat.turn,
    messages: chat.context.length,
    usage: compactor.usage(chat.context),
    peak: chat.peak,
    maxAfterTurn: chat.maxAfterTurn,
    events: chat.events,
    toolCalls: chat.toolCalls,
    paths: await store.list('/'),
    stats: compactor.stats(),
    report: { calls: report.calls },
  });
}

async function reset() {
  if (document.body.dataset.busy === '1') throw new Error('a turn is running');
  for (const path of await store.list('/')) await store.delete(path);
  compactor.dispose();
  compactor = await makeCompactor();
  chat = freshChat(await compactor.systemPrompt(SYSTEM));
  report = createReportRecorder({ title: 'browser chat' });
  $('log').replaceChildren(Object.assign(document.createElement('li'), { className: 'empty', textContent: 'No compaction yet.' }));
  $('error').textContent = '';
  document.body.dataset.turns = '0';
  await refreshFiles();
  await renderChart();
  render();
}

async function start() {
  store = await openBrowserStore({ name: 'browser-chat', ...(backendParam === 'opfs' || backendParam === 'indexeddb' ? { backend: backendParam } : {}) });
  $('backend').textContent = `store: ${store.backend}`;
  $('mode').textContent = offloadMode === 'return' ? 'offload: when the tool returns' : 'offload: by manage()';
  const saved = await store.read(CONVERSATION_PATH);
  chat = saved ? JSON.parse(saved) : null;
  compactor = await makeCompactor(); // loads the saved stats from STATE_PATH, if any
  chat ??= freshChat(await compactor.systemPrompt(SYSTEM));
  report = createReportRecorder({ title: 'browser chat', calls: chat.reportCalls ?? [] });
  trigger = compactor.plan(chat.context.slice(0, 1)).trigger;
  for (const entry of chat.events) appendLog(entry);
  document.body.dataset.turns = String(chat.turn);
  await refreshFiles();
  await renderChart();
  render();

  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('msg').value;
    if (!text.trim()) return;
    $('msg').value = '';
    send(text).catch(() => {}); // shown in #error and logged
  });
  $('reset').addEventListener('click', () => reset().catch((error) => { $('error').textContent = `Error: ${error.message}`; console.error(error); }));
  $('show-context').addEventListener('change', renderMessages);
  $('show-chart').addEventListener('change', () => document.body.classList.toggle('chart-open', $('show-chart').checked));
  $('open-report').addEventListener('click', () => openReport().catch((error) => { $('error').textContent = `Error: ${error.message}`; console.error(error); }));
  $('viewer-close').addEventListener('click', () => $('viewer').close());

  /** Test hook: plain data only. */
  window.chat = {
    send: async (text) => send(text),
    state,
    read: async (path) => store.read(path),
    writeIf: async (path, expected, text) => store.writeIf(path, expected, text),
    reset: async () => { await reset(); return state(); },
  };
  setBusy(false);
  document.body.dataset.ready = '1';
}

start().catch((error) => {
  $('error').textContent = `Could not start: ${error?.message ?? error}`;
  console.error(error);
});
