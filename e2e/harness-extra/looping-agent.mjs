// A real agent that loops, and the runtime that stops it while it runs.
//
// The agent is the capture harness's Vercel AI SDK agent (`ai` generateText,
// toolset a's tools, the harness's scripted LLM serving the `loop` scenario:
// the same get_weather call forever), with a long step limit, a slow tool and
// an SDK exporting its finished spans every second. The runtime is a small
// webhook receiver in the same process (or, with RUNTIME_URL, the Go example
// runtime as a sidecar): the triage collector POSTs decisions to it; an in-flight decision for the run it is executing (matched by
// trace_id) stops that run — replan: abort it and start again with the hint;
// escalate or abort: stop and hand over. It prints one `ATTEMPT {...}` line
// per run and an `AGENT_RESULT {...}` line at the end.
//
// Run by e2e/inflight_agent_test.go from a folder holding this file and a
// `node_modules` link to the harness's. Environment:
//   HARNESS_DIR     the capture harness (its lib/ is imported)
//   MOCK_URL        the harness's mock LLM, on scenario `loop`
//   OTLP_ENDPOINT   the collector's OTLP/HTTP endpoint
//   RUNTIME_PORT    where this runtime listens for the collector's webhook
//   RUNTIME_URL     instead: the Go example runtime (examples/runtime-receiver)
//                   running as a sidecar, which gets the webhook
//   WEBHOOK_SECRET  the recovery_webhook exporter's whsec_ secret
//   SESSION         the conversation id of the runs (one session)
//   MAX_STEPS (40), TOOL_DELAY_MS (600), MAX_ATTEMPTS (3)
import http from 'node:http';
import crypto from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { trace } from '@opentelemetry/api';
import { NodeTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';

const env = (k, d) => process.env[k] ?? d;
const HARNESS_DIR = env('HARNESS_DIR');
const MAX_STEPS = Number(env('MAX_STEPS', 40));
const TOOL_DELAY_MS = Number(env('TOOL_DELAY_MS', 600));
const MAX_ATTEMPTS = Number(env('MAX_ATTEMPTS', 3));
const SESSION = env('SESSION', 'conv-inflight');

const { getCatalogue } = await import(pathToFileURL(path.join(HARNESS_DIR, 'lib/scenarios.mjs')).href);
const toolset = getCatalogue('a');
const scenario = toolset.scenarios.loop;

// ---- telemetry: export finished spans every second, noting when each was sent ----
const sentAt = new Map(); // span id -> ms since epoch its export request started
class TimedExporter {
  constructor(inner) { this.inner = inner; }
  export(spans, done) {
    const t = Date.now();
    for (const s of spans) sentAt.set(s.spanContext().spanId, t);
    this.inner.export(spans, done);
  }
  forceFlush() { return this.inner.forceFlush?.(); }
  shutdown() { return this.inner.shutdown(); }
}
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'looping-agent', 'service.namespace': 'agent-harness' }),
  spanProcessors: [new BatchSpanProcessor(
    new TimedExporter(new OTLPTraceExporter({ url: `${env('OTLP_ENDPOINT')}/v1/traces` })),
    { scheduledDelayMillis: 1000 })],
});
provider.register();
const tracer = trace.getTracer('looping-agent');

// ---- the runtime ----
// Either a webhook receiver in this process (default), or, with RUNTIME_URL,
// the Go example runtime (examples/runtime-receiver) as a sidecar that
// receives the webhook and tells this agent what to do about its runs.
const running = new Map(); // trace_id -> { controller, decision, receivedAt }
const finals = new Map(); // trace_id -> final decision
const RUNTIME_URL = env('RUNTIME_URL');
let runtime;

// act: an in-flight decision for the run this process is executing stops
// it (replan, escalate, abort, ...: in every case this run must stop now).
function act(d, receivedAt) {
  if (d.phase === 'final') return void finals.set(d.trace_id, d);
  const run = running.get(d.trace_id);
  if (!run || run.decision) return; // not ours, or already acted on
  run.decision = d;
  run.receivedAt = receivedAt;
  run.controller.abort(new Error(`in-flight decision ${d.decision_id}: ${d.action.kind}`));
}

if (!RUNTIME_URL) {
  // Verify (Standard Webhooks: HMAC-SHA256 over "id.timestamp.body" with the
  // secret's base64 key), dedupe on webhook-id, then act on the run the
  // decision names.
  const key = Buffer.from(env('WEBHOOK_SECRET').replace(/^whsec_/, ''), 'base64');
  const seen = new Set();
  const verified = (req, body) => {
    const id = req.headers['webhook-id'], ts = req.headers['webhook-timestamp'];
    const sig = crypto.createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
    const fresh = Math.abs(Date.now() / 1000 - Number(ts)) < 300;
    return fresh && String(req.headers['webhook-signature'] || '').split(' ').some((s) => s === `v1,${sig}`);
  };
  runtime = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const receivedAt = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verified(req, body)) return res.writeHead(401).end();
      res.writeHead(204).end(); // acknowledge first: acting is ours, not the collector's
      if (seen.has(req.headers['webhook-id'])) return;
      seen.add(req.headers['webhook-id']);
      act(JSON.parse(body), receivedAt);
    });
  });
  await new Promise((ok) => runtime.listen(Number(env('RUNTIME_PORT')), '127.0.0.1', ok));
}

// sidecarWatch registers a run at the sidecar and long-polls it until a
// decision applies to the run or the run ends.
async function sidecarWatch(traceId, ended) {
  const r = await fetch(`${RUNTIME_URL}/runs`, { method: 'POST', body: JSON.stringify({ trace_id: traceId, session_id: SESSION }) });
  if (r.status !== 201) throw new Error(`sidecar: register run: ${r.status}`);
  while (!ended.done) {
    const res = await fetch(`${RUNTIME_URL}/runs/${traceId}?wait=1s`);
    if (res.status === 200) {
      const { decision } = await res.json();
      return act(decision, Date.now());
    }
    await res.arrayBuffer();
  }
}

// sidecarFinal waits (bounded) for the final decision of an ended run.
async function sidecarFinal(traceId, deadline) {
  await fetch(`${RUNTIME_URL}/runs/${traceId}`, { method: 'DELETE' });
  while (Date.now() < deadline) {
    const res = await fetch(`${RUNTIME_URL}/runs/${traceId}?wait=1s`);
    if (res.status === 200) {
      const { final } = await res.json();
      if (final) return act(final, Date.now());
    } else await res.arrayBuffer();
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

// ---- the agent ----
const { generateText, tool, stepCountIs } = await import('ai');
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
const llm = createOpenAICompatible({ name: 'openai', baseURL: `${env('MOCK_URL')}/v1`, apiKey: 'sk-mock-key', includeUsage: true });
let toolCalls = 0;
const tools = Object.fromEntries(toolset.toolNames.map((n) => [n, tool({
  description: toolset.tools[n].description,
  inputSchema: toolset.tools[n].schema,
  execute: async (args, { abortSignal }) => {
    toolCalls++;
    await new Promise((ok) => setTimeout(ok, TOOL_DELAY_MS)); // a slow tool
    abortSignal?.throwIfAborted();
    return toolset.tools[n].run(args);
  },
})]));

const attempts = [];
let prompt = scenario.prompt;
for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
  const controller = new AbortController();
  const started = Date.now();
  toolCalls = 0;
  let traceId, outcome, error;
  await tracer.startActiveSpan(`invoke_agent ${toolset.agent.name}`, {
    attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': toolset.agent.name, 'gen_ai.conversation.id': SESSION },
  }, async (root) => {
    traceId = root.spanContext().traceId;
    running.set(traceId, { controller });
    const ended = { done: false };
    const watching = RUNTIME_URL && sidecarWatch(traceId, ended);
    try {
      const r = await generateText({
        model: llm.chatModel('gpt-4o-mini'),
        system: toolset.systemPrompt,
        prompt,
        tools,
        stopWhen: stepCountIs(MAX_STEPS),
        abortSignal: controller.signal,
        experimental_telemetry: { isEnabled: true, functionId: toolset.agent.name, metadata: { agent: toolset.agent.name, conversationId: SESSION } },
      });
      outcome = `finished (${r.finishReason}, ${r.steps.length} steps)`;
    } catch (e) {
      outcome = controller.signal.aborted ? 'stopped by the runtime' : 'error';
      error = String(e?.message ?? e).slice(0, 300);
    } finally {
      ended.done = true;
      await watching;
      root.end();
    }
  });
  const run = running.get(traceId);
  const d = run.decision;
  const a = {
    attempt, trace_id: traceId, outcome, error, tool_calls: toolCalls, ran_ms: Date.now() - started,
    decision: d && { id: d.decision_id, phase: d.phase, guard: d.guard, kind: d.action.kind, hint: d.action.hint, reason: d.action.reason, policy: d.policy, attempt: d.attempt, span_id: d.span_id },
    // The tripping span's export request started (its arrival at the
    // collector) -> the decision's POST received here.
    latency_ms: d && sentAt.has(d.span_id) ? run.receivedAt - sentAt.get(d.span_id) : null,
  };
  attempts.push(a);
  console.log(`ATTEMPT ${JSON.stringify(a)}`);
  if (d?.action.kind !== 'replan') break; // escalate / abort / nothing: stop here
  prompt = `${scenario.prompt}\n\n${d.action.hint || 'Change your approach.'}`;
}

// The final decisions of the stopped runs come once their roots are exported.
await provider.forceFlush();
const deadline = Date.now() + 20000;
if (RUNTIME_URL) await Promise.all(attempts.filter((a) => a.decision).map((a) => sidecarFinal(a.trace_id, deadline)));
while (Date.now() < deadline && attempts.some((a) => a.decision && !finals.has(a.trace_id))) {
  await new Promise((ok) => setTimeout(ok, 100));
}
for (const a of attempts) {
  const f = finals.get(a.trace_id);
  a.final = f && { id: f.decision_id, in_flight_decision_id: f.in_flight_decision_id, kind: f.action.kind, attempt: f.attempt, failure_type: f.failure_type };
}
await provider.shutdown();
runtime?.close();
console.log(`AGENT_RESULT ${JSON.stringify({ attempts })}`);
