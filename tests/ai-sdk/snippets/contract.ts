// The AI SDK types the package's objects must be assignable to, named explicitly (the README
// blocks rely on the same assignments implicitly). Type-checked against AI SDK 7, 6 and 5 by the
// snippet test, and run.
import type { LanguageModelMiddleware, PrepareStepFunction, ToolSet } from 'ai';
import { anthropicCacheControl, createCompactor } from 'context-compactor';
import { tools } from './preamble.js';

const compactor = await createCompactor({ model: 'gpt-4o', tools });

export const recovery: ToolSet = compactor.tools();
export const wrapped: ToolSet = compactor.wrapTools(tools);
export const all: ToolSet = { ...compactor.wrapTools(tools), ...compactor.tools() };
export const middleware: LanguageModelMiddleware = compactor.middleware();
export const prepareStep: PrepareStepFunction<typeof all> = compactor.prepareStep;
export const ownPrepareStep: PrepareStepFunction<typeof all> = async (step) => {
  const { messages } = await compactor.prepareStep(step);
  return { messages: anthropicCacheControl(messages) };
};

// The recovery tools are callable as they are (execute is always there).
const listing: string = await compactor.tools().ls.execute({});
if (!listing.startsWith('Nothing stored')) throw new Error(listing);
