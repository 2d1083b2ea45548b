// A long research-agent session: a platform engineer evaluates self-hosted vector search for a
// retrieval system. Huge web_search results, long fetched pages (some fetched again later,
// byte-identical), notes, follow-up questions.
import {
  Rng, hashString, thinkTimes, SessionBuilder, searchResults, webPage, markdownAnswer, paragraph, sentence, needleValue, insertMiddle,
  insertSentence, cap, messageTexts,
} from './lib.mjs';

const CPT = 4.4; // characters per token of generated web text (measured, o200k)
// Token budget per turn. Sizes drawn at random are steered toward it (a few huge outputs make the
// total swing otherwise): each turn scales its draws by (budget left) / (budget of the turns left).
const PER_MAIN = 58_000;
const PER_FOLLOW = 10_000;
const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

const SUBTOPICS = [
  {
    key: 'landscape', code: 'python',
    terms: ['Qdrant', 'Milvus', 'Weaviate', 'pgvector', 'Vespa', 'OpenSearch k-NN', 'Elasticsearch dense vectors', 'LanceDB', 'Chroma'],
    headings: ['the shortlist', 'what disqualified the rest', 'operational maturity', 'community and support', 'open questions'],
    queries: ['self-hosted vector database comparison 2025 production', 'Qdrant vs Milvus vs Weaviate production experience', 'vector database on-prem 200 million embeddings'],
    prompt: (r) => `I'm evaluating self-hosted vector search for our retrieval system. We have about ${r.int(150, 260)}M embeddings (${r.pick([768, 1024, 1536])} dims), must run on-prem in our own data centers, and latency budget is ${r.pick([50, 80, 100])} ms p99 for top-${r.pick([10, 20, 50])}. Can you research the realistic options (Qdrant, Milvus, Weaviate, pgvector, Vespa, OpenSearch) and give me a shortlist with reasons? Please keep notes as you go, I'll ask follow-ups.`,
  },
  {
    key: 'indexes', code: 'python',
    terms: ['HNSW', 'IVF-PQ', 'DiskANN', 'ScaNN', 'product quantization', 'scalar quantization', 'binary quantization', 'the ef_search parameter', 'graph construction'],
    headings: ['memory footprint', 'recall versus latency', 'build time', 'what the benchmarks miss', 'recommendation'],
    queries: ['HNSW vs IVF-PQ vs DiskANN memory recall 100M vectors', 'DiskANN production experience SSD latency', 'HNSW memory usage per vector calculation quantization'],
    prompt: () => `Next: at our scale, which index type makes sense? I keep hearing HNSW is "too memory hungry" past 100M vectors and that DiskANN or IVF-PQ is the answer. Dig into real numbers for memory, recall@10 and build time, not vendor marketing.`,
  },
  {
    key: 'pgvector', code: 'sql',
    terms: ['pgvector', 'halfvec', 'iterative index scans', 'table partitioning', 'the HNSW index in Postgres', 'maintenance_work_mem', 'pgvectorscale', 'parallel index builds'],
    headings: ['where pgvector shines', 'where it hurts', 'partitioning strategy', 'filtering', 'verdict'],
    queries: ['pgvector production 100 million rows experience', 'pgvector iterative index scans filtering recall', 'pgvector halfvec partitioning hnsw build time'],
    prompt: () => `Our DBAs are pushing for pgvector because we already run a lot of Postgres. Is it viable at ${'~'}200M rows? Look at partitioning, halfvec, filtered queries and the newer iterative scans. Be honest about the limits.`,
  },
  {
    key: 'tenancy', code: 'python',
    terms: ['payload filtering', 'multi-tenancy', 'per-tenant collections', 'partition keys', 'role-based access control', 'filtered HNSW', 'pre-filtering', 'post-filtering'],
    headings: ['filtering strategies', 'tenant isolation', 'access control', 'performance under filters', 'what we would pick'],
    queries: ['vector database multi-tenancy filtering performance', 'filtered HNSW search pre-filtering post-filtering recall drop', 'Qdrant Milvus Weaviate RBAC tenant isolation'],
    prompt: (r) => `We're multi-tenant: ~${r.int(800, 4000)} tenants, very uneven sizes, and every query is filtered by tenant plus document ACLs. How do the shortlisted systems handle filtered search and tenant isolation? I'm worried about recall collapsing under restrictive filters.`,
  },
  {
    key: 'operations', code: 'bash',
    terms: ['snapshots', 'replication', 'rolling upgrades', 'the Kubernetes operator', 'write-ahead log', 'disaster recovery', 'resharding', 'observability'],
    headings: ['backups and restore', 'upgrades', 'scaling out', 'failure modes', 'runbook gaps'],
    queries: ['Qdrant snapshot restore production large collection', 'Milvus operator upgrade downtime experience', 'vector database disaster recovery resharding'],
    prompt: () => `Operations now. Backups, restore times for a few hundred GB, rolling upgrades, resharding when we grow. Which of them can our team of four actually operate without a vendor on speed dial?`,
  },
  {
    key: 'cost', code: 'python',
    terms: ['RAM sizing', 'NVMe storage', 'quantization', 'memory-mapped segments', 'instance types', 'total cost of ownership', 'replica count', 'rescoring'],
    headings: ['sizing assumptions', 'memory math', 'hardware options', 'cost per month', 'sensitivity'],
    queries: ['vector database hardware sizing RAM per million vectors quantization', 'memory mapped vector index NVMe latency cost', 'self-hosted vector search total cost of ownership'],
    prompt: (r) => `Can you put together a rough hardware and cost model for the top two options? Assume ${r.pick([2, 3])} replicas, ${r.pick([20, 30, 40])}% yearly growth, and that we can buy NVMe-heavy nodes. Show the memory math.`,
  },
  {
    key: 'hybrid', code: 'python',
    terms: ['BM25', 'hybrid search', 'reciprocal rank fusion', 'cross-encoder reranking', 'sparse vectors', 'SPLADE', 'query latency budget', 'learned sparse retrieval'],
    headings: ['why hybrid', 'fusion methods', 'reranking cost', 'native support', 'recommendation'],
    queries: ['hybrid search BM25 vector reciprocal rank fusion production', 'sparse vectors SPLADE Qdrant Milvus support', 'cross encoder reranking latency budget'],
    prompt: () => `The search team says pure vector search misses exact identifiers (part numbers, error codes). What are the options for hybrid search in the shortlisted systems, and what does reranking cost us in latency?`,
  },
  {
    key: 'licensing', code: 'bash',
    terms: ['Apache 2.0', 'SSPL', 'the Elastic License', 'BSL', 'enterprise support contracts', 'SOC 2 reports', 'FIPS builds', 'export controls'],
    headings: ['licenses', 'support options', 'compliance', 'risk', 'summary'],
    queries: ['Qdrant Milvus Weaviate license enterprise support pricing', 'vector database SOC 2 on-prem compliance FIPS', 'OpenSearch Elasticsearch license SSPL vector search'],
    prompt: () => `Legal will ask about licenses and support. For the shortlist: license, what an enterprise support contract looks like, and anything that would worry compliance (SSPL, BSL, FIPS, export).`,
  },
];

const FOLLOWUPS = [
  (r) => `Wait, in that benchmark article you read, did they use the same hardware for every system? Can you check the methodology section again?`,
  (r) => `How confident are you in the recall numbers you quoted? Which source were they from?`,
  (r) => `Can you re-check the page about ${r.pick(['memory usage', 'upgrades', 'filtering', 'partitioning'])} — I want the exact caveats they listed.`,
  (r) => `Quick follow-up: does any of this change if we only need top-${r.pick([5, 10])} and can tolerate ${r.pick([0.95, 0.97])} recall?`,
  (r) => `Is there anything recent (last few months) that would change the recommendation? Search once more.`,
  (r) => `Summarize your notes so far in five bullets I can paste into Slack.`,
  (r) => `What would you ask the vendors on a call, given what you found?`,
];

const TOOL_NEEDLES = [
  { where: 'page', line: (v) => `Raw results for every run are in the read-only bucket folder ${v}; the harness and configs are in the same folder.`, question: 'One of the benchmark write-ups you fetched said where the raw results are stored. What was the folder id it gave?', answer: (v) => `The write-up said the raw results are in the read-only bucket folder \`${v}\`.` },
  { where: 'page', line: (v) => `> Note for enterprise buyers: quote reference code ${v} when you request the on-prem support discount.`, question: 'A vendor page you read earlier mentioned a reference code to quote when requesting the on-prem support discount. What was it?', answer: (v) => `The page said to quote reference code \`${v}\` when requesting the on-prem support discount.` },
  { where: 'search', line: (v) => `Errata: the corrected recall figures for the 100M-vector runs are tracked as erratum ${v}.`, question: 'In one of the search results there was an erratum id for corrected recall figures on the 100M-vector runs. What was that id?', answer: (v) => `The corrected recall figures are tracked as erratum \`${v}\`.` },
  { where: 'page', line: (v) => `The reproducibility container used for all measurements is tagged ${v}.`, question: 'What was the tag of the reproducibility container mentioned in one of the articles you fetched?', answer: (v) => `The reproducibility container was tagged \`${v}\`.` },
  { where: 'search', line: (v) => `Security advisory ${v} affects snapshot restore on versions before the fix; upgrade before enabling remote snapshots.`, question: 'Which security advisory id affecting snapshot restore came up in your searches?', answer: (v) => `The advisory affecting snapshot restore was \`${v}\`.` },
];

const USER_NEEDLES = [
  { style: 'prefixed', prefix: 'PO', text: (v) => `For the paperwork, our procurement reference for this evaluation is ${v}, keep it in mind.`, question: 'What is the procurement reference for this evaluation that I gave you?', answer: (v) => `The procurement reference you gave me is \`${v}\`.` },
  { style: 'soft', text: (v) => `The cluster we would deploy on is called ${v} internally.`, question: 'What is the internal name of the cluster I said we would deploy on?', answer: (v) => `You said the cluster is called \`${v}\` internally.` },
  { style: 'prefixed', prefix: 'BUD', text: (v) => `By the way, any spend goes against budget code ${v}.`, question: 'Which budget code did I say the spend goes against?', answer: (v) => `The spend goes against budget code \`${v}\`.` },
  { style: 'hex', text: (v) => `Our internal wiki page for this project has id ${v}, if you need to reference it.`, question: 'What was the id of our internal wiki page for this project?', answer: (v) => `The internal wiki page id is \`${v}\`.` },
  { style: 'code', text: (v) => `The security review for this is filed as ${v}.`, question: 'Under which id did I say the security review is filed?', answer: (v) => `The security review is filed as \`${v}\`.` },
];

const SYSTEM = `You are Scout, a research assistant for an infrastructure team. You investigate technical questions on the public web and report back with sourced, balanced conclusions.

How you work:
- Use \`web_search\` to find candidate sources, then \`fetch_url\` to read the most relevant ones in full before relying on them. Search snippets are not evidence.
- Prefer primary sources (official docs, maintainers' posts, papers, reproducible benchmarks) over listicles and vendor marketing. Note the date of every source; the field moves fast.
- Record findings with \`save_note\` as you go (short title, bullet points, the URLs they came from) so you can answer follow-up questions later.
- When sources disagree, say so and explain which you trust more and why.
- Cite URLs inline in your answers. Do not invent numbers; if a figure is an estimate, label it as one.
- Keep answers structured (headings, bullets, tables where useful) and end with a clear recommendation or next step.
- The user's environment: on-premises data centers, Kubernetes, a small platform team, strict compliance requirements. Keep that context in mind when judging options.`;

const TOOLS = {
  web_search: { description: 'Search the web. Returns numbered results with title, URL, date, snippet and the extracted main text of each page.', inputSchema: { type: 'object', properties: { query: { type: 'string' }, max_results: { type: 'integer', minimum: 1, maximum: 20 } }, required: ['query'], additionalProperties: false } },
  fetch_url: { description: 'Fetch a web page and return it converted to markdown (including navigation and comments).', inputSchema: { type: 'object', properties: { url: { type: 'string', format: 'uri' } }, required: ['url'], additionalProperties: false } },
  save_note: { description: 'Save a research note to the session notebook.', inputSchema: { type: 'object', properties: { title: { type: 'string' }, content: { type: 'string', description: 'Markdown.' }, tags: { type: 'array', items: { type: 'string' } } }, required: ['title', 'content'], additionalProperties: false } },
};

export function generateResearch({ scale = 1 } = {}) {
  const rng = new Rng(hashString('research-agent'));
  const b = new SessionBuilder();
  const used = new Set();

  const M = Math.max(2, Math.round(6 * scale));
  const F = Math.max(1, Math.round(5 * scale));
  const subtopics = SUBTOPICS.slice(0, 1).concat(rng.shuffle(SUBTOPICS.slice(1))).slice(0, M);
  // turn plan: main turns with follow-ups after some of them
  const plan = [];
  const followAfter = new Set(rng.pickN(Array.from({ length: M }, (_, i) => i), F));
  subtopics.forEach((topic, i) => {
    plan.push({ kind: 'main', topic });
    if (followAfter.has(i)) plan.push({ kind: 'follow', topic });
  });
  while (plan.filter((p) => p.kind === 'follow').length < F) plan.push({ kind: 'follow', topic: subtopics[M - 1] });

  const N = Math.max(3, Math.min(8, Math.ceil(8 * scale)));
  const toolDefs = rng.shuffle(TOOL_NEEDLES);
  const userDefs = rng.shuffle(USER_NEEDLES);
  const needles = [];
  const plantTurns = Math.max(1, Math.ceil(plan.length * 0.3));
  const mainEarly = plan.map((p, i) => (p.kind === 'main' && i < plantTurns ? i : -1)).filter((i) => i >= 0);
  for (let k = 0; k < N; k++) {
    const kind = k % 2 === 0 ? 'tool' : 'user';
    const def = kind === 'tool' ? toolDefs[k >> 1] : userDefs[k >> 1];
    const value = kind === 'tool' ? needleValue(rng, used, 'code') : needleValue(rng, used, def.style, def.prefix);
    // tool needles need a main turn (searches and fetches); user needles any early turn
    const turn = kind === 'tool' ? mainEarly[(k >> 1) % mainEarly.length] : (k >> 1) % plantTurns;
    needles.push({ id: `n${k + 1}`, kind, def, value, turn, messageIndex: -1, neededAt: -1 });
  }
  const askFrom = Math.min(plan.length - 1, Math.ceil(plan.length * 0.6));
  const asksAfter = new Map();
  rng.shuffle(needles).forEach((n, i) => {
    const t = askFrom + (i % (plan.length - askFrom));
    if (!asksAfter.has(t)) asksAfter.set(t, []);
    asksAfter.get(t).push(n);
  });

  // a few pages larger than a 32k window on their own (long reports/papers)
  const mains = plan.map((p, i) => (p.kind === 'main' ? i : -1)).filter((i) => i >= 0);
  const hugePages = new Set(mains.filter((_, k) => k % 3 === 1));
  const pages = new Map(); // url -> { text, title, topic, tainted }
  const fetched = []; // urls fetched so far, in order
  let noteCount = 0;

  const page = (url, title, topic, huge, cap = 40_000) => {
    if (!pages.has(url)) {
      const pr = rng.derive(url);
      const tokens = huge ? pr.int(34_000, 39_000) : Math.round(clamp(pr.weighted([[pr.int(5000, 8000), 5], [pr.int(8000, 13_000), 4], [pr.int(13_000, 24_000), 1.5]]), 5000, cap));
      pages.set(url, { text: webPage(pr, topic, { url, title, chars: tokens * CPT }), tokens, title, topic, tainted: false });
    }
    return pages.get(url);
  };
  const note = (topic, hits) => {
    noteCount++;
    const bullets = Array.from({ length: rng.int(4, 9) }, () => `- ${sentence(rng, topic)}${hits.length && rng.chance(0.6) ? ` (${rng.pick(hits).url})` : ''}`);
    return {
      toolName: 'save_note',
      input: { title: `${cap(topic.key)}: ${rng.pick(['findings', 'key numbers', 'caveats', 'open questions', 'sources'])}`, content: `${paragraph(rng, topic, 1, 3)}\n\n${bullets.join('\n')}`, tags: [topic.key, rng.pick(['benchmark', 'ops', 'cost', 'risk', 'shortlist'])] },
      output: `Saved note #${noteCount} (${rng.int(120, 480)} words). The notebook now has ${noteCount} note${noteCount > 1 ? 's' : ''}.`,
    };
  };
  const say = (s) => (rng.chance(0.75) ? s : undefined);

  const budgetOf = (p) => (p.kind === 'main' ? PER_MAIN : PER_FOLLOW);
  const target = plan.reduce((a, p) => a + budgetOf(p), 0);
  let mult = 1;

  plan.forEach((turn, ti) => {
    const topic = turn.topic;
    const spent = b.messages.reduce((a, m) => a + messageTexts(m).reduce((x, t) => x + t.length, 0), 0) / CPT;
    mult = clamp((target - spent) / plan.slice(ti).reduce((a, p) => a + budgetOf(p), 0), 0.5, 1.6);
    const pendingTool = needles.filter((n) => n.turn === ti && n.kind === 'tool');
    const plant = (text, where) => {
      const n = pendingTool.find((x) => x.def.where === where) ?? (where === 'page' ? pendingTool[0] : undefined);
      if (!n) return text;
      pendingTool.splice(pendingTool.indexOf(n), 1);
      n.plantPending = true;
      return insertMiddle(rng, text, n.def.line(n.value));
    };

    // ---- user message
    let prompt = turn.kind === 'main' ? topic.prompt(rng) : rng.pick(FOLLOWUPS)(rng);
    const userNeedles = needles.filter((n) => n.turn === ti && n.kind === 'user');
    for (const n of userNeedles) prompt = insertSentence(rng, prompt, n.def.text(n.value));
    n_set(userNeedles, b.user(prompt));

    if (turn.kind === 'main') {
      // search/fetch rounds until the turn's budget is used (and its needles are planted)
      const turnBudget = PER_MAIN * mult;
      let spentTurn = 0;
      const queries = rng.shuffle(topic.queries);
      let qi = 0;
      const allHits = [];
      for (let r = 0; r < 4; r++) {
        const left = () => turnBudget - spentTurn;
        // searches (sometimes two in parallel)
        const nSearch = r === 0 && left() > 45_000 && rng.chance(0.4) ? 2 : 1;
        const calls = [];
        for (let s = 0; s < nSearch; s++) {
          const query = queries[qi++ % queries.length] + (qi > queries.length ? ` ${rng.pick(['2025', 'benchmark', 'reddit', 'github issue'])}` : '');
          const drawn = rng.weighted([[rng.int(10_000, 14_000), 4], [rng.int(14_000, 20_000), 3], [rng.int(20_000, 29_000), 1]]);
          const tokens = clamp(drawn, 10_000, Math.max(10_000, left() * 0.4));
          spentTurn += tokens;
          const { text, hits } = searchResults(rng, topic, { query, chars: tokens * CPT });
          allHits.push(...hits);
          calls.push({ toolName: 'web_search', input: { query, max_results: rng.pick([8, 10, 12]) }, output: plant(text, 'search') });
        }
        b.step(say(r === 0 ? `I'll start with a broad search on ${topic.terms[0]} and related options.` : `Searching for more specific evidence on ${rng.pick(topic.terms)}.`), calls);
        // fetch the most relevant hits
        const nFetch = rng.int(1, 2) + (pendingTool.length > 1 ? 1 : 0);
        const toFetch = rng.pickN(allHits.filter((h) => !pages.has(h.url)), nFetch);
        if (toFetch.length) {
          const parallel = rng.chance(0.4);
          const fetchCalls = toFetch.map((h, k) => {
            const p = page(h.url, h.title, topic, hugePages.has(ti) && r === 0 && k === 0, Math.max(5000, left() / (toFetch.length - k)));
            spentTurn += p.tokens;
            const planted = plant(p.text, 'page');
            if (planted !== p.text) p.tainted = true;
            fetched.push(h.url);
            return { toolName: 'fetch_url', input: { url: h.url }, output: planted };
          });
          if (parallel) b.step(say('Reading the most relevant results in full.'), fetchCalls);
          else fetchCalls.forEach((c) => b.step(say(`Reading ${c.input.url}.`), [c]));
        }
        // sometimes go back to a page read in an earlier turn (identical content)
        const earlier = fetched.filter((u) => !pages.get(u).tainted && pages.get(u).topic !== topic && pages.get(u).tokens <= left());
        if (r === 0 && earlier.length && rng.chance(0.45)) {
          const url = rng.pick(earlier);
          spentTurn += pages.get(url).tokens;
          b.step(say(`Re-reading ${url} from earlier to compare.`), [{ toolName: 'fetch_url', input: { url }, output: pages.get(url).text }]);
        }
        if (rng.chance(0.7)) b.step(say('Saving what I found so far.'), [note(topic, allHits)]);
        if (!pendingTool.length && spentTurn >= turnBudget * 0.8) break;
      }
      if (!turnHasNote(b, ti)) b.step(undefined, [note(topic, allHits)]);
      b.answer(markdownAnswer(rng, topic, rng.int(700, 1600) * CPT, { lead: `## ${cap(topic.headings[0])}` }));
    } else {
      // follow-up: re-read an earlier page (identical unless it carried a needle), or one more search
      const refetchable = fetched.filter((u) => !pages.get(u).tainted);
      if (refetchable.length && rng.chance(0.85)) {
        const url = rng.pick(refetchable);
        b.step(say(`Let me re-read ${url} to check.`), [{ toolName: 'fetch_url', input: { url }, output: pages.get(url).text }]);
        if (rng.chance(0.4) && refetchable.length > 1) {
          const url2 = rng.pick(refetchable.filter((u) => u !== url));
          b.step(say('And the other source for comparison.'), [{ toolName: 'fetch_url', input: { url: url2 }, output: pages.get(url2).text }]);
        }
      } else {
        const query = `${rng.pick(topic.queries)} ${rng.pick(['2025', 'latest', 'changelog'])}`;
        const { text } = searchResults(rng, topic, { query, chars: rng.int(8000, 14_000) * CPT });
        b.step(say('Searching once more for anything recent.'), [{ toolName: 'web_search', input: { query }, output: text }]);
      }
      if (rng.chance(0.4)) b.step(undefined, [note(topic, [])]);
      b.answer(markdownAnswer(rng, topic, rng.int(250, 800) * CPT));
    }

    for (const n of needles) {
      if (n.plantPending) {
        n.messageIndex = b.messages.findLastIndex((m) => m.role === 'tool' && m.content.some((p) => p.output.value.includes(n.value)));
        delete n.plantPending;
      }
    }
    if (pendingTool.length) throw new Error(`research: tool needles not planted in turn ${ti}`);

    for (const n of asksAfter.get(ti) ?? []) {
      n.neededAt = b.user(`${rng.pick(['Before we go on:', 'Quick one:', 'Sorry, unrelated:', 'Also, one more thing.'])} ${n.def.question}`);
      b.answer(n.def.answer(n.value));
    }
  });

  return {
    name: 'research-agent',
    description: 'A research agent evaluating self-hosted vector search over several user turns, with huge web search results, long fetched pages (some re-fetched), notes and follow-up questions.',
    system: SYSTEM,
    tools: TOOLS,
    messages: b.messages,
    // the user's think time before each user message (lib.mjs THINK_TIME)
    thinkSeconds: thinkTimes('research-agent', b.messages),
    needles: needles.map(({ id, value, messageIndex, kind, neededAt, def }) => ({ id, value, messageIndex, kind, neededAt, question: def.question })),
  };

  function n_set(list, idx) {
    for (const n of list) n.messageIndex = idx;
  }
  function turnHasNote(builder) {
    for (let i = builder.messages.length - 1; i >= 0 && builder.messages[i].role !== 'user'; i--) {
      const m = builder.messages[i];
      if (m.role === 'assistant' && m.content.some((p) => p.type === 'tool-call' && p.toolName === 'save_note')) return true;
    }
    return false;
  }
}
