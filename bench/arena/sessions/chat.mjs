// A long chat with few tools: hundreds of user/assistant turns over a dozen recurring topics,
// long-ish markdown answers, a user who now and then pastes a document of several thousand
// tokens, and a handful of calculator/lookup calls.
import {
  Rng, hashString, thinkTimes, SessionBuilder, markdownAnswer, paragraph, sentence, pastedDocument, needleValue, insertMiddle,
  insertSentence, cap,
} from './lib.mjs';

const CPT = 4.3; // characters per token of generated markdown prose (measured, o200k)

const TOPICS = [
  { key: 'lisbon', style: 'life', code: null, terms: ['Alfama', 'the 28 tram', 'Sintra', 'pastéis de nata', 'the Lisboa Card', 'Belém', 'LX Factory', 'a day trip to Cascais', 'the airport metro', 'fado houses', 'Time Out Market'], headings: ['getting around', 'where to stay', 'food', 'day trips', 'budget', 'a suggested itinerary'] },
  { key: 'postgres', code: 'sql', terms: ['the orders table', 'a composite index', 'EXPLAIN ANALYZE', 'the query planner', 'a partial index', 'VACUUM', 'connection pooling', 'a materialized view', 'work_mem', 'sequential scans'], headings: ['what the plan tells us', 'indexing', 'rewriting the query', 'trade-offs', 'next steps'] },
  { key: 'rust', code: 'rs', terms: ['the borrow checker', 'lifetimes', 'trait objects', 'iterators', 'Result and the ? operator', 'ownership', 'Arc<Mutex<T>>', 'async runtimes', 'cargo workspaces', 'pattern matching'], headings: ['the short answer', 'why the compiler complains', 'a cleaner version', 'common pitfalls', 'further reading'] },
  { key: 'kitchen', style: 'life', code: null, terms: ['the cabinets', 'quartz countertops', 'the contractor quote', 'building permits', 'a contingency budget', 'appliances', 'lead times', 'the electrician', 'tiling', 'the plumbing rough-in'], headings: ['budget breakdown', 'sequencing the work', 'questions for the contractor', 'where to save', 'timeline'] },
  { key: 'talk', style: 'life', code: null, terms: ['the opening story', 'the slide deck', 'speaker notes', 'the live demo', 'the Q&A', 'the abstract', 'the rehearsal', 'the key takeaway', 'timing'], headings: ['structure', 'the opening', 'slides', 'rehearsing', 'handling questions'] },
  { key: 'sourdough', style: 'life', code: null, terms: ['the starter', 'bulk fermentation', 'hydration', 'the levain', 'stretch and folds', 'the cold retard', 'oven spring', 'scoring', 'the Dutch oven', 'whole wheat flour'], headings: ['what went wrong', 'adjusting the schedule', 'hydration', 'baking', 'a revised recipe'] },
  { key: 'interview', code: 'ts', terms: ['the system design round', 'rate limiting', 'consistent hashing', 'a message queue', 'caching strategy', 'the behavioral round', 'trade-off discussions', 'back-of-the-envelope estimates', 'the coding exercise'], headings: ['how to approach it', 'a sample answer', 'what interviewers look for', 'practice plan', 'red flags to avoid'] },
  { key: 'network', code: 'bash', terms: ['the mesh Wi-Fi', 'VLANs', 'the Pi-hole', 'port forwarding', 'WireGuard', 'the NAS', 'DHCP reservations', 'the ISP router in bridge mode', 'IPv6'], headings: ['the setup', 'step by step', 'security', 'troubleshooting', 'what I would change'] },
  { key: 'budget', style: 'life', code: null, terms: ['the emergency fund', 'index funds', 'the monthly budget', 'fixed costs', 'the pension contribution', 'subscriptions', 'the savings rate', 'a sinking fund', 'the mortgage'], headings: ['where the money goes', 'priorities', 'a simple plan', 'automation', 'review cadence'] },
  { key: 'grant', style: 'life', code: null, terms: ['the project summary', 'the work packages', 'the budget justification', 'impact statement', 'the consortium', 'deliverables', 'the evaluation criteria', 'the Gantt chart', 'risk mitigation'], headings: ['what reviewers look for', 'structure', 'tightening the summary', 'budget', 'before you submit'] },
  { key: 'pandas', code: 'python', terms: ['the DataFrame', 'groupby', 'missing values', 'merge keys', 'dtypes', 'the date column', 'vectorized operations', 'the pivot table', 'duplicate rows'], headings: ['cleaning the data', 'the transformation', 'checking the result', 'performance', 'a complete script'] },
  { key: 'offsite', style: 'life', code: null, terms: ['the agenda', 'the venue', 'team-building activities', 'the budget per person', 'travel logistics', 'the retrospective session', 'dietary requirements', 'the planning workshop'], headings: ['goals', 'a two-day agenda', 'logistics', 'budget', 'follow-up'] },
  { key: 'marathon', style: 'life', code: null, terms: ['long runs', 'tempo runs', 'the taper', 'easy pace', 'fueling', 'recovery weeks', 'strength training', 'race day', 'cadence'], headings: ['the training plan', 'this week', 'nutrition', 'avoiding injury', 'race strategy'] },
  { key: 'react', code: 'ts', terms: ['useEffect', 'React Query', 'the form state', 'memoization', 'server components', 'the context provider', 'prop drilling', 'Suspense', 'the bundle size'], headings: ['what is happening', 'a fix', 'a cleaner pattern', 'performance', 'testing it'] },
];

const USER_TEMPLATES = [
  (r, t) => `Can you explain ${r.pick(t.terms)} in more detail? ${sentence(r, t)}`,
  (r, t) => `What's the best way to approach ${r.pick(t.terms)}?`,
  (r, t) => `I tried what you suggested with ${r.pick(t.terms)} but it didn't really work — ${sentence(r, t).toLowerCase()} Any ideas?`,
  (r, t) => `Thanks! Next question: how does ${r.pick(t.terms)} compare to ${r.pick(t.terms)}?`,
  (r, t) => `Give me a ${r.pick(['short', 'detailed', 'step-by-step', 'realistic'])} plan for ${r.pick(t.terms)}.`,
  (r, t) => `ok. and ${r.pick(t.terms)}?`,
  (r, t) => `${paragraph(r, t, 1, 3)} Does that sound right to you, or am I missing something about ${r.pick(t.terms)}?`,
  (r, t) => `Back to ${r.pick(t.terms)} — ${r.pick(['I have a few more questions.', 'I thought about it more.', 'quick update.'])} ${sentence(r, t)} What would you do?`,
  (r, t) => `Can you make that shorter? Just the key points about ${r.pick(t.terms)}.`,
  (r, t) => `Hmm, I'm not sure I agree. ${sentence(r, t)} Can you reconsider?`,
];

const DOC_ASKS = {
  notes: ['Here are my notes from the meeting. Can you turn them into a summary with decisions and action items?', 'Pasting the notes from yesterday — what did we actually decide, and what is still open?'],
  contract: ['The contractor sent this draft agreement. Anything I should push back on before signing?', 'Can you review this contract draft and flag risky clauses in plain language?'],
  draft: ['Here is my draft. Can you give me honest feedback on structure and clarity?', 'I wrote this up — can you tighten it and tell me what to cut?'],
  csv: ['Here is the export of the expenses so far. Can you summarize by category and tell me where we are over budget?', 'This is the spreadsheet export. What stands out?'],
  email: ['Here is the email thread. Can you help me write a reply that moves things forward without being rude?', 'Pasting the thread below — what are they actually asking for?'],
};

const TOOL_NEEDLES = [
  { query: 'travel and expense policy', title: 'Travel & expense policy (wiki/policies/travel-expenses.md, updated 2025-01-14)', line: (v) => `- Cost center for all conference travel: ${v} (use it on every expense line, including per diems).`, userAsk: 'Can you look up our travel and expense policy in the team wiki? I want to know what I can claim for the conference trip.', question: 'When you looked up the travel and expense policy earlier, what cost center did it say to use for conference travel?', answer: (v) => `The policy said to use cost center \`${v}\` for all conference travel, on every expense line including per diems.` },
  { query: 'VPN setup for home office', title: 'Remote access / VPN (wiki/it/vpn.md, updated 2024-11-02)', line: (v) => `Your recovery profile id is ${v}; IT will ask for it if you lose access to the VPN.`, userAsk: 'Can you look up the VPN setup instructions in our wiki? I need to set it up on the home network.', question: 'In the VPN instructions you looked up, what was my recovery profile id?', answer: (v) => `Your VPN recovery profile id is \`${v}\` — IT will ask for it if you lose access.` },
  { query: 'offsite venue booking details', title: 'Offsite 2025: venue booking (wiki/team/offsite-2025.md, updated 2025-02-20)', line: (v) => `Venue booking reference: ${v} (quote it for any change to the room setup or catering).`, userAsk: 'Look up the offsite venue booking page in the wiki please, I need the details for the agenda.', question: 'What was the venue booking reference on the offsite wiki page you looked up?', answer: (v) => `The venue booking reference is \`${v}\`; quote it for any change to the room setup or catering.` },
  { query: 'home insurance policy', title: 'Household documents: home insurance (notes/insurance.md, updated 2024-09-30)', line: (v) => `Policy number ${v} — renovation work over €10,000 must be notified before it starts.`, userAsk: 'Can you look up my home insurance notes? I want to know whether the kitchen renovation affects anything.', question: 'What was my home insurance policy number from the notes you looked up?', answer: (v) => `Your home insurance policy number is \`${v}\`.` },
];

const DOC_NEEDLES = [
  { kind: 'notes', topic: 'offsite', line: (v) => `- **Decision**: the catering vendor contract number is ${v}; finance needs it on the purchase order.`, question: 'In the meeting notes I pasted a while ago, what was the catering vendor contract number?', answer: (v) => `The catering vendor contract number in those notes was \`${v}\`.` },
  { kind: 'contract', topic: 'kitchen', line: (v) => `7.4 The Contractor's insurance certificate number is ${v} and shall remain valid for the duration of the works.`, question: "What was the contractor's insurance certificate number in the contract draft I pasted?", answer: (v) => `The contract draft gives the contractor's insurance certificate number as \`${v}\` (clause 7.4).` },
  { kind: 'email', topic: 'grant', line: (v) => `Your submission has been registered under reference ${v}; please quote it in all further correspondence.`, question: 'What was the submission reference number in the email thread I pasted about the grant?', answer: (v) => `The grant submission was registered under reference \`${v}\`.` },
  { kind: 'csv', topic: 'kitchen', line: (v) => `2025-03-02,permits,"building permit ${v} (approved)",180.00,Maya,paid`, question: 'In the expenses export I pasted, what was the building permit number?', answer: (v) => `The building permit number in the expenses export was \`${v}\`.` },
];

const CASUAL_NEEDLES = [
  { style: 'prefixed', prefix: 'CONF', topic: 'lisbon', text: (v) => `Oh, and my flight confirmation code is ${v}, in case I need it later.`, question: "What's my flight confirmation code? I mentioned it near the beginning.", answer: (v) => `Your flight confirmation code is \`${v}\`.` },
  { style: 'soft', topic: 'network', text: (v) => `For reference the guest Wi-Fi password is ${v}.`, question: 'What was the guest Wi-Fi password I told you?', answer: (v) => `The guest Wi-Fi password you told me is \`${v}\`.` },
  { style: 'code', topic: 'marathon', text: (v) => `My race bib registration code is ${v}, by the way.`, question: 'What was my race registration code again?', answer: (v) => `Your race bib registration code is \`${v}\`.` },
];

const SYSTEM = `You are a friendly, knowledgeable personal assistant in a long-running chat with one user. You help with work and personal topics: travel, cooking, home projects, finances, writing, programming and career questions.

Style:
- Be direct and practical. Lead with the answer, then the reasoning.
- Use markdown: short headings, bullet lists, tables when comparing options, fenced code blocks for code and commands.
- Match the length to the question: short questions get short answers; planning and review requests get thorough, structured answers.
- Remember what the user told you earlier in the conversation (names, dates, codes, preferences) and use it when relevant.
- When the user pastes a document, read all of it before answering and refer to specific parts.
- Use the \`calculator\` tool for any arithmetic that matters (money, dates, units); do not do it in your head.
- Use the \`lookup\` tool to search the user's personal notes and team wiki when they ask about something stored there.
- If you are unsure, say so and suggest how to find out. Never invent facts about the user.`;

const TOOLS = {
  calculator: { description: 'Evaluate an arithmetic expression exactly. Supports + - * / ** parentheses and decimals.', inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'], additionalProperties: false } },
  lookup: { description: "Search the user's personal notes and team wiki. Returns the best matching pages in full.", inputSchema: { type: 'object', properties: { query: { type: 'string' }, max_pages: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['query'], additionalProperties: false } },
};

function wikiPage(rng, topic, title, chars) {
  const out = [`## ${title}`, ''];
  let len = 0;
  while (len < chars) {
    const block = rng.weighted([
      [`### ${cap(rng.pick(topic.headings))}`, 1],
      [paragraph(rng, topic, 2, 4), 2],
      [Array.from({ length: rng.int(3, 8) }, () => `- ${sentence(rng, topic)}`).join('\n'), 3],
      [`| Item | Limit | Notes |\n|---|---|---|\n${Array.from({ length: rng.int(3, 7) }, () => `| ${cap(rng.pick(topic.terms))} | €${rng.int(20, 900)} | ${sentence(rng, topic)} |`).join('\n')}`, 0.6],
    ]);
    out.push(block, '');
    len += block.length + 1;
  }
  return out.join('\n');
}

export function generateChat({ scale = 1 } = {}) {
  const rng = new Rng(hashString('long-chat'));
  const b = new SessionBuilder();
  const used = new Set();
  const topicByKey = Object.fromEntries(TOPICS.map((t) => [t.key, t]));

  const T = Math.max(24, Math.round(250 * scale));
  // topic runs: 3-14 turns each, topics recur
  const topicAt = [];
  while (topicAt.length < T) {
    const t = rng.pick(TOPICS);
    for (let i = 0, n = rng.int(3, 14); i < n && topicAt.length < T; i++) topicAt.push(t);
  }

  // needles: 'tool' (lookup output), 'doc' (deep in a pasted document), 'casual' (user aside)
  const N = Math.max(3, Math.min(9, Math.ceil(9 * scale)));
  const slots = ['tool', 'doc', 'casual'];
  const defs = { tool: rng.shuffle(TOOL_NEEDLES), doc: rng.shuffle(DOC_NEEDLES), casual: rng.shuffle(CASUAL_NEEDLES) };
  const plantEnd = Math.floor(T * 0.3);
  const needles = [];
  const special = new Map(); // turn -> event
  for (let k = 0; k < N; k++) {
    const slot = slots[k % 3];
    const def = defs[slot][Math.floor(k / 3)];
    const value = slot === 'casual' ? needleValue(rng, used, def.style, def.prefix) : needleValue(rng, used, slot === 'doc' && def.kind === 'csv' ? 'prefixed' : 'code', 'BP');
    let turn = 2 + Math.floor(((k + 0.5) * (plantEnd - 2)) / N);
    while (special.has(turn)) turn++;
    const n = { id: `n${k + 1}`, kind: slot === 'tool' ? 'tool' : 'user', slot, def, value, messageIndex: -1, neededAt: -1 };
    needles.push(n);
    special.set(turn, { type: slot, needle: n });
    // keep the topic coherent with the needle
    const key = def.topic ?? { 'travel and expense policy': 'lisbon', 'VPN setup for home office': 'network', 'offsite venue booking details': 'offsite', 'home insurance policy': 'kitchen' }[def.query];
    if (key) topicAt[turn] = topicByKey[key];
  }
  // other pasted documents and tool calls
  const free = () => {
    let t;
    do t = rng.int(1, T - 2);
    while (special.has(t));
    return t;
  };
  for (let i = 0, n = Math.max(1, Math.round(8 * scale)); i < n; i++) special.set(free(), { type: 'doc' });
  for (let i = 0, n = Math.max(1, Math.round(3 * scale)); i < n; i++) special.set(free(), { type: 'calc' });
  special.set(free(), { type: 'lookup-small' });

  const askFrom = Math.ceil(T * 0.66);
  const asks = new Map();
  rng.shuffle(needles).forEach((n, i) => {
    let t = askFrom + Math.floor(((i + 0.5) * (T - 1 - askFrom)) / N);
    while (asks.has(t)) t++;
    asks.set(t, n);
  });

  const answerChars = () => CPT * rng.weighted([[rng.int(60, 200), 2], [rng.int(400, 1100), 5.5], [rng.int(1100, 2200), 2.5]]);
  const docKinds = ['notes', 'contract', 'draft', 'csv', 'email'];

  for (let t = 0; t < T; t++) {
    const topic = topicAt[t];
    const ev = special.get(t);
    if (t === 0) {
      b.user(`Hi! I'm going to use this chat as my general assistant for the next few weeks — work stuff, a trip, a kitchen renovation, random questions. First thing: ${USER_TEMPLATES[1](rng, topic).replace(/^W/, 'w')}`);
      b.answer(markdownAnswer(rng, topic, answerChars(), { lead: 'Sounds good — happy to help with all of that. Let me start with your question.' }));
    } else if (ev?.type === 'doc') {
      const n = ev.needle;
      const kind = n ? n.def.kind : rng.pick(docKinds);
      const dt = n ? topicByKey[n.def.topic] : topic;
      let doc = pastedDocument(rng, kind, dt, CPT * rng.int(2500, 7000));
      if (n) doc = insertMiddle(rng, doc, n.def.line(n.value));
      const idx = b.user(`${rng.pick(DOC_ASKS[kind])}\n\n---\n${doc}\n---`);
      if (n) n.messageIndex = idx;
      b.answer(markdownAnswer(rng, dt, CPT * rng.int(600, 1500), { lead: `Here's my read of the ${kind === 'csv' ? 'export' : kind === 'notes' ? 'notes' : kind === 'draft' ? 'draft' : kind === 'email' ? 'thread' : 'contract'}:` }));
    } else if (ev?.type === 'tool' || ev?.type === 'lookup-small') {
      const n = ev.needle;
      const def = n ? n.def : { query: rng.pick(['packing list template', 'sourdough schedule notes', 'router admin notes']), title: `Notes: ${rng.pick(topic.terms)} (notes/misc.md, updated 2025-02-02)`, userAsk: `Can you check my notes on ${rng.pick(topic.terms)}? I wrote something down a while ago.` };
      b.user(def.userAsk);
      let page = wikiPage(rng, topic, def.title, CPT * (n ? rng.int(3000, 5000) : rng.int(300, 800)));
      if (n) page = insertMiddle(rng, page, n.def.line(n.value));
      const out = `Found ${n ? rng.int(2, 4) : 1} matching page${n ? 's' : ''}; showing the best match in full.\n\n${page}`;
      const idx = b.step(rng.chance(0.5) ? 'Let me check the wiki.' : undefined, [{ toolName: 'lookup', input: { query: def.query, max_pages: 1 }, output: out }]);
      if (n) n.messageIndex = idx;
      b.answer(markdownAnswer(rng, topic, CPT * rng.int(300, 800), { lead: 'Here is what the page says, in short:' }));
    } else if (ev?.type === 'calc') {
      const a = rng.int(120, 9000);
      const m = rng.pick([3, 4, 6, 12, 18, 24]);
      const pct = rng.pick([0.8, 0.85, 0.9, 1.19, 1.21, 1.23]);
      const expr = `${a} * ${m} * ${pct}`;
      const val = Math.round(a * m * pct * 100) / 100;
      b.user(`${sentence(rng, topic)} Can you work out ${a} a month over ${m} months, ${pct < 1 ? `with a ${Math.round((1 - pct) * 100)}% discount` : `plus ${Math.round((pct - 1) * 100)}% VAT`}?`);
      b.step(undefined, [{ toolName: 'calculator', input: { expression: expr }, output: String(val) }]);
      b.answer(`That comes to **€${val.toFixed(2)}** (${a} × ${m} months × ${pct}).\n\n${paragraph(rng, topic, 1, 3)}`);
    } else {
      const n = ev?.needle;
      let msg = rng.pick(USER_TEMPLATES)(rng, topic);
      if (n) {
        msg = insertSentence(rng, `${paragraph(rng, topic, 1, 2)} ${msg}`, n.def.text(n.value));
        n.messageIndex = b.user(msg);
      } else b.user(msg);
      b.answer(markdownAnswer(rng, topic, answerChars()));
    }
    const n = asks.get(t);
    if (n) {
      n.neededAt = b.user(`${rng.pick(['Random question:', 'Sorry, switching topics for a second.', 'Quick one before I forget:', 'Hey,'])} ${n.def.question}`);
      b.answer(n.def.answer(n.value));
    }
  }

  for (const n of needles) if (n.messageIndex < 0 || n.neededAt < 0) throw new Error(`long-chat: needle ${n.id} not placed`);
  return {
    name: 'long-chat',
    description: 'A long general-assistant chat over hundreds of turns on recurring topics, with pasted documents of several thousand tokens and only a handful of calculator/lookup tool calls.',
    system: SYSTEM,
    tools: TOOLS,
    messages: b.messages,
    // the user's think time before each user message (lib.mjs THINK_TIME)
    thinkSeconds: thinkTimes('long-chat', b.messages),
    needles: needles.map(({ id, value, messageIndex, kind, neededAt, def }) => ({ id, value, messageIndex, kind, neededAt, question: def.question })),
  };
}
