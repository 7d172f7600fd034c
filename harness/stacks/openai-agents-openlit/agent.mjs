// (n) OpenAI Agents SDK (@openai/agents, the same Agent + zod tools + run(maxTurns) as
//     agents/openai-agents.mjs) traced by OpenLIT (openlit 1.15.0): openlit.init()
//     builds its own tracer provider and OTLP/HTTP exporters; its openai-agents
//     instrumentation registers a TracingProcessor with the Agents SDK (replacing the
//     default OpenAI platform exporter, so nothing is sent to OpenAI) and turns the
//     SDK's agent / function / handoff spans into GenAI-semconv spans, and its openai
//     instrumentation records the chat calls (the processor skips the SDK's own
//     generation spans for them). Both instrumentations patch CommonJS exports, so the
//     agent loads @openai/agents and openai with require() and hands them to init()
//     (`instrumentations`, OpenLIT's documented manual patching), as an ESM app must.
//     OpenLIT's GenAI events go to /v1/logs; metrics to /v1/metrics (ignored by the
//     capture server). pricingJson is given so init() does not fetch its price list.
import { createRequire } from 'node:module';
import { getScenario, report, describeError } from '../../lib/agent-main.mjs';
import { MOCK_URL } from '../../lib/tools.mjs';
import { LIMITS } from '../../lib/scenarios.mjs';

const require = createRequire(import.meta.url);
const agents = require('@openai/agents');
const openaiModule = require('openai');
const openlit = require('openlit').default;

const scenario = getScenario();
const { tools: TOOLS, toolNames: TOOL_NAMES, systemPrompt: SYSTEM_PROMPT, agent: AGENT } = scenario.toolset;
const OTLP_ENDPOINT = process.env.OTLP_ENDPOINT || 'http://127.0.0.1:4318';

openlit.init({
  applicationName: 'openai-agents-openlit-agent',
  environment: 'test',
  otlpEndpoint: OTLP_ENDPOINT,
  instrumentations: { 'openai-agents': agents, openai: openaiModule },
  pricingJson: {},
  disableMetrics: true,
});

const { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, getGlobalTraceProvider } = agents;
const OpenAI = openaiModule.OpenAI;

setDefaultOpenAIClient(
  new OpenAI({ baseURL: `${MOCK_URL}/v1`, apiKey: 'sk-mock-key', timeout: LIMITS.llmTimeoutMs, maxRetries: LIMITS.llmMaxRetries }),
);
setOpenAIAPI('chat_completions');

const tools = TOOL_NAMES.map((n) =>
  tool({
    name: n,
    description: TOOLS[n].description,
    parameters: TOOLS[n].schema,
    execute: async (args) => JSON.stringify(await TOOLS[n].run(args)),
  }),
);

const agent = new Agent({ name: AGENT.name, instructions: SYSTEM_PROMPT, model: 'gpt-4o-mini', tools });

let result;
try {
  const r = await run(agent, scenario.prompt, { maxTurns: LIMITS.maxSteps });
  const items = r.newItems.map((it) => {
    const raw = it.rawItem || {};
    return { type: it.type, name: raw.name, output: it.type === 'tool_call_output_item' ? String(it.output ?? '').slice(0, 300) : undefined };
  });
  result = { status: 'ok', text: r.finalOutput, items };
} catch (e) {
  result = { status: 'error', error: describeError(e) };
} finally {
  try {
    await getGlobalTraceProvider().forceFlush();
  } catch {}
  const { trace } = require('@opentelemetry/api');
  const provider = trace.getTracerProvider();
  const delegate = provider.getDelegate ? provider.getDelegate() : provider;
  try {
    await delegate.forceFlush?.();
    await delegate.shutdown?.();
  } catch {}
}
report(result);
