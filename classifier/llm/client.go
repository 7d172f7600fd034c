package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// client calls an OpenAI-compatible chat completions endpoint (OpenAI,
// Ollama, vLLM, llama.cpp server, Groq, LiteLLM, …).
type client struct {
	url        string
	model      string
	apiKey     string
	maxTokens  int
	maxRetries int
	backoff    time.Duration
	http       *http.Client
}

// Error kinds of a failed call, reported to the Observer.
const (
	ErrRateLimited = "rate_limited" // 429 after every retry
	ErrServer      = "server_error" // 5xx after every retry
	ErrClient      = "client_error" // another 4xx: the request itself is refused
	ErrTimeout     = "timeout"      // the consultation's time ran out
	ErrTransport   = "transport"    // connection refused, reset, DNS, TLS
	ErrBadResponse = "bad_response" // a 2xx that is not a chat completion
	ErrNoAnswer    = "no_answer"    // a completion without a usable answer
)

// callError is a failed call with its kind.
type callError struct {
	kind string
	err  error
}

func (e *callError) Error() string { return e.kind + ": " + e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

func errorKind(err error) string {
	var ce *callError
	if errors.As(err, &ce) {
		return ce.kind
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ErrTimeout
	}
	return ErrTransport
}

// chatURL accepts a base URL (http://localhost:11434/v1) or the full
// endpoint.
func chatURL(endpoint string) string {
	e := strings.TrimRight(strings.TrimSpace(endpoint), "/")
	if strings.HasSuffix(e, "/chat/completions") {
		return e
	}
	return e + "/chat/completions"
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	Temperature    float64         `json:"temperature"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type string `json:"type"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// maxResponseBytes bounds the body read from the model server.
const maxResponseBytes = 1 << 20

// completion is one answered call: the content and what it took.
type completion struct {
	content  string
	finish   string
	attempts int
}

// complete asks the model, retrying 429, 5xx and transport errors with
// exponential back-off (honouring Retry-After) while ctx allows. A server
// that refuses response_format is asked once more without it.
func (c *client) complete(ctx context.Context, system, user string) (completion, error) {
	req := chatRequest{
		Model:          c.model,
		Messages:       []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
		Temperature:    0,
		MaxTokens:      c.maxTokens,
		ResponseFormat: &responseFormat{Type: "json_object"},
	}
	var last error
	droppedFormat := false
	for attempt := 1; ; attempt++ {
		content, finish, retryAfter, err := c.once(ctx, &req)
		if err == nil {
			return completion{content: content, finish: finish, attempts: attempt}, nil
		}
		last = err
		var ce *callError
		if errors.As(err, &ce) && ce.kind == ErrClient && !droppedFormat && strings.Contains(strings.ToLower(ce.err.Error()), "response_format") {
			req.ResponseFormat = nil
			droppedFormat = true
			continue
		}
		if !retryable(err) || attempt > c.maxRetries {
			return completion{attempts: attempt}, last
		}
		wait := c.backoffFor(attempt, retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return completion{attempts: attempt}, last
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return completion{attempts: attempt}, &callError{ErrTimeout, fmt.Errorf("waiting to retry after %v: %w", last, ctx.Err())}
		case <-t.C:
		}
	}
}

func retryable(err error) bool {
	switch errorKind(err) {
	case ErrRateLimited, ErrServer, ErrTransport:
		return true
	}
	return false
}

// backoffFor is base·2^(attempt-1) ±20 %, or the server's Retry-After when
// it asks for longer.
func (c *client) backoffFor(attempt int, retryAfter time.Duration) time.Duration {
	d := c.backoff << (attempt - 1)
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(d, retryAfter)
}

func (c *client) once(ctx context.Context, req *chatRequest) (content, finish string, retryAfter time.Duration, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return "", "", 0, &callError{ErrBadResponse, err}
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return "", "", 0, &callError{ErrTransport, err}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", 0, &callError{ErrTimeout, err}
		}
		return "", "", 0, &callError{ErrTransport, err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if ctx.Err() != nil {
			return "", "", 0, &callError{ErrTimeout, err}
		}
		return "", "", 0, &callError{ErrTransport, err}
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return "", "", retryAfterOf(resp), &callError{ErrRateLimited, statusError(resp.StatusCode, raw)}
	case resp.StatusCode >= 500:
		return "", "", retryAfterOf(resp), &callError{ErrServer, statusError(resp.StatusCode, raw)}
	case resp.StatusCode >= 300:
		return "", "", 0, &callError{ErrClient, statusError(resp.StatusCode, raw)}
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil || len(cr.Choices) == 0 {
		return "", "", 0, &callError{ErrBadResponse, fmt.Errorf("not a chat completion: %s", snippet(raw))}
	}
	ch := cr.Choices[0]
	var text string
	if len(ch.Message.Content) > 0 && json.Unmarshal(ch.Message.Content, &text) != nil {
		// Some servers return content parts: [{"type":"text","text":…}].
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(ch.Message.Content, &parts) != nil {
			return "", "", 0, &callError{ErrBadResponse, fmt.Errorf("message content is neither a string nor text parts: %s", snippet(ch.Message.Content))}
		}
		for _, p := range parts {
			text += p.Text
		}
	}
	return text, ch.FinishReason, 0, nil
}

func statusError(code int, body []byte) error {
	return fmt.Errorf("HTTP %d: %s", code, snippet(body))
}

// snippet shows the start of a body in errors.
func snippet(b []byte) string {
	const n = 200
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.TrimSpace(s)
}

// maxRetryAfter bounds what a server may ask for.
const maxRetryAfter = 30 * time.Second

func retryAfterOf(resp *http.Response) time.Duration {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return min(time.Duration(secs)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return 0
}
