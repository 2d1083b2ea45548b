// Exports one arena session, run through the npm package's long-lived `prepareStep` contender
// (`context-compactor <preset>`, contenders/ai-sdk.mjs, host `long-lived`), as everything the
// Python replayer (`replay.py`) needs to run the same session through the Python host and
// compare the prompts, call by call:
//
// - the session as a script (lib/script.mjs `toScript`: user turns, assistant steps, recorded
//   tool outputs), its system prompt and tool definitions;
// - per model call: the arena clock's `now` when `prepareStep` ran (what the compactor read), the
//   prompt's digest as lib/metrics.mjs takes it (sha1 of `pieces(prompt).join('\0')`, 12 hex)
//   and the full sha1, a digest of each piece (tools, system, each message: to name the first
//   piece that differs), its tokens (the usage the scripted model reported), and a canonical
//   digest of each message handed to `prepareStep` and of each it returned;
// - per tool call: the clock when the tool returned, and a digest of what `wrapTools` returned;
// - per summarizer call: when it was asked (the number of `prepareStep` calls before it), in the
//   background or not, when a background one answered on the arena's clock (the number of
//   `prepareStep` calls started by then: it is the compactor's from the next one on), the digest
//   of the summarizer's prompt (lib/prompt.mjs form) and its text (`scriptedSummary`).
//
// The replay here is runAiSdk's long-lived host, step for step (the same `createCompactor`
// options, `arenaSummarizer`, `scriptedModel`, `Recorder`, `Replay`), with `prepareStep`, the
// tools and the summarizer wrapped to record what went in and out. `--verify` also runs the
// arena's own contender (lib/arena.mjs `runOne`) and checks that its `promptDigests` are these.
//
//   node bench/arena/python/export.mjs --session coding-agent --window 32000 --out /tmp/x.json
//        [--preset smart] [--options '{"background":false}'] [--verify] [--dump-call K --dump-dir D]
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { createCompactor, init, MemoryStore } from 'context-compactor';
import { arenaSummarizer, scriptedModel } from '../contenders/ai-sdk.mjs';
import { CONTENDERS, Recorder, runOne } from '../lib/arena.mjs';
import { fromAiSdk, pieces } from '../lib/prompt.mjs';
import { Replay, toScript } from '../lib/script.mjs';
import { generate } from '../sessions/index.mjs';

const sha1 = (text) => createHash('sha1').update(text).digest('hex');

/** JSON with object keys sorted and undefined values left out (replay.py `canonical`): a message
 * digest that does not depend on the order a host builds keys in. */
export function canonical(value) {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonical(v))).join(',')}]`;
  const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
}
const messageDigest = (m) => sha1(canonical(m)).slice(0, 12);

export async function exportSession({ session: name, window, preset = 'smart', options = {}, dumpCall, dumpDir }) {
  await init();
  const session = generate(name);
  const recorder = new Recorder(session, window);
  // `{"clock": false}`: no arena clock for the library (lib/arena.mjs `runOne` does the same).
  if (options.clock === false) {
    recorder.libraryClock = false;
    const { clock, ...rest } = options;
    options = rest;
  }
  const replay = new Replay(session);
  const calls = [];
  const toolCalls = {};
  const summaries = [];
  const nowReads = [];
  let prepared = 0; // prepareStep calls started
  let phase = 'start';
  let lastTools = [];
  let pending; // the entry of the prepareStep whose model call comes next
  const scripted = scriptedModel(replay, (prompt, tools) => {
    lastTools = tools;
    let built;
    const tokens = recorder.call(() => (built = fromAiSdk(prompt, tools)), replay);
    const ps = pieces(built);
    const entry = pending ?? {};
    pending = undefined;
    Object.assign(entry, {
      digest: sha1(ps.join('\u0000')).slice(0, 12),
      sha1: sha1(ps.join('\u0000')),
      pieceDigests: ps.map((p) => sha1(p).slice(0, 12)),
      tokens,
      tools: lastTools.map((t) => ({ type: t.type, name: t.name })),
    });
    if (dumpCall === calls.length) {
      mkdirSync(dumpDir, { recursive: true });
      writeFileSync(join(dumpDir, `npm-call-${dumpCall}.json`), JSON.stringify({ pieces: ps, prompt, tools }, null, 1));
    }
    calls.push(entry);
    phase = `after-call-${calls.length - 1}`;
    return tokens;
  });
  const summarizer = arenaSummarizer(recorder, () => lastTools);
  const now = summarizer.now;
  const store = new MemoryStore();
  const compactor = await createCompactor({
    model: 'claude-sonnet-4-5',
    contextWindow: window,
    preset,
    ...options,
    store,
    ...summarizer,
    ...(now ? { now: () => { const v = now(); nowReads.push({ phase, v }); return v; } } : {}),
    summarize: (request, opts = {}) => {
      const continuation = request.continuation;
      const prompt = continuation ? fromAiSdk(continuation.messages, continuation.tools ?? lastTools) : fromAiSdk([{ role: 'system', content: request.system }, ...request.messages]);
      const record = { index: summaries.length, askedAt: prepared, phase, background: Boolean(opts.background), continuation: Boolean(continuation), promptDigest: sha1(pieces(prompt).join('\u0000')).slice(0, 12), requestPromptDigest: sha1(request.prompt).slice(0, 12) };
      summaries.push(record);
      const answer = summarizer.summarize(request, opts);
      if (opts.background) {
        return answer.then((text) => {
          record.readyBefore = prepared; // the compactor has it from prepareStep `prepared` on
          record.text = text;
          return text;
        });
      }
      record.text = answer;
      return answer;
    },
  });
  // The session's tools returning the recorded outputs (contenders/ai-sdk.mjs `sessionTools`),
  // noting the clock when each returns.
  const recorded = Object.fromEntries(
    Object.entries(session.tools).map(([toolName, def]) => [
      toolName,
      tool({
        description: def.description,
        inputSchema: jsonSchema(def.inputSchema),
        execute: async (_input, { toolCallId }) => {
          toolCalls[toolCallId] = { now: recorder.now(), call: calls.length - 1 };
          phase = `tool-${toolCallId}`;
          return replay.output(toolCallId);
        },
      }),
    ]),
  );
  const wrapped = compactor.wrapTools(recorded);
  for (const [toolName, t] of Object.entries(wrapped)) {
    const execute = t.execute;
    wrapped[toolName] = {
      ...t,
      execute: async (input, o) => {
        const out = await execute(input, o);
        const original = replay.output(o.toolCallId);
        Object.assign(toolCalls[o.toolCallId], { name: toolName, offloaded: out !== original, returned: sha1(typeof out === 'string' ? out : JSON.stringify(out)).slice(0, 12) });
        return out;
      },
    };
  }
  const tools = { ...wrapped, ...compactor.tools() };
  const instructions = await compactor.systemPrompt(session.system);
  const prepareStep = async (input) => {
    const k = prepared++;
    phase = `prepare-${k}`;
    const entry = { turn: replay.turn, step: replay.step, stepNumber: input.stepNumber, now: recorder.now(), input: input.messages.map(messageDigest) };
    const out = await compactor.prepareStep(input);
    entry.output = out.messages.map(messageDigest);
    if (dumpCall === k) {
      mkdirSync(dumpDir, { recursive: true });
      writeFileSync(join(dumpDir, `npm-prepare-${k}.json`), JSON.stringify({ input: input.messages, output: out.messages, instructions }, null, 1));
    }
    pending = entry;
    return out;
  };
  const history = [];
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    phase = `turn-${t}`;
    history.push({ role: 'user', content: replay.turns[t].user });
    const result = await generateText({
      model: scripted,
      instructions,
      messages: history,
      tools,
      stopWhen: stepCountIs(replay.turns[t].steps.length + 1),
      prepareStep,
      onStepFinish: compactor.onStepFinish,
    });
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
    history.push(...result.responseMessages);
  }
  compactor.dispose();
  // `now` is constant within each prepareStep and tool call (the clock moves only at model calls
  // and between turns): check it, so one value per call is the whole story.
  for (const { phase: p, v } of nowReads) {
    const m = /^prepare-(\d+)$/.exec(p);
    if (m && calls[Number(m[1])].now !== v) throw new Error(`now() changed within prepareStep ${m[1]}`);
  }
  const script = toScript(session);
  const digests = recorder.scorer.result(() => false).promptDigests;
  if (digests.length !== calls.length || digests.some((d, i) => d !== calls[i].digest)) throw new Error('the recorded digests are not the Scorer\'s promptDigests');
  return {
    session: name,
    window,
    preset,
    options,
    model: 'claude-sonnet-4-5',
    clock: Boolean(now),
    system: session.system,
    tools: Object.entries(session.tools).map(([toolName, def]) => ({ name: toolName, description: def.description, inputSchema: def.inputSchema })),
    instructionsDigest: sha1(instructions).slice(0, 12),
    turns: script.turns.map((t) => ({ user: t.user, thinkSeconds: t.thinkSeconds, steps: t.steps })),
    outputs: Object.fromEntries(script.outputs),
    calls,
    toolCalls,
    summaries,
    promptDigests: digests,
  };
}

/** The arena's own contender on the same session and options: its promptDigests. */
export async function contenderDigests({ session: name, window, preset = 'smart', options = {} }) {
  const contender = CONTENDERS.find((c) => c.name === `context-compactor ${preset}`);
  const r = await runOne(contender, generate(name), window, { compactorOptions: Object.keys(options).length ? { ...options } : undefined });
  if (r.error) throw new Error(r.error);
  return r.promptDigests;
}

async function main() {
  const { values } = parseArgs({
    options: {
      session: { type: 'string' },
      window: { type: 'string', default: '32000' },
      preset: { type: 'string', default: 'smart' },
      options: { type: 'string', default: '{}' },
      out: { type: 'string' },
      verify: { type: 'boolean', default: false },
      'dump-call': { type: 'string' },
      'dump-dir': { type: 'string', default: '/tmp/helper-arena-dump' },
    },
  });
  if (!values.session || !values.out) throw new Error('usage: export.mjs --session NAME --window N --out FILE [--preset smart] [--options JSON] [--verify]');
  const args = { session: values.session, window: Number(values.window), preset: values.preset, options: JSON.parse(values.options), dumpCall: values['dump-call'] === undefined ? undefined : Number(values['dump-call']), dumpDir: values['dump-dir'] };
  const t0 = performance.now();
  const data = await exportSession(args);
  if (values.verify) {
    const theirs = await contenderDigests(args);
    const first = theirs.findIndex((d, i) => d !== data.promptDigests[i]);
    data.contenderCheck = { calls: theirs.length, equal: theirs.length === data.promptDigests.length && first < 0, firstDifference: first };
    if (!data.contenderCheck.equal) throw new Error(`this replay is not the arena's contender: ${theirs.length} vs ${data.promptDigests.length} calls, first difference at call ${first}`);
  }
  writeFileSync(values.out, JSON.stringify(data));
  const bg = data.summaries.filter((s) => s.background).length;
  console.error(`${data.session} ${data.window} ${data.preset} ${JSON.stringify(data.options)}: ${data.calls.length} calls, ${data.summaries.length} summaries (${bg} in the background), ${Object.values(data.toolCalls).filter((t) => t.offloaded).length} offloaded at return${values.verify ? ', the arena contender\'s digests equal' : ''}; ${Math.round(performance.now() - t0)} ms`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
