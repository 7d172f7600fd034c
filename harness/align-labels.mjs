// Gives a set captured with `run-all.mjs --content <mode>` the ground truth of the
// content-on set, so both sets are scored against the same labels:
//
//   node align-labels.mjs <content-on labels.json> <new set's labels.json>
//
// For every entry of the new set it copies `label` and `alt_labels` from the content-on
// entry of the same framework and scenario (the shared set maps the harness's
// truncated_output to plan_incomplete, the classifier's taxonomy), and drops the
// per-run `llm_requests` and `duration_ms` the shared set does not carry. It fails,
// writing nothing, when an entry has no counterpart, or when the framework behaved
// differently (outcome, agent status, span / error-span / orphan counts): the content
// setting must change what the spans say, never what the agent did.
import fs from 'node:fs';

const [onPath, newPath] = process.argv.slice(2);
if (!onPath || !newPath) {
  console.error('usage: node align-labels.mjs <content-on labels.json> <new labels.json>');
  process.exit(2);
}
const key = (l) => `${l.framework}/${l.scenario}`;
const on = new Map(JSON.parse(fs.readFileSync(onPath, 'utf8')).map((l) => [key(l), l]));
const entries = JSON.parse(fs.readFileSync(newPath, 'utf8'));
const problems = [];
const out = entries.map((l) => {
  const ref = on.get(key(l));
  if (!ref) {
    problems.push(`${key(l)}: not in ${onPath}`);
    return l;
  }
  for (const f of ['outcome', 'span_count', 'error_span_count', 'orphan_span_count'])
    if (ref[f] !== l[f]) problems.push(`${key(l)}: ${f} ${ref[f]} in the content-on set, ${l[f]} here`);
  if (ref.agent_result?.status !== l.agent_result?.status)
    problems.push(`${key(l)}: agent ${ref.agent_result?.status} in the content-on set, ${l.agent_result?.status} here`);
  const aligned = {};
  for (const [k, v] of Object.entries(l)) {
    if (k === 'llm_requests' || k === 'duration_ms' || k === 'alt_labels') continue;
    if (k !== 'label') {
      aligned[k] = v;
      continue;
    }
    aligned.label = ref.label;
    if (ref.alt_labels) aligned.alt_labels = ref.alt_labels;
  }
  return aligned;
});
if (entries.length !== on.size) problems.push(`${entries.length} entries here, ${on.size} in the content-on set`);
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
fs.writeFileSync(newPath, JSON.stringify(out, null, 2) + '\n');
console.log(`${newPath}: ${out.length} entries aligned with ${onPath}`);
