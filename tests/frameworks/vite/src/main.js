// src/main.js: the quick start in the browser; the page shows its result as JSON.
import { quickstart } from './quickstart.js';

const out = document.getElementById('result');
quickstart().then(
  (result) => { out.textContent = JSON.stringify(result); out.dataset.done = 'ok'; },
  (error) => { out.textContent = JSON.stringify({ error: String(error?.stack ?? error) }); out.dataset.done = 'error'; },
);
