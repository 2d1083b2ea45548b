// One idempotent initialization per wasm module: the core (`context-compactor`, `/lite`) and
// the counting-only module (`context-compactor/tokens`) each have a `Runtime` (core.ts,
// counter.ts), so an app that imports both entries has two independent modules. Each runtime
// entry registers how it loads its .wasm (read a file, fetch a URL, import a compiled module)
// and, in the entries with data, how it loads an encoding's ranks (the same way: each encoding is
// a data-only .wasm). `init()` loads the module and o200k_base once (plus `init({ encodings })`);
// others on first need. The open-weight tokenizers with prebuilt data (qwen3, deepseek_v3, ...)
// travel the same way.

import { CompactorError, core, errorMessage } from './errors.js';
import { encode } from './codec.js';
import { toolDefinitions, type ModelCount, type TokenBreakdown, type ToolSetLike } from './tokens.js';
import type { EncodingName, MessageLike, ModelInfo, PrebuiltTokenizerName } from './types.js';

/** The counting exports both wasm modules have (wasm-bindgen glue, src/bindings/counting.rs). */
export interface CountingGlue {
  initSync(module: { module: WebAssembly.Module | BufferSource }): unknown;
  loadEncoding(encoding: string, data: Uint8Array): void;
  tokenizerInfo(name: string): string;
  encodingLoaded(encoding: string): boolean;
  countTokens(text: string, encoding: string): number;
  countBreakdown(messagesJson: string, toolsJson: string, encoding: string): string;
  modelInfo(model: string): string;
  countModelTokens(text: string, model: string): string;
  warmUp(encoding: string): void;
}

/** What a caller may hand to `init`: a compiled module (Edge, workerd) or the bytes. */
export type WasmSource = WebAssembly.Module | BufferSource;

/**
 * An encoding's ranks or a tokenizer's prebuilt data: the package's data-only module
 * (`dist/ranks/<name>.wasm`) compiled or as bytes, or the raw data (`data/<name>.ranks` in the
 * repository, cl100k_base referring to o200k_base; a tokenizer's `CCH1` data).
 */
export type RankSource = WebAssembly.Module | BufferSource;

/** Everything the package ships data for: both encodings and the prebuilt tokenizers. */
type DataName = EncodingName | PrebuiltTokenizerName;

const PREBUILT: readonly string[] = ['qwen3', 'qwen2_5', 'deepseek_v3', 'mistral_tekken_240718', 'mistral_tekken_240911'] satisfies PrebuiltTokenizerName[];
const ENCODINGS: readonly string[] = ['o200k_base', 'cl100k_base'] satisfies EncodingName[];

/** `init`'s options: the entry's module (as `init(source)`), and the encodings to have ready. */
export interface InitOptions {
  /** The entry's `.wasm` (bytes or a compiled module): the core's, or the counting module's in
   * `context-compactor/tokens`; the runtime's default loading otherwise. */
  wasm?: WasmSource;
  /**
   * The encodings and prebuilt tokenizers (`'qwen3'`, `'deepseek_v3'`, ...) `countTokens` can use
   * synchronously once `init` resolves. Default `['o200k_base']` in the main and tokens entries,
   * none in `context-compactor/lite`.
   */
  encodings?: DataName[];
  /**
   * The tokenizer compiler's `.wasm` (bytes or a compiled module), for `loadTokenizer` and
   * `compileTokenizer` in the Workers and Edge entries, which do not bundle it:
   * `import compiler from 'context-compactor/compiler.wasm'` (Workers; `?module` on Vercel Edge).
   * The other entries find it themselves.
   */
  compiler?: WasmSource;
}

type Loader = () => WasmSource | Promise<WasmSource>;
type RankLoader = ((name: DataName) => RankSource | Promise<RankSource>) & {
  /** Throws the entry's own word on an encoding it does not bundle (`bundledRanks`). */
  explain?: (name: string) => never;
};

/** What `loadTokenizer` built. */
export interface TokenizerInfo {
  /** The name to count with: `countTokens(text, name)`. */
  name: string;
  /** `'byte-level BPE, Llama 3 pattern'`, `'… Qwen 2 pattern'`, `'… DeepSeek V3 patterns'` or `'SentencePiece-style BPE'`. */
  kind: string;
  /** Vocabulary size (added tokens outside the vocabulary not included). */
  tokens: number;
}

/**
 * One wasm module's initialization, data and counting (core.ts and counter.ts document each
 * function as their entry exports it).
 */
export interface Runtime {
  /** Called once by each runtime entry: how it loads this module's `.wasm`. */
  setLoader(load: Loader): void;
  /** Called by the entries with data: how this runtime fetches an encoding's ranks (none in
   * `context-compactor/lite`, whose `init` loads no encoding). */
  setRankLoader(load: RankLoader): void;
  /** Called by each runtime entry: how it loads the tokenizer compiler's `.wasm`. */
  setCompilerLoader(load: Loader): void;
  init(options?: WasmSource | InitOptions): Promise<void>;
  loadEncoding(name?: DataName | (string & {}), source?: RankSource): Promise<void>;
  loadTokenizer(name: string, json: string | BufferSource | object): Promise<TokenizerInfo>;
  compileTokenizer(name: string, json: string | BufferSource | object): Promise<Uint8Array>;
  isEncodingLoaded(name: EncodingName | (string & {})): boolean;
  isInitialized(): boolean;
  assertInitialized(what: string): void;
  loadModelTokenizer(tokenizer: string | null): Promise<boolean>;
  countTokens(text: string, encoding?: EncodingName | (string & {})): number;
  modelInfo(model: string): ModelInfo;
  countModelTokens(text: string, model: string): ModelCount;
  countBreakdown(messages: MessageLike[], options?: { tools?: ToolSetLike; encoding?: EncodingName | (string & {}) }): TokenBreakdown;
  warmUp(encoding?: EncodingName): void;
}

/** The runtime of the wasm module whose glue is `glue`; `file` names it in errors. */
export function createRuntime(glue: CountingGlue, file: string): Runtime {
  // Each runtime its own loaders: an app that imports the lite entry and the tokens entry keeps
  // the lite entry's "nothing loaded for you".
  let loader: Loader | undefined;
  let rankLoader: RankLoader | undefined;
  let compilerLoader: Loader | undefined;
  /** The o200k_base data a lite entry was handed (the tokenizer compiler needs it too). */
  let o200kGiven: RankSource | undefined;
  let ready: Promise<void> | undefined;
  let initialized = false;
  const loading = new Map<string, Promise<void>>();

  async function init(options?: WasmSource | InitOptions): Promise<void> {
    const { wasm, encodings, compiler } = initOptions(options);
    if (compiler !== undefined) compilerLoader = () => compiler;
    if (!initialized) {
      ready ??= (async () => {
        let module: WasmSource | undefined;
        try {
          module = wasm ?? (await loader?.());
        } catch (error) {
          throw new CompactorError('not_initialized', `context-compactor: ${file} could not be loaded: ${errorMessage(error)}`);
        }
        if (!module) {
          throw new CompactorError('not_initialized', 'context-compactor: no wasm loader for this runtime; call init(module)');
        }
        const failed = (error: unknown) =>
          new CompactorError('not_initialized', `context-compactor: ${file} could not be instantiated: ${errorMessage(error)}`);
        let compiled: WebAssembly.Module;
        try {
          // By shape, not `instanceof`: a Module compiled in another realm (Vercel Edge's VM).
          compiled = isTagged(module, 'Module') ? (module as WebAssembly.Module) : new WebAssembly.Module(module as BufferSource);
        } catch (error) {
          throw failed(error); // not a wasm module at all
        }
        // Another valid module would instantiate, fail in its start function and leave the glue
        // holding it (a retry could not replace it): check it is one of ours first.
        let exported: string[] | undefined;
        try {
          exported = WebAssembly.Module.exports(compiled).map((e) => e.name);
        } catch {
          exported = undefined; // a Module of another realm: instantiating will tell
        }
        if (exported && !exported.includes('countTokens')) throw failed(new Error('not a context-compactor module (it exports no countTokens)'));
        try {
          glue.initSync({ module: compiled });
        } catch (error) {
          throw failed(error);
        }
        if (rankLoader) await loadRanks('o200k_base');
        initialized = true;
      })().catch((error: unknown) => {
        ready = undefined; // let a later call retry
        throw error;
      });
      await ready;
    }
    if (encodings) await Promise.all(encodings.map((name) => loadRanks(name)));
  }

  async function loadEncoding(name: DataName | (string & {}) = 'o200k_base', source?: RankSource): Promise<void> {
    await init();
    await loadRanks(name, source);
  }

  async function loadTokenizer(name: string, json: string | BufferSource | object): Promise<TokenizerInfo> {
    await init();
    const text = tokenizerText('loadTokenizer', name, json);
    if (!core(() => glue.encodingLoaded(name))) {
      const data = await compile(name, text, compilerInput());
      core(() => glue.loadEncoding(name, data));
    }
    return JSON.parse(core(() => glue.tokenizerInfo(name))) as TokenizerInfo;
  }

  async function compileTokenizer(name: string, json: string | BufferSource | object): Promise<Uint8Array> {
    await init();
    return compile(name, tokenizerText('compileTokenizer', name, json), compilerInput());
  }

  /** What the tokenizer compiler needs from this runtime: its loader, and o200k_base's data (this
   * runtime's file, or what a lite entry was handed). */
  function compilerInput() {
    return { compilerLoader, o200k: async () => (rankLoader ? fetchData(rankLoader, 'o200k_base') : o200kGiven) };
  }

  function isEncodingLoaded(name: EncodingName | (string & {})): boolean {
    return initialized && typeof name === 'string' && core(() => glue.encodingLoaded(name));
  }

  async function loadModelTokenizer(tokenizer: string | null): Promise<boolean> {
    if (tokenizer === null || !PREBUILT.includes(tokenizer) || !rankLoader || isEncodingLoaded(tokenizer)) return false;
    await loadRanks(tokenizer as PrebuiltTokenizerName);
    return true;
  }

  function loadRanks(name: DataName | (string & {}), source?: RankSource): Promise<void> {
    if (typeof name !== 'string' || (!ENCODINGS.includes(name) && !PREBUILT.includes(name) && source === undefined)) {
      const given = String(name);
      throw new CompactorError(
        'unknown_encoding',
        `context-compactor: no data for "${given}": the package ships ${[...ENCODINGS, ...PREBUILT].join(', ')}; ` +
          `other tokenizers (Llama 3.x, Gemma 3, ...) load from the model's own tokenizer.json: \`await loadTokenizer('${given}', json)\``,
        { name: given },
      );
    }
    if (core(() => glue.encodingLoaded(name))) return Promise.resolve();
    let pending = loading.get(name);
    if (!pending) {
      pending = (async () => {
        const ranks = source ?? (rankLoader ? await fetchData(rankLoader, name) : undefined);
        if (name === 'o200k_base' && source !== undefined) o200kGiven = source;
        if (!ranks) {
          throw new CompactorError(
            'encoding_not_loaded',
            `context-compactor: encoding "${name}" is not loaded (this entry has no data files: context-compactor/lite); pass its ranks: \`await loadEncoding('${name}', ranks)\` with the package's ranks/${name}.wasm`,
            { name },
          );
        }
        const bytes = await rankBytes(name, ranks);
        try {
          core(() => glue.loadEncoding(name, bytes));
        } catch (error) {
          // cl100k_base's ranks are stored by reference to o200k_base's tokens (data/README.md).
          const missing = (error as CompactorError).details?.name;
          if ((error as CompactorError).code === 'encoding_not_loaded' && missing !== undefined && missing !== name) {
            throw new CompactorError(
              'encoding_not_loaded',
              `context-compactor: the ${name} ranks are stored by reference to ${String(missing)}'s tokens; load ${String(missing)} first: \`await loadEncoding('${String(missing)}', ranks)\``,
              { name: missing },
            );
          }
          throw error;
        }
      })().finally(() => loading.delete(name));
      loading.set(name, pending);
    }
    return pending;
  }

  function assertInitialized(what: string): void {
    if (!initialized) {
      const core = file.startsWith('wasm/');
      throw new CompactorError(
        'not_initialized',
        `context-compactor: ${what} needs the ${core ? 'core' : 'counting module'} loaded: \`await init()\`${core ? ' (or `await createCompactor()`)' : ''} first`,
      );
    }
  }

  /** `core(call)`, an encoding it finds not loaded said as the entry says it (the import to add,
   * where the entry bundles o200k_base only). */
  function counted<T>(call: () => T): T {
    try {
      return core(call);
    } catch (error) {
      const name = error instanceof CompactorError && error.code === 'encoding_not_loaded' ? error.details.name : undefined;
      if (typeof name === 'string' && rankLoader?.explain) rankLoader.explain(name);
      throw error;
    }
  }

  function countTokens(text: string, encoding: EncodingName | (string & {}) = 'o200k_base'): number {
    assertInitialized('countTokens');
    if (typeof text !== 'string') throw new TypeError('countTokens: text must be a string');
    // A non-string reaching the glue is read as a pointer: a trap, and a module left broken.
    if (typeof encoding !== 'string') throw new TypeError('countTokens: encoding must be a string');
    return counted(() => glue.countTokens(text, encoding));
  }

  function modelInfo(model: string): ModelInfo {
    assertInitialized('modelInfo');
    if (typeof model !== 'string') throw new TypeError('modelInfo: model must be a string');
    return JSON.parse(glue.modelInfo(model)) as ModelInfo;
  }

  function countModelTokens(text: string, model: string): ModelCount {
    assertInitialized('countModelTokens');
    if (typeof text !== 'string') throw new TypeError('countModelTokens: text must be a string');
    if (typeof model !== 'string') throw new TypeError('countModelTokens: model must be a string');
    return JSON.parse(counted(() => glue.countModelTokens(text, model))) as ModelCount;
  }

  function countBreakdown(messages: MessageLike[], options: { tools?: ToolSetLike; encoding?: EncodingName | (string & {}) } = {}): TokenBreakdown {
    assertInitialized('countBreakdown');
    if (!Array.isArray(messages)) throw new TypeError('countBreakdown: messages must be an array');
    if (options.encoding !== undefined && typeof options.encoding !== 'string') throw new TypeError('countBreakdown: options.encoding must be a string');
    const tools = options.tools === undefined ? [] : toolDefinitions(options.tools);
    const { json } = encode(messages);
    return JSON.parse(counted(() => glue.countBreakdown(json, JSON.stringify(tools), options.encoding ?? 'o200k_base'))) as TokenBreakdown;
  }

  function warmUp(encoding: EncodingName = 'o200k_base'): void {
    assertInitialized('warmUp');
    if (typeof encoding !== 'string') throw new TypeError('warmUp: encoding must be a string');
    counted(() => glue.warmUp(encoding));
  }

  return {
    setLoader: (load) => {
      loader = load;
    },
    setRankLoader: (load) => {
      rankLoader = load;
    },
    setCompilerLoader: (load) => {
      compilerLoader = load;
    },
    init,
    loadEncoding,
    loadTokenizer,
    compileTokenizer,
    isEncodingLoaded,
    isInitialized: () => initialized,
    assertInitialized,
    loadModelTokenizer,
    countTokens,
    modelInfo,
    countModelTokens,
    countBreakdown,
    warmUp,
  };
}

function initOptions(options: WasmSource | InitOptions | undefined): InitOptions {
  if (options === undefined) return {};
  // By shape, not `instanceof`: a Module compiled in another realm (Vercel Edge's VM) is a source.
  const isOptions = typeof options === 'object' && options !== null && ('encodings' in options || 'wasm' in options || 'compiler' in options);
  if (!isOptions) return { wasm: options as WasmSource };
  const { wasm, encodings, compiler } = options as InitOptions;
  if (encodings !== undefined && !Array.isArray(encodings)) {
    throw new TypeError('init: options.encodings must be an array of encoding names');
  }
  return { wasm, encodings, compiler };
}

/**
 * The prebuilt data of `text` (a `tokenizer.json` or tekken file), made by the tokenizer
 * compiler: a second module (`dist/compiler/`), loaded and instantiated on first use, so that the
 * core carries none of that parsing.
 */
async function compile(
  name: string,
  text: string,
  from: { compilerLoader: Loader | undefined; o200k: () => Promise<RankSource | undefined> },
): Promise<Uint8Array> {
  // o200k_base's data goes to the compiler once (it keeps it; empty bytes after).
  const o200k = compilerHasBase ? undefined : await from.o200k();
  if (!compilerHasBase && !o200k) {
    throw new CompactorError(
      'encoding_not_loaded',
      "context-compactor: a tokenizer's data refers to o200k_base's tokens; load it first: `await loadEncoding('o200k_base', ranks)`",
      { name: 'o200k_base' },
    );
  }
  const compiler = await compilerGlue(from.compilerLoader);
  const ranks = o200k ? await rankBytes('o200k_base', o200k) : new Uint8Array(0);
  const data = core(() => compiler.tokenizerData(name, text, ranks));
  compilerHasBase = true;
  return data;
}

/** Whether the compiler holds o200k_base (after its first successful call). */
let compilerHasBase = false;

let compilerReady: Promise<typeof import('./compiler/compiler.js')> | undefined;

/** The compiler, instantiated once (its glue holds the instance), shared by the runtimes. */
function compilerGlue(compilerLoader: Loader | undefined): Promise<typeof import('./compiler/compiler.js')> {
  compilerReady ??= (async () => {
    let module: WasmSource | undefined;
    try {
      module = await compilerLoader?.();
    } catch (error) {
      if (error instanceof CompactorError) throw error; // the entry's own word (bundled-data.ts)
      throw new CompactorError(
        'not_initialized',
        `context-compactor: the tokenizer compiler (compiler/compiler_bg.wasm) could not be loaded: ${errorMessage(error)}`,
      );
    }
    if (!module) throw new CompactorError('not_initialized', 'context-compactor: no loader for the tokenizer compiler in this runtime');
    const glue = await import('./compiler/compiler.js');
    glue.initSync({ module });
    return glue;
  })().catch((error: unknown) => {
    compilerReady = undefined; // let a later call retry
    throw error;
  });
  return compilerReady;
}

function tokenizerText(what: string, name: string, json: string | BufferSource | object): string {
  if (typeof name !== 'string' || name === '') throw new TypeError(`${what}: name must be a non-empty string`);
  if (typeof json === 'string') return json;
  if (json instanceof ArrayBuffer || ArrayBuffer.isView(json)) return new TextDecoder().decode(json);
  if (json !== null && typeof json === 'object') return JSON.stringify(json);
  throw new TypeError(`${what}: json must be the tokenizer.json text, bytes or object`);
}

/** The entry's loader, its failure (a missing or unreadable file) a typed error naming the data. */
async function fetchData(rankLoader: RankLoader, name: DataName | (string & {})): Promise<RankSource | undefined> {
  try {
    return await rankLoader(name as DataName); // checked in loadRanks: a name the package ships
  } catch (error) {
    if (error instanceof CompactorError) throw error; // the entry's own word (bundled-data.ts)
    throw new CompactorError(
      'encoding_not_loaded',
      `context-compactor: the data for "${name}" (ranks/${name}.wasm) could not be loaded: ${errorMessage(error)}`,
      { name },
    );
  }
}

/** The rank file inside a data-only module (exports `data` memory and `length`), or raw bytes. */
async function rankBytes(name: string, source: RankSource): Promise<Uint8Array> {
  let module: WebAssembly.Module | undefined;
  let instance: WebAssembly.Instance;
  try {
    // By tag, not `instanceof`: a Module compiled in another realm (a Next.js Edge route's `?module`).
    if (isTagged(source, 'Module')) {
      module = source as WebAssembly.Module;
    } else {
      const bytes = ArrayBuffer.isView(source)
        ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
        : new Uint8Array(source as ArrayBuffer);
      const isWasm = bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
      if (!isWasm) return bytes;
      // The package's data-only modules are read, not compiled: Workers and Edge forbid compiling
      // bytes, and rank data fetched from an app's static assets arrives as bytes.
      const data = dataSegment(bytes);
      if (data) return data;
      module = await WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>);
    }
    instance = await WebAssembly.instantiate(module);
  } catch (error) {
    throw new CompactorError('invalid_rank_data', `data for "${name}": not a data-only module: ${errorMessage(error)}`, { encoding: name });
  }
  // `size` (`length` in data files of 0.1.0 before it: Nitro could not wrap that name).
  const exports = instance.exports as { data?: WebAssembly.Memory; size?: WebAssembly.Global; length?: WebAssembly.Global };
  const { data, size = exports.length } = exports;
  if (!isTagged(data, 'Memory') || !size) {
    throw new CompactorError('invalid_rank_data', 'rank module: expected exports `data` (memory) and `size`', {});
  }
  return new Uint8Array((data as WebAssembly.Memory).buffer, 0, Number(size.value));
}

/** Whether `value` is a `WebAssembly.<kind>` of any realm. */
const isTagged = (value: unknown, kind: 'Module' | 'Memory'): boolean => Object.prototype.toString.call(value) === `[object WebAssembly.${kind}]`;

/**
 * The bytes of a data-only module as scripts/rank-wasm.mjs writes it (one active data segment at
 * offset 0 of memory 0), read straight from the module's bytes; undefined for any other module.
 */
export function dataSegment(bytes: Uint8Array): Uint8Array | undefined {
  let at = 8;
  const leb = (): number => {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = bytes[at++];
      if (byte === undefined) return -1;
      value += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return value;
    }
    return -1;
  };
  if (bytes[4] !== 1 || bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) return undefined;
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = leb();
    if (size < 0 || at + size > bytes.length) return undefined;
    if (id !== 11) {
      if (id === 1 || id === 3 || id === 10) return undefined; // code: not a data-only module
      at += size;
      continue;
    }
    const end = at + size;
    if (leb() !== 1 || bytes[at] !== 0 || bytes[at + 1] !== 0x41 || bytes[at + 2] !== 0 || bytes[at + 3] !== 0x0b) return undefined;
    at += 4;
    const length = leb();
    return length >= 0 && at + length === end ? bytes.subarray(at, end) : undefined;
  }
  return undefined;
}
