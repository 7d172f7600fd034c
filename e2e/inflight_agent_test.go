//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInFlightStopsARunningAgent: a real framework agent (the capture
// harness's Vercel AI SDK agent, e2e/harness-extra/looping-agent.mjs) loops
// on a slow tool with a long step limit, its SDK exporting every second, to
// the ocb-built collector, whose webhook points at the agent's own runtime.
// The in-flight loop decision reaches the runtime while the agent is still
// running, and the runtime stops it: replan twice (the session's loop
// budget), then escalate. Skipped without the harness (TRIAGE_HARNESS, or a
// harness/ with node_modules beside shared/) or node.
func TestInFlightStopsARunningAgent(t *testing.T) {
	repo := repoRoot(t)
	harness := harnessDir(t, sharedDir(t, repo))
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	otelcol := collectorBinary(t, repo)
	work := t.TempDir()

	ports := freePorts(t, 3)
	mockPort, otlpPort, runtimePort := ports[0], ports[1], ports[2]
	startProcess(t, filepath.Join(work, "mock.log"), node, filepath.Join(harness, "mock-llm.mjs"), "--port", fmt.Sprint(mockPort), "--scenario", "loop")
	waitURL(t, fmt.Sprintf("http://127.0.0.1:%d/v1/models", mockPort))

	key := make([]byte, 24)
	_, _ = rand.Read(key)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	cfg := decisionsConfig{otlpPort: otlpPort, webhookURL: fmt.Sprintf("http://127.0.0.1:%d/decisions", runtimePort),
		secret: secret, wait: time.Minute}
	cfgPath := filepath.Join(work, "otelcol.yaml")
	writeFile(t, cfgPath, cfg.yaml())
	col := startCollector(t, otelcol, cfgPath, filepath.Join(work, "otelcol.log"))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", otlpPort)
	waitHTTPReady(t, col, endpoint)

	// The agent's folder: the script and a link to the harness's packages.
	agentDir := filepath.Join(work, "agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repo, "e2e", "harness-extra", "looping-agent.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(agentDir, "looping-agent.mjs"), string(script))
	if err := os.Symlink(filepath.Join(harness, "node_modules"), filepath.Join(agentDir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// One agent process by default; TRIAGE_AGENT_RUNS=n runs n of them (one
	// session each) and logs the latency percentiles over all attempts.
	runs, _ := strconv.Atoi(os.Getenv("TRIAGE_AGENT_RUNS"))
	var latencies []int
	for i := range max(runs, 1) {
		latencies = append(latencies, runLoopingAgent(t, col, node, agentDir, harness, endpoint, secret, mockPort, runtimePort, fmt.Sprintf("conv-looping-agent-%d", i))...)
	}
	// Then one session whose webhook receiver is the Go example runtime
	// (examples/runtime-receiver) as a sidecar on the same port: the agent
	// registers its runs there and long-polls for what to do.
	sidecar := buildGoProgram(t, repo, work, "./examples/runtime-receiver")
	startProcessEnv(t, filepath.Join(work, "runtime-receiver.log"), []string{"TRIAGE_WEBHOOK_SECRET=" + secret},
		sidecar, "--listen", fmt.Sprintf("127.0.0.1:%d", runtimePort))
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", runtimePort))
	runLoopingAgent(t, col, node, agentDir, harness, endpoint, secret, mockPort, runtimePort, "conv-looping-agent-sidecar",
		fmt.Sprintf("RUNTIME_URL=http://127.0.0.1:%d", runtimePort))
	sort.Ints(latencies)
	if n := len(latencies); n > 0 {
		t.Logf("%d in-flight decisions: tripping span exported -> decision POST at the runtime: p50 %d ms, p99 %d ms, max %d ms",
			n, latencies[n/2], latencies[min(n-1, n*99/100)], latencies[n-1])
	}
	col.stop(t)
}

// runLoopingAgent runs the agent once (one session) and checks its three
// attempts; it returns the latencies the runtime measured (ms).
func runLoopingAgent(t *testing.T, col *collector, node, agentDir, harness, endpoint, secret string, mockPort, runtimePort int, session string, env ...string) []int {
	t.Helper()
	const maxSteps = 40
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "looping-agent.mjs")
	cmd.Dir = agentDir
	cmd.Env = append(os.Environ(), "HARNESS_DIR="+harness, fmt.Sprintf("MOCK_URL=http://127.0.0.1:%d", mockPort),
		"OTLP_ENDPOINT="+endpoint, fmt.Sprintf("RUNTIME_PORT=%d", runtimePort), "WEBHOOK_SECRET="+secret,
		"SESSION="+session, fmt.Sprintf("MAX_STEPS=%d", maxSteps), "TOOL_DELAY_MS=600", "MAX_ATTEMPTS=3")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agent: %v\n%s\n%s\ncollector log:\n%s", err, out, stderr.String(), col.logTail())
	}
	type decisionSeen struct {
		ID, Phase, Guard, Kind, Hint, Reason, Policy string
		Attempt                                      int
	}
	var result struct {
		Attempts []struct {
			Attempt   int
			TraceID   string `json:"trace_id"`
			Outcome   string
			ToolCalls int `json:"tool_calls"`
			RanMS     int `json:"ran_ms"`
			Decision  *decisionSeen
			LatencyMS *int `json:"latency_ms"`
			Final     *struct {
				ID                 string
				InFlightDecisionID string `json:"in_flight_decision_id"`
				Kind               string
				Attempt            int
				FailureType        string `json:"failure_type"`
			}
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "AGENT_RESULT "); ok {
			if err := json.Unmarshal([]byte(rest), &result); err != nil {
				t.Fatalf("AGENT_RESULT: %v", err)
			}
		}
	}
	var latencies []int
	if len(result.Attempts) != 3 {
		t.Fatalf("%d attempts, want 3 (replan, replan, escalate):\n%s\n%s", len(result.Attempts), out, stderr.String())
	}
	want := []struct {
		kind, policy string
	}{{"replan", "loop_detected:replan"}, {"replan", "loop_detected:replan"}, {"escalate", "loop_detected:exhausted"}}
	for i, a := range result.Attempts {
		d := a.Decision
		if d == nil {
			t.Errorf("attempt %d: no in-flight decision reached the runtime while it ran (%s, %d tool calls)", a.Attempt, a.Outcome, a.ToolCalls)
			continue
		}
		if a.Outcome != "stopped by the runtime" || a.ToolCalls >= maxSteps {
			t.Errorf("attempt %d: %s after %d tool calls: the decision did not arrive while the agent ran", a.Attempt, a.Outcome, a.ToolCalls)
		}
		if d.Phase != "in_flight" || d.Guard != "loop" || d.Kind != want[i].kind || d.Policy != want[i].policy || d.Attempt != i+1 {
			t.Errorf("attempt %d: decision %+v, want %s by %s, attempt %d", a.Attempt, d, want[i].kind, want[i].policy, i+1)
		}
		if f := a.Final; f == nil || f.InFlightDecisionID != d.ID || f.Attempt != d.Attempt || f.Kind != d.Kind || f.FailureType != "loop_detected" {
			t.Errorf("attempt %d: final decision %+v does not follow the in-flight one %s", a.Attempt, a.Final, d.ID)
		}
		lat := "?"
		if a.LatencyMS != nil {
			lat = fmt.Sprintf("%d ms", *a.LatencyMS)
			latencies = append(latencies, *a.LatencyMS)
		}
		t.Logf("%s attempt %d: %s after %d tool calls (%d ms); in-flight %s (%s) %s after the tripping span was exported", session, a.Attempt, a.Outcome, a.ToolCalls, a.RanMS, d.Kind, d.Policy, lat)
	}
	return latencies
}

// harnessDir finds the capture harness with its packages installed.
func harnessDir(t *testing.T, shared string) string {
	t.Helper()
	cands := []string{os.Getenv("TRIAGE_HARNESS"), filepath.Join(filepath.Dir(shared), "harness"), filepath.Join(shared, "harness")}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "node_modules", ".package-lock.json")); err == nil {
			return c
		}
	}
	t.Skip("the capture harness with node_modules was not found (set TRIAGE_HARNESS)")
	return ""
}

// startProcess starts a helper process, killed when the test ends.
func startProcess(t *testing.T, logPath, bin string, args ...string) {
	t.Helper()
	startProcessEnv(t, logPath, nil, bin, args...)
}

// startProcessEnv is startProcess with variables added to the environment.
func startProcessEnv(t *testing.T, logPath string, env []string, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
}

// buildGoProgram builds a main package of the repository into dir.
func buildGoProgram(t *testing.T, repo, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// waitListening waits until something accepts connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(collectorStartTimeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

func waitURL(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(collectorStartTimeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer", url)
}
