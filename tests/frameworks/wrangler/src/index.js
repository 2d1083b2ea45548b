// src/index.js: the quick start in a Cloudflare Worker.
import { quickstart } from './quickstart.js';

export default {
  async fetch() {
    return Response.json(await quickstart());
  },
};
