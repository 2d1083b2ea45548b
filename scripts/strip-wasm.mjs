// Drops the `name` and `producers` custom sections from a .wasm file, in place, keeping every other
// section byte for byte. Usage: node scripts/strip-wasm.mjs FILE.wasm
//
// Why: wasm-pack gives wasm-bindgen no way to pass `--remove-name-section` /
// `--remove-producers-section` (see scripts/build.sh), so the build strips them afterwards. Hand-
// written because the job is a walk over section headers (magic, version, then id + LEB128 size +
// payload), and the npm tools that can do it (binaryen's wasm-opt, wabt) are megabytes of compiler
// that re-encode the whole module.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const DROP = new Set(['name', 'producers']);

/** Reads an unsigned LEB128 u32 at `pos`; returns [value, next position]. */
function leb128(bytes, pos, file, what) {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= bytes.length) throw new Error(`${file}: truncated ${what} at byte ${pos}`);
    const b = bytes[pos++];
    value += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [value, pos];
  }
  throw new Error(`${file}: ${what} at byte ${pos} is not a LEB128 u32`);
}

export function stripWasm(bytes, file = 'module') {
  const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || header.some((b, i) => bytes[i] !== b)) {
    throw new Error(`${file}: not a WebAssembly 1.0 module (bad magic or version)`);
  }
  const kept = [bytes.subarray(0, 8)];
  const dropped = [];
  let pos = 8;
  while (pos < bytes.length) {
    const start = pos;
    const id = bytes[pos++];
    const [size, body] = leb128(bytes, pos, file, `size of section ${id}`);
    const end = body + size;
    if (end > bytes.length) throw new Error(`${file}: section ${id} at byte ${start} runs past the end`);
    if (id === 0) {
      const [len, nameAt] = leb128(bytes, body, file, 'custom section name length');
      if (nameAt + len > end) throw new Error(`${file}: custom section name at byte ${start} runs past its section`);
      const name = new TextDecoder().decode(bytes.subarray(nameAt, nameAt + len));
      if (DROP.has(name)) {
        dropped.push(`${name} (${end - start} bytes)`);
        pos = end;
        continue;
      }
    }
    kept.push(bytes.subarray(start, end));
    pos = end;
  }
  return { bytes: Buffer.concat(kept), dropped };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node scripts/strip-wasm.mjs FILE.wasm');
    process.exit(2);
  }
  try {
    const { bytes, dropped } = stripWasm(readFileSync(file), file);
    new WebAssembly.Module(bytes); // the result must still compile
    writeFileSync(`${file}.tmp`, bytes);
    renameSync(`${file}.tmp`, file);
    console.error(`[strip-wasm] ${file}: dropped ${dropped.join(', ') || 'nothing'}; ${bytes.length} bytes`);
  } catch (err) {
    console.error(`[strip-wasm] ${err.message}`);
    process.exit(1);
  }
}
