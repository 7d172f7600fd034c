package main

import (
	"bytes"
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// devWebhookSecret is the development-only signing secret that
// config.example.yaml falls back to when TRIAGE_WEBHOOK_SECRET is unset, so
// `make run` and `triage sink` agree out of the box. It is public: never use
// it for a webhook reachable from elsewhere.
const devWebhookSecret = "whsec_dHJpYWdlLWRldi1vbmx5LXdlYmhvb2stc2VjcmV0ISE="

const (
	// sinkMaxBody bounds one request body (a decision is about 1 KB).
	sinkMaxBody = 1 << 20
	// sinkSeenIDs bounds the webhook-ids remembered for deduplication.
	sinkSeenIDs = 100000
	// sinkMaxHeaderBytes bounds a request's headers.
	sinkMaxHeaderBytes = 64 << 10
	// sinkMaxShownID bounds a webhook-id echoed in a rejection line.
	sinkMaxShownID = 128
)

// sinkLimits are the sink's bounds on one connection and request, so a
// client that sends slowly, never finishes, or sends too much cannot hold
// the sink or its memory.
type sinkLimits struct {
	// readTimeout bounds reading one request, headers and body.
	readTimeout time.Duration
	// writeTimeout bounds handling a request and writing the answer.
	writeTimeout time.Duration
	// idleTimeout closes a keep-alive connection without requests.
	idleTimeout time.Duration
	// maxBody bounds one request body in bytes.
	maxBody int64
}

var defaultSinkLimits = sinkLimits{
	readTimeout:  10 * time.Second,
	writeTimeout: 10 * time.Second,
	idleTimeout:  2 * time.Minute,
	maxBody:      sinkMaxBody,
}

// newSinkServer returns the HTTP server of the sink with its timeouts.
func newSinkServer(h http.Handler, l sinkLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(l.readTimeout, 10*time.Second),
		ReadTimeout:       l.readTimeout,
		WriteTimeout:      l.writeTimeout,
		IdleTimeout:       l.idleTimeout,
		MaxHeaderBytes:    sinkMaxHeaderBytes,
	}
}

// runSink serves a local webhook receiver for the recovery_webhook
// exporter: it verifies each request's Standard Webhooks signature, answers
// 2xx to duplicates of a webhook-id already accepted without printing them
// again, and prints every new decision as one JSON line on stdout.
func runSink(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sink", stderr)
	listen := fs.String("listen", "localhost:9000", "`host:port` to listen on (the exporter's endpoint is http://<listen>/<any path>)")
	secretDefault := os.Getenv("TRIAGE_WEBHOOK_SECRET")
	if secretDefault == "" {
		secretDefault = devWebhookSecret
	}
	secret := fs.String("secret", secretDefault, "signing secret (whsec_<base64> or raw); default $TRIAGE_WEBHOOK_SECRET, else the development secret of config.example.yaml")
	tolerance := fs.Duration("tolerance", 5*time.Minute, "reject a webhook-timestamp further than this from the local clock (replay protection)")
	limits := defaultSinkLimits
	fs.DurationVar(&limits.readTimeout, "read-timeout", limits.readTimeout, "close a connection that takes longer than this to send one request (headers and body)")
	fs.DurationVar(&limits.writeTimeout, "write-timeout", limits.writeTimeout, "bound on handling one request and writing the answer")
	fs.DurationVar(&limits.idleTimeout, "idle-timeout", limits.idleTimeout, "close a keep-alive connection idle this long")
	fs.Int64Var(&limits.maxBody, "max-body", limits.maxBody, "largest request body accepted, in bytes (413 beyond)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if limits.readTimeout <= 0 || limits.writeTimeout <= 0 || limits.idleTimeout <= 0 || limits.maxBody <= 0 {
		fmt.Fprintln(stderr, "triage sink: --read-timeout, --write-timeout, --idle-timeout and --max-body must be positive")
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "triage sink: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	h, err := newSinkHandler(*secret, *tolerance, stdout, stderr)
	if err == nil {
		h.maxBody = limits.maxBody
	}
	if err != nil {
		fmt.Fprintf(stderr, "triage sink: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "triage sink: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stderr, "triage sink: listening on http://%s/ (Ctrl-C stops)\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := newSinkServer(h, limits)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "triage sink: %v\n", err)
		return exitFailed
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
		return exitOK
	}
}

// sinkHandler verifies, dedupes and prints decisions.
type sinkHandler struct {
	key       []byte
	tolerance time.Duration
	maxBody   int64
	now       func() time.Time

	mu     sync.Mutex
	out    io.Writer
	errw   io.Writer
	seen   map[string]*list.Element
	order  *list.List // oldest webhook-id first, for the bound on seen
	maxIDs int
}

func newSinkHandler(secret string, tolerance time.Duration, out, errw io.Writer) (*sinkHandler, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return nil, err
	}
	return &sinkHandler{
		key: key, tolerance: tolerance, maxBody: sinkMaxBody, now: time.Now,
		out: out, errw: errw,
		seen: map[string]*list.Element{}, order: list.New(), maxIDs: sinkSeenIDs,
	}, nil
}

// webhookKey derives the HMAC key as Standard Webhooks does: the decoded
// bytes of a whsec_<base64> secret, else the secret's own bytes (the
// exporter's rule, see exporter/recoverywebhookexporter/README.md).
func webhookKey(secret string) ([]byte, error) {
	if secret == "" {
		return nil, errors.New("--secret is empty: the sink only accepts signed decisions")
	}
	if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("--secret: whsec_ secret is not valid base64: %v", err)
		}
		return key, nil
	}
	return []byte(secret), nil
}

func (h *sinkHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a decision", http.StatusMethodNotAllowed)
		return
	}
	id := r.Header.Get("webhook-id")
	if r.ContentLength > h.maxBody {
		h.reject(w, http.StatusRequestEntityTooLarge, id, "body of %d bytes is over %d", r.ContentLength, h.maxBody)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			h.reject(w, http.StatusRequestEntityTooLarge, id, "body over %d bytes", h.maxBody)
			return
		}
		// A read timeout or a client gone mid-body.
		h.reject(w, http.StatusBadRequest, id, "reading the body: %v", err)
		return
	}
	if err := h.verify(id, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body); err != nil {
		h.reject(w, http.StatusUnauthorized, id, "%v", err)
		return
	}
	var line bytes.Buffer
	if err := json.Compact(&line, body); err != nil || !bytes.HasPrefix(line.Bytes(), []byte("{")) {
		// Permanent for the exporter (a 4xx other than 408/429): the
		// decision is not a JSON object and retrying cannot fix it.
		h.reject(w, http.StatusBadRequest, id, "body is not a JSON object")
		return
	}

	h.mu.Lock()
	duplicate := h.remember(id)
	if !duplicate {
		line.WriteByte('\n')
		_, _ = h.out.Write(line.Bytes())
	}
	h.mu.Unlock()
	// A duplicate is answered 2xx too: the exporter must stop retrying it.
	w.WriteHeader(http.StatusNoContent)
}

// verify checks the Standard Webhooks v1 signature and the timestamp.
func (h *sinkHandler) verify(id, ts, sigHeader string, body []byte) error {
	if id == "" || ts == "" || sigHeader == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q is not Unix seconds", ts)
	}
	if d := h.now().Sub(time.Unix(sec, 0)); d > h.tolerance || d < -h.tolerance {
		return fmt.Errorf("webhook-timestamp %s is %s away from the local clock (tolerance %s)", ts, d.Round(time.Second), h.tolerance)
	}
	mac := hmac.New(sha256.New, h.key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	// Several space-separated signatures are allowed (sender key rotation).
	for _, entry := range strings.Fields(sigHeader) {
		b64, ok := strings.CutPrefix(entry, "v1,")
		if !ok {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no v1 signature matches (wrong secret or altered body)")
}

// remember records id and reports whether it was already seen. Only the
// last maxIDs ids are kept. Callers hold h.mu.
func (h *sinkHandler) remember(id string) bool {
	if _, ok := h.seen[id]; ok {
		return true
	}
	h.seen[id] = h.order.PushBack(id)
	if h.order.Len() > h.maxIDs {
		oldest := h.order.Front()
		h.order.Remove(oldest)
		delete(h.seen, oldest.Value.(string))
	}
	return false
}

func (h *sinkHandler) reject(w http.ResponseWriter, code int, id, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if len(id) > sinkMaxShownID {
		id = id[:sinkMaxShownID] + "…"
	}
	h.mu.Lock()
	fmt.Fprintf(h.errw, "triage sink: rejected %q (%d): %s\n", id, code, msg)
	h.mu.Unlock()
	http.Error(w, msg, code)
}
