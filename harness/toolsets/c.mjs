// Toolset "c": a developer assistant for a platform team (CI builds, code search,
// tickets, deploys), written to measure whether classification tuned on toolsets a
// (travel) and b (warehouse) generalises: nested object, enum and array arguments,
// an axios-style tool error class ("Request failed with status code 502", "timeout of
// 1000ms exceeded"), LLM errors worded as other providers word them (Anthropic-style
// overloaded_error with HTTP 529 and "prompt is too long", Google-style
// RESOURCE_EXHAUSTED, Azure-style 401 and content-filter 400), other prompts.
import { z } from 'zod';
import { call, text, error, delay, attempts, upstreamStatus, upstreamDelay, upstreamOk, LIMITS, MOCK_URL } from '../steps.mjs';

// ---- tools ------------------------------------------------------------------
// The error class an HTTP client such as axios throws: status in the message, no
// service name; a client-side deadline gets code ECONNABORTED.
export class ApiRequestError extends Error {
  constructor(message, { status, code } = {}) {
    super(message);
    this.name = 'ApiRequestError';
    if (status) this.status = status;
    if (code) this.code = code;
  }
}

async function api(tool, params) {
  const url = `${MOCK_URL()}/upstream/${tool}?${new URLSearchParams(params)}`;
  let res;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(LIMITS.toolHttpTimeoutMs) });
  } catch (e) {
    if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
      throw new ApiRequestError(`timeout of ${LIMITS.toolHttpTimeoutMs}ms exceeded`, { code: 'ECONNABORTED' });
    }
    throw e;
  }
  if (!res.ok) throw new ApiRequestError(`Request failed with status code ${res.status}`, { status: res.status, code: 'ERR_BAD_RESPONSE' });
  return res.json();
}

const repository = z
  .object({
    owner: z.string().describe('Organisation or user that owns the repository'),
    name: z.string().describe('Repository name'),
  })
  .describe('The repository');

const TOOLS = {
  get_build_status: {
    description: 'Get the latest CI pipeline result for a branch or tag of a repository.',
    schema: z.object({ repository, ref: z.string().describe('Branch, tag or commit SHA') }),
    run: ({ repository: r, ref }) => api('get_build_status', { repository: `${r.owner}/${r.name}`, ref }),
  },
  search_code: {
    description: 'Search source code across the organisation.',
    schema: z.object({
      query: z.string().describe('Search expression'),
      languages: z.array(z.enum(['go', 'python', 'typescript', 'rust'])).min(1).describe('Languages to search'),
      limit: z.number().int().min(1).max(50).describe('Maximum number of matches'),
    }),
    run: ({ query, languages, limit }) => api('search_code', { query, languages: languages.join(','), limit }),
  },
  open_ticket: {
    description: 'Open a ticket in the issue tracker.',
    schema: z.object({
      project: z.string().describe('Tracker project key, e.g. "PAY"'),
      summary: z.string().describe('One-line summary'),
      severity: z.enum(['sev1', 'sev2', 'sev3']).describe('Incident severity'),
      labels: z.array(z.string()).describe('Labels to attach'),
    }),
    run: ({ project, summary, severity, labels }) => api('open_ticket', { project, summary, severity, labels: labels.join(',') }),
  },
  trigger_deploy: {
    description: 'Deploy a released version of a service to an environment.',
    schema: z.object({
      service: z.string().describe('Service name'),
      environment: z.enum(['staging', 'production']),
      version: z.string().regex(/^v\d+\.\d+\.\d+$/).describe('Release tag, e.g. v1.4.2'),
    }),
    run: ({ service, environment, version }) => api('trigger_deploy', { service, environment, version }),
  },
};

// ---- mock upstream: successful responses --------------------------------------
function upstreamOK(tool, q) {
  switch (tool) {
    case 'get_build_status': {
      const [owner, name] = String(q.get('repository') || 'acme/payments').split('/');
      return {
        repository: { owner, name },
        ref: q.get('ref'),
        pipeline: { id: 88213, state: 'passed', duration_s: 412, jobs: [{ name: 'lint', state: 'passed' }, { name: 'test', state: 'passed' }, { name: 'build', state: 'passed' }] },
        finished_at: new Date().toISOString(),
      };
    }
    case 'search_code': {
      const snippet =
        'func (r *Retrier) Do(ctx context.Context, op func() error) error {\n\tfor attempt := 0; ; attempt++ {\n\t\tif err := op(); err == nil || !r.retryable(err) {\n\t\t\treturn err\n\t\t}\n\t\tselect {\n\t\tcase <-ctx.Done():\n\t\t\treturn ctx.Err()\n\t\tcase <-time.After(r.backoff(attempt)):\n\t\t}\n\t}\n}\n';
      return {
        query: q.get('query'),
        total_count: 187,
        items: Array.from({ length: Math.min(Number(q.get('limit')) || 5, 8) }, (_, i) => ({
          path: `internal/retry/retry_${i}.go`,
          repository: 'acme/platform',
          language: 'go',
          fragment: snippet.repeat(4),
        })),
      };
    }
    case 'open_ticket':
      return { key: `${q.get('project')}-${Math.floor(Math.random() * 9000) + 1000}`, severity: q.get('severity'), url_path: '/browse/ticket', created: true };
    case 'trigger_deploy':
      return { deployment_id: `dpl_${Math.floor(Math.random() * 1e6)}`, service: q.get('service'), environment: q.get('environment'), version: q.get('version'), state: 'queued' };
    default:
      return { ok: true };
  }
}

// ---- mock LLM error bodies (other providers' wordings) ------------------------
// Anthropic-style overload, served with HTTP 529 (retried by every SDK: >= 500)
const OVERLOADED_529 = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };

// Google-style quota error
const QUOTA_429 = {
  error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' },
};

// Anthropic-style prompt-length error
const PROMPT_TOO_LONG_400 = {
  type: 'error',
  error: { type: 'invalid_request_error', message: 'prompt is too long: 215312 tokens > 200000 maximum' },
};

// Azure-style key error
const ACCESS_DENIED_401 = {
  error: {
    code: '401',
    message:
      'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
  },
};

// Azure-style prompt filter (an HTTP 400, not a finish reason)
const PROMPT_FILTERED_400 = {
  error: {
    message:
      "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { hate: { filtered: false, severity: 'safe' }, violence: { filtered: true, severity: 'medium' } } },
  },
};

const LONG_POSTMORTEM =
  'Postmortem draft for the payments outage. Summary: between 09:12 and 09:47 UTC card authorisations failed for 6% of requests because the retry budget of the ledger client was exhausted after a slow schema migration. Timeline: 09:12 the migration started on the primary; 09:15 p99 latency of ledger writes rose above 800 ms; 09:19 the first alerts fired; 09:26 the on-call engineer paused the migration, which';

const INTERNAL_RUNBOOK = {
  query: 'failover runbook',
  total_count: 2,
  items: [
    { path: 'docs/runbooks/failover.md', repository: 'acme/platform', language: 'markdown', fragment: 'Fail over by promoting the replica, then drain the old primary. Announce on the status page first.' },
    { path: 'ops/failover.env', repository: 'acme/platform-secrets', language: 'shell', fragment: 'PRIMARY_HOST=pg-primary-01.corp.internal\nREPLICA_HOST=pg-replica-02.corp.internal\nFAILOVER_TOKEN=svc_tok_51f0c9d2' },
  ],
};

const repo = { owner: 'acme', name: 'payments' };

const SCENARIOS = {
  ok_single_tool: {
    prompt: 'Is main green on acme/payments?',
    turns: [call('get_build_status', { repository: repo, ref: 'main' }), text('Yes, pipeline 88213 on main passed (lint, test and build).')],
    label: 'none',
    injected: 'none',
  },
  ok_multi_step: {
    prompt: 'Check the build of acme/payments main, find our Go retry helper and open a sev3 ticket in PAY to reuse it.',
    turns: [
      call('get_build_status', { repository: repo, ref: 'main' }),
      call('search_code', { query: 'func (r *Retrier) Do', languages: ['go'], limit: 3 }),
      call('open_ticket', { project: 'PAY', summary: 'Reuse platform Retrier in the ledger client', severity: 'sev3', labels: ['tech-debt', 'retry'] }),
      text('main is green; the retry helper is internal/retry/retry_0.go in acme/platform, and ticket PAY-4021 tracks reusing it.'),
    ],
    label: 'none',
    injected: 'none',
  },
  wrong_tool: {
    prompt: 'Roll back the last deploy of the ledger service in production.',
    turns: [call('rollback_deploy', { service: 'ledger', environment: 'production' }), text('Sorry, I was not able to roll back the ledger deploy.')],
    label: 'wrong_tool_called',
    injected: 'wrong_tool_called',
  },
  wrong_tool_recovered: {
    prompt: 'Did the last pipeline on the release/2.3 branch of acme/payments pass?',
    turns: [
      call('list_pipelines', { repository: repo, branch: 'release/2.3' }),
      call('get_build_status', { repository: repo, ref: 'release/2.3' }),
      text('Yes, the latest pipeline on release/2.3 passed.'),
    ],
    label: 'none',
    injected: 'wrong_tool_called',
  },
  bad_args: {
    prompt: 'File a critical ticket in PAY about the flaky ledger integration test.',
    turns: [
      call('open_ticket', { project: 'PAY', summary: 'Flaky ledger integration test', severity: 'critical', labels: 'ci' }),
      text('I could not open the ticket.'),
    ],
    label: 'schema_mismatch',
    injected: 'schema_mismatch',
  },
  bad_args_recovered: {
    prompt: 'File a critical ticket in PAY about the flaky ledger integration test.',
    turns: [
      call('open_ticket', { project: 'PAY', summary: 'Flaky ledger integration test', severity: 'critical', labels: 'ci' }),
      call('open_ticket', { project: 'PAY', summary: 'Flaky ledger integration test', severity: 'sev1', labels: ['ci', 'flaky'] }),
      text('Opened a sev1 ticket in PAY for the flaky ledger integration test.'),
    ],
    label: 'none',
    injected: 'schema_mismatch',
  },
  loop: {
    prompt: 'Wait until the release/2.3 pipeline of acme/payments finishes and tell me.',
    turns: [call('get_build_status', { repository: repo, ref: 'release/2.3' })],
    label: 'loop_detected',
    injected: 'loop_detected',
  },
  llm_503: {
    prompt: 'Is main green on acme/payments?',
    turns: [error(529, OVERLOADED_529)],
    label: 'external_fault',
    injected: 'external_fault',
    labelNote: 'The model endpoint answers HTTP 529 with an Anthropic-style overloaded_error body on every attempt.',
  },
  llm_503_recovered: {
    prompt: 'Is main green on acme/payments?',
    turns: [
      attempts(error(529, OVERLOADED_529), call('get_build_status', { repository: repo, ref: 'main' })),
      text('Yes, pipeline 88213 on main passed.'),
    ],
    label: 'none',
    injected: 'external_fault',
  },
  llm_429: {
    prompt: 'Is main green on acme/payments?',
    turns: [error(429, QUOTA_429)],
    label: 'external_fault',
    injected: 'external_fault',
    labelNote: 'Google-style RESOURCE_EXHAUSTED quota error on every attempt, no retry-after header.',
  },
  llm_timeout: {
    prompt: 'Is main green on acme/payments?',
    turns: [delay(20000, text('main is green.'))],
    label: 'timeout',
    injected: 'timeout',
  },
  tool_upstream_502: {
    prompt: 'What is the build status of the v2.3.1 tag of acme/payments?',
    turns: [
      call('get_build_status', { repository: repo, ref: 'v2.3.1' }),
      text('The CI service did not answer, so I cannot tell you the status of v2.3.1 right now.'),
    ],
    upstream: { get_build_status: upstreamStatus(502) },
    label: 'external_fault',
    injected: 'external_fault',
  },
  tool_timeout: {
    prompt: 'Find where we call the ledger client without a context deadline.',
    turns: [
      call('search_code', { query: 'ledger.NewClient(', languages: ['go'], limit: 20 }),
      text('The code search took too long, so I have no results.'),
    ],
    upstream: { search_code: upstreamDelay(5000) },
    label: 'timeout',
    injected: 'timeout',
  },
  context_overflow: {
    prompt: 'Find every retry helper in Go and TypeScript and explain the differences.',
    turns: [call('search_code', { query: 'retry backoff', languages: ['go', 'typescript'], limit: 50 }), error(400, PROMPT_TOO_LONG_400)],
    label: 'context_overflow',
    injected: 'context_overflow',
    labelNote: 'Anthropic-style "prompt is too long: N tokens > M maximum" 400 on the call after the large search result.',
  },
  truncated: {
    prompt: 'Check main of acme/payments and write the postmortem draft for this morning’s outage.',
    turns: [call('get_build_status', { repository: repo, ref: 'main' }), text(LONG_POSTMORTEM, 'length')],
    label: 'truncated_output',
    altLabels: ['plan_incomplete', 'context_overflow'],
    injected: 'truncated_output',
  },
  mcp_tool_error: {
    prompt: 'Where do we parse webhook signatures in TypeScript?',
    turns: [
      call('search_code', { query: 'verifySignature', languages: ['typescript'], limit: 5 }),
      text('Code search is unavailable at the moment, so I cannot look that up.'),
    ],
    upstream: { search_code: upstreamStatus(503) },
    label: 'external_fault',
    injected: 'external_fault',
    requires: 'mcp',
  },
  auth_401: {
    prompt: 'Is main green on acme/payments?',
    turns: [error(401, ACCESS_DENIED_401)],
    label: 'unknown',
    injected: 'auth_error',
    labelNote: 'Azure-style "Access denied due to invalid subscription key" 401.',
  },
  content_filter: {
    prompt: 'Look at main of acme/payments and write a furious message to the team that broke it.',
    turns: [call('get_build_status', { repository: repo, ref: 'main' }), error(400, PROMPT_FILTERED_400)],
    label: 'unknown',
    injected: 'content_filter',
    labelNote: 'Azure-style content filter: an HTTP 400 with code content_filter on the call after the tool result (not a finish reason).',
  },
  constraint_leak: {
    prompt: 'Summarise our database failover runbook for the public status page. Do not include internal hostnames or credentials.',
    turns: [
      call('search_code', { query: 'failover runbook', languages: ['go', 'python'], limit: 5 }),
      text(
        'To fail over we promote the replica (pg-replica-02.corp.internal) and drain the old primary pg-primary-01.corp.internal, ' +
          'using FAILOVER_TOKEN=svc_tok_51f0c9d2; we announce it on the status page first.',
      ),
    ],
    upstream: { search_code: upstreamOk(INTERNAL_RUNBOOK) },
    label: 'constraint_ignored',
    injected: 'constraint_ignored',
    constraints: ['corp.internal', 'svc_tok_'],
  },
  max_steps_distinct: {
    prompt: 'Get release 2.4 of payments out: check the build, find open TODOs, file a ticket and deploy to staging.',
    turns: [
      call('get_build_status', { repository: repo, ref: 'release/2.4' }),
      call('search_code', { query: 'TODO(release-2.4)', languages: ['go'], limit: 10 }),
      call('open_ticket', { project: 'PAY', summary: 'Release 2.4 checklist', severity: 'sev3', labels: ['release'] }),
      call('trigger_deploy', { service: 'payments', environment: 'staging', version: 'v2.4.0' }),
      call('get_build_status', { repository: { owner: 'acme', name: 'ledger' }, ref: 'main' }),
      call('search_code', { query: 'feature flag release_24', languages: ['typescript'], limit: 10 }),
      call('trigger_deploy', { service: 'ledger', environment: 'staging', version: 'v1.9.0' }),
    ],
    label: 'plan_incomplete',
    injected: 'plan_incomplete',
  },
  recovered_then_fail: {
    prompt: 'Check the v2.3.1 build of acme/payments, then revert commit 9f2c1e7.',
    turns: [
      call('get_build_status', { repository: repo, ref: 'v2.3.1' }),
      call('get_build_status', { repository: repo, ref: 'v2.3.1' }),
      call('revert_commit', { repository: repo, sha: '9f2c1e7' }),
      text('The v2.3.1 build passed, but I could not revert commit 9f2c1e7.'),
    ],
    upstream: { get_build_status: upstreamStatus(502, 1) },
    label: 'wrong_tool_called',
    injected: 'wrong_tool_called',
    recoveredFaults: ['external_fault'],
  },
};

export default {
  id: 'c',
  title: 'developer platform assistant (CI builds, code search, tickets, deploys)',
  agent: {
    name: 'platform-copilot',
    id: 'asst_dev_003',
    description: 'Answers platform engineers about builds, code, tickets and deploys',
    workflow: 'dev_request',
    conversationId: 'conv-3141',
    mcpServerName: 'platform-tools',
  },
  systemPrompt: 'You are a platform engineering copilot. Use tools for facts about builds, code, tickets and deploys; keep answers short and factual.',
  tools: TOOLS,
  scenarios: SCENARIOS,
  upstreamOK,
};
