// src/main.jsx: a React chat page that runs the quick start in the browser and shows the result
// (the plan's offload, the exact count) as JSON in <pre id="result">.
import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { quickstart } from './quickstart.js';

let once; // StrictMode runs effects twice in development; the quick start runs once.

function App() {
  const [state, setState] = useState({ done: '', text: 'running' });
  useEffect(() => {
    once ??= quickstart();
    once.then(
      (result) => setState({ done: 'ok', text: JSON.stringify(result) }),
      (error) => setState({ done: 'error', text: JSON.stringify({ error: String(error?.stack ?? error) }) }),
    );
  }, []);
  return (
    <main>
      <h1>Chat</h1>
      <pre id="result" data-done={state.done}>{state.text}</pre>
    </main>
  );
}

createRoot(document.getElementById('root')).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
