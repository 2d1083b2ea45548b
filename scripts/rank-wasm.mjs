// Wraps a rank file (data/*.ranks) in a data-only WebAssembly module: one exported memory
// `data` holding the bytes and an exported i32 global `size` (not `length`: Nitro copies a
// .wasm import's exports onto a function, whose `length` is read-only). Every runtime already knows how
// to load a .wasm (a file read, a fetch, a Workers CompiledWasm import, Vercel's `?module`), so
// the ranks travel exactly the way the core does; instantiating the module runs no code.
//   node scripts/rank-wasm.mjs data/o200k_base.ranks js/dist/ranks/o200k_base.wasm
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

const leb = (n) => {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
};
const sleb = (n) => {
  const out = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(byte & 0x40)) || (n === -1 && byte & 0x40)) return [...out, byte];
    out.push(byte | 0x80);
  }
};
const bytes = (s) => [...Buffer.from(s, 'utf8')];
const name = (s) => [...leb(Buffer.byteLength(s)), ...bytes(s)];
const section = (id, body) => [id, ...leb(body.length), ...body];

export function rankWasm(data) {
  const pages = Math.ceil(data.length / 65536);
  const head = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(5, [1, 0x00, ...leb(pages)]), // memory: min pages, no max
    ...section(6, [1, 0x7f, 0x00, 0x41, ...sleb(data.length), 0x0b]), // global i32 const
    ...section(7, [2, ...name('data'), 0x02, 0, ...name('size'), 0x03, 0]),
  ];
  const dataBody = [1, 0x00, 0x41, 0x00, 0x0b, ...leb(data.length)]; // active, memory 0, offset 0
  const dataSection = [11, ...leb(dataBody.length + data.length), ...dataBody];
  return Buffer.concat([Buffer.from(head), Buffer.from(dataSection), data]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input, output] = process.argv.slice(2);
  const wasm = rankWasm(readFileSync(input));
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, wasm);
  // Check it the way the package will read it.
  const { instance } = await WebAssembly.instantiate(wasm);
  const { data, size } = instance.exports;
  const copy = new Uint8Array(data.buffer, 0, size.value);
  if (Buffer.compare(copy, readFileSync(input)) !== 0) throw new Error(`${output}: round trip differs`);
}
