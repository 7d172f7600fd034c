//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The two-tier deployment files (deploy/, README "Scaling out"): every
// collector config and every config embedded in the Helm values is checked
// by the built collector's `validate`, the values against the chart keys
// they rely on, and the two tiers against each other. helm itself is not
// installable here, so the charts are not rendered.

// deployEnv is what the configs read from the environment: placeholders
// with the right shape, so that `validate` checks everything else.
var deployEnv = map[string]string{
	"TRIAGE_TIER2_HOSTNAME":  "triage-tier2.observability.svc.cluster.local",
	"TRIAGE_TIER2_0":         "10.0.0.10:4317",
	"TRIAGE_TIER2_1":         "10.0.0.11:4317",
	"TRIAGE_TIER2_2":         "10.0.0.12:4317",
	"TRIAGE_REDIS_ENDPOINT":  "redis.observability.svc.cluster.local:6379",
	"TRIAGE_REDIS_PASSWORD":  "",
	"TRIAGE_WEBHOOK_URL":     "http://agent-runtime:9000/decisions",
	"TRIAGE_WEBHOOK_SECRET":  "whsec_dGhpcy1pcy1vbmx5LWEtdmFsaWRhdGlvbi1zZWNyZXQ=",
	"TRIAGE_TRACES_ENDPOINT": "http://tempo:4318",
}

func TestDeployConfigsValidate(t *testing.T) {
	repo := repoRoot(t)
	otelcol := collectorBinary(t, repo)
	for _, name := range []string{"tier1.yaml", "tier1-static.yaml", "tier2.yaml"} {
		t.Run(name, func(t *testing.T) {
			validateConfig(t, otelcol, filepath.Join(repo, "deploy", name), deployEnv)
		})
	}
}

// helmValues is the part of the chart's values the deployment relies on.
type helmValues struct {
	FullnameOverride string `yaml:"fullnameOverride"`
	Mode             string `yaml:"mode"`
	ReplicaCount     int    `yaml:"replicaCount"`
	Image            struct {
		Repository string `yaml:"repository"`
		Tag        string `yaml:"tag"`
	} `yaml:"image"`
	Command struct {
		Name string `yaml:"name"`
	} `yaml:"command"`
	ExtraEnvs []struct {
		Name      string         `yaml:"name"`
		Value     *string        `yaml:"value"`
		ValueFrom map[string]any `yaml:"valueFrom"`
	} `yaml:"extraEnvs"`
	Ports map[string]struct {
		Enabled       bool `yaml:"enabled"`
		ContainerPort int  `yaml:"containerPort"`
		ServicePort   int  `yaml:"servicePort"`
	} `yaml:"ports"`
	Service struct {
		Type      string `yaml:"type"`
		ClusterIP string `yaml:"clusterIP"`
	} `yaml:"service"`
	AlternateConfig map[string]any `yaml:"alternateConfig"`
}

func TestHelmValues(t *testing.T) {
	repo := repoRoot(t)
	otelcol := collectorBinary(t, repo)
	const namespace = "observability" // the namespace the values' comments install into
	tiers := map[string]helmValues{}
	for _, tier := range []string{"tier1", "tier2"} {
		var v helmValues
		readYAML(t, filepath.Join(repo, "deploy", "helm", tier+"-values.yaml"), &v)
		tiers[tier] = v
		t.Run(tier, func(t *testing.T) {
			if v.Mode != "deployment" && v.Mode != "statefulset" {
				t.Errorf("mode %q: want deployment or statefulset", v.Mode)
			}
			if v.ReplicaCount < 2 {
				t.Errorf("replicaCount %d: a tier of one is not scaled out", v.ReplicaCount)
			}
			// ocb's dist.name, which the chart runs as /<command.name>.
			if want := distName(t, repo); v.Command.Name != want {
				t.Errorf("command.name %q, want %q (builder-config.yaml dist.name)", v.Command.Name, want)
			}
			if v.Image.Repository == "" || v.Image.Tag == "" {
				t.Errorf("image.repository/tag must be set: the chart's default image has no triage components")
			}
			// The embedded config is deploy/<tier>.yaml, not a drifting copy.
			var file map[string]any
			readYAML(t, filepath.Join(repo, "deploy", tier+".yaml"), &file)
			if !reflect.DeepEqual(v.AlternateConfig, file) {
				t.Errorf("alternateConfig differs from deploy/%s.yaml", tier)
			}
			// It validates with the environment the values give the pod
			// (secrets: placeholders).
			env := map[string]string{}
			for _, e := range v.ExtraEnvs {
				switch {
				case e.Value != nil:
					env[e.Name] = *e.Value
				case e.ValueFrom != nil:
					env[e.Name] = deployEnv[e.Name]
				default:
					t.Errorf("extraEnvs %s has neither value nor valueFrom", e.Name)
				}
			}
			cfg := filepath.Join(t.TempDir(), tier+".yaml")
			b, err := yaml.Marshal(v.AlternateConfig)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, cfg, string(b))
			validateConfig(t, otelcol, cfg, env)
			// Every port the collector listens on is opened on the pod
			// and the Service; the chart's default ports it does not use
			// (jaeger, zipkin) are closed.
			listening := listenPorts(v.AlternateConfig)
			opened := map[int]bool{}
			for name, p := range v.Ports {
				if !p.Enabled {
					continue
				}
				opened[p.ContainerPort] = true
				if !listening[p.ContainerPort] {
					t.Errorf("ports.%s (%d) is enabled but nothing in the config listens on it", name, p.ContainerPort)
				}
				if p.ServicePort != p.ContainerPort {
					t.Errorf("ports.%s: servicePort %d != containerPort %d", name, p.ServicePort, p.ContainerPort)
				}
			}
			for p := range listening {
				if !opened[p] {
					t.Errorf("the config listens on %d but no enabled entry of ports opens it", p)
				}
			}
			for _, name := range []string{"jaeger-compact", "jaeger-thrift", "jaeger-grpc", "zipkin"} {
				if p, ok := v.Ports[name]; !ok || p.Enabled {
					t.Errorf("ports.%s must be disabled (the chart enables it by default; nothing listens)", name)
				}
			}
		})
	}

	t1, t2 := tiers["tier1"], tiers["tier2"]
	// Tier 2 is headless, so that its DNS name resolves to every pod.
	if t2.Service.Type != "ClusterIP" || t2.Service.ClusterIP != "None" {
		t.Errorf("tier 2 service: type %q clusterIP %q, want a headless Service (ClusterIP, None)", t2.Service.Type, t2.Service.ClusterIP)
	}
	if t1.Service.ClusterIP == "None" {
		t.Error("tier 1 service must not be headless: the agents reach it through one address")
	}
	// Tier 1 resolves that Service and sends to its OTLP gRPC port.
	var host string
	for _, e := range t1.ExtraEnvs {
		if e.Name == "TRIAGE_TIER2_HOSTNAME" && e.Value != nil {
			host = *e.Value
		}
	}
	if want := t2.FullnameOverride + "." + namespace + ".svc.cluster.local"; host != want {
		t.Errorf("tier 1 TRIAGE_TIER2_HOSTNAME %q, want tier 2's headless Service %q", host, want)
	}
	dns := dig(t1.AlternateConfig, "exporters", "loadbalancing", "resolver", "dns")
	if dig(dns, "hostname") != "${env:TRIAGE_TIER2_HOSTNAME}" {
		t.Errorf("tier 1 dns resolver hostname %v, want ${env:TRIAGE_TIER2_HOSTNAME}", dig(dns, "hostname"))
	}
	port, _ := strconv.Atoi(fmt.Sprint(dig(dns, "port")))
	if grpc := endpointPort(dig(t2.AlternateConfig, "receivers", "otlp", "protocols", "grpc", "endpoint")); port == 0 || port != grpc {
		t.Errorf("tier 1 sends to port %v, tier 2's OTLP gRPC receiver listens on %d", dig(dns, "port"), grpc)
	}
}

// TestTierTimings: tier 2 waits after a root span longer than tier 1 may
// hold a span of the same trace in a batch (the root can overtake spans that
// went through another tier-1 instance; README "Scaling out").
func TestTierTimings(t *testing.T) {
	repo := repoRoot(t)
	var t1, t1s, t2 map[string]any
	readYAML(t, filepath.Join(repo, "deploy", "tier1.yaml"), &t1)
	readYAML(t, filepath.Join(repo, "deploy", "tier1-static.yaml"), &t1s)
	readYAML(t, filepath.Join(repo, "deploy", "tier2.yaml"), &t2)
	rootWait := duration(t, dig(t2, "processors", "triage", "root_wait"))
	for _, pipe := range []string{"traces", "logs/events"} {
		if procs := fmt.Sprint(dig(t2, "service", "pipelines", pipe, "processors")); !strings.HasPrefix(procs, "[memory_limiter ") {
			t.Errorf("tier2.yaml: the %s pipeline's processors %s do not start with memory_limiter", pipe, procs)
		}
	}
	for name, cfg := range map[string]map[string]any{"tier1.yaml": t1, "tier1-static.yaml": t1s} {
		batch := duration(t, dig(cfg, "processors", "batch", "timeout"))
		if rootWait <= 2*batch {
			t.Errorf("tier2 root_wait %s must exceed twice %s's batch timeout %s (a span can sit that long in one tier-1's batch while the root's batch has just left another, and then be exported)", rootWait, name, batch)
		}
		// Spans and log records routed by one key: the trace ID stamped
		// as an attribute by transform/routing in both pipelines.
		lb := dig(cfg, "exporters", "loadbalancing")
		if dig(lb, "routing_key") != "attributes" || fmt.Sprint(dig(lb, "routing_attributes")) != "[triage.routing_key]" {
			t.Errorf("%s: loadbalancing routes by %v %v, want attributes [triage.routing_key]", name, dig(lb, "routing_key"), dig(lb, "routing_attributes"))
		}
		for _, signal := range []string{"traces", "logs"} {
			if exps := fmt.Sprint(dig(cfg, "service", "pipelines", signal, "exporters")); exps != "[loadbalancing]" {
				t.Errorf("%s: the %s pipeline exports to %s, want [loadbalancing]", name, signal, exps)
			}
			// memory_limiter refuses data before anything holds it; the
			// routing key is stamped right after, before batching.
			if procs := fmt.Sprint(dig(cfg, "service", "pipelines", signal, "processors")); !strings.HasPrefix(procs, "[memory_limiter transform/routing") {
				t.Errorf("%s: the %s pipeline's processors %s do not start with memory_limiter, transform/routing", name, signal, procs)
			}
		}
		// Failures must come back to the load-balancing level (counted,
		// re-routed), not be queued per endpoint.
		if dig(cfg, "exporters", "loadbalancing", "protocol", "otlp", "sending_queue", "enabled") != false {
			t.Errorf("%s: protocol.otlp.sending_queue must be disabled", name)
		}
		if dig(cfg, "exporters", "loadbalancing", "retry_on_failure", "enabled") != true {
			t.Errorf("%s: loadbalancing retry_on_failure must be enabled", name)
		}
	}
}

// ---- helpers ----

func validateConfig(t *testing.T, otelcol, cfg string, env map[string]string) {
	t.Helper()
	cmd := exec.Command(otelcol, "validate", "--config", cfg)
	cmd.Dir = t.TempDir()
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s validate --config %s: %v\n%s", filepath.Base(otelcol), cfg, err, tail(string(out), 4000))
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func distName(t *testing.T, repo string) string {
	var b struct {
		Dist struct {
			Name string `yaml:"name"`
		} `yaml:"dist"`
	}
	readYAML(t, filepath.Join(repo, "builder-config.yaml"), &b)
	return b.Dist.Name
}

// dig returns the value at a path of map keys, or nil.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func duration(t *testing.T, v any) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(fmt.Sprint(v))
	if err != nil {
		t.Fatalf("duration %v: %v", v, err)
	}
	return d
}

func endpointPort(v any) int {
	s := fmt.Sprint(v)
	p, _ := strconv.Atoi(s[strings.LastIndexByte(s, ':')+1:])
	return p
}

// listenPorts returns the ports a collector config listens on: its OTLP
// receiver's protocols, the prometheus exporters and the telemetry reader.
func listenPorts(cfg map[string]any) map[int]bool {
	out := map[int]bool{}
	if protos, ok := dig(cfg, "receivers", "otlp", "protocols").(map[string]any); ok {
		for _, p := range protos {
			if port := endpointPort(dig(p, "endpoint")); port != 0 {
				out[port] = true
			}
		}
	}
	if exps, ok := dig(cfg, "exporters").(map[string]any); ok {
		for name, e := range exps {
			if strings.HasPrefix(name, "prometheus") {
				out[endpointPort(dig(e, "endpoint"))] = true
			}
		}
	}
	if readers, ok := dig(cfg, "service", "telemetry", "metrics", "readers").([]any); ok {
		for _, r := range readers {
			if port, ok := dig(r, "pull", "exporter", "prometheus", "port").(int); ok {
				out[port] = true
			}
		}
	}
	return out
}
