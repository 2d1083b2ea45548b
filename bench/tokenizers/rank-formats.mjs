// Candidate encodings of the rank data and their sizes: gzip -9 (node:zlib, as
// js/test/budgets.test.mjs measures) and brotli -11 (for information). The measurements behind
// the "CCR3" and "CCR4" formats of data/*.ranks (data/README.md). Reads the committed files, so it needs no
// build:   node bench/tokenizers/rank-formats.mjs   (~1 min)
import { readFileSync } from 'node:fs';
import { gzipSync, brotliCompressSync, constants } from 'node:zlib';

const DATA = new URL('../../data/', import.meta.url);
const gz = (b) => gzipSync(b, { level: 9 }).length;
const br = (b) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_LGWIN]: 24 } }).length;
const kB = (n) => (n / 1000).toFixed(1);
const cat = (parts) => Buffer.concat(parts.map((p) => Buffer.from(p)));

/** Tokens (index = rank) of a "CCR4" file (the format is documented at RankData in src/counting/bpe/mod.rs). */
function decode(name, base) {
  const d = readFileSync(new URL(`${name}.ranks`, DATA));
  if (d.subarray(0, 4).toString() !== 'CCR4') throw new Error(`${name}: not CCR4`);
  let at = 5 + d[4];
  const count = d.readUInt32LE(at);
  at += 4;
  at += 1 + d[at];
  const tags = d.subarray(at, at + count);
  at += count;
  const n = [0, 0, 0];
  for (const t of tags) n[t]++;
  const stream = (len) => { const [values, next] = readCoded(d, at, len); at = next; return (i) => values[i]; };
  const [bases, lefts, rights] = [stream(n[2]), stream(n[1]), stream(n[1])];
  const tokens = [];
  let [b, p] = [0, 0];
  for (const tag of tags) {
    if (tag === 0) { tokens.push(d.subarray(at + 1, at + 1 + d[at])); at += 1 + d[at]; }
    else if (tag === 1) { tokens.push(Buffer.concat([tokens[lefts(p)], tokens[rights(p)]])); p++; }
    else tokens.push(base[bases(b++)]);
  }
  return tokens;
}

/** Version 4's symbol for v = x + 1 (bit length e + 1): e and the up to 4 bits below the leading one, densely numbered; and how many bits stay out. */
const symbol = (v) => { const e = 31 - Math.clz32(v), top = Math.min(4, e), rest = e - top; return [(e < 4 ? (1 << e) - 1 : 15 + 16 * (e - 4)) + ((v >>> rest) & ((1 << top) - 1)), rest]; };
/** Numbers as version 4 stores them: the symbol bytes, the other bits' length (u32 LE), the bits (most significant first). */
function coded(ids) {
  const syms = new Uint8Array(ids.length), bits = [];
  let acc = 0, have = 0;
  ids.forEach((x, i) => {
    const [sym, rest] = symbol(x + 1);
    syms[i] = sym;
    for (let k = rest - 1; k >= 0; k--) { acc = (acc << 1) | (((x + 1) >>> k) & 1); if (++have === 8) { bits.push(acc); acc = 0; have = 0; } }
  });
  if (have) bits.push(acc << (8 - have));
  const len = Buffer.alloc(4); len.writeUInt32LE(bits.length);
  return [syms, len, Uint8Array.from(bits)];
}
/** `len` numbers of a version 4 stream at `d[at..]`, and where the stream ends. */
function readCoded(d, at, len) {
  const syms = d.subarray(at, at + len), bitsLen = d.readUInt32LE(at + len), bits = d.subarray(at + len + 4, at + len + 4 + bitsLen);
  let pos = 0;
  const values = Array.from(syms, (sym) => {
    const [e, top] = sym < 15 ? [31 - Math.clz32(sym + 1), sym + 1 - (1 << (31 - Math.clz32(sym + 1)))] : [4 + ((sym - 15) >> 4), (sym - 15) & 15];
    const rest = e - Math.min(4, e);
    let low = 0;
    for (let k = 0; k < rest; k++, pos++) low = (low << 1) | ((bits[pos >> 3] >> (7 - (pos & 7))) & 1);
    return ((1 << e) | (top << rest) | low) - 1;
  });
  return [values, at + len + 4 + bitsLen];
}

const key = (b) => b.toString('latin1');
const planes = (ids) => [0, 8, 16].map((s) => Uint8Array.from(ids, (x) => (x >>> s) & 255));
const varints = (ids) => { const o = []; for (let x of ids) { while (x >= 128) { o.push((x & 127) | 128); x >>>= 7; } o.push(x); } return o; };
const entropy = (ids) => { const m = new Map(); for (const x of ids) m.set(x, (m.get(x) ?? 0) + 1); let h = 0; for (const c of m.values()) h -= c * Math.log2(c / ids.length); return h / 8; };
const rows = [];
const row = (what, bytes) => { const b = cat(bytes); rows.push([what, kB(b.length), kB(gz(b)), kB(br(b))]); console.error(rows.at(-1).join('  ')); };

/** Every split of each token into two tokens of lower rank (`index`: bytes -> rank). */
function splitsOf(tokens, index, skip = () => false) {
  return tokens.map((t, r) => {
    const s = [];
    if (skip(t)) return s;
    for (let k = 1; k < t.length; k++) {
      const a = index.get(key(t.subarray(0, k))), b = index.get(key(t.subarray(k)));
      if (a !== undefined && b !== undefined && a < r && b < r) s.push([a, b]);
    }
    return s;
  });
}
/** BPE's own last merge: the two parts left when merging the token's bytes with the lower ranks. */
function bpeSplit(t, r, index) {
  let parts = [...t].map((x) => Buffer.from([x]));
  while (parts.length > 2) {
    let best = Infinity, at = -1;
    for (let i = 0; i + 1 < parts.length; i++) {
      const m = index.get(key(Buffer.concat([parts[i], parts[i + 1]])));
      if (m !== undefined && m < best && m < r) [best, at] = [m, i];
    }
    if (at < 0) return null;
    parts.splice(at, 2, Buffer.concat([parts[at], parts[at + 1]]));
  }
  return parts.length === 2 ? [index.get(key(parts[0])), index.get(key(parts[1]))] : null;
}
/** The writer's pick (RankData::write): the pair whose parts the other picks use most, six rounds. */
function pickByUse(splits, n) {
  let pick = splits.map((s) => s.at(-1));
  for (let round = 0; round < 6; round++) {
    const left = new Uint32Array(n), right = new Uint32Array(n);
    for (const c of pick) if (c) { left[c[0]]++; right[c[1]]++; }
    const score = ([a, b]) => Math.log((left[a] + 0.5) * (right[b] + 0.5));
    pick = splits.map((s) => s.reduce((best, c) => (best === undefined || score(c) > score(best) ? c : best), undefined));
  }
  return pick;
}

/** What RankData::write picks (version 4): the split whose parts cost the fewest bits as stored, at the symbol frequencies of the other picks; six rounds from the longest left part. */
function pickByBits(splits, n) {
  let pick = splits.map((s) => s.at(-1));
  for (let round = 0; round < 6; round++) {
    const left = new Uint32Array(256), right = new Uint32Array(256);
    let pairs = 0;
    for (const c of pick) if (c) { left[symbol(c[0] + 1)[0]]++; right[symbol(c[1] + 1)[0]]++; pairs++; }
    const bits = (freq, x) => { const [sym, rest] = symbol(x + 1); return rest - Math.log2((freq[sym] + 0.5) / pairs); };
    const cost = ([a, b]) => bits(left, a) + bits(right, b);
    pick = splits.map((s) => s.reduce((best, c) => (best === undefined || cost(c) < cost(best) ? c : best), undefined));
  }
  return pick;
}

const o200k = decode('o200k_base');
const index = new Map(o200k.map((t, r) => [key(t), r]));
const lengths = o200k.map((t) => t.length);
row('o200k v1: lengths, then bytes in rank order', [lengths, ...o200k]);
const sorted = [...o200k.keys()].sort((a, b) => Buffer.compare(o200k[a], o200k[b]));
{
  // Front coding in byte order (shared prefix length, suffix length, suffix) plus the rank of each.
  const fc = [];
  sorted.forEach((r, i) => {
    const t = o200k[r], prev = i ? o200k[sorted[i - 1]] : Buffer.alloc(0);
    let k = 0;
    while (k < t.length && k < prev.length && t[k] === prev[k]) k++;
    fc.push(k, t.length - k, ...t.subarray(k));
  });
  row('o200k front-coded in byte order, + ranks as planes', [fc, ...planes(sorted)]);
  row('  (the front-coded bytes alone)', [fc]);
}
const splits = splitsOf(o200k, index, (t) => t.length < 2);
const literals = o200k.filter((t) => t.length === 1).flatMap((t) => [1, t[0]]);
console.error(`o200k: ${splits.filter((s) => s.length).length} tokens are pairs of lower ranks, ${splits.filter((s) => s.length > 1).length} in more than one way`);
const strategies = {
  'BPE last merge': o200k.map((t, r) => (t.length < 2 ? null : bpeSplit(t, r, index))),
  'longest left part': splits.map((s) => s.at(-1)),
  'longest right part': splits.map((s) => s[0]),
  'picked by use (v3 wrote these)': pickByUse(splits, o200k.length),
  'picked by bits (v4 writes these)': pickByBits(splits, o200k.length),
};
for (const [name, pick] of Object.entries(strategies)) {
  const pairs = pick.filter(Boolean);
  const [L, R] = [pairs.map((c) => c[0]), pairs.map((c) => c[1])];
  const tags = pick.map((c) => (c ? 1 : 0));
  const ranks = pick.map((c, r) => r).filter((r) => pick[r]);
  row(`o200k pairs, ${name}: symbol bytes + other bits (v4)`, [tags, ...coded(L), ...coded(R), literals]);
  row(`  planes (v3)`, [tags, ...planes(L), ...planes(R), literals]);
  row(`  varints, left stream then right`, [tags, varints(L), varints(R), literals]);
  row(`  planes of the distance back (rank - part)`, [tags, ...planes(L.map((x, i) => ranks[i] - x)), ...planes(R.map((x, i) => ranks[i] - x)), literals]);
  console.error(`  order-0 entropy of the streams: left ${kB(entropy(L))} + right ${kB(entropy(R))} = ${kB(entropy(L) + entropy(R))} kB`);
}
{
  // What an entropy coder in the core would reach: each rank + 1 as its magnitude (bit length)
  // and top `m` bits, Huffman-coded per stream with a static code, the other bits raw; the size
  // counts the bits and the code table (a bitmap of the symbols used, a length byte for each).
  const huffmanBits = (counts) => {
    // Plain Huffman: total coded bits = sum of the merged weights.
    const heap = [...counts.values()].sort((a, b) => a - b);
    let bits = 0;
    const q2 = [];
    const take = () => (q2.length && (!heap.length || q2[0] < heap[0]) ? q2.shift() : heap.shift());
    while (heap.length + q2.length > 1) { const w = take() + take(); bits += w; q2.push(w); }
    return bits;
  };
  const pick = strategies['picked by bits (v4 writes these)'].filter(Boolean);
  for (const m of [4, 6, 8]) {
    let total = 0;
    for (const ids of [pick.map((c) => c[0]), pick.map((c) => c[1])]) {
      const counts = new Map();
      let raw = 0;
      for (const x of ids) {
        const v = x + 1, e = 31 - Math.clz32(v), top = Math.min(m, e);
        const sym = (e << 8) | ((v >>> (e - top)) & ((1 << top) - 1));
        counts.set(sym, (counts.get(sym) ?? 0) + 1);
        raw += e - top;
      }
      total += Math.ceil((huffmanBits(counts) + raw) / 8) + counts.size + Math.ceil((18 << m) / 8); // + table: a length byte per used symbol and a bitmap of them
    }
    rows.push([`o200k pairs, static Huffman of magnitude + top ${m} bits, rest raw (estimate, no decoder)`, kB(total), kB(total), '']);
    console.error(rows.at(-1).join('  '));
  }
}
{
  // The longest lower-ranked prefix token, then the rest of the bytes raw.
  const P = [], tl = [], tail = [];
  o200k.forEach((t, r) => {
    let k = t.length - 1;
    for (; k >= 1; k--) { const a = index.get(key(t.subarray(0, k))); if (a !== undefined && a < r) { P.push(a + 1); break; } }
    if (k < 1) { P.push(0); k = 0; }
    tl.push(t.length - k);
    tail.push(...t.subarray(k));
  });
  row('o200k longest lower-ranked prefix (planes) + tail bytes', [...planes(P), tl, tail]);
}

const cl100k = decode('cl100k_base', o200k);
const clIndex = new Map(cl100k.map((t, r) => [key(t), r]));
row('cl100k v1: lengths, then bytes', [cl100k.map((t) => t.length), ...cl100k]);
const refs = cl100k.map((t) => index.get(key(t)));
const own = cl100k.filter((_, r) => refs[r] === undefined);
row('cl100k v2: o200k ranks + 1 (planes), other tokens raw', [...planes(refs.map((x) => (x === undefined ? 0 : x + 1))), own.flatMap((t) => [t.length, ...t])]);
{
  const clSplits = splitsOf(cl100k, clIndex, (t) => t.length < 2 || index.has(key(t)));
  const pick = pickByUse(clSplits, cl100k.length);
  const pick4 = pickByBits(clSplits, cl100k.length);
  const tags = cl100k.map((t, r) => (refs[r] !== undefined ? 2 : pick[r] ? 1 : 0));
  const pairs = pick.filter(Boolean);
  row('cl100k v3: o200k ranks (planes), other tokens as pairs', [tags, ...planes(refs.filter((x) => x !== undefined)), ...planes(pairs.map((c) => c[0])), ...planes(pairs.map((c) => c[1]))]);
  const pairs4 = pick4.filter(Boolean);
  row('cl100k v4: o200k ranks, other tokens as pairs (picked by bits), as symbol bytes + other bits', [tags, ...coded(refs.filter((x) => x !== undefined)), ...coded(pairs4.map((c) => c[0])), ...coded(pairs4.map((c) => c[1]))]);
  const alone = pickByUse(splitsOf(cl100k, clIndex, (t) => t.length < 2), cl100k.length).filter(Boolean);
  row('cl100k pairs of its own ranks only (no o200k)', [...planes(alone.map((c) => c[0])), ...planes(alone.map((c) => c[1]))]);
}

console.log('| encoding | raw kB | gzip -9 kB | brotli -11 kB |\n|---|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
