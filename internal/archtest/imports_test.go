package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// libraries are the plain-Go packages (with their subpackages), relative
// to the repository root.
var libraries = []string{"trajectory", "classifier", "recovery", "guard", "wire"}

const module = "github.com/triage-otel/triage/"

// forbidden says why a library may not import path, or "" when it may.
func forbidden(path string) string {
	switch {
	case strings.HasPrefix(path, "go.opentelemetry.io/collector/pdata/"):
		return ""
	case strings.HasPrefix(path, "go.opentelemetry.io/collector/"):
		return "a collector package other than pdata"
	case strings.HasPrefix(path, "github.com/open-telemetry/opentelemetry-collector-contrib/"):
		return "a collector-contrib package"
	case strings.HasPrefix(path, "go.opentelemetry.io/otel"):
		return "the OpenTelemetry SDK/API (telemetry is the components' business)"
	}
	for _, c := range []string{"processor/", "connector/", "exporter/", "cmd/", "e2e", "bench", "examples/"} {
		if strings.HasPrefix(path, module+c) {
			return "a component or program of this module"
		}
	}
	return ""
}

func TestForbiddenNamesTheRule(t *testing.T) {
	for path, bad := range map[string]bool{
		"go.opentelemetry.io/collector/pdata/ptrace":                         false,
		"go.opentelemetry.io/collector/pdata/pcommon":                        false,
		"github.com/triage-otel/triage/classifier":                           false,
		"go.opentelemetry.io/collector/component":                            true,
		"go.opentelemetry.io/collector/config/configopaque":                  true,
		"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl": true,
		"go.opentelemetry.io/otel/metric":                                    true,
		"github.com/triage-otel/triage/processor/triageprocessor":            true,
		"github.com/triage-otel/triage/exporter/recoverywebhookexporter":     true,
		"encoding/json": false,
	} {
		if got := forbidden(path) != ""; got != bad {
			t.Errorf("forbidden(%q) = %v, want %v", path, got, bad)
		}
	}
}

// TestLibrariesImportNoCollectorPackageButPdata reads the imports of every
// non-test Go file of the libraries.
func TestLibrariesImportNoCollectorPackageButPdata(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, lib := range libraries {
		err := filepath.WalkDir(filepath.Join(root, lib), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			files++
			rel, _ := filepath.Rel(root, p)
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if why := forbidden(path); why != "" {
					t.Errorf("%s imports %s: %s", rel, path, why)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("read %d files of %v: the walk missed the libraries", files, libraries)
	}
}
