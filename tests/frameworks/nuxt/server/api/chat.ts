// server/api/chat.ts: the quick start in a Nuxt server route.
import { quickstart } from '../quickstart.js';

export default defineEventHandler(() => quickstart());
