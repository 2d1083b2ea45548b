// Minimizing: smaller variants of a failing spec, biggest cuts first. run.mjs keeps the first
// variant that still fails with the same class and starts again from it.

const clone = (x) => structuredClone(x);

/** Every array in the parts of the spec that hold content, with its path. */
function arrays(spec) {
  const found = [];
  const walk = (value, path) => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      if (value.length > 0) found.push({ path, length: value.length });
      value.forEach((v, i) => walk(v, [...path, i]));
      return;
    }
    // A tag's own arrays ($lines) are shrunk as text, not as arrays.
    if (Object.keys(value).length === 1 && Object.keys(value)[0].startsWith('$')) return;
    for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  if (spec.turns) walk(spec.turns, ['turns']);
  if (spec.agent) walk(spec.agent.steps, ['agent', 'steps']);
  return found;
}

const get = (root, path) => path.reduce((v, k) => v?.[k], root);

/** Long strings and `$lines` tags, with their paths. */
function texts(spec) {
  const found = [];
  const walk = (value, path) => {
    if (typeof value === 'string') {
      if (value.length > 24) found.push({ path, size: value.length });
      return;
    }
    if (value === null || typeof value !== 'object') return;
    if (!Array.isArray(value) && Array.isArray(value.$lines)) {
      if (value.$lines[1] > 1) found.push({ path, size: value.$lines[1] * 40, lines: true });
      return;
    }
    for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  if (spec.turns) walk(spec.turns, ['turns']);
  if (spec.agent) walk(spec.agent, ['agent']);
  return found.sort((a, b) => b.size - a.size);
}

export function* candidates(spec) {
  // Whole turns (and their ops) first.
  if (spec.turns && spec.turns.length > 1) {
    const n = spec.turns.length;
    for (let size = Math.floor(n / 2); size >= 1; size = Math.floor(size / 2)) {
      for (let start = 0; start + size <= n; start += size) {
        const c = clone(spec);
        c.turns.splice(start, size);
        if (c.ops) c.ops.splice(start, size);
        yield c;
      }
    }
  }
  // Host shapes other than the long-lived one.
  for (const shape of spec.shapes ?? []) {
    if (shape === 'long') continue;
    const c = clone(spec);
    c.shapes = c.shapes.filter((s) => s !== shape);
    yield c;
  }
  // Callbacks, faults and options.
  if (spec.summarizer) yield { ...clone(spec), summarizer: null };
  if (spec.preCompact) yield { ...clone(spec), preCompact: null };
  for (let i = 0; i < (spec.store?.faults?.length ?? 0); i++) {
    const c = clone(spec);
    c.store.faults.splice(i, 1);
    yield c;
  }
  for (const key of Object.keys(spec.options)) {
    if (key === 'contextWindow' || key === 'summarizeTimeoutMs') continue;
    const c = clone(spec);
    delete c.options[key];
    yield c;
  }
  if (spec.ops?.some((op) => op !== 'manage')) {
    const c = clone(spec);
    c.ops = c.ops.map(() => 'manage');
    yield c;
  }
  if (spec.entries?.length > 1) for (const e of spec.entries) yield { ...clone(spec), entries: [e] };
  // Elements of every array (messages, parts, rows, steps), in halves, then one by one.
  for (const { path, length } of arrays(spec).sort((a, b) => a.path.length - b.path.length || b.length - a.length)) {
    for (let size = Math.max(1, Math.floor(length / 2)); size >= 1; size = size === 1 ? 0 : Math.max(1, Math.floor(size / 2))) {
      for (let start = 0; start + size <= length; start += size) {
        const c = clone(spec);
        get(c, path).splice(start, size);
        yield c;
      }
    }
  }
  // Text: halve long strings and line counts.
  for (const { path, lines } of texts(spec)) {
    const c = clone(spec);
    const parent = get(c, path.slice(0, -1));
    const key = path.at(-1);
    if (lines) parent[key].$lines[1] = Math.floor(parent[key].$lines[1] / 2);
    else parent[key] = parent[key].slice(0, Math.ceil(parent[key].length / 2));
    yield c;
  }
  // Keys of tool inputs, output values and provider options.
  const keyed = [];
  const walk = (value, path) => {
    if (value === null || typeof value !== 'object') return;
    if (!Array.isArray(value)) {
      for (const k of Object.keys(value)) {
        if (['providerOptions', 'extra', 'limit', 'reason', 'filename', 'mediaType', 'providerExecuted'].includes(k) || ['input', 'value'].includes(path.at(-1)) || path.includes('value')) keyed.push([...path, k]);
      }
    }
    for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  if (spec.turns) walk(spec.turns, ['turns']);
  for (const path of keyed) {
    const c = clone(spec);
    const parent = get(c, path.slice(0, -1));
    if (parent && typeof parent === 'object') {
      delete parent[path.at(-1)];
      yield c;
    }
  }
}

/** Size of a spec, to report how much minimizing took away. */
export function size(spec) {
  return JSON.stringify(spec).length;
}
