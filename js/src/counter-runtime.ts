// The counting-only module's runtime (init.ts), apart from its public API (counter.ts) so that
// the entries can register its loader without exporting that.
import * as glue from './counter/counter.js';
import { createRuntime } from './init.js';

export const counter = createRuntime(glue, 'counter/counter_bg.wasm');
