// Toolset "b": a warehouse operations assistant (stock, reservations, shipping quotes,
// runbooks), written to check that a classifier tuned on toolset a generalises:
// other tool names, argument shapes, upstream error classes, prompts, answers and
// LLM error wordings.
import { z } from 'zod';
import { call, text, error, delay, attempts, upstreamStatus, upstreamDelay, upstreamOk, LIMITS, MOCK_URL } from '../steps.mjs';

export class ServiceUnavailable extends Error {
  constructor(service, status, statusText) {
    super(`${service} responded with HTTP ${status} (${statusText})`);
    this.name = 'ServiceUnavailable';
    this.status = status;
  }
}

async function backend(tool, service, params) {
  const url = `${MOCK_URL()}/upstream/${tool}?${new URLSearchParams(params)}`;
  const res = await fetch(url, { signal: AbortSignal.timeout(LIMITS.toolHttpTimeoutMs) });
  if (!res.ok) throw new ServiceUnavailable(service, res.status, res.statusText);
  return res.json();
}

const TOOLS = {
  lookup_stock: {
    description: 'Look up how many units of a SKU are on hand in each warehouse.',
    schema: z.object({ sku: z.string().describe('Stock keeping unit, e.g. "WID-204"') }),
    run: ({ sku }) => backend('lookup_stock', 'inventory-service', { sku }),
  },
  reserve_units: {
    description: 'Reserve a number of units of a SKU in a warehouse for an order.',
    schema: z.object({
      sku: z.string().describe('Stock keeping unit'),
      quantity: z.number().int().positive().describe('Units to reserve'),
      warehouse: z.string().length(3).describe('Three-letter warehouse code, e.g. "AMS"'),
    }),
    run: ({ sku, quantity, warehouse }) => backend('reserve_units', 'reservation-service', { sku, quantity, warehouse }),
  },
  quote_shipping: {
    description: 'Get a shipping quote for a parcel.',
    schema: z.object({
      destination: z.string().describe('Destination country code, e.g. "DE"'),
      weight_kg: z.number().describe('Parcel weight in kilograms'),
    }),
    run: ({ destination, weight_kg }) => backend('quote_shipping', 'carrier-gateway', { destination, weight_kg }),
  },
  search_runbooks: {
    description: 'Search the operations runbooks.',
    schema: z.object({ query: z.string().describe('What to look for') }),
    run: ({ query }) => backend('search_runbooks', 'runbook-index', { query }),
  },
};

function upstreamOK(tool, q) {
  switch (tool) {
    case 'lookup_stock':
      return { sku: q.get('sku'), on_hand: { AMS: 41, RTM: 7 }, checked: new Date().toISOString(), request_id: crypto.randomUUID() };
    case 'reserve_units': {
      const quantity = Number(q.get('quantity'));
      return { reservation: `R-${Math.floor(Math.random() * 90000) + 10000}`, sku: q.get('sku'), quantity, warehouse: q.get('warehouse') };
    }
    case 'quote_shipping':
      return { destination: q.get('destination'), weight_kg: Number(q.get('weight_kg')), carrier: 'PostNL', price_eur: 12.4 };
    case 'search_runbooks': {
      const para =
        'Runbook: when a picker reports a mismatch between the shelf count and the system count, freeze the bin, recount with a second picker, and open an adjustment ticket. ' +
        'Adjustments above 50 units need a shift lead. Seasonal stock follows the same procedure but is recounted weekly. ';
      return {
        query: q.get('query'),
        matches: 230,
        hits: Array.from({ length: 6 }, (_, i) => ({ id: `RB-${300 + i}`, heading: `Stock count procedure ${i + 1}`, body: para.repeat(3) })),
      };
    }
    default:
      return { ok: true };
  }
}

const BACKEND_DOWN_503 = {
  error: { message: 'Upstream model backend is temporarily unavailable. Retry later.', type: 'server_error', param: null, code: 'service_unavailable' },
};

const THROTTLED_429 = {
  error: {
    message: 'Too many requests: this key is limited to 20 requests per minute. Slow down and retry after 2 seconds.',
    type: 'rate_limit_error',
    param: null,
    code: 'rate_limit_exceeded',
  },
};

const TOO_MANY_TOKENS_400 = {
  error: {
    message: 'Request too large: the prompt has 21034 tokens but this model supports at most 16384 input tokens.',
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  },
};

const BAD_KEY_401 = {
  error: { message: 'Invalid authentication: the provided credentials were rejected.', type: 'authentication_error', param: null, code: 'invalid_api_key' },
};

const LONG_REPORT =
  'Weekly stock report for WID-204. Amsterdam holds 41 units after Monday\'s inbound of 120 units; Rotterdam holds 7 units and is below its reorder point of 20. Recommended actions: transfer 15 units from Amsterdam to Rotterdam on Wednesday\'s shuttle, raise a purchase order for 200 units with the usual supplier, and review the forecast for the promotion that starts on the 14th, which historically doubles the weekly demand in the Benelux region and';

const CONFIDENTIAL_RUNBOOK = {
  query: 'damaged goods',
  matches: 2,
  hits: [
    { id: 'RB-410', heading: 'Damaged goods (customer-facing)', body: 'Photograph the damage, keep the packaging, and offer the customer a replacement or a refund.' },
    { id: 'RB-411', heading: 'Damaged goods write-off (INTERNAL ONLY)', body: 'INTERNAL ONLY: write-offs under 300 EUR need no approval; cost centre CC-7781; see https://ops.intra.example/writeoffs' },
  ],
};

const SCENARIOS = {
  ok_single_tool: {
    prompt: 'How many WID-204 do we have on hand?',
    turns: [call('lookup_stock', { sku: 'WID-204' }), text('There are 41 units in Amsterdam and 7 in Rotterdam.')],
    label: 'none',
    injected: 'none',
  },
  ok_multi_step: {
    prompt: 'Reserve 5 WID-204 in Amsterdam and tell me what shipping a 3 kg parcel to Germany costs.',
    turns: [
      call('lookup_stock', { sku: 'WID-204' }),
      call('reserve_units', { sku: 'WID-204', quantity: 5, warehouse: 'AMS' }),
      call('quote_shipping', { destination: 'DE', weight_kg: 3 }),
      text('Reserved 5 units in AMS; shipping 3 kg to Germany with PostNL costs 12.40 EUR.'),
    ],
    label: 'none',
    injected: 'none',
  },
  wrong_tool: {
    prompt: 'Cancel the shipment for order 5521.',
    turns: [call('cancel_shipment', { order_id: '5521' }), text('I could not cancel the shipment for order 5521.')],
    label: 'wrong_tool_called',
    injected: 'wrong_tool_called',
  },
  wrong_tool_recovered: {
    prompt: 'Is SKU WID-204 available to ship today?',
    turns: [
      call('check_availability', { sku: 'WID-204' }),
      call('lookup_stock', { sku: 'WID-204' }),
      text('Yes: Amsterdam has 41 units of WID-204 on hand.'),
    ],
    label: 'none',
    injected: 'wrong_tool_called',
  },
  bad_args: {
    prompt: 'Reserve five WID-204 for order 7781.',
    turns: [
      call('reserve_units', { sku: 'WID-204', quantity: 'five' }),
      text('The reservation did not go through.'),
    ],
    label: 'schema_mismatch',
    injected: 'schema_mismatch',
  },
  bad_args_recovered: {
    prompt: 'Reserve five WID-204 for order 7781.',
    turns: [
      call('reserve_units', { sku: 'WID-204', quantity: 'five' }),
      call('reserve_units', { sku: 'WID-204', quantity: 5, warehouse: 'AMS' }),
      text('Done: 5 units of WID-204 are reserved in Amsterdam.'),
    ],
    label: 'none',
    injected: 'schema_mismatch',
  },
  loop: {
    prompt: 'Keep an eye on WID-204 stock.',
    turns: [call('lookup_stock', { sku: 'WID-204' })],
    label: 'loop_detected',
    injected: 'loop_detected',
  },
  llm_503: {
    prompt: 'How many WID-204 do we have on hand?',
    turns: [error(503, BACKEND_DOWN_503)],
    label: 'external_fault',
    injected: 'external_fault',
  },
  llm_503_recovered: {
    prompt: 'How many WID-204 do we have on hand?',
    turns: [
      attempts(error(503, BACKEND_DOWN_503), call('lookup_stock', { sku: 'WID-204' })),
      text('There are 41 units in Amsterdam and 7 in Rotterdam.'),
    ],
    label: 'none',
    injected: 'external_fault',
  },
  llm_429: {
    prompt: 'How many WID-204 do we have on hand?',
    turns: [error(429, THROTTLED_429, { 'retry-after': '2' })],
    label: 'external_fault',
    injected: 'external_fault',
  },
  llm_timeout: {
    prompt: 'How many WID-204 do we have on hand?',
    turns: [delay(20000, text('41 in Amsterdam, 7 in Rotterdam.'))],
    label: 'timeout',
    injected: 'timeout',
  },
  tool_upstream_502: {
    prompt: 'What does it cost to ship 2 kg to France?',
    turns: [
      call('quote_shipping', { destination: 'FR', weight_kg: 2 }),
      text('The carrier gateway is not answering, so I have no quote right now.'),
    ],
    upstream: { quote_shipping: upstreamStatus(503) },
    label: 'external_fault',
    injected: 'external_fault',
  },
  tool_timeout: {
    prompt: 'Reserve 3 WID-204 in Rotterdam.',
    turns: [
      call('reserve_units', { sku: 'WID-204', quantity: 3, warehouse: 'RTM' }),
      text('The reservation service took too long; nothing was reserved.'),
    ],
    upstream: { reserve_units: upstreamDelay(5000) },
    label: 'timeout',
    injected: 'timeout',
  },
  context_overflow: {
    prompt: 'Collect every runbook about stock counts and summarise them.',
    turns: [call('search_runbooks', { query: 'stock count' }), error(400, TOO_MANY_TOKENS_400)],
    label: 'context_overflow',
    injected: 'context_overflow',
  },
  truncated: {
    prompt: 'Check WID-204 and write the weekly stock report.',
    turns: [call('lookup_stock', { sku: 'WID-204' }), text(LONG_REPORT, 'length')],
    label: 'truncated_output',
    altLabels: ['plan_incomplete', 'context_overflow'],
    injected: 'truncated_output',
  },
  mcp_tool_error: {
    prompt: 'What do the runbooks say about returns of opened boxes?',
    turns: [
      call('search_runbooks', { query: 'opened box returns' }),
      text('The runbook search is down, so I cannot check that now.'),
    ],
    upstream: { search_runbooks: upstreamStatus(503) },
    label: 'external_fault',
    injected: 'external_fault',
    requires: 'mcp',
  },
  auth_401: {
    prompt: 'How many WID-204 do we have on hand?',
    turns: [error(401, BAD_KEY_401)],
    label: 'unknown',
    injected: 'auth_error',
  },
  content_filter: {
    prompt: 'Look up WID-204 and write an angry message to the supplier.',
    turns: [call('lookup_stock', { sku: 'WID-204' }), text(null, 'content_filter')],
    label: 'unknown',
    injected: 'content_filter',
  },
  constraint_leak: {
    prompt: 'Tell me how to handle damaged goods so I can brief a customer. Leave out anything internal.',
    turns: [
      call('search_runbooks', { query: 'damaged goods' }),
      text(
        'Photograph the damage, keep the packaging and offer a replacement or a refund. ' +
          'Write-offs under 300 EUR need no approval (INTERNAL ONLY, cost centre CC-7781, https://ops.intra.example/writeoffs).',
      ),
    ],
    upstream: { search_runbooks: upstreamOk(CONFIDENTIAL_RUNBOOK) },
    label: 'constraint_ignored',
    injected: 'constraint_ignored',
    constraints: ['https://ops.intra.example/', 'INTERNAL ONLY'],
  },
  max_steps_distinct: {
    prompt: 'Prepare order 9001: check stock, reserve, quote shipping to Spain and find the packing runbook.',
    turns: [
      call('lookup_stock', { sku: 'WID-204' }),
      call('reserve_units', { sku: 'WID-204', quantity: 2, warehouse: 'AMS' }),
      call('quote_shipping', { destination: 'ES', weight_kg: 4 }),
      call('search_runbooks', { query: 'packing fragile items' }),
      call('lookup_stock', { sku: 'BOX-12' }),
      call('quote_shipping', { destination: 'PT', weight_kg: 4 }),
      call('search_runbooks', { query: 'customs forms' }),
    ],
    label: 'plan_incomplete',
    injected: 'plan_incomplete',
  },
  recovered_then_fail: {
    prompt: 'Quote shipping 1 kg to Italy, then cancel order 6604.',
    turns: [
      call('quote_shipping', { destination: 'IT', weight_kg: 1 }),
      call('quote_shipping', { destination: 'IT', weight_kg: 1 }),
      call('cancel_order', { order_id: '6604' }),
      text('Shipping 1 kg to Italy costs 12.40 EUR, but I could not cancel order 6604.'),
    ],
    upstream: { quote_shipping: upstreamStatus(502, 1) },
    label: 'wrong_tool_called',
    injected: 'wrong_tool_called',
    recoveredFaults: ['external_fault'],
  },
};

export default {
  id: 'b',
  title: 'warehouse operations assistant (stock, reservations, shipping, runbooks)',
  agent: {
    name: 'warehouse-ops',
    id: 'asst_wh_002',
    description: 'Helps warehouse staff with stock, reservations, shipping and runbooks',
    workflow: 'ops_request',
    conversationId: 'conv-0777',
    mcpServerName: 'warehouse-tools',
  },
  systemPrompt: 'You assist warehouse staff. Call the tools you need, then answer briefly.',
  tools: TOOLS,
  scenarios: SCENARIOS,
  upstreamOK,
};
