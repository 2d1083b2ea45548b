// The quick start with the package's main entry (shared/quickstart-run.js).
import { countTokens, createCompactor, MemoryStore } from 'context-compactor';
import { runQuickstart } from './quickstart-run.js';

export const quickstart = () => runQuickstart({ countTokens, createCompactor, MemoryStore });
