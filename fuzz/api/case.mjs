// Runs one case spec (gen.mjs) through the package's public API and checks every call. Runs in a
// worker thread (worker.mjs); `env` holds the package, `ai` and `ai/test`, and `tick`, which
// tells the main thread's watchdog that a call started or ended.
import { hash32 } from './gen.mjs';
import { hydrate, freshCopy, J, S } from './hydrate.mjs';
import { checkKept, checkPairs, checkPromptPairs, classifyDiff, documentedSurrogates, firstDiff, outputForms, snapshot } from './checks.mjs';

export const STATE_PATH = '/state/chat.json';

/** An error the harness's own callbacks throw (a failing store, summarizer or onPreCompact):
 * the package may let it through unchanged. */
export class AppError extends Error {
  constructor(message) {
    super(message);
    this.name = 'FuzzAppError';
    this.fuzzApp = true;
  }
}

/** A call that did not return. Ends the case. */
class HangError extends Error {
  constructor(cls, message) {
    super(message);
    this.cls = cls;
  }
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const LOSSY = new Set(['summarize', 'truncate', 'importance', 'transcript']);
// A pending summary: the call went on unsummarized and its summary, made in the background,
// may be back (or have failed) by the re-plan, which then applies (or makes) it.
const EXCUSING_NOTES = new Set(['target-not-met', 'over-budget', 'pinned-over-budget', 'fixed-over-trigger', 'summary-pending']);

export async function runCase(spec, env) {
  const run = new CaseRun(spec, env);
  const started = Date.now();
  try {
    if (spec.kind === 'conversation') await run.conversation();
    else if (spec.kind === 'agent') await run.agent();
    else if (spec.kind === 'malformed') await run.malformed();
    else throw new Error(`unknown case kind ${spec.kind}`);
  } catch (error) {
    const hang = hangIn(error);
    if (hang) run.add({ class: hang.cls, message: hang.message });
    else run.add({ class: 'harness', message: `the harness failed: ${error?.stack ?? error}` });
  }
  run.stats.ms = Date.now() - started;
  return { violations: run.violations, stats: run.stats, documented: run.documented.slice(0, 5), passthrough: run.passthrough };
}

/** A HangError anywhere in an error's cause chain (the AI SDK wraps what prepareStep throws). */
function hangIn(error) {
  for (let e = error, n = 0; e && n < 8; e = e.cause, n++) if (e instanceof HangError) return e;
  return undefined;
}

class CaseRun {
  constructor(spec, env) {
    this.spec = spec;
    this.env = env;
    this.cc = env.cc;
    this.violations = [];
    this.documented = [];
    this.passthrough = 0;
    this.stats = { calls: 0, summarizerCalls: 0, conversations: 1 };
    this.timeout = spec.options.summarizeTimeoutMs ?? 120_000;
    // A store call that has not answered within storeTimeoutMs counts as failed (docs/API.md,
    // "Stores that stall"); one call may wait on a few in a row.
    this.storeTimeout = spec.options.storeTimeoutMs ?? 10_000;
    this.callDeadline = 8_000 + 8 * this.timeout + 6 * this.storeTimeout;
    this.hung = [];
    this.faultsFired = new Set();
    // Every storable form of every tool output of the case: two outputs alike but for their
    // lone surrogates share one stored file (documented).
    const forms = new Set();
    for (const m of hydrate((spec.turns ?? []).flat())) {
      if (!Array.isArray(m.content)) continue;
      for (const p of m.content) if (p?.type === 'tool-result') for (const f of outputForms(p.output)) forms.add(f);
    }
    // Well-formed forms that two different strings of the conversation share (a lone
    // surrogate and a real U+FFFD, or two lone surrogates).
    const seen = new Map();
    const strings = (value) => {
      if (typeof value === 'string') {
        const form = value.toWellFormed();
        if (!seen.has(form)) seen.set(form, new Set());
        seen.get(form).add(value);
      } else if (value && typeof value === 'object' && !ArrayBuffer.isView(value)) {
        for (const [k, v] of Object.entries(value)) {
          strings(k);
          strings(v);
        }
      }
    };
    strings(hydrate(spec.turns ?? []));
    if (spec.agent) strings(hydrate(spec.agent.steps));
    const collisions = new Set([...seen].filter(([, originals]) => originals.size > 1).map(([form]) => form));
    this.keptCtx = { documented: this.documented, allForms: forms, collisions };
  }

  add(...violations) {
    for (const v of violations.flat()) if (v && !this.violations.some((x) => x.class === v.class)) this.violations.push(v);
  }

  // -------------------------------------------------------------------------------------------
  // Calls: counted, watched.

  async call(name, fn, { scale = 1 } = {}) {
    this.stats.calls++;
    const deadline = this.callDeadline * scale;
    this.env.tick?.({ name, deadline });
    const since = this.hung.length;
    let timer;
    let poll;
    const watchdog = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new HangError('hang', `${name} did not return within ${deadline} ms${this.pendingHangs(since)}`)), deadline);
      poll = setInterval(() => {
        const stuck = this.hung.slice(since).find((h) => Date.now() - h.since > 3 * this.timeout + 6 * this.storeTimeout + 2_000);
        if (stuck) reject(new HangError('hang-store', `${name} did not return: it waits on a store ${stuck.op}(${stuck.path}) that never settles (the ${stuck.category} path; ${Date.now() - stuck.since} ms)`));
      }, 200);
    });
    try {
      return await Promise.race([Promise.resolve().then(fn), watchdog]);
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
      this.env.tick?.({ name: `${name} done`, deadline: this.callDeadline });
    }
  }

  pendingHangs(since) {
    const pending = this.hung.slice(since);
    return pending.length ? ` (store calls that never settle: ${pending.map((h) => `${h.op}(${h.path})`).join(', ')})` : '';
  }

  /** What a thrown error says about the package: nothing wrong (the app's own error passed
   * through, a typed error where one is due), or a violation. */
  judgeError(error, where, { valid }) {
    const hang = hangIn(error);
    if (hang) throw hang;
    if (error?.fuzzApp) {
      this.passthrough++;
      return;
    }
    const { CompactorError } = this.cc;
    if (error instanceof CompactorError && typeof error.code === 'string') {
      if (error.code === 'internal') return this.add({ class: 'crash', message: `${where}: CompactorError internal: ${error.message}` });
      if (!valid) return;
      const faults = this.spec.store.faults.length > 0;
      if (faults && ['state_conflict', 'store_failed'].includes(error.code)) return;
      return this.add({ class: 'error-on-valid', message: `${where}: ${error.code}: ${error.message.slice(0, 300)}` });
    }
    if (error instanceof TypeError) {
      if (!valid) return;
      return this.add({ class: 'error-on-valid', message: `${where}: TypeError: ${error.message.slice(0, 300)}` });
    }
    const name = error?.constructor?.name ?? typeof error;
    this.add({ class: 'untyped-error', message: `${where}: ${name}: ${String(error?.message ?? error).slice(0, 300)}` });
  }

  // -------------------------------------------------------------------------------------------
  // Callbacks and stores.

  summarizer() {
    const spec = this.spec.summarizer;
    if (!spec) return undefined;
    const order = ['throw', 'hang', 'slow', 'nonstring', 'huge', 'sync', 'empty'];
    return (request) => {
      this.stats.summarizerCalls++;
      const prompt = request.prompt;
      const h0 = hash32(prompt);
      let h = h0 % 1000;
      let mode = 'answer';
      for (const m of order) {
        const r = spec.rates[m] ?? 0;
        if (h < r) { mode = m; break; }
        h -= r;
      }
      const text = `## Session Intent\nSummary ${h0.toString(16)} of ${prompt.length} characters; the value -113.71428571428571 and 1e+21 stay exact.`;
      switch (mode) {
        case 'sync': return text;
        case 'slow': return delay(spec.delayMs).then(() => text);
        case 'hang': return new Promise(() => {});
        case 'throw': throw new AppError('the summarizer is down');
        case 'nonstring': return Promise.resolve(h0 % 2 ? 42 : undefined);
        case 'huge': return Promise.resolve('long summary '.repeat(request.maxTokens * 2 + 10));
        case 'empty': return Promise.resolve('');
        default: return Promise.resolve(text);
      }
    };
  }

  preCompact() {
    const pc = this.spec.preCompact;
    if (!pc) return undefined;
    return (context) => {
      const h = hash32(`${context.trigger}:${context.currentTokens}:${context.targetTokens}`) % 1000;
      if (h < pc.throws) throw new AppError('onPreCompact failed');
      if (h < pc.cancel) {
        // prepareStep returns only messages: the agent scenario tells a cancel by this count.
        this.cancels = (this.cancels ?? 0) + 1;
        return { cancel: true };
      }
      const h2 = (h * 7919) % 1000;
      if (h2 < pc.customSummary) return { customSummary: `Custom summary ${h}, -113.71428571428571.` };
      if (h2 < pc.customSummary + pc.instructions) return { customInstructions: 'Keep every number exact.' };
      return undefined;
    };
  }

  /** `inner` with the spec's faults: by path kind and operation, decided by a hash of the path
   * (the same paths fail in every host shape). */
  faultStore(inner, statePath) {
    const faults = this.spec.store.faults;
    const category = (path) =>
      statePath !== undefined && path === statePath ? 'state'
        : path.includes('.summaries/') ? 'lease'
          : path.startsWith('/tool_outputs/') || path.startsWith('/user_messages/') ? 'offload'
            : path.startsWith('/conversation_history/') ? 'transcript' : 'other';
    const wrap = (op, path, run) => {
      const cat = category(String(path));
      const fault = faults.find((f) => (f.op === op || f.op === 'any') && (f.path === cat || f.path === 'any') && hash32(`${f.salt}:${op}:${path}`) % 1000 < f.rate);
      if (!fault) return run();
      this.faultsFired.add(cat);
      switch (fault.mode) {
        case 'throw': throw new AppError(`store ${op}(${path}) failed`);
        case 'reject': return Promise.reject(new AppError(`store ${op}(${path}) rejected`));
        case 'hang': this.hung.push({ op, path, category: cat, since: Date.now() }); return new Promise(() => {});
        case 'slow': return delay(hash32(`${op}${path}`) % 15).then(run);
        case 'refuse': return op === 'writeIf' ? Promise.resolve(false) : Promise.reject(new AppError(`store ${op}(${path}) refused`));
        default: return run();
      }
    };
    const store = {
      read: (p) => wrap('read', p, () => inner.read(p)),
      write: (p, t) => wrap('write', p, () => inner.write(p, t)),
      list: (p) => wrap('list', p, () => inner.list(p)),
      delete: (p) => wrap('delete', p, () => inner.delete(p)),
    };
    if (this.spec.store.writeIf) store.writeIf = (p, e, t) => wrap('writeIf', p, () => inner.writeIf(p, e, t));
    return store;
  }

  options(store, extra = {}) {
    const summarize = this.summarizer();
    const onPreCompact = this.preCompact();
    return { ...structuredClone(this.spec.options), store, ...(summarize ? { summarize } : {}), ...(onPreCompact ? { onPreCompact } : {}), ...extra };
  }

  // -------------------------------------------------------------------------------------------
  // The checks of one result.

  /** Pairs, kept content, stored copies, counts, an idempotent re-plan. */
  async checkResult(compactor, input, result, inner, where, { exactTranscript, events } = {}) {
    const out = result.messages;
    // Pairs valid in, pairs valid out (a history the app broke is not the package's doing).
    if (checkPairs(input, where).length === 0) this.add(checkPairs(out, where));
    const files = await snapshot(inner);
    this.add(checkKept(input, out, files, where, this.keptCtx));
    const plan = result.plan;
    for (const e of events ?? result.events) {
      if (e.status === 'applied' && e.path && !files.has(e.path)) this.add({ class: 'stored-copy', message: `${where}: event ${e.strategy} applied, but ${e.path} is not in the store` });
    }
    const replayed = (plan?.replayed?.edits ?? 0) + (plan?.replayed?.spans ?? 0);
    if (plan && exactTranscript && replayed === 0) {
      for (const action of plan.actions) {
        if (action.type !== 'save-transcript' || !files.has(action.path)) continue;
        const expected = S(input, 2);
        const stored = files.get(action.path);
        if (stored !== expected) {
          const kind = classifyDiff(expected, stored);
          this.add({ class: kind === 'content' ? 'stored-copy' : `stored-${kind}`, message: `${where}: transcript ${action.path} is not JSON.stringify(messages, null, 2): ${firstDiff(expected, stored)}` });
        }
      }
    }
    // Counts and the re-plan.
    let usage;
    let replan;
    try {
      usage = compactor.usage(out).tokens;
      replan = compactor.plan(out);
    } catch (error) {
      return this.judgeError(error, `${where}: usage/plan of the output`, { valid: true });
    }
    this.stats.calls += 2;
    if (replan.tokensBefore !== usage) this.add({ class: 'counts', message: `${where}: plan(output).tokensBefore ${replan.tokensBefore} but usage(output) ${usage}` });
    const evs = events ?? result.events;
    if (plan) {
      const work = plan.actions.length > 0 || replayed > 0;
      const allApplied = evs.every((e) => e.status === 'applied');
      const lossy = evs.some((e) => LOSSY.has(e.strategy)) || plan.actions.some((a) => a.type === 'summarize' || a.type === 'drop');
      if (!work || result.cancelled) {
        if (usage !== plan.tokensBefore) this.add({ class: 'counts', message: `${where}: ${result.cancelled ? 'cancelled' : 'nothing to do'}, plan.tokensBefore ${plan.tokensBefore} but usage(output) ${usage}` });
      } else if (allApplied && !lossy && usage !== plan.tokensAfter) {
        this.add({ class: 'counts', message: `${where}: every edit applied, plan.tokensAfter ${plan.tokensAfter} but usage(output) ${usage} (actions ${plan.actions.map((a) => a.type).join(', ')}; replayed ${replayed})` });
      } else if (allApplied && lossy && usage > plan.tokensAfter) {
        this.add({ class: 'counts', message: `${where}: summarized, usage(output) ${usage} over the predicted plan.tokensAfter ${plan.tokensAfter}` });
      }
    }
    this.stats.checked = (this.stats.checked ?? 0) + 1;
    if (replan.actions.length > 0) {
      const excused = result.cancelled || evs.some((e) => e.status === 'failed' || e.status === 'not-executed') || [...(plan?.notes ?? []), ...replan.notes].some((n) => EXCUSING_NOTES.has(n.type));
      if (excused) this.stats.replanExcused = (this.stats.replanExcused ?? 0) + 1;
      if (!excused) this.add({ class: 'replan', message: `${where}: a plan of the output has work: ${replan.actions.map((a) => `${a.type}${a.toolName ? `(${a.toolName})` : ''}`).join(', ')} (tokens ${replan.tokensBefore}, trigger ${JSON.stringify(replan.trigger)}; first call: ${evs.map((e) => `${e.strategy}:${e.status}`).join(', ')})` });
    }
    return { usage };
  }

  // -------------------------------------------------------------------------------------------
  // Scenario 1: a conversation turn by turn, in several host shapes.

  async conversation() {
    const { spec, cc } = this;
    const shapes = {};
    for (const name of spec.shapes) {
      const inner = new cc.MemoryStore();
      const statePath = name === 'stateless' ? STATE_PATH : undefined;
      const store = this.faultStore(inner, statePath);
      const shape = { name, inner, store, statePath, raw: [], managed: [], degraded: false, changed: false, compactor: undefined };
      if (name !== 'stateless') {
        try {
          shape.compactor = await this.call('createCompactor', () => cc.createCompactor(this.options(store)));
        } catch (error) {
          this.judgeError(error, `${name}: createCompactor`, { valid: true });
          shape.degraded = true;
          shape.dead = true;
        }
      }
      shapes[name] = shape;
    }
    for (let t = 0; t < spec.turns.length; t++) {
      const op = spec.ops[t];
      const results = {};
      for (const name of spec.shapes) {
        const shape = shapes[name];
        if (shape.dead) continue;
        const turn = hydrate(spec.turns[t]);
        shape.raw.push(...turn);
        const input = name === 'fresh' || name === 'stateless' ? freshCopy(shape.raw) : name === 'managed' ? [...shape.managed, ...turn] : shape.raw;
        const opName = typeof op === 'string' ? op : op.recover ? 'recover' : 'compact';
        const where = `turn ${t} ${name} ${typeof op === 'string' ? op : op.recover ? `recover(×${op.recover})` : 'compact(instructions)'}`;
        let compactor = shape.compactor;
        if (name === 'stateless') {
          try {
            compactor = await this.call('createCompactor', () => cc.createCompactor(this.options(shape.store, { statePath: STATE_PATH })));
          } catch (error) {
            this.judgeError(error, `${where}: createCompactor`, { valid: true });
            shape.degraded = true;
            results[name] = { error: 'createCompactor' };
            continue;
          }
        }
        const before = J(input);
        let result;
        try {
          result = await this.call(opName, () => (op === 'manage' ? compactor.manage(input) : op.recover ? this.recover(compactor, input, op.recover) : compactor.compact(input, typeof op === 'object' ? { instructions: op.compact } : undefined)));
        } catch (error) {
          // A recovery with nothing left to compact says so: the typed verdict, not a fault.
          if (!(op.recover && error?.code === 'context_overflow')) this.judgeError(error, where, { valid: true });
          results[name] = { error: error?.fuzzApp ? 'app' : error?.code ?? error?.name };
          if (error?.code === 'state_conflict') shape.degraded = true;
        }
        // Summaries made in the background are back before the next request (a route's
        // `waitUntil`), so every shape applies them at the same call; settling never hangs.
        try {
          await this.call('settled', () => compactor.settled());
        } catch (error) {
          this.judgeError(error, `${where}: settled`, { valid: true });
        }
        if (J(input) !== before) this.add({ class: 'mutated-input', message: `${where}: the call changed the messages it was given` });
        if (result) {
          const checked = await this.checkResult(compactor, input, result, shape.inner, where, { exactTranscript: !(shape.changed && (name === 'long' || name === 'rerun')) });
          if (result.stateError) shape.degraded = true;
          if (result.events.length > 0) shape.changed = true;
          results[name] = {
            messages: J(result.messages),
            cancelled: Boolean(result.cancelled),
            detail: J({ events: result.events.map(({ call, ...e }) => e), before: result.plan.tokensBefore, after: result.plan.tokensAfter, actions: result.plan.actions.map((a) => `${a.type}:${a.path ?? ''}`), usage: checked?.usage }),
          };
          if (name === 'managed') shape.managed = result.messages;
          const factor = spec.usage?.[t];
          if (factor) {
            // The provider's count of the prompt sent, after the turn's checks; a kept state
            // saves it (as a route does after the turn).
            try {
              // A steady provider: `factor` × the count before calibration (not compounding).
              const ratio = compactor.state().calibration?.ratio ?? 1;
              compactor.observeUsage({ inputTokens: Math.round((compactor.usage(result.messages).tokens / ratio) * factor) });
              if (name === 'stateless') await this.call('saveState', () => compactor.saveState());
            } catch (error) {
              this.judgeError(error, `${where}: observeUsage/saveState`, { valid: true });
              shape.degraded = true;
            }
          }
        } else if (name === 'managed') {
          shape.managed = input;
        }
        if (name === 'stateless') {
          // A fault on the state, or beside it (a summary made ahead that cannot be read is one
          // still out: the request goes on unsummarized until the hard limit, by design).
          if (this.faultsFired.has('state') || this.faultsFired.has('lease')) shape.degraded = true;
          compactor.dispose();
        }
      }
      // The same prompt in every host shape; the same everything in a rerun.
      const base = results.long;
      if (!base || shapes.long.degraded) continue;
      for (const name of spec.shapes) {
        if (name === 'long' || shapes[name].degraded || !results[name]) continue;
        const r = results[name];
        // Classed by what tells the prompts apart: a lone surrogate, a number, keys in another order.
        const kind = !base.error && !r.error && r.messages !== base.messages ? classifyDiff(base.messages, r.messages) : 'content';
        const cls = name === 'rerun' ? 'determinism' : kind === 'content' ? 'host-shape' : `host-shape-${kind}`;
        if ((base.error ?? null) !== (r.error ?? null)) this.add({ class: cls, message: `turn ${t}: long-lived ${base.error ? `threw ${base.error}` : 'answered'}, ${name} ${r.error ? `threw ${r.error}` : 'answered'}` });
        else if (!base.error && r.messages !== base.messages && kind === 'surrogate' && (documentedSurrogates(base.messages, r.messages, this.keptCtx.collisions) || documentedSurrogates(r.messages, base.messages, this.keptCtx.collisions))) {
          // docs/API.md: a string sharing its U+FFFD form with another of the conversation, in a
          // part the core changed, may keep that form in one shape and its original in another.
          this.documented.push(`turn ${t}: ${name} and the long-lived compactor differ only in strings that share a U+FFFD form (documented)`);
        } else if (!base.error && r.messages !== base.messages) this.add({ class: cls, message: `turn ${t}: ${name} returned another prompt than the long-lived compactor (cancelled ${r.cancelled}/${base.cancelled}): ${firstDiff(base.messages, r.messages)}` });
        else if (!base.error && name === 'rerun' && r.detail !== base.detail) this.add({ class: cls, message: `turn ${t}: a rerun planned or reported otherwise: ${firstDiff(base.detail, r.detail)}` });
      }
    }
    for (const shape of Object.values(shapes)) shape.compactor?.dispose();
  }

  /** The provider refused `input` as too long, counting `factor` × the compactor's count (the
   * same in every host shape, whose counts agree): `recover` with its error. */
  recover(compactor, input, factor) {
    const reported = Math.max(1, Math.round(compactor.usage(input).tokens * factor));
    const error = Object.assign(new Error(`This model's maximum context length is ${compactor.model.contextWindow} tokens. However, your messages resulted in ${reported} tokens. Please reduce the length of the messages.`), { statusCode: 400 });
    return compactor.recover(input, error);
  }

  // -------------------------------------------------------------------------------------------
  // Scenario 2: an AI SDK 7 generateText loop with prepareStep and wrapTools.

  async agent() {
    const { spec, cc } = this;
    const { generateText, stepCountIs, jsonSchema } = this.env.ai;
    const { MockLanguageModelV4 } = this.env.aiTest;
    const inner = new cc.MemoryStore();
    const store = this.faultStore(inner, undefined);
    const events = [];
    let compactor;
    try {
      compactor = await this.call('createCompactor', () => cc.createCompactor(this.options(store, { onEvent: (e) => events.push(e) })));
    } catch (error) {
      return this.judgeError(error, 'createCompactor', { valid: true });
    }
    // AI SDK 7 refuses system messages in `messages` (they go in `instructions`).
    const history = hydrate(spec.turns.flat()).filter((m) => m.role !== 'system');
    const steps = hydrate(spec.agent.steps);
    const queued = new Map(); // toolCallId → outputs not returned yet
    for (const s of steps) for (const c of s.calls ?? []) (queued.get(c.toolCallId) ?? queued.set(c.toolCallId, []).get(c.toolCallId)).push(c.output);
    const returned = new Map(); // toolCallId → outputs the tool returned, for the wrapper's check
    const text = spec.agent.instructionsText;
    const system = spec.agent.instructions === 'string' ? [{ role: 'system', content: text }] : spec.agent.instructions === 'messages' ? [{ role: 'system', content: text }, { role: 'system', content: 'Answer briefly.' }] : [];
    const instructions = spec.agent.instructions === 'string' ? text : spec.agent.instructions === 'messages' ? system : undefined;

    let stepIndex = 0;
    const model = new MockLanguageModelV4({
      modelId: spec.options.model ?? 'mock-model',
      // URLs go to the provider as they are: the SDK must never download example.com's.
      supportedUrls: { '*/*': [/^/] },
      doGenerate: async ({ prompt }) => {
        this.add(checkPromptPairs(prompt, `model call ${stepIndex}`));
        const step = steps[Math.min(stepIndex++, steps.length - 1)];
        const total = step.inputTokensFactor ? Math.round((J(prompt).length / 4) * step.inputTokensFactor) : undefined;
        const usage = { inputTokens: { total, noCache: total, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } };
        if (step.calls) {
          return { content: step.calls.map((c) => ({ type: 'tool-call', toolCallId: c.toolCallId, toolName: c.toolName, input: JSON.stringify(c.input) })), finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage, warnings: [] };
        }
        return { content: [{ type: 'text', text: step.text ?? 'Done.' }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage, warnings: [] };
      },
    });
    const names = [...new Set(steps.flatMap((s) => (s.calls ?? []).map((c) => c.toolName)))];
    const base = {};
    for (const name of names) {
      base[name] = {
        description: `The ${name} tool.`,
        inputSchema: jsonSchema({ type: 'object', additionalProperties: true }),
        execute: async (_input, options) => {
          const id = options?.toolCallId;
          const output = queued.get(id)?.shift() ?? 'ok';
          (returned.get(id) ?? returned.set(id, []).get(id)).push(output);
          return output;
        },
      };
    }
    const wrapMode = spec.agent.wrapTools;
    const wrappedNames = new Set(names.filter((n) => wrapMode === 'all' || (wrapMode === 'some' && hash32(n) % 2 === 0)));
    let tools;
    try {
      const chosen = Object.fromEntries(names.filter((n) => wrappedNames.has(n)).map((n) => [n, base[n]]));
      tools = { ...base, ...(wrappedNames.size ? compactor.wrapTools(chosen) : {}) };
      this.stats.calls++;
    } catch (error) {
      return this.judgeError(error, 'wrapTools', { valid: true });
    }
    for (const name of names) {
      const execute = tools[name].execute;
      tools[name] = {
        ...tools[name],
        execute: async (input, options) => {
          const out = await this.call(`${name}.execute`, () => execute(input, options));
          const outputs = returned.get(options?.toolCallId) ?? [];
          // Calls sharing an id (repeated ids) may run in any order: any of their outputs.
          if (wrappedNames.has(name) && !outputs.includes(out)) {
            await this.checkWrapped(outputs, out, inner, `wrapTools ${name} ${JSON.stringify(options?.toolCallId)}`);
          }
          return out;
        },
      };
    }
    const prepareStep = async (options) => {
      const input = options.messages;
      const where = `prepareStep ${options.stepNumber}`;
      const mark = events.length;
      const cancels = this.cancels ?? 0;
      const r = await this.call('prepareStep', () => compactor.prepareStep(options));
      this.env.debug?.('prepareStep', { stepNumber: options.stepNumber, input, output: r.messages, compactor, system, options });
      const full = [...system, ...r.messages];
      const cancelled = (this.cancels ?? 0) > cancels;
      await this.checkResult(compactor, [...system, ...input], { messages: full, events: events.slice(mark), cancelled }, inner, where, { events: events.slice(mark) });
      return r;
    };
    try {
      await this.call(
        'generateText',
        () => generateText({ model, instructions, messages: history, tools, stopWhen: stepCountIs(steps.length + 1), prepareStep, ...(spec.agent.onStepFinish ? { onStepFinish: compactor.onStepFinish } : {}) }),
        { scale: steps.length + 2 },
      );
    } catch (error) {
      // The SDK may wrap what prepareStep or a tool threw.
      let inner = error;
      for (let n = 0; n < 6 && inner && !(inner instanceof this.cc.CompactorError) && !inner.fuzzApp && inner.cause; n++) inner = inner.cause;
      this.judgeError(inner ?? error, 'generateText', { valid: true });
    }
    compactor.dispose();
  }

  /** wrapTools: an output that was replaced names a stored file holding it byte for byte
   * (`originals`: what the tool returned under that call id). */
  async checkWrapped(originals, out, inner, where) {
    const files = await snapshot(inner);
    if (typeof out !== 'string' || !out.startsWith('[Tool output offloaded: ')) return this.add({ class: 'wraptools', message: `${where}: returned neither the tool's output nor a preview: ${J(out)?.slice(0, 120)}` });
    const forms = originals.map((o) => (typeof o === 'string' ? o : JSON.stringify(o, null, 2)));
    const named = [...files.keys()].filter((p) => out.includes(p));
    if (named.length === 0) return this.add({ class: 'wraptools', message: `${where}: the preview names no stored file: ${out.slice(0, 120)}` });
    if (named.some((p) => forms.includes(files.get(p)))) return;
    const expected = forms[0] ?? '';
    const stored = files.get(named[0]);
    const kind = classifyDiff(expected, stored);
    if (kind === 'surrogate' && this.keptCtx.allForms.has(stored)) return;
    this.add({ class: kind === 'content' ? 'stored-copy' : `stored-${kind}`, message: `${where}: ${named[0]} ${firstDiff(expected, stored)}` });
  }

  // -------------------------------------------------------------------------------------------
  // Scenario 3: malformed messages and wrong arguments: typed errors only, never a poisoned
  // compactor.

  async malformed() {
    const { spec, cc } = this;
    let compactor;
    try {
      compactor = await this.call('createCompactor', () => cc.createCompactor(this.options(new cc.MemoryStore())));
    } catch (error) {
      return this.judgeError(error, 'createCompactor', { valid: true });
    }
    const m = spec.malformed;
    for (const entry of spec.entries) {
      const bad = malform(hydrate(spec.turns.flat()), m);
      const where = `${entry}(${m.kind} at ${m.at})`;
      try {
        this.stats.calls++;
        if (entry === 'usage') compactor.usage(bad);
        else if (entry === 'plan') compactor.plan(bad);
        else if (entry === 'manage') await this.call('manage', () => compactor.manage(bad));
        else if (entry === 'compact') await this.call('compact', () => compactor.compact(bad));
        else if (entry === 'prepareStep') await this.call('prepareStep', () => compactor.prepareStep({ messages: bad, steps: [], stepNumber: 0 }));
      } catch (error) {
        this.judgeError(error, where, { valid: false });
      }
    }
    const valid = hydrate(spec.turns.flat());
    try {
      await this.call('manage', () => compactor.manage(valid));
    } catch (error) {
      if (hangIn(error)) throw error;
      if (!error?.fuzzApp) this.add({ class: 'poisoned', message: `after ${m.kind}: manage of a valid conversation threw ${error?.code ?? error?.name}: ${String(error?.message).slice(0, 200)}` });
    }
    // Wrong argument types: a TypeError or a typed CompactorError, never anything else.
    const misuse = MISUSE.filter((_, i) => hash32(`${m.seed}:${i}`) % 4 === 0);
    for (const [name, run] of misuse) {
      try {
        this.stats.calls++;
        const value = run(cc, compactor, valid);
        if (value && typeof value.then === 'function') {
          const settled = await this.call(name, () => value);
          if (settled instanceof cc.Compactor) settled.dispose();
        }
      } catch (error) {
        this.judgeError(error, `misuse ${name}`, { valid: false });
      }
    }
    compactor.dispose();
  }
}

const MISUSE = [
  ['countTokens(42)', (cc) => cc.countTokens(42)],
  ['countTokens(x, 42)', (cc) => cc.countTokens('x', 42)],
  ['usage()', (cc, c) => c.usage()],
  ['wrapTools(null)', (cc, c) => c.wrapTools(null)],
  ['wrapTools({a: null})', (cc, c) => c.wrapTools({ a: null })],
  ['observeUsage(null)', (cc, c) => c.observeUsage(null)],
  ['createCompactor(null)', (cc) => cc.createCompactor(null)],
  ['createCompactor({contextWindow: NaN})', (cc) => cc.createCompactor({ contextWindow: NaN })],
  ['createCompactor({contextWindow: -5})', (cc) => cc.createCompactor({ contextWindow: -5 })],
  ['createCompactor({contextWindow: 1e12})', (cc) => cc.createCompactor({ contextWindow: 1e12 })],
  ['createCompactor({store: {}})', (cc) => cc.createCompactor({ store: {} })],
  ['createCompactor({summarize: 5})', (cc) => cc.createCompactor({ summarize: 5 })],
  ['createCompactor({history: {strategy: nope}})', (cc) => cc.createCompactor({ history: { strategy: 'nope' } })],
  ['modelInfo(42)', (cc) => cc.modelInfo(42)],
  ['countBreakdown(null)', (cc) => cc.countBreakdown(null)],
  ['compact(messages, 5)', (cc, c, v) => c.compact(v, 5)],
  ['prepareStep(null)', (cc, c) => c.prepareStep(null)],
  ['plan(messages, {trigger: bogus})', (cc, c, v) => c.plan(v, { trigger: 'bogus' })],
  ['offloadToolOutput(null, null, 5n)', (cc, c) => c.offloadToolOutput(null, null, 5n)],
  ['countTokens(1 MB of spaces)', (cc) => cc.countTokens(' '.repeat(1_000_000))],
  ['countTokens(lone surrogates)', (cc) => cc.countTokens('\ud83d'.repeat(10_000))],
];

/** A valid conversation broken one way (gen.mjs `malformation`). */
export function malform(messages, { at, kind }) {
  const n = messages.length;
  const target = messages[at % Math.max(1, n)] ?? (messages[0] = { role: 'user', content: 'x' });
  const part = (type) => {
    for (const message of messages) if (Array.isArray(message?.content)) for (const p of message.content) if (p?.type === type) return p;
    return undefined;
  };
  const callPart = () => part('tool-call') ?? (messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'k1', toolName: 't', input: {} }] }), part('tool-call'));
  const resultPart = () => part('tool-result') ?? (messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'k2', toolName: 't', input: {} }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'k2', toolName: 't', output: { type: 'text', value: 'v' } }] }), part('tool-result'));
  const nested = (depth) => {
    const root = {};
    let node = root;
    for (let i = 1; i < depth; i++) node = node.a = {};
    node.a = 1;
    return root;
  };
  switch (kind) {
    case 'role-unknown': target.role = 'robot'; break;
    case 'role-missing': delete target.role; break;
    case 'role-number': target.role = 3; break;
    case 'content-number': target.content = 7; break;
    case 'content-null': target.content = null; break;
    case 'content-object': target.content = { text: 'x' }; break;
    case 'content-missing': delete target.content; break;
    case 'part-null': target.content = Array.isArray(target.content) ? [null, ...target.content] : [null]; break;
    case 'part-no-type': target.content = [{ text: 'x' }]; break;
    case 'part-type-number': target.content = [{ type: 5, text: 'x' }]; break;
    case 'part-string': target.content = ['hello']; break;
    case 'call-no-id': delete callPart().toolCallId; break;
    case 'call-id-number': callPart().toolCallId = 7; break;
    case 'call-no-name': delete callPart().toolName; break;
    case 'result-orphan': messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: 'ghost', toolName: 't', output: { type: 'text', value: 'x' } }] }); break;
    case 'result-no-output': delete resultPart().output; break;
    case 'output-value-number': resultPart().output = { type: 'text', value: 3 }; break;
    case 'output-unknown-type': resultPart().output = { type: 'weird', value: 1 }; break;
    case 'content-output-not-array': resultPart().output = { type: 'content', value: 'x' }; break;
    case 'message-null': messages[at % n] = null; break;
    case 'message-string': messages[at % n] = 'hello'; break;
    case 'message-array': messages[at % n] = [target]; break;
    case 'messages-null': return null;
    case 'messages-object': return { messages };
    case 'messages-string': return 'hello';
    case 'messages-number': return 42;
    case 'messages-undefined': return undefined;
    case 'bigint': callPart().input = { n: 10n }; break;
    case 'cycle': target.self = target; break;
    case 'deep-200': target.deep = nested(200); break;
    case 'deep-10000': target.deep = nested(10_000); break;
    case 'throwing-getter': Object.defineProperty(target, 'content', { get() { throw new Error('getter exploded'); }, enumerable: true }); break;
    case 'nan-number': target.n = NaN; break;
    case 'unknown-part': target.content = [...(Array.isArray(target.content) ? target.content : [{ type: 'text', text: String(target.content) }]), { type: 'mystery', x: 1 }]; break;
    case 'function-value': target.fn = () => 1; break;
    case 'symbol-value': target.sym = Symbol('s'); break;
    case 'sparse-array': { const c = [{ type: 'text', text: 'a' }]; c[2] = { type: 'text', text: 'b' }; target.content = c; break; }
    case 'result-in-user': messages.push({ role: 'user', content: [{ type: 'tool-result', toolCallId: 'u1', toolName: 't', output: { type: 'text', value: 'x' } }] }); break;
    case 'call-in-user': messages.push({ role: 'user', content: [{ type: 'tool-call', toolCallId: 'u2', toolName: 't', input: {} }] }); break;
    case 'huge-id': { const id = 'x'.repeat(1_000_000); messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 't', input: {} }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 't', output: { type: 'text', value: 'ok' } }] }); break; }
    case 'proto-key': messages.push(JSON.parse('{"role":"user","content":"hi","__proto__":{"role":"tool"}}')); break;
    case 'date-value': target.when = new Date(0); break;
    case 'text-not-string': messages.push({ role: 'user', content: [{ type: 'text', text: 5 }] }); break;
    case 'image-number': messages.push({ role: 'user', content: [{ type: 'image', image: 5 }] }); break;
    default: throw new Error(`unknown malformation ${kind}`);
  }
  return messages;
}
