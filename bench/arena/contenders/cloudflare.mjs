// Contenders on Cloudflare Agents (`agents` 0.32, `@cloudflare/ai-chat` 0.12, issue 33): the chat
// an `AIChatAgent` keeps, in its own store — `Sessions` from `agents/sessions` (`this.sessions =
// new Sessions()` in AIChatAgent's constructor), installed on a Durable Object whose SQLite is
// real SQLite here (`node:sqlite`, in memory) — and the turn AIChatAgent runs for each user
// message, as its code does it (`persistMessages` → `onChatMessage` → stream → `persistMessages`):
//
//   1. the user's UI message is persisted: `session.upsertMessage` (what `persistMessages` calls
//      for a new row; a new row is an append, after which auto-compaction may run);
//   2. `onChatMessage` runs ONE `streamText` for the turn with its tool loop (`stopWhen`): the
//      messages are `await convertToModelMessages(history)`, `history` the Session's path with
//      its compaction overlays (`session.getHistory()`: what AIChatAgent hydrates `this.messages`
//      from on each wake, `getRecentHistory(32 MiB)`, which is the whole path here; its in-memory
//      mirror does not apply a `compact` event until the next wake). The steps inside the turn
//      see the AI SDK's own appended step messages: the Session is not read or written mid-turn;
//   3. the streamed answer becomes one assistant UI message (`toUIMessageStream()` read back by
//      `readUIMessageStream`: `step-start`, `text` and `tool-<name>` parts in state
//      `output-available` with `input` and `output`, what AIChatAgent assembles from the same
//      chunks), persisted with `session.upsertMessage` at the end of the turn (auto-compaction
//      may run again).
//
// `cloudflare sessions compactAfter`: Cloudflare's own context management,
// `session.onCompaction(createCompactFunction({ summarize })).compactAfter(0.85 × window)`
// (`keepRecentTokens` Cloudflare's default, 20,000; `summarize(prompt)` a plain one-message call
// of the scripted summarizer). `cloudflare + context-compactor smart`: the same agent with no
// compaction registered on the Session and `context-compactor/cloudflare` in `onChatMessage`
// (`chatCompactor(ctx, …)` per turn, its store and state in the Durable Object's key-value
// storage — a `_cf_KV` table of the same SQLite database, as a SQLite-backed Durable Object keeps
// it — and `streamTextOptions(...)` spread into `streamText`).
//
// Node 22.5+ only (`node:sqlite`); the packages are resolved from js/node_modules (dev
// dependencies there), not installed here, as contenders/openai-agents.mjs does.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as nodeModule from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { deserialize, serialize } from 'node:v8';
import { convertToModelMessages, jsonSchema, readUIMessageStream, simulateStreamingMiddleware, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { arenaSummarizer, scriptedModel } from './ai-sdk.mjs';
import { searchIn } from '../lib/metrics.mjs';
import { fromAiSdk, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

/** `compactAfter`'s trigger as a share of the window (context-compactor's, as the other peers
 * get). */
const LIMIT = 0.85;
/** Where `chatCompactor` keeps its keys (its default). */
const PREFIX = 'context-compactor';

let DatabaseSync;
/** `node:sqlite`'s `DatabaseSync`, or a clear error on a Node without it. */
async function sqlite() {
  if (DatabaseSync) return DatabaseSync;
  try {
    ({ DatabaseSync } = await import('node:sqlite'));
  } catch {
    throw new Error(
      `the Cloudflare contenders need node:sqlite (Node >= 22.5; 22.5–22.12 with --experimental-sqlite), this is Node ${process.version}: run the arena with .tools/node22/node_modules/.bin/node (scripts/setup.sh installs it)`,
    );
  }
  return DatabaseSync;
}

let agents;
/** `agents/sessions`, and the function `Lifecycle.use()` installs a capability's services with
 * (`bindLifecycleCapability`, internal: found in the chunk `LifecycleCapability` comes from). */
async function agentsSessions() {
  if (agents) return agents;
  const require = createRequire(import.meta.resolve('context-compactor/package.json'));
  const entry = require.resolve('agents/sessions'); // dist/sessions/index.js
  const dist = dirname(dirname(entry));
  const sessions = await import(pathToFileURL(entry).href);
  // dist/sessions/index.js re-exports a chunk; that chunk imports LifecycleCapability from the
  // capability chunk, which also exports `bindLifecycleCapability` (under a one-letter alias).
  const chunk = /from "\.\.\/(sessions-[^"]+\.js)"/.exec(readFileSync(entry, 'utf8'))?.[1];
  const capability = chunk && /import \{[^}]*\bLifecycleCapability\b[^}]*\} from "\.\/(capability-[^"]+\.js)"/.exec(readFileSync(join(dist, chunk), 'utf8'))?.[1];
  const alias = capability && /export \{[^}]*\bbindLifecycleCapability as (\w+)/.exec(readFileSync(join(dist, capability), 'utf8'))?.[1];
  if (!alias) throw new Error(`agents ${JSON.parse(readFileSync(join(dirname(dist), 'package.json'), 'utf8')).version}: bindLifecycleCapability not found in ${dist}`);
  const bind = (await import(pathToFileURL(join(dist, capability)).href))[alias];
  return (agents = { ...sessions, bindLifecycleCapability: bind });
}

let cloudflareAdapter;
/**
 * `context-compactor/cloudflare` in Node. Its dist/cloudflare.js imports the Workers entry
 * (`./entry/workerd.js`), whose `.wasm?module` imports only workerd can load: a module resolve
 * hook sends that one import, from that one file, to `./entry/node.js` — the same API over the
 * same core and wasm (and the very module `context-compactor` is in Node, so one instance).
 */
async function cloudflare() {
  if (cloudflareAdapter) return cloudflareAdapter;
  const parent = import.meta.resolve('context-compactor/cloudflare');
  if (nodeModule.registerHooks) {
    nodeModule.registerHooks({
      resolve: (specifier, context, next) => next(specifier === './entry/workerd.js' && context.parentURL === parent ? './entry/node.js' : specifier, context),
    });
  } else {
    const hooks = `export async function resolve(s, c, next) { return next(s === './entry/workerd.js' && c.parentURL === ${JSON.stringify(parent)} ? './entry/node.js' : s, c); }`;
    nodeModule.register(`data:text/javascript,${encodeURIComponent(hooks)}`);
  }
  const adapter = await import('context-compactor/cloudflare');
  const { DurableObjectStore } = await import('context-compactor/stores/durable-object');
  return (cloudflareAdapter = { ...adapter, DurableObjectStore });
}

/** A `SqlStorageCursor`'s parts Sessions uses: iterable rows, `rowsWritten`. */
class Cursor {
  constructor(rows, rowsWritten) {
    this.rows = rows;
    this.rowsWritten = rowsWritten;
    this.rowsRead = rows.length;
  }

  [Symbol.iterator]() {
    return this.rows[Symbol.iterator]();
  }

  toArray() {
    return [...this.rows];
  }

  one() {
    if (this.rows.length !== 1) throw new Error(`Expected exactly one result from SQL query, but got ${this.rows.length}.`);
    return this.rows[0];
  }
}

/**
 * A SQLite-backed Durable Object's `ctx.storage` over one `node:sqlite` database: `sql.exec` and
 * `transactionSync` (what `Sessions` uses), and the key-value API (`get`, `put`, `delete`, `list`,
 * `transaction`: what `DurableObjectStore` uses), its entries in a `_cf_KV` table of the same
 * database, values structured-cloned (`node:v8`), as workerd keeps them. Transactions are
 * savepoints; async ones run one at a time (a Durable Object's gates).
 */
class DurableObjectStorage {
  #db;
  #statements = new Map();
  #savepoints = 0;
  #exclusive = Promise.resolve();

  constructor(db) {
    this.#db = db;
    db.exec('CREATE TABLE IF NOT EXISTS _cf_KV (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID');
    this.sql = { exec: (query, ...params) => this.#exec(query, params) };
    const kv = { get: this.get.bind(this), put: this.put.bind(this), delete: this.delete.bind(this), list: this.list.bind(this) };
    this.#txn = { ...kv, rollback: () => { throw new Error('rollback is not supported here'); } };
  }

  #txn;

  #prepare(query) {
    let statement = this.#statements.get(query);
    if (!statement) this.#statements.set(query, (statement = this.#db.prepare(query)));
    return statement;
  }

  #changes() {
    return this.#prepare('SELECT total_changes() AS n').get().n;
  }

  #exec(query, params) {
    const before = this.#changes();
    // workerd binds an ArrayBuffer as a BLOB; node:sqlite takes a typed array.
    const rows = this.#prepare(query).all(...params.map((p) => (p instanceof ArrayBuffer ? new Uint8Array(p) : p)));
    return new Cursor(rows, this.#changes() - before);
  }

  /** A savepoint: released on `commit`, rolled back (and released) on `rollback`. */
  #savepoint() {
    const name = `sp${++this.#savepoints}`;
    this.#db.exec(`SAVEPOINT ${name}`);
    return {
      commit: () => this.#db.exec(`RELEASE ${name}`),
      rollback: () => this.#db.exec(`ROLLBACK TO ${name}; RELEASE ${name}`),
    };
  }

  transactionSync(fn) {
    const sp = this.#savepoint();
    try {
      const result = fn();
      sp.commit();
      return result;
    } catch (error) {
      sp.rollback();
      throw error;
    }
  }

  transaction(closure) {
    const run = this.#exclusive.then(async () => {
      const sp = this.#savepoint();
      try {
        const result = await closure(this.#txn);
        sp.commit();
        return result;
      } catch (error) {
        sp.rollback();
        throw error;
      }
    });
    this.#exclusive = run.catch(() => {});
    return run;
  }

  #getOne(key) {
    const row = this.#prepare('SELECT value FROM _cf_KV WHERE key = ?').get(key);
    return row ? deserialize(row.value) : undefined;
  }

  async get(keys) {
    if (!Array.isArray(keys)) return this.#getOne(keys);
    const out = new Map();
    for (const key of keys) {
      const value = this.#getOne(key);
      if (value !== undefined) out.set(key, value);
    }
    return out;
  }

  async put(key, value) {
    const entries = typeof key === 'string' ? { [key]: value } : key;
    const put = this.#prepare('INSERT INTO _cf_KV (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    this.transactionSync(() => {
      for (const [k, v] of Object.entries(entries)) put.run(k, serialize(v));
    });
  }

  async delete(keys) {
    const del = this.#prepare('DELETE FROM _cf_KV WHERE key = ?');
    if (!Array.isArray(keys)) return del.run(keys).changes > 0;
    return this.transactionSync(() => keys.reduce((n, key) => n + Number(del.run(key).changes), 0));
  }

  async list({ prefix = '', start, end, limit, reverse = false } = {}) {
    const where = ['substr(key, 1, ?) = ?'];
    const params = [prefix.length, prefix];
    if (start !== undefined) where.push('key >= ?') && params.push(start);
    if (end !== undefined) where.push('key < ?') && params.push(end);
    const query = `SELECT key, value FROM _cf_KV WHERE ${where.join(' AND ')} ORDER BY key ${reverse ? 'DESC' : 'ASC'}${limit !== undefined ? ` LIMIT ${Number(limit)}` : ''}`;
    return new Map(this.#prepare(query).all(...params).map((r) => [r.key, deserialize(r.value)]));
  }
}

/**
 * A Durable Object with `Sessions` installed: `ctx` (its storage over a fresh in-memory SQLite
 * database), `sessions`, and `errors` (the `session:error` events Sessions emitted). The services
 * are the ones `Lifecycle.use()` binds (`_servicesForCapability`), reduced to what a capability
 * that needs no alarm, socket or route uses: `storage` (`ctx.storage`), `ready()` (Lifecycle's
 * startup: each capability's `onStart`, once, before the first operation) and `events.emit`.
 */
async function durableObject() {
  const Database = await sqlite();
  const { Sessions, bindLifecycleCapability } = await agentsSessions();
  const storage = new DurableObjectStorage(new Database(':memory:'));
  const ctx = { id: { name: 'arena' }, storage };
  const sessions = new Sessions();
  const errors = [];
  let startup;
  let status = 'zero';
  bindLifecycleCapability(
    sessions,
    Object.freeze({
      name: 'arena',
      className: 'Chat',
      storage,
      ready: () =>
        (startup ??= Promise.resolve()
          .then(() => sessions.onStart({ props: undefined }))
          .then(() => {
            status = 'started';
          })),
      status: () => status,
      events: Object.freeze({
        emit: (type, payload) => {
          if (type === 'session:error') errors.push(payload?.error ?? String(payload));
        },
      }),
    }),
  );
  return { ctx, sessions, errors };
}

/** The session's tools as AI SDK tools returning the recorded outputs. */
function sessionTools(session, replay) {
  return Object.fromEntries(
    Object.entries(session.tools).map(([name, def]) => [
      name,
      tool({ description: def.description, inputSchema: jsonSchema(def.inputSchema), execute: async (_input, { toolCallId }) => replay.output(toolCallId) }),
    ]),
  );
}

/** A user turn's content as the UI message the client posts. */
function userMessage(id, content) {
  const parts = typeof content === 'string' ? [{ type: 'text', text: content }] : content.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'text', text: `[${p.type}]` }));
  return { id, role: 'user', parts };
}

/** The turn's answer as one assistant UI message, assembled from the UI message stream. */
async function assistantMessage(result, id) {
  let message;
  for await (const m of readUIMessageStream({ stream: result.toUIMessageStream({ generateMessageId: () => id }) })) message = m;
  return structuredClone(message);
}

/**
 * `kind`: `builtin` (Sessions' `compactAfter` with `createCompactFunction`) or `compactor`
 * (`context-compactor/cloudflare`, preset smart; `options` reach `chatCompactor`).
 */
export async function runCloudflare(session, { window, kind, recorder, options = {} }) {
  const replay = new Replay(session);
  const { ctx, sessions, errors } = await durableObject();
  const chat = sessions.session();
  let adapter;
  if (kind === 'builtin') {
    const { createCompactFunction } = await agentsSessions();
    // `summarize` is the docs' `generateText({ model, prompt })`: one user message.
    const summarize = async (prompt) => {
      const asked = fromAiSdk([{ role: 'user', content: prompt }]);
      recorder.summary(asked);
      return scriptedSummary(pieces(asked).join('\n'));
    };
    chat.onCompaction(createCompactFunction({ summarize })).compactAfter(Math.floor(LIMIT * window));
  } else if (kind === 'compactor') adapter = await cloudflare();
  else throw new Error(`unknown Cloudflare contender ${kind}`);
  let lastTools = [];
  // AIChatAgent streams: the scripted model's answer as a stream (the AI SDK's own
  // `simulateStreamingMiddleware` over its `doGenerate`).
  const model = wrapLanguageModel({
    model: scriptedModel(replay, (prompt, tools) => {
      lastTools = tools;
      return recorder.call(() => fromAiSdk(prompt, tools), replay);
    }),
    middleware: simulateStreamingMiddleware(),
  });
  const tools = sessionTools(session, replay);
  const persist = async (message) => {
    await chat.upsertMessage(message);
    if (errors.length) throw new Error(`Sessions: ${errors.join('; ')}`);
  };
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    await persist(userMessage(`user-${t}`, replay.turns[t].user));
    // onChatMessage
    const messages = await convertToModelMessages(await chat.getHistory());
    const stopWhen = stepCountIs(replay.turns[t].steps.length + 1);
    let failure;
    const onError = ({ error }) => {
      failure ??= error;
    };
    let compactor;
    let result;
    if (adapter) {
      compactor = await adapter.chatCompactor(ctx, { model: 'claude-sonnet-4-5', contextWindow: window, preset: 'smart', ...options, ...arenaSummarizer(recorder, () => lastTools) });
      result = streamText({ model, ...(await adapter.streamTextOptions(compactor, { system: session.system, messages, tools })), stopWhen, onError });
    } else result = streamText({ model, system: session.system, messages, tools, stopWhen, onError });
    const message = await assistantMessage(result, `assistant-${t}`);
    compactor?.dispose();
    if (failure) throw failure;
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
    await persist(message);
  }
  // Sessions' compaction records (`{ id, summary, fromMessageId, toMessageId }`).
  const compactions = await chat.getCompactions();
  if (kind !== 'compactor') return { stored: () => false, compactions, history: await chat.getHistory() };
  const store = new adapter.DurableObjectStore(ctx.storage, { prefix: PREFIX });
  const files = await store.list('/');
  const texts = [];
  for (const path of files) texts.push(await store.read(path));
  return { stored: searchIn(texts), files, history: await chat.getHistory() };
}
