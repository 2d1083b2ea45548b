// The tokenizers measured side by side (adapted from ../shared/bench/tokenizers, where the peer
// figures in the issue come from). A contender is { name, load(encoding) } with
// load -> Promise<{ count(text): number }>; every import happens inside load() so the cold-start
// probe measures module load + rank load + first count in a fresh process.
export const OURS = 'context-compactor';

export const contenders = [
  {
    name: OURS,
    variant: 'Rust core -> wasm, countTokens()',
    async load(encoding) {
      const m = await import('../../js/dist/entry/node.js');
      await m.init();
      await m.loadEncoding(encoding);
      return { count: (s) => m.countTokens(s, encoding) };
    },
  },
  {
    name: 'gpt-tokenizer',
    variant: 'pure JS, gpt-tokenizer/encoding/<enc> countTokens()',
    async load(encoding) {
      const { countTokens } = await import(`gpt-tokenizer/encoding/${encoding}`);
      return { count: (s) => countTokens(s) };
    },
  },
  {
    name: 'tiktoken',
    variant: 'WASM, get_encoding(), encode_ordinary()',
    async load(encoding) {
      const { get_encoding } = await import('tiktoken');
      const enc = get_encoding(encoding);
      return { count: (s) => enc.encode_ordinary(s).length, free: () => enc.free() };
    },
  },
  {
    name: 'ai-tokenizer',
    variant: 'pure JS, new Tokenizer(ai-tokenizer/encoding/<enc>).encodeOrdinary()',
    async load(encoding) {
      const { Tokenizer } = await import('ai-tokenizer');
      const tokenizer = new Tokenizer(await import(`ai-tokenizer/encoding/${encoding}`));
      // count() throws on special-token text; encodeOrdinary() counts it as text, as we do.
      return { count: (s) => tokenizer.encodeOrdinary(s).length };
    },
  },
  {
    name: 'js-tiktoken',
    variant: 'pure JS, js-tiktoken/lite + ranks/<enc>',
    slow: true,
    async load(encoding) {
      const { Tiktoken } = await import('js-tiktoken/lite');
      const { default: ranks } = await import(`js-tiktoken/ranks/${encoding}`);
      const enc = new Tiktoken(ranks);
      return { count: (s) => enc.encode(s).length };
    },
  },
];

export async function allContenders() {
  return contenders;
}

export const ENCODINGS = ['o200k_base', 'cl100k_base'];
