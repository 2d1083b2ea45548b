// CommonJS: `require` of the package (Node 22.12+ loads ES modules with require).
const cc = require('context-compactor');

cc.init().then(() => {
  console.log(JSON.stringify({ required: typeof cc.createCompactor, tokens: cc.countTokens('hello world') }));
});
