// node examples/serverless-route/test.mjs — the serverless chat route against a real Redis
// server (redis-server on loopback, started here) and the AI SDK's mock model: two route
// instances (each its own Redis connection, nothing shared in memory) take turns of one chat;
// a huge tool output is offloaded to Redis and read back by the recovery tool on the other
// instance; a double submit is one turn; bad requests are 400s. Exits non-zero on a failed check.
import assert from 'node:assert/strict';
import { jsonSchema, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createStorage } from 'unstorage';
import redisDriver from 'unstorage/drivers/redis';
import { startRedis } from '../../js/test-helpers/redis.mjs';
import { UnstorageStore } from 'context-compactor/stores/unstorage';
import { createChatRoute, loadTurns } from './route.mjs';

const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } };
const stream = (parts) => ({
  stream: new ReadableStream({
    start(c) {
      for (const part of [{ type: 'stream-start', warnings: [] }, ...parts]) c.enqueue(part);
      c.close();
    },
  }),
});
const say = (text) => stream([{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: text }, { type: 'text-end', id: 't' }, { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage }]);
const call = (toolName, input) => stream([{ type: 'tool-call', toolCallId: `call-${Math.random().toString(36).slice(2)}`, toolName, input: JSON.stringify(input) }, { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage }]);

/** The mock model: "search X" calls search; "read back" reads the last offloaded output with
 * the recovery tool; after a tool result it answers with the result's first line. */
const prompts = [];
const model = new MockLanguageModelV4({
  modelId: 'gpt-4o',
  doStream: async ({ prompt }) => {
    prompts.push(prompt);
    const lastUser = prompt.findLastIndex((m) => m.role === 'user');
    const ask = prompt[lastUser].content.map((p) => p.text ?? '').join('');
    const since = prompt.slice(lastUser + 1);
    const result = since.flatMap((m) => (m.role === 'tool' ? m.content : [])).at(-1);
    if (result) return say(`Result: ${String(result.output.value).split('\n')[0]}`);
    if (ask.startsWith('search ')) return call('search', { query: ask.slice(7) });
    if (ask === 'read back') {
      const path = JSON.stringify(prompt).match(/\/tool_outputs\/[\w.-]+/g)?.at(-1);
      return call('read_file', { path, offset: 0, limit: 2 });
    }
    return say(`You said: ${ask}`);
  },
});
const tools = {
  search: tool({
    description: 'Search the logs',
    inputSchema: jsonSchema({ type: 'object', properties: { query: { type: 'string' } }, required: ['query'] }),
    execute: async ({ query }) => Array.from({ length: 4_000 }, (_, i) => `${query} hit ${i}: /var/log/app.log:${i * 7} timeout after ${i % 90} s`).join('\n'),
  }),
};

const redis = await startRedis();
const instances = [0, 1].map(() => createStorage({ driver: redisDriver({ url: redis.url, base: 'app' }) }));
const [a, b] = instances.map((storage) => createChatRoute({ storage, model, tools, compactor: { model: 'gpt-4o', contextWindow: 16_000 } }));
const post = (route, body) => route(new Request('http://localhost/api/chat', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
const user = (text) => ({ role: 'user', content: text });
try {
  // Turn 1 on instance A: the search output (~70k tokens) is offloaded at return time.
  const first = await post(a, { id: 'chat-1', turnId: 't1', message: user('search timeout') });
  assert.equal(first.status, 200);
  const firstText = await first.text();
  assert.match(firstText, /^Result: \[Tool output offloaded: .* Full content: \/tool_outputs\//, firstText);
  const path = firstText.match(/\/tool_outputs\/[\w.-]+/)[0];
  let turns = await loadTurns(instances[1], 'chat-1');
  assert.equal(turns.length, 1);
  // Every step of the turn is saved: the tool call and its result (the preview naming the path)
  // too, not only the last step's answer.
  assert.deepEqual(turns[0].messages.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant']);
  assert.ok(JSON.stringify(turns[0].messages[2]).includes(path), 'the saved tool result names the stored path');
  assert.ok(JSON.stringify(turns).length < 10_000, 'the chat holds the preview, not the 70k-token output');

  // Turn 2 on instance B: it reads the offloaded output back from Redis with read_file.
  const second = await post(b, { id: 'chat-1', turnId: 't2', message: user('read back') });
  assert.equal(await second.text(), 'Result: 1\ttimeout hit 0: /var/log/app.log:0 timeout after 0 s');
  assert.ok(JSON.stringify(prompts.at(-2)).includes(path), 'B saw turn 1 from Redis');

  // A double submit of turn 3, to both instances at once: both answer, the chat has it once.
  const [x, y] = await Promise.all([a, b].map((route) => post(route, { id: 'chat-1', turnId: 't3', message: user('thanks') })));
  assert.deepEqual([await x.text(), await y.text()], ['You said: thanks', 'You said: thanks']);
  turns = await loadTurns(instances[0], 'chat-1');
  assert.deepEqual(turns.map((t) => t.turnId), ['t1', 't2', 't3']);

  // Another chat is another namespace; bad requests are 400s.
  const other = await post(b, { id: 'chat-2', turnId: 't1', message: user('hello') });
  assert.equal(await other.text(), 'You said: hello');
  assert.equal((await loadTurns(instances[0], 'chat-2')).length, 1);
  for (const body of [{ id: '../x', turnId: 't', message: user('x') }, { id: 'c', turnId: 't', message: { role: 'system', content: 'x' } }]) {
    const bad = await post(a, body);
    assert.equal(bad.status, 400);
  }
  const state = JSON.parse(await new UnstorageStore(instances[0], { base: 'chat:chat-1' }).read('/state/compactor.json'));
  assert.ok(state.revision >= 1 && state.stats.byStrategy.offload.events >= 1, 'the compactor state is in Redis, with the offload counted');
  console.log(`serverless-route: 4 turns over 2 instances, ${prompts.length} model calls; ${path} offloaded on A and read on B; state revision ${state.revision}; chat-1 holds ${turns.length} turns`);
} finally {
  await Promise.all(instances.map((s) => s.dispose()));
  await redis.stop();
}
