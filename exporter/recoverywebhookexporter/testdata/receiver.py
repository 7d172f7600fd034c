"""A minimal recovery-decision webhook receiver (standard library only).

    TRIAGE_WEBHOOK_SECRET=whsec_... python3 receiver.py 8088

Verifies each request's signature, dedupes on webhook-id (the idempotency key:
a retried decision is acknowledged but not acted on twice) and prints one JSON
line per new decision. Point the exporter's endpoint at http://127.0.0.1:8088/.
"""
import http.server
import json
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verify import verify  # noqa: E402

SECRET = os.environ["TRIAGE_WEBHOOK_SECRET"]
SEEN = OrderedDict()  # webhook-id -> None, bounded
MAX_SEEN = 100_000


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        headers = {k.lower(): v for k, v in self.headers.items()}
        if not verify(SECRET, headers, body):
            self.send_response(401)
            self.end_headers()
            return
        webhook_id = headers["webhook-id"]
        if webhook_id not in SEEN:
            SEEN[webhook_id] = None
            if len(SEEN) > MAX_SEEN:
                SEEN.popitem(last=False)
            decision = json.loads(body)
            # Act on the decision here: decision["action"]["kind"] is retry,
            # replan, resume, rollback, fallback, suspend, escalate or abort.
            print(json.dumps({"webhook_id": webhook_id, "action": decision["action"]["kind"],
                              "failure_type": decision.get("failure_type")}), flush=True)
        self.send_response(204)  # 2xx for duplicates too, or the sender retries
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8088
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
