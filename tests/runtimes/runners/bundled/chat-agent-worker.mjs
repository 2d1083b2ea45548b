// A Cloudflare Agent (`AIChatAgent` of `@cloudflare/ai-chat`, on `agents`) wired with
// `context-compactor/cloudflare`, bundled by runners/workerd.mjs and run in workerd as a
// SQLite-backed Durable Object. A scripted AI SDK model (LanguageModelV3, streamed) drives a
// 30-query tool loop in a 12,000-token window over two turns of one chat (two RPC calls to the
// same Durable Object, `saveMessages` each time: the agent's own turn machinery runs
// `onChatMessage`, streams, and persists the reply), with the Durable Object reset in between so
// the second turn starts from storage alone. Checked: every prompt fits the window with every
// tool call and its result together; each query's output is stored in the Durable Object's
// storage byte for byte as it returns (the chat keeps only previews); the state is saved there
// (calibrated) and the second turn's compactor loads it; the second turn reads the first turn's
// stored output back through the recovery tool, byte for byte.
import { AIChatAgent } from '@cloudflare/ai-chat';
import { getAgentByName } from 'agents';
import { convertToModelMessages, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { createCompactor, loadState } from 'context-compactor';
import { chatCompactor, streamTextOptions } from 'context-compactor/cloudflare';
import { DurableObjectStore } from 'context-compactor/stores/durable-object';

const WINDOW = 12_000;
const PREFIX = 'context-compactor';
const STATE = '/state/compactor.json';
/** The output of query `i`: numbered rows, ~3,000 tokens (as js/test-helpers/framework-loop.mjs). */
const output = (i) => Array.from({ length: 150 }, (_, r) => `row ${i}.${r}: metric=${(i * 7919 + r * 104729) % 100003} status=ok region=eu-${r % 5}`).join('\n');

/** A scripted LanguageModelV3: each streamed step plays the next entry of `script` (a tool call
 * or, after the last, an answer) and records the prompt it was sent. Usage is reported as the
 * prompt's characters / 4 (calibration gets a sample each step). */
function scriptedModel(turn) {
  let step = 0;
  return {
    specificationVersion: 'v3',
    provider: 'scripted',
    modelId: 'scripted',
    supportedUrls: {},
    async doGenerate() {
      throw new Error('streamed only');
    },
    async doStream({ prompt }) {
      turn.prompts.push(prompt);
      const call = turn.script[step++];
      const usage = { inputTokens: { total: Math.ceil(JSON.stringify(prompt).length / 4), noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } };
      const parts = [{ type: 'stream-start', warnings: [] }];
      if (call) {
        parts.push({ type: 'tool-call', toolCallId: `${turn.name}-${step}`, toolName: call.tool, input: JSON.stringify(call.input) });
        parts.push({ type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage });
      } else {
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: `${turn.name} done.` }, { type: 'text-end', id: 't' });
        parts.push({ type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage });
      }
      return { stream: new ReadableStream({ start(c) { for (const p of parts) c.enqueue(p); c.close(); } }) };
    },
  };
}

const runQuery = tool({
  description: 'Runs query i and returns its rows.',
  inputSchema: jsonSchema({ type: 'object', properties: { i: { type: 'number' } }, required: ['i'] }),
  execute: async ({ i }) => output(i),
});

export class Chat extends AIChatAgent {
  /** The turn being run: its name, script, and what it saw. */
  turn = undefined;

  async onChatMessage() {
    const turn = this.turn;
    const compactor = await chatCompactor(this.ctx, {
      model: 'gpt-4o',
      contextWindow: WINDOW,
      summarize: async ({ prompt }) => `## Session Intent\nRun the queries.\n\n## Progress\nSummarized ${prompt.length} characters.`,
      onEvent: (e) => turn.events.push(e),
    });
    turn.loadedStats ??= compactor.stats();
    turn.historyAtStart ??= this.messages.length;
    const result = streamText({
      model: scriptedModel(turn),
      ...(await streamTextOptions(compactor, {
        system: 'You are a data agent.',
        messages: await convertToModelMessages(this.messages),
        tools: { run_query: runQuery },
      })),
      stopWhen: stepCountIs(40),
    });
    return result.toUIMessageStreamResponse();
  }

  /** One user turn through the agent's own `saveMessages` (persist, `onChatMessage`, stream,
   * persist the reply). Returns what the checks need. */
  async runTurn(name, text, queries, read) {
    const store = new DurableObjectStore(this.ctx.storage, { prefix: PREFIX });
    const before = { outputs: (await store.list('/tool_outputs/')).length, state: await loadState(store, STATE).catch((e) => String(e)) };
    let readPath;
    if (read !== undefined) {
      // The first turn's stored output of query `read`, found in the Durable Object's storage.
      for (const path of await store.list('/tool_outputs/')) if ((await store.read(path)) === output(read)) readPath = path;
    }
    const script = [...(readPath ? [{ tool: 'read_file', input: { path: readPath, offset: 0, limit: 20 } }] : []), ...queries.map((i) => ({ tool: 'run_query', input: { i } }))];
    this.turn = { name, script, prompts: [], events: [] };
    const result = await this.saveMessages((messages) => [...messages, { id: `${name}-user`, role: 'user', parts: [{ type: 'text', text }] }]);
    const turn = this.turn;
    this.turn = undefined;

    const counter = await createCompactor({ model: 'gpt-4o', contextWindow: WINDOW });
    const prompts = turn.prompts.map((prompt) => {
      const open = new Set();
      let orphans = 0;
      for (const m of prompt) {
        if (!Array.isArray(m.content)) continue;
        for (const p of m.content) {
          if (p.type === 'tool-call') open.add(p.toolCallId);
          if (p.type === 'tool-result' && !open.delete(p.toolCallId)) orphans++;
        }
      }
      return { tokens: counter.usage(prompt).tokens, unpaired: open.size + orphans, messages: prompt.length };
    });
    counter.dispose();

    // What the chat keeps: previews of the stored outputs, and the recovery tool's answer.
    const kept = JSON.stringify(this.messages);
    const readPart = this.messages.flatMap((m) => m.parts).find((p) => p.type === 'tool-read_file');
    let fullRead;
    const pages = [];
    if (readPath) {
      // The whole stored output read back through the recovery tool, page by page.
      const c = await chatCompactor(this.ctx, { model: 'gpt-4o', contextWindow: WINDOW });
      const lines = [];
      for (let page = 0; page < 50; page++) {
        const text = await c.tools().read_file.execute({ path: readPath, offset: lines.length, limit: 40 });
        const got = text.split('\n').map((l) => /^ *(\d+)\t(.*)$/.exec(l)).filter(Boolean);
        if (got.length) pages.push(got.length);
        if (got.length === 0) break;
        for (const m of got) lines.push(m[2]);
      }
      fullRead = lines.join('\n');
    }
    return {
      status: result.status,
      error: result.error === undefined ? undefined : String(result.error),
      steps: turn.prompts.length,
      script: script.length,
      historyAtStart: turn.historyAtStart,
      messagesAfter: this.messages.length,
      before,
      loadedStats: turn.loadedStats,
      prompts,
      events: turn.events.map((e) => ({ strategy: e.strategy, status: e.status, path: e.path })),
      keptChars: kept.length,
      keptFullOutput: queries.some((i) => kept.includes(output(i))),
      readPath,
      readOutput: readPart?.output,
      readState: readPart?.state,
      fullReadMatches: readPath ? fullRead === output(read) : undefined,
      fullReadChars: fullRead?.length,
      pages,
    };
  }

  /** Everything the compactor holds in this Durable Object's storage. */
  async stored(queries) {
    const store = new DurableObjectStore(this.ctx.storage, { prefix: PREFIX });
    const paths = await store.list('/tool_outputs/');
    const texts = new Set();
    for (const path of paths) texts.add(await store.read(path));
    const state = await loadState(store, STATE);
    return {
      outputs: paths.length,
      everyOutputByteForByte: queries.every((i) => texts.has(output(i))),
      transcripts: (await store.list('/conversation_history/')).length,
      state: { calibration: state?.calibration, stats: state?.stats },
      // The agent's own key-value entries (the compactor's are all under PREFIX).
      otherKeys: [...(await this.ctx.storage.list()).keys()].filter((k) => !k.startsWith(PREFIX)).length,
    };
  }

  /** Resets the Durable Object (the next call gets a new instance over the same storage). */
  async restart() {
    this.ctx.abort('restart');
  }
}

export default {
  async fetch(request, env) {
    const checks = [];
    const check = (name, ok, detail = '') => checks.push({ name: `Cloudflare Agents (AIChatAgent + context-compactor/cloudflare): ${name}`, ok: Boolean(ok), detail: typeof detail === 'string' ? detail : JSON.stringify(detail) });
    const figures = {};
    try {
      const first = Array.from({ length: 15 }, (_, i) => i + 1);
      const second = Array.from({ length: 15 }, (_, i) => i + 16);
      let agent = await getAgentByName(env.Chat, 'chat-1');
      const t1 = await agent.runTurn('turn-1', 'Run queries 1 to 15.', first);
      const mid = await agent.stored(first);
      let restarted = false;
      try {
        await agent.restart();
      } catch {
        restarted = true;
      }
      agent = await getAgentByName(env.Chat, 'chat-1');
      const t2 = await agent.runTurn('turn-2', 'Read back query 1, then run queries 16 to 30.', second, 1);
      const end = await agent.stored([...first, ...second]);
      const turns = [t1, t2];
      const prompts = turns.flatMap((t) => t.prompts);
      const events = turns.flatMap((t) => t.events);
      const count = (strategy) => events.filter((e) => e.strategy === strategy && e.status === 'applied').length;
      Object.assign(figures, {
        steps: turns.map((t) => t.steps),
        maxPromptTokens: Math.max(...prompts.map((p) => p.tokens)),
        window: WINDOW,
        offloadsApplied: count('offload'),
        summaries: count('summarize'),
        storedOutputs: end.outputs,
        transcripts: end.transcripts,
        keptChars: turns.map((t) => t.keptChars),
        calibrationSamples: end.state.calibration?.samples,
        compactions: end.state.stats?.compactions,
      });

      check('two turns ran through saveMessages → onChatMessage → streamText, every scripted step played',
        turns.every((t) => t.status === 'completed' && t.steps === t.script + 1) && t2.script === 16,
        turns.map((t) => ({ status: t.status, error: t.error, steps: t.steps, script: t.script })));
      check(`every prompt fits the ${WINDOW}-token window`, prompts.length === 33 && prompts.every((p) => p.tokens <= WINDOW),
        `${prompts.length} prompts, largest ${figures.maxPromptTokens} tokens`);
      check('every tool call is sent with its result (no pair split)', prompts.every((p) => p.unpaired === 0), prompts.map((p) => p.unpaired).join(','));
      check('turn 1: each of 15 outputs stored in the Durable Object storage byte for byte as it returned; the chat keeps previews only',
        mid.outputs === 15 && mid.everyOutputByteForByte && !t1.keptFullOutput, { stored: mid.outputs, keptChars: t1.keptChars });
      check('turn 1: the state is saved in the Durable Object storage, calibrated by the steps\' usage',
        mid.state.stats !== undefined && mid.state.calibration?.samples >= 15, mid.state);
      check('the Durable Object was reset between the turns; turn 2 got the chat back from SQLite',
        restarted && t2.historyAtStart === t1.messagesAfter + 1, { restarted, historyAtStart: t2.historyAtStart, turn1Messages: t1.messagesAfter });
      check('turn 2: found turn 1\'s outputs and state in storage; its compactor loaded that state',
        t2.before.outputs === 15 && typeof t2.before.state === 'object' && JSON.stringify(t2.loadedStats) === JSON.stringify(mid.state.stats) && t2.readPath !== undefined,
        { outputs: t2.before.outputs, loaded: t2.loadedStats, readPath: t2.readPath });
      const expected = output(1).split('\n').slice(0, 20);
      check('turn 2: the recovery tool (read_file) the model called read turn 1\'s stored output back, byte for byte',
        t2.readState === 'output-available' && typeof t2.readOutput === 'string' && JSON.stringify(t2.readOutput.split('\n').map((l) => /^ *\d+\t(.*)$/.exec(l)?.[1]).filter((l) => l !== undefined)) === JSON.stringify(expected),
        JSON.stringify(String(t2.readOutput).slice(0, 120)));
      check('turn 2: read_file pages rebuild the whole stored output byte for byte', t2.fullReadMatches === true, `${t2.fullReadChars} characters in ${t2.pages.length} pages (${t2.pages.join(', ')} lines)`);
      check('all 30 outputs stored byte for byte; compaction ran (30 offloads at return, a summary, its transcripts)',
        end.outputs === 30 && end.everyOutputByteForByte && figures.offloadsApplied === 30 && figures.summaries >= 1 && end.transcripts >= 1,
        { ...figures, agentKeys: end.otherKeys });
    } catch (error) {
      check('ran', false, error?.stack ?? String(error));
    }
    return Response.json({ checks, figures });
  },
};
