// countBreakdown: an AI SDK ModelMessage[] plus a tool set, per message, part and tool
// definition; the total is the count the compactor plans with.
import test from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import * as cc from '../dist/entry/node.js';

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'Find the slow requests.' }, { type: 'image', image: new Uint8Array([137, 80, 78, 71]) }] },
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'search', input: { q: 'slow', limit: 50 } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'search', output: { type: 'json', value: { hits: [{ path: '/api', ms: 912 }] } } }] },
];
// An AI SDK tool set: jsonSchema() objects carry the schema in `jsonSchema`.
const tools = {
  search: { description: 'Search the logs.', inputSchema: { jsonSchema: { type: 'object', properties: { q: { type: 'string' } } } } },
  read_file: { inputSchema: { jsonSchema: { type: 'object', properties: { path: { type: 'string' } } } } },
};

test('the breakdown adds up, and equals what the compactor counts', async () => {
  await cc.init();
  const b = cc.countBreakdown(messages, { tools });
  const sum = b.replyPriming + b.messages.reduce((n, m) => n + m.total, 0) + b.tools.total;
  assert.equal(b.total, sum);
  for (const m of b.messages) assert.equal(m.total, m.overhead + m.parts.reduce((n, p) => n + p.total, 0));
  assert.deepEqual(b.messages.map((m) => m.parts.map((p) => p.type)), [['text'], ['text', 'image'], ['tool-call'], ['tool-result']]);
  assert.ok(b.messages[2].parts[0].input > 0 && b.messages[3].parts[0].output > 0);
  assert.deepEqual(Object.keys(b.tools.definitions), ['search', 'read_file']);
  assert.equal(b.tools.definitions.read_file.description, 0);
  assert.equal(b.tools.total, b.tools.definitions.search.total + b.tools.definitions.read_file.total);
  // The compactor's own count for an exact model, with the same tools: the same number.
  const compactor = await cc.createCompactor({ model: 'gpt-4o', tools });
  assert.equal(compactor.usage(messages).tokens, b.total);
  // Another encoding counts its own way; an unknown name is a typed error.
  await cc.loadEncoding('cl100k_base');
  assert.equal(cc.countBreakdown(messages, { tools, encoding: 'cl100k_base' }).messages[0].parts[0].total, cc.countTokens('You are terse.', 'cl100k_base'));
  assert.throws(() => cc.countBreakdown(messages, { encoding: 'nope' }), (e) => e.code === 'unknown_encoding');
  assert.throws(() => cc.countBreakdown([{ role: 'robot', content: 'x' }]), (e) => e.code === 'invalid_message');
});

test('tool lists in other shapes count as the same definitions; the core shape keeps its strictness', () => {
  const schema = { type: 'object', properties: { q: { type: 'string' } } };
  const core = cc.countBreakdown([], { tools: [{ name: 'search', description: 'Search the logs.', inputSchema: schema }] }).tools;
  // A LangChain.js tool (a class instance with its own fields), OpenAI's two shapes (nested:
  // LangChain's convertToOpenAITool; flat: Responses / OpenAI Agents), Anthropic's.
  class LangChainTool {
    lc_serializable = true;
    lc_kwargs = {};
    name = 'search';
    description = 'Search the logs.';
    schema = schema;
    invoke() {}
  }
  const shapes = {
    langchain: [new LangChainTool()],
    openaiNested: [{ type: 'function', function: { name: 'search', description: 'Search the logs.', parameters: schema } }],
    openaiFlat: [{ type: 'function', name: 'search', description: 'Search the logs.', parameters: schema, strict: true, invoke: () => {} }],
    anthropic: [{ name: 'search', description: 'Search the logs.', input_schema: schema }],
  };
  for (const [shape, tools] of Object.entries(shapes)) {
    assert.deepEqual(cc.countBreakdown([], { tools }).tools, core, shape);
    assert.ok(core.total > 10, shape);
  }
  // A Mastra tool (an `id`, no `name`), an MCP tool (`title`, `annotations`, `outputSchema`).
  const mastra = [{ id: 'search', description: 'Search the logs.', inputSchema: schema, execute: async () => '' }];
  assert.deepEqual(cc.countBreakdown([], { tools: mastra }).tools, core, 'mastra');
  const mcp = [{ name: 'search', title: 'Search', description: 'Search the logs.', inputSchema: schema, outputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }];
  assert.deepEqual(cc.countBreakdown([], { tools: mcp }).tools, core, 'mcp');
  // A zod schema is not JSON: counted by name and description, never as zod's internals.
  const named = cc.countBreakdown([], { tools: [{ name: 'search', description: 'Search the logs.' }] }).tools;
  const zodSchema = z.object({ q: z.string().describe('what to find'), limit: z.number().int().default(10), when: z.bigint().default(1n) });
  assert.deepEqual(cc.countBreakdown([], { tools: { search: { description: 'Search the logs.', inputSchema: zodSchema } } }).tools, named, 'AI SDK tool set, raw zod');
  assert.deepEqual(cc.countBreakdown([], { tools: [{ name: 'search', description: 'Search the logs.', schema: zodSchema, invoke() {} }] }).tools, named, 'LangChain tool, zod');
  // A tool set's entry left undefined counts by its name.
  assert.equal(Object.keys(cc.countBreakdown([], { tools: { search: undefined } }).tools.definitions)[0], 'search');
  // A misspelled field of the core's own shape is still refused, naming it.
  assert.throws(() => cc.countBreakdown([], { tools: [{ name: 'search', descripton: 'typo' }] }), (e) => e.code === 'invalid_config' && /descripton/.test(e.message));
});
