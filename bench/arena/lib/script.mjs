// A recorded session as a script to replay: its user turns, each with the model steps the agent
// took (the assistant message) and what its tools returned (by tool call id).

/**
 * `{ turns: [{ index, user, thinkSeconds, steps: [assistantMessage], stepIndices }], outputs:
 * Map<toolCallId, string> }`. `index` is the user message's index in `session.messages`,
 * `stepIndices[s]` step `s`'s (needles name one of them as `neededAt`), `thinkSeconds` the
 * wall-clock gap before the user message (`session.thinkSeconds`, one per user message; 0 where
 * a session has none).
 */
export function toScript(session) {
  const turns = [];
  const outputs = new Map();
  const think = session.thinkSeconds;
  const users = session.messages.filter((m) => m.role === 'user').length;
  if (think && think.length !== users) throw new Error(`${session.name}: ${think.length} think times for ${users} user messages`);
  session.messages.forEach((m, index) => {
    if (m.role === 'user') turns.push({ index, user: m.content, thinkSeconds: think?.[turns.length] ?? 0, steps: [], stepIndices: [] });
    else if (m.role === 'assistant') {
      if (turns.length === 0) throw new Error(`${session.name}: message ${index} is an assistant message before any user message`);
      turns.at(-1).steps.push(m);
      turns.at(-1).stepIndices.push(index);
    } else if (m.role === 'tool') {
      for (const p of m.content) outputs.set(p.toolCallId, p.output.value);
    } else throw new Error(`${session.name}: message ${index} has role ${m.role}`);
  });
  return { turns, outputs };
}

/** The steps of a script in order, each `{turn, step, message}`, with a cursor the scripted
 * models advance. A call past the end is an error: the contender asked for more steps than the
 * session has (a harness bug, or a framework retrying). */
export class Replay {
  constructor(session) {
    const { turns, outputs } = toScript(session);
    this.turns = turns;
    this.outputs = outputs;
    this.turn = -1;
    this.step = 0;
    /** Told `t` when user turn `t` begins: the arena's clock (`Recorder`, which attaches itself at
     * the replay's first model call) passes the user's think time there, before the contender
     * plans the turn's first call. */
    this.onBegin = undefined;
  }

  /** Starts user turn `t`; the next model call gets its first step. */
  begin(t) {
    this.turn = t;
    this.step = 0;
    this.onBegin?.(t);
  }

  /** The assistant message for the model call being made now. */
  next() {
    const turn = this.turns[this.turn];
    const message = turn?.steps[this.step];
    if (!message) throw new Error(`replay: turn ${this.turn} has ${turn?.steps.length ?? 0} steps; the model was called a ${this.step + 1}th time`);
    this.step++;
    return message;
  }

  /** Whether the current turn has had all its steps. */
  get done() {
    return this.step === this.turns[this.turn].steps.length;
  }

  /** The recorded output of a tool call. */
  output(toolCallId) {
    const value = this.outputs.get(toolCallId);
    if (value === undefined) throw new Error(`replay: no recorded output for tool call ${toolCallId}`);
    return value;
  }
}

/** A small stable hash (FNV-1a, 32 bits) for the scripted summarizer. */
function fnv(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

const SUMMARY_BODY = [
  '## Session intent',
  'The user is working with the agent on a long task; the requests so far are addressed above this summary.',
  '## Progress',
  'The agent used its tools to gather information and made the changes the user asked for. Outputs of earlier tool calls are not repeated here.',
  '## Decisions',
  'The approach discussed earlier stands; nothing was reverted.',
  '## Next steps',
  'Continue with the latest request. Re-run tools if earlier details are needed.',
].join('\n');

/**
 * The scripted summarizer every summarizing contender shares: a fixed-size summary (about 90
 * tokens) that depends only on the text it was given. It keeps no facts from that text — so a
 * needle survives a summary only if the contender kept it verbatim or in its store, which is what
 * the arena measures; an LLM summary would keep some needles for every contender alike.
 */
export function scriptedSummary(inputText) {
  return `Summary ${fnv(inputText)} of ${inputText.length} characters.\n${SUMMARY_BODY}`;
}
