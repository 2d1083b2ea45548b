// A serverless chat route (Next.js App Router style: app/api/chat/route.js exports POST; the
// same handler runs as a Vercel Function, a Netlify Function, on Lambda behind a URL, or in any
// server that speaks `Request` → `Response`). No instance keeps anything between requests: the
// chat, the compactor's state and every offloaded output live in Redis, through unstorage.
//
// A request is `{ id, turnId, message }`: the chat `id`, a client-made id of this turn (so a
// double submit or a retry is one turn, not two) and the user's new message. The route loads the
// chat, runs `streamText` with the compactor's `prepareStep`, its offloading tool wrapper and
// its recovery tools (`read_file`, `grep`, `ls`), streams the answer, and saves the chat back —
// conditionally, so two requests of one chat never overwrite each other's turns.
import { stepCountIs, streamText } from 'ai';
import { createCompactor } from 'context-compactor';
import { UnstorageStore } from 'context-compactor/stores/unstorage';

const CHAT_PATH = '/chat/turns.json';
const ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The route's POST handler. `storage`: an unstorage Storage (Redis here); `model`: any AI SDK
 * model; `tools`: the app's tools; `compactor`: compactor options (model name, window, ...).
 */
export function createChatRoute({ storage, model, tools = {}, compactor: options = {}, system = 'You are a helpful assistant.' }) {
  return async function POST(request) {
    let body;
    try {
      body = await request.json();
    } catch {
      return Response.json({ error: 'the body must be JSON: { id, turnId, message }' }, { status: 400 });
    }
    const { id, turnId, message } = body ?? {};
    if (!ID.test(String(id)) || !ID.test(String(turnId)) || message?.role !== 'user') {
      return Response.json({ error: 'expected { id, turnId, message: { role: "user", content } } with ids of 1-64 letters, digits, _ or -' }, { status: 400 });
    }
    // One namespace per chat: its turns, its compactor state, its offloaded outputs.
    const store = new UnstorageStore(storage, { base: `chat:${id}` });
    const loaded = await store.read(CHAT_PATH);
    const turns = loaded ? JSON.parse(loaded) : [];
    const messages = [...turns.filter((t) => t.turnId !== turnId).flatMap((t) => t.messages), message];

    const compactor = await createCompactor({ ...options, store, statePath: '/state/compactor.json' });
    const result = streamText({
      model,
      instructions: await compactor.systemPrompt(system),
      messages,
      tools: { ...compactor.wrapTools(tools), ...compactor.tools() },
      prepareStep: compactor.prepareStep,
      onStepFinish: compactor.onStepFinish,
      stopWhen: stepCountIs(8),
      // Every step's messages: `response.messages` is the last step's alone (AI SDK 7), which
      // would drop the turn's tool calls and results (and the previews naming stored paths).
      onFinish: async ({ responseMessages }) => {
        await saveTurn(store, { turnId, messages: [message, ...responseMessages] });
        await compactor.saveState(); // the last step's usage (calibration) for the next request
        compactor.dispose();
      },
    });
    return result.toTextStreamResponse();
  };
}

/** Appends a turn to the chat with a compare-and-set (atomic on Redis): a turn saved by a
 * racing request is kept; a turn already there (a double submit) is not saved twice. */
export async function saveTurn(store, turn) {
  for (let attempt = 1; attempt <= 10; attempt++) {
    const current = await store.read(CHAT_PATH);
    const turns = current ? JSON.parse(current) : [];
    if (turns.some((t) => t.turnId === turn.turnId)) return false;
    if (await store.writeIf(CHAT_PATH, current, JSON.stringify([...turns, turn]))) return true;
  }
  throw new Error(`chat not saved: ${CHAT_PATH} kept changing`);
}

/** The chat as saved: its turns. */
export async function loadTurns(storage, id) {
  const text = await new UnstorageStore(storage, { base: `chat:${id}` }).read(CHAT_PATH);
  return text ? JSON.parse(text) : [];
}
