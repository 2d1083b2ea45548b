// A Cloudflare Worker that keeps one agent conversation per session id across requests. The
// worker is stateless: every request builds a new compactor, and everything it needs lives in
// the KV namespace bound as `STORE`, under `sessions/<id>/`:
//
//   sessions/<id>/session/messages.json        the conversation (and the turn counter)
//   sessions/<id>/state/compactor.json         compactor state: stats and calibration (statePath)
//   sessions/<id>/tool_outputs/…               tool outputs offloaded at return time (tier 1)
//   sessions/<id>/conversation_history/…       transcripts saved before a summary (tier 3)
//
// Routes:
//   POST /chat?session=ID   body {"text": "..."}  → {turn, usage, events, stats, messageCount}
//   GET  /read?session=ID&path=/tool_outputs/…&offset=0&limit=500   (recovery tool read_file)
//   GET  /ls?session=ID&path=/                                        (recovery tool ls)
//
// The model is a deterministic mock (./mock.mjs: `toolCall` decides the tool call, `answer`
// writes the reply): no API key. For a real agent, replace the loop in `chat` with a model call
// (AI SDK `generateText` with `prepareStep: compactor.prepareStep`, or a fetch to a provider) and
// the mock `summarize` with `summarizer(model)`.
import { createCompactor, KvStore, recoveryTools } from 'context-compactor';
import { MODEL, CONTEXT_WINDOW, SYSTEM_PROMPT, toolCall, toolOutput, sourceFile, answer, summarize } from './mock.mjs';

const MESSAGES_PATH = '/session/messages.json';
const STATE_PATH = '/state/compactor.json';
const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The mock agent's tools. run_tests returns a large log, which wrapTools offloads on return;
 * open_file returns a medium file, under the offload threshold, which tier 2 masks or dedupes
 * later. Their JSON definitions also count against the window (see `tools` below). */
const TOOLS = {
  run_tests: {
    description: 'Run the test suite and return its log.',
    inputSchema: { type: 'object', properties: { run: { type: 'integer' }, filter: { type: 'string' } }, required: ['run'], additionalProperties: false },
    execute: async ({ run }) => toolOutput(run),
  },
  open_file: {
    description: 'Return the content of a repository file.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false },
    execute: async ({ path }) => sourceFile(path),
  },
};

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    try {
      if (!env.STORE) return json({ error: 'no KV namespace bound as STORE (see wrangler.toml)' }, 500);
      const session = url.searchParams.get('session') ?? '';
      if (!SESSION_ID.test(session)) return json({ error: 'session must match [A-Za-z0-9_-]{1,64}' }, 400);
      const store = KvStore.cloudflareKv(env.STORE, { prefix: `sessions/${session}` });

      if (request.method === 'POST' && url.pathname === '/chat') {
        const body = await request.json().catch(() => null);
        if (!body || typeof body.text !== 'string' || body.text.trim() === '') return json({ error: 'body must be JSON {"text": "..."}' }, 400);
        return json(await chat(store, body.text));
      }
      if (request.method === 'GET' && url.pathname === '/read') {
        const path = url.searchParams.get('path');
        if (!path) return json({ error: 'path is required' }, 400);
        const offset = intParam(url, 'offset');
        const limit = intParam(url, 'limit');
        const text = await withCompactor(store, (c) => c.tools().read_file.execute({ path, ...(offset !== undefined ? { offset } : {}), ...(limit !== undefined ? { limit } : {}) }));
        return new Response(text, { status: text.startsWith('Error:') ? 404 : 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
      }
      if (request.method === 'GET' && url.pathname === '/ls') {
        const text = await withCompactor(store, (c) => c.tools().ls.execute({ path: url.searchParams.get('path') ?? '/' }));
        return new Response(text, { headers: { 'content-type': 'text/plain; charset=utf-8' } });
      }
      return json({ error: 'routes: POST /chat?session=ID, GET /read?session=ID&path=..., GET /ls?session=ID&path=/' }, 404);
    } catch (error) {
      return json({ error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }, 500);
    }
  },
};

/** A compactor for this request, its state (stats, calibration) loaded from the store. Every
 * compaction event of the request is collected in `events`, offloads at tool-return time
 * included (offloadToolOutput/wrapTools report them only through onEvent). */
function openCompactor(store, events) {
  return createCompactor({
    model: MODEL,
    contextWindow: CONTEXT_WINDOW,
    store,
    statePath: STATE_PATH,
    // Tool definitions are sent with every request, so they count against the window.
    tools: { ...recoveryTools(store), ...TOOLS },
    // A shallow tier-2 target (the default is 0.6) so that this short session shows tier 2
    // masking older results on its own before the lossy tier summarizes.
    compaction: { keepToolResults: 2, minSavingTokens: 100, targetFraction: 0.7 },
    history: { summaryMaxTokens: 400 },
    summarize: (request) => summarize(request),
    onEvent: (event) => events.push(event),
  });
}

/** Runs `job` with a fresh compactor and frees its wasm memory afterwards. */
async function withCompactor(store, job) {
  const compactor = await openCompactor(store, []);
  try {
    return await job(compactor);
  } finally {
    compactor.dispose();
  }
}

/** One user turn: append, let the (mock) agent run its steps, compact before every model call
 * and once more before saving, save, report. */
async function chat(store, text) {
  const events = [];
  const compactor = await openCompactor(store, events);
  try {
    const saved = await readJson(store, MESSAGES_PATH);
    const turn = (saved?.turn ?? 0) + 1;
    let messages = saved?.messages ?? [{ role: 'system', content: await compactor.systemPrompt(SYSTEM_PROMPT, { memory: false }) }];
    messages.push({ role: 'user', content: text });
    const tools = compactor.wrapTools(TOOLS);

    // The agent loop: before each model call the prompt is managed (what prepareStep does).
    let toolResult;
    const stateErrors = [];
    const manage = async () => {
      const result = await compactor.manage(messages);
      if (result.stateError) stateErrors.push(result.stateError);
      messages = result.messages;
    };
    for (let step = 0; ; step++) {
      await manage();
      const call = step === 0 ? toolCall(turn) : null;
      if (!call) {
        messages.push({ role: 'assistant', content: answer(turn, toolResult) });
        break;
      }
      messages.push({ role: 'assistant', content: [{ type: 'tool-call', ...call }] });
      // wrapTools → offloadToolOutput: an output over the threshold is stored in KV now and the
      // model only ever sees a preview naming its path.
      toolResult = await tools[call.toolName].execute(call.input, { toolCallId: call.toolCallId });
      messages.push({
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'text', value: String(toolResult) } }],
      });
    }
    // The saved conversation is within budget, so the next request starts from a valid prompt.
    await manage();
    await store.write(MESSAGES_PATH, JSON.stringify({ turn, messages }));
    return {
      turn,
      usage: compactor.usage(messages),
      events,
      stats: compactor.stats(),
      messageCount: messages.length,
      // A state save that failed after a compaction (the compaction stands). Failures while
      // saving after an offload at tool-return time are not reported by the library.
      ...(stateErrors.length > 0 ? { stateErrors } : {}),
    };
  } finally {
    compactor.dispose();
  }
}

async function readJson(store, path) {
  const text = await store.read(path);
  return text === null ? undefined : JSON.parse(text);
}

function intParam(url, name) {
  const value = url.searchParams.get(name);
  if (value === null || value === '') return undefined;
  const n = Number(value);
  return Number.isInteger(n) ? n : undefined;
}

function json(body, status = 200) {
  return Response.json(body, { status });
}
