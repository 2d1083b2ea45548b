// The 2,000-message, ~200k-token conversation that plan.mjs plans (and python/bench/plan_overhead.py
// plans through Python and Node): the corpus conversation (gen-corpus.mjs) with long texts cut,
// deterministically.
import { readFileSync } from 'node:fs';
import { corpusFile } from './corpus.mjs';

const CUT = 420; // characters kept per text: 2,000 messages come to ~200k tokens
// Cut on a code point boundary: a lone surrogate is not valid JSON text for the core.
const cut = (s) => (s.length > CUT ? s.slice(0, /[\uD800-\uDBFF]/.test(s[CUT - 1]) ? CUT - 1 : CUT) : s);
export function planConversation() {
  const conv = JSON.parse(readFileSync(corpusFile('conversation.json'), 'utf8'));
  return conv.map((m) => {
    if (typeof m.content === 'string') return { ...m, content: cut(m.content) };
    return {
      ...m,
      content: m.content.map((p) => {
        if (p.type === 'text') return { ...p, text: cut(p.text) };
        if (p.type === 'tool-result' && p.output.type === 'text') return { ...p, output: { ...p.output, value: cut(p.output.value) } };
        if (p.type === 'tool-result' && p.output.type === 'json') {
          const json = JSON.stringify(p.output.value);
          return json.length > CUT ? { ...p, output: { type: 'text', value: cut(json) } } : p;
        }
        return p;
      }),
    };
  });
}
