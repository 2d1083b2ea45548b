// The benchmarks' corpus (gen-corpus.mjs, deterministic and git-ignored), generated on first use
// so that every script that reads it runs on a fresh clone.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const HERE = new URL('.', import.meta.url).pathname;

/** The path of `file` in the corpus directory, after generating the corpus if it is not there. */
export function corpusFile(file) {
  if (!existsSync(`${HERE}corpus/chunks.json`) || !existsSync(`${HERE}corpus/conversation.json`)) {
    console.error('generating the corpus (bench/tokenizers/gen-corpus.mjs, seed 42)');
    execFileSync('node', ['gen-corpus.mjs', '--out', 'corpus'], { cwd: HERE, stdio: ['ignore', 2, 2] }); // its report on stderr: a script's stdout may be JSON
  }
  return `${HERE}corpus/${file}`;
}
