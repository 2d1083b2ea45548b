// Every ```ts block of README.md, docs/API.md and js/README.md (the npm page), type-checked under `tsc --strict` against the
// real AI SDK 7 (`ai`), AI SDK 6 (`ai6`) and AI SDK 5 (`ai5`, each installed as `ai` in a scratch
// app), then run (the runnable ones) with the AI SDK's own mock model from `ai/test`.
//
// Each version gets a scratch app in a temp directory, laid out as a user's app would be:
//   node_modules/ai                  -> the real package (a symlink: ai@7, ai6 = ai@6 or ai5 = ai@5)
//   node_modules/context-compactor   a copy of js/package.json + js/dist (what `npm pack` ships,
//                                    so its types' `import('ai')` resolves to this app's ai)
//   preamble.ts, model.ts            tests/ai-sdk/snippets/: the free variables the snippets use
//                                    (model, tools, messages, ...); model.ts is model.<version>.ts
//   contract.ts                      tests/ai-sdk/snippets/contract.ts: the package's objects
//                                    assigned to the SDK's ToolSet, LanguageModelMiddleware and
//                                    PrepareStepFunction by name
//   <file>-<line>.ts                 one module per block: `import { <free names> } from
//                                    './preamble.js'` and the block
// A block's free names are the preamble's exports it mentions and does not bind itself.
//
// Markers, an HTML comment on the line before a block's fence (invisible on GitHub):
//   <!-- snippet: types-only (why) -->               type-checked, not run
//   <!-- snippet: before ai 7: instructions → system -->
//                                                    for AI SDK 5 and 6, `instructions:` in the
//                                                    arguments of `generateText(...)` and
//                                                    `streamText(...)` is written `system:` (its
//                                                    name there, as the README says); more
//                                                    `; a → b` pairs are replaced everywhere
//                                                    (`responseMessages`, AI SDK 7, is
//                                                    `response.messages` there)
//   <!-- snippet: types-only, ai 7 only (why) -->    checked against AI SDK 7 only (a framework
//                                                    the test installs with AI SDK 7, such as
//                                                    @cloudflare/ai-chat, whose types name that
//                                                    copy of `ai`)
//
// KEEP_SNIPPETS=1 keeps the scratch apps for a look (their paths are printed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The package's own TypeScript and Node types (js/package.json devDependencies).
const tsc = join(root, 'js', 'node_modules', 'typescript', 'bin', 'tsc');
const here = join(root, 'tests', 'ai-sdk', 'snippets');

/** Every ```ts block: its source file, the line of its first code line, marker and code. */
function extractBlocks(file) {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\b/.test(lines[i])) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    const marker = (i > 0 && lines[i - 1].match(/^<!--\s*snippet:\s*(.*?)\s*-->$/)?.[1]) || '';
    blocks.push({ file, line: i + 2, code: lines.slice(i + 1, end).join('\n'), marker });
    i = end;
  }
  return blocks;
}

const blocks = ['README.md', 'docs/API.md', 'js/README.md'].flatMap(extractBlocks);
const preamble = readFileSync(join(here, 'preamble.ts'), 'utf8');
const preambleNames = [...preamble.matchAll(/^export const (\w+)/gm)].map((m) => m[1]);

/** The preamble names a block uses without binding them itself. */
function freeNames(code) {
  const bound = new Set();
  for (const m of code.matchAll(/^\s*import\s+(?:type\s+)?\{([^}]*)\}/gm)) {
    for (const spec of m[1].split(',')) bound.add(spec.trim().split(/\s+as\s+/).at(-1));
  }
  for (const m of code.matchAll(/\b(?:const|let|var|function|class)\s+(\w+)/g)) bound.add(m[1]);
  const stripped = code.replace(/\/\/.*$/gm, '').replace(/'(?:[^'\\\n]|\\.)*'/g, "''");
  return preambleNames.filter((n) => !bound.has(n) && new RegExp(`(?<![.\\w$])${n}\\b`).test(stripped));
}

/** `code` with `from` replaced by `to` inside the arguments of every `generateText(...)` call
 * (quotes skipped when matching parentheses), and nowhere else. */
function renameInGenerateText(code, from, to) {
  let out = '';
  let at = 0;
  const next = (from) => [code.indexOf('generateText(', from), code.indexOf('streamText(', from)].filter((i) => i !== -1).sort((a, b) => a - b)[0] ?? -1;
  for (let start = next(at); start !== -1; start = next(at)) {
    let i = code.indexOf('(', start) + 1;
    for (let depth = 1; i < code.length && depth > 0; i++) {
      const c = code[i];
      if (c === "'" || c === '"' || c === '`') {
        for (i++; i < code.length && code[i] !== c; i++) if (code[i] === '\\') i++;
      } else if (c === '(') depth++;
      else if (c === ')') depth--;
    }
    out += code.slice(at, start) + code.slice(start, i).split(from).join(to);
    at = i;
  }
  return out + code.slice(at);
}

/** A scratch app with the package as `npm pack` ships it, `ai` linked to `aiPackage` (or no
 * `ai` at all), and a strict tsconfig over its top-level .ts files. */
function makeApp(prefix, { aiPackage, skipLibCheck }) {
  const dir = mkdtempSync(join(tmpdir(), `cc-snippets-${prefix}-`));
  const pkgDir = join(dir, 'node_modules', 'context-compactor');
  mkdirSync(pkgDir, { recursive: true });
  if (aiPackage) symlinkSync(join(root, 'node_modules', aiPackage), join(dir, 'node_modules', 'ai'), 'dir');
  // The optional peers a snippet may import (UnstorageStore's storage and its Redis driver).
  for (const peer of ['unstorage', 'ioredis']) symlinkSync(join(root, 'node_modules', peer), join(dir, 'node_modules', peer), 'dir');
  // LangChain.js, the OpenAI Agents SDK and Mastra for `context-compactor/langchain`,
  // `/openai-agents` and `/mastra` (the package's devDependencies, pinned).
  for (const peer of ['langchain', '@langchain', '@openai', '@mastra']) symlinkSync(join(root, 'js', 'node_modules', peer), join(dir, 'node_modules', peer), 'dir');
  // Cloudflare Agents (`agents`, `@cloudflare/ai-chat`) for the `/cloudflare` block (types-only).
  for (const peer of ['agents', '@cloudflare']) symlinkSync(join(root, 'js', 'node_modules', peer), join(dir, 'node_modules', peer), 'dir');
  cpSync(join(root, 'js', 'package.json'), join(pkgDir, 'package.json'));
  cpSync(join(root, 'js', 'dist'), join(pkgDir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `${prefix}-app`, private: true, type: 'module' }));
  const compilerOptions = {
    strict: true,
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2022', 'DOM'],
    types: ['node'],
    typeRoots: [join(root, 'js', 'node_modules', '@types')],
    skipLibCheck,
    outDir: 'out',
    rootDir: '.',
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['*.ts'] }));
  return dir;
}

/** tsc over an app: diagnostics grouped by file (`name` without .ts), continuation lines kept. */
function typeCheck(dir) {
  const run = spawnSync(process.execPath, [tsc, '-p', '.', '--pretty', 'false'], { cwd: dir, encoding: 'utf8', timeout: 240_000 });
  const byFile = new Map();
  let last = '(other)';
  for (const line of `${run.stdout}${run.stderr}`.split('\n')) {
    const m = line.match(/^([\w.-]+)\.ts\((\d+),\d+\): (error .*)$/);
    if (m) last = m[1];
    else if (!line.startsWith(' ')) last = '(other)';
    if (line.trim()) byFile.set(last, [...(byFile.get(last) ?? []), m ? { line: Number(m[2]), text: m[3] } : { text: line }]);
  }
  return byFile;
}

const runModule = (dir, name) => spawnSync(process.execPath, [join(dir, 'out', `${name}.js`)], { cwd: dir, encoding: 'utf8', timeout: 50_000 });

// Without `ai`: the package's types must not need it (an optional peer dependency, used for
// types only), even under `skipLibCheck: false`; the recovery tools keep their real types.
test('without ai installed: the package type-checks with skipLibCheck false and runs', { timeout: 300_000 }, () => {
  const dir = makeApp('noai', { aiPackage: null, skipLibCheck: false });
  try {
    const app = `import { createCompactor, MemoryStore } from 'context-compactor';
const compactor = await createCompactor({ model: 'gpt-4o', store: new MemoryStore() });
await compactor.store.write('/tool_outputs/a.txt', 'one\\ntwo');
const tools = compactor.tools();
const page: string = await tools.read_file.execute({ path: '/tool_outputs/a.txt', limit: 1 });
// @ts-expect-error: typed, not any: read_file needs a path
await tools.read_file.execute({ limit: 1 });
const params = await compactor.middleware().transformParams({ params: { prompt: [{ role: 'user' as const, content: 'hi' }] } });
if (!page.startsWith('1\\tone') || params.prompt.length !== 1) throw new Error(page);
`;
    writeFileSync(join(dir, 'app.ts'), app);
    const errors = [...typeCheck(dir).values()].flat().map((e) => e.text);
    assert.deepEqual(errors, []);
    const run = runModule(dir, 'app');
    assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the docs have ts blocks to check', () => {
  assert.ok(blocks.length >= 4, `found ${blocks.length} blocks`);
});

for (const version of [
  { name: 'ai 7', key: 'ai7', aiPackage: 'ai' },
  { name: 'ai 6', key: 'ai6', aiPackage: 'ai6' },
  { name: 'ai 5', key: 'ai5', aiPackage: 'ai5' },
]) {
  const dir = makeApp(version.key, { aiPackage: version.aiPackage, skipLibCheck: true });
  writeFileSync(join(dir, 'preamble.ts'), preamble);
  cpSync(join(here, `model.${version.key}.ts`), join(dir, 'model.ts'));
  cpSync(join(here, 'contract.ts'), join(dir, 'contract.ts'));
  // workers-types' Durable Object declarations, for the Cloudflare Agents block.
  cpSync(join(here, 'cloudflare-workers.d.ts'), join(dir, 'cloudflare-workers.d.ts'));
  const files = blocks.filter((block) => version.key === 'ai7' || !/\bai 7 only\b/.test(block.marker)).map((block) => {
    let code = block.code;
    // `before ai 7: a → b; c → d`: `instructions` inside the SDK's calls, any other text everywhere.
    const renames = version.key !== 'ai7' ? (block.marker.split('before ai 7:')[1] ?? '').split(';') : [];
    for (const [from, to] of renames.map((pair) => pair.split('→').map((s) => s.trim()))) {
      if (!from || to === undefined) continue;
      code = from === 'instructions' ? renameInGenerateText(code, 'instructions:', `${to}:`) : code.split(from).join(to);
    }
    const free = freeNames(code);
    const header = free.length > 0 ? `import { ${free.join(', ')} } from './preamble.js';\n` : '';
    const name = `${block.file.replace(/\W+/g, '_')}-${block.line}`;
    writeFileSync(join(dir, `${name}.ts`), `${header}${code}\nexport {};\n`);
    return { block, name, offset: header ? 1 : 0 };
  });
  let diagnostics;
  const check = () => (diagnostics ??= typeCheck(dir));
  const show = (errors, file) =>
    errors.map((e) => (e.line === undefined ? e.text : file ? `${file.block.file}:${file.block.line + e.line - 1 - file.offset}: ${e.text}` : `${e.line}: ${e.text}`)).join('\n');

  test(`${version.name}: the preamble type-checks`, { timeout: 300_000 }, () => {
    const errors = ['preamble', 'model', '(other)'].flatMap((name) => check().get(name) ?? []);
    if (errors.length > 0) assert.fail(`\n${show(errors)}`);
  });

  test(`${version.name}: the package's objects are the SDK's ToolSet, LanguageModelMiddleware, PrepareStepFunction`, { timeout: 300_000 }, () => {
    const errors = check().get('contract') ?? [];
    if (errors.length > 0) assert.fail(`\n${show(errors)}`);
    const run = runModule(dir, 'contract');
    assert.equal(run.status, 0, `exit ${run.status}\n${run.stdout}\n${run.stderr}`);
  });

  for (const file of files) {
    const label = `${file.block.file}:${file.block.line}`;
    test(`${version.name}: ${label} type-checks under tsc --strict`, { timeout: 300_000 }, () => {
      const errors = check().get(file.name) ?? [];
      if (errors.length > 0) assert.fail(`\n${show(errors, file)}`);
    });
    if (/types-only/.test(file.block.marker)) continue;
    test(`${version.name}: ${label} runs`, { timeout: 60_000 }, () => {
      check(); // emits out/
      const run = runModule(dir, file.name);
      assert.equal(run.status, 0, `exit ${run.status}\n${run.stdout}\n${run.stderr}`);
    });
  }

  test(`${version.name}: clean up`, () => {
    if (process.env.KEEP_SNIPPETS) console.log(`scratch app: ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  });
}
