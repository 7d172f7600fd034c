// (m) Vercel AI SDK (the same generateText + zod tools + stopWhen agent as
//     agents/vercel-ai.mjs) with its experimental_telemetry spans exported through
//     OpenInference's span processor for the AI SDK (@arizeai/openinference-vercel
//     2.8.1, the last release for ai <= 6 / Node 20), set up as its README shows:
//     OpenInferenceBatchSpanProcessor with spanFilter isOpenInferenceSpan. The
//     processor adds openinference.span.kind, llm.*, tool.*, input.value/output.value
//     to the ai.* spans (which keep their own attributes), drops spans it does not
//     map, and sets the root span's status from the whole trace (ERROR with the first
//     error's message when any span of the trace failed, else OK).
//
//     2.8.1 is built on the OTel JS SDK 1.x: it reads ReadableSpan.parentSpanId, which
//     SDK 2.x replaced by parentSpanContext, so with SDK 2 every span looks like a root
//     and gets the trace's first error. This stack is a standalone npm project with the
//     SDK 1.30 line and its OTLP exporter (package.json here), not a root workspace.
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { OpenInferenceBatchSpanProcessor, isOpenInferenceSpan } from '@arizeai/openinference-vercel';
import { getScenario, report, describeError } from '../../lib/agent-main.mjs';
import { MOCK_URL } from '../../lib/tools.mjs';
import { LIMITS } from '../../lib/scenarios.mjs';

const scenario = getScenario();
const { tools: TOOLS, toolNames: TOOL_NAMES, systemPrompt: SYSTEM_PROMPT, agent: AGENT } = scenario.toolset;
const OTLP_ENDPOINT = process.env.OTLP_ENDPOINT || 'http://127.0.0.1:4318';
const tracerProvider = new NodeTracerProvider({
  resource: new Resource({
    'service.name': 'vercel-openinference-agent',
    'service.version': '0.1.0',
    'service.namespace': 'agent-harness',
    'deployment.environment.name': 'test',
  }),
});
tracerProvider.addSpanProcessor(
  new OpenInferenceBatchSpanProcessor({
    exporter: new OTLPTraceExporter({ url: `${OTLP_ENDPOINT}/v1/traces` }), // OTLP/JSON
    spanFilter: isOpenInferenceSpan,
    config: { scheduledDelayMillis: 500 },
  }),
);
tracerProvider.register();
const otel = {
  shutdown: async () => {
    await tracerProvider.forceFlush();
    await tracerProvider.shutdown();
  },
};

const { generateText, tool, stepCountIs } = await import('ai');
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');

const provider = createOpenAICompatible({
  name: 'openai',
  baseURL: `${MOCK_URL}/v1`,
  apiKey: 'sk-mock-key',
  includeUsage: true,
});

const tools = Object.fromEntries(
  TOOL_NAMES.map((n) => [
    n,
    tool({ description: TOOLS[n].description, inputSchema: TOOLS[n].schema, execute: (args) => TOOLS[n].run(args) }),
  ]),
);

let result;
try {
  const r = await generateText({
    model: provider.chatModel('gpt-4o-mini'),
    system: SYSTEM_PROMPT,
    prompt: scenario.prompt,
    tools,
    stopWhen: stepCountIs(LIMITS.maxSteps),
    maxRetries: LIMITS.llmMaxRetries,
    // per-step timeout; generous enough for the SDK's own retry backoff (2s, 4s) to run out first
    timeout: { stepMs: LIMITS.aiSdkStepTimeoutMs },
    experimental_telemetry: {
      isEnabled: true,
      functionId: AGENT.name,
      metadata: { agent: AGENT.name, conversationId: AGENT.conversationId },
    },
  });
  result = {
    status: 'ok',
    finishReason: r.finishReason,
    steps: r.steps.length,
    text: r.text,
    stepSummary: r.steps.map((s) => ({
      finishReason: s.finishReason,
      toolCalls: s.toolCalls.map((c) => c.toolName),
      content: s.content.filter((p) => p.type === 'tool-error' || p.type === 'tool-result').map((p) =>
        p.type === 'tool-error' ? { type: p.type, tool: p.toolName, error: String(p.error?.message ?? p.error).slice(0, 300) } : { type: p.type, tool: p.toolName },
      ),
    })),
  };
} catch (e) {
  result = { status: 'error', error: describeError(e) };
} finally {
  await otel.shutdown();
}
report(result);
