// node --test bench/arena/sessions/
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { init, countTokens } from 'context-compactor';
import { modelMessageSchema } from 'ai';
import { SESSIONS, generate } from './index.mjs';
import { sessionStats, validateShape, validateNeedles, messageTexts } from './lib.mjs';

// total tokens (o200k) at scale 1
const RANGES = {
  'coding-agent': [400_000, 500_000],
  'research-agent': [350_000, 450_000],
  'long-chat': [250_000, 350_000],
};

const TOOL_NAMES = {
  'coding-agent': ['open_file', 'create_file', 'replace_in_file', 'run_command', 'search_code'],
  'research-agent': ['web_search', 'fetch_url', 'save_note'],
  'long-chat': ['calculator', 'lookup'],
};

before(async () => {
  await init();
});

test('generators use no ambient randomness or time', () => {
  const dir = new URL('.', import.meta.url);
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.mjs') && !f.endsWith('.test.mjs'))) {
    const src = readFileSync(new URL(f, dir), 'utf8');
    // (performance.now() only times generation in the CLI; generated text may mention `new Date(x)`)
    assert.ok(!/Math\.random|Date\.now|new Date\(\)|Date\.UTC|process\.env|hrtime|crypto\./.test(src), `${f} uses Math.random, the clock or the environment`);
  }
});

for (const name of Object.keys(SESSIONS)) {
  for (const scale of [1, 0.25]) {
    test(`${name} @ scale ${scale}`, async (t) => {
      const t0 = performance.now();
      const s = generate(name, { scale });
      const ms = performance.now() - t0;
      const again = generate(name, { scale });

      await t.test('generates fast and deterministically', () => {
        assert.ok(ms < 2000, `took ${ms.toFixed(0)} ms`);
        assert.equal(JSON.stringify(again), JSON.stringify(s));
        assert.deepEqual(again, s);
      });

      await t.test('has the documented top-level shape', () => {
        assert.deepEqual(Object.keys(s).sort(), ['description', 'messages', 'name', 'needles', 'system', 'thinkSeconds', 'tools']);
        assert.equal(s.name, name);
        assert.equal(typeof s.description, 'string');
        const systemTokens = countTokens(s.system);
        assert.ok(systemTokens >= 150 && systemTokens <= 1000, `system prompt has ${systemTokens} tokens`);
        assert.deepEqual(Object.keys(s.tools).sort(), [...TOOL_NAMES[name]].sort());
        for (const [tn, def] of Object.entries(s.tools)) {
          assert.equal(typeof def.description, 'string', tn);
          assert.equal(def.inputSchema.type, 'object', tn);
        }
        assert.ok(!s.messages.some((m) => m.role === 'system'));
      });

      await t.test('messages are well-formed', () => {
        assert.deepEqual(validateShape(s), []);
        s.messages.forEach((m, i) => {
          const r = modelMessageSchema.safeParse(m);
          assert.ok(r.success, `message ${i} is not an AI SDK ModelMessage: ${r.error?.message}`);
        });
        // every tool is used at least once at full scale
        if (scale === 1) {
          const used = new Set(s.messages.flatMap((m) => (m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool-call').map((p) => p.toolName) : [])));
          assert.deepEqual([...used].sort(), [...TOOL_NAMES[name]].sort());
        }
      });

      await t.test('needles are planted, absent before, asked later and answered', () => {
        const n = s.needles.length;
        if (scale === 1) assert.ok(n >= 6 && n <= 10, `${n} needles`);
        else assert.ok(n >= 3, `${n} needles`);
        assert.deepEqual(validateNeedles(s), []);
        const flat = s.messages.map((m) => messageTexts(m).join('\n'));
        for (const nd of s.needles) {
          assert.ok(flat[nd.messageIndex].includes(nd.value), `${nd.id} planted`);
          for (let i = 0; i < nd.messageIndex; i++) assert.ok(!flat[i].includes(nd.value), `${nd.id} appears before it is planted (message ${i})`);
          assert.equal(s.messages[nd.neededAt].role, 'user');
          assert.ok(!flat[nd.neededAt].includes(nd.value), `${nd.id}: the asking message contains the value`);
          assert.ok(nd.neededAt > nd.messageIndex);
          assert.ok(nd.neededAt - nd.messageIndex >= 0.25 * s.messages.length, `${nd.id}: asked only ${nd.neededAt - nd.messageIndex} messages later`);
          // the answer closing the asking turn repeats the value
          let end = nd.neededAt + 1;
          while (end + 1 < s.messages.length && s.messages[end + 1].role !== 'user') end++;
          assert.ok(flat[end].includes(nd.value), `${nd.id}: answer does not repeat the value`);
          assert.equal(typeof nd.question, 'string');
          assert.ok(['tool', 'user'].includes(nd.kind));
          if (scale === 1) assert.ok(nd.messageIndex < s.messages.length * 0.45, `${nd.id} planted late (${nd.messageIndex}/${s.messages.length})`);
        }
        if (scale === 1) {
          const tool = s.needles.filter((x) => x.kind === 'tool').length;
          assert.ok(tool >= 3, `${tool} tool needles`);
        }
      });

      if (scale === 1) {
        await t.test('token totals are in range', () => {
          const st = sessionStats(s, countTokens);
          const [lo, hi] = RANGES[name];
          assert.ok(st.tokens >= lo && st.tokens <= hi, `${st.tokens} tokens, expected ${lo}-${hi}`);
          if (name !== 'long-chat') assert.ok(st.largestOutput > 32_000, `largest output ${st.largestOutput}`);
        });
      } else {
        await t.test('is proportionally smaller', () => {
          const full = generate(name, { scale: 1 });
          assert.ok(s.messages.length < full.messages.length * 0.5, `${s.messages.length} vs ${full.messages.length} messages`);
        });
      }
    });
  }
}
