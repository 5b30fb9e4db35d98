// Prints markmap's tree for each Markdown file named on the command line, as
// JSON: {"<path>": [[depth, line, fold, text], ...]} in document order.
// depth 0 is markmap's root; line is 1-based; text is the node's visible text.
import { readFileSync } from "node:fs";
import { load } from "cheerio";
import { Transformer } from "markmap-lib";

const transformer = new Transformer();
const out = {};
for (const path of process.argv.slice(2)) {
  const { root } = transformer.transform(readFileSync(path, "utf8"));
  const rows = [];
  const visit = (node, depth) => {
    const line = node.payload?.lines ? Number(node.payload.lines.split(",")[0]) + 1 : null;
    const text = load(node.content).text().replace(/\s+/g, " ").trim();
    rows.push([depth, line, node.payload?.fold ?? 0, text]);
    for (const child of node.children ?? []) visit(child, depth + 1);
  };
  visit(root, 0);
  out[path] = rows;
}
process.stdout.write(JSON.stringify(out));
