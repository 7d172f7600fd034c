package main

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

const checkedIn = "../agent-failures.json"

// The checked-in dashboard must be exactly what the generator writes: edit
// dashboard.go and run `go generate` in dashboards/grafana/gen, never the JSON.
func TestCheckedInDashboardIsGenerated(t *testing.T) {
	want, err := dashboardJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(checkedIn)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the generator's output at line %d:\n  file: %s\n  gen:  %s\nrun `go generate ./dashboards/grafana/gen`", checkedIn, i+1, g, w)
			}
		}
	}
}

// The parts of the dashboard model the checks below read.
type dashboardModel struct {
	UID        string       `json:"uid"`
	Panels     []panelModel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panelModel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		RefID        string `json:"refId"`
		Instant      bool   `json:"instant"`
		Datasource   *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

var variableRef = regexp.MustCompile(`\$\{?(\w+)`)

// Every panel is usable as shipped: a title, a description (what it
// answers), a unit, queries on the datasource variable with a legend, and
// only template variables the dashboard defines.
func TestDashboardPanelsAreComplete(t *testing.T) {
	b, err := dashboardJSON()
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardModel
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for _, name := range []string{"service", "agent", "failure_type"} {
		if vars[name] != "query" {
			t.Errorf("template variable %q: type %q, want a query variable", name, vars[name])
		}
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("no datasource variable")
	}

	ids := map[int]string{}
	queries := 0
	for _, p := range d.Panels {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d (already used by %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" {
			t.Errorf("panel %d (%s): title %q, description %q: both are needed", p.ID, p.Type, p.Title, p.Description)
		}
		if p.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %q has no unit", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the datasource variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" {
				t.Errorf("panel %q: query %q with refId %q", p.Title, q.Expr, q.RefID)
			}
			if q.Datasource == nil || q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s does not use the datasource variable", p.Title, q.RefID)
			}
			if p.Type == "timeseries" && q.LegendFormat == "" {
				t.Errorf("panel %q query %s has no legend", p.Title, q.RefID)
			}
			for _, m := range variableRef.FindAllStringSubmatch(q.Expr, -1) {
				if name := m[1]; !strings.HasPrefix(name, "__") && vars[name] == "" {
					t.Errorf("panel %q query %s uses $%s, which the dashboard does not define", p.Title, q.RefID, name)
				}
			}
		}
	}
	if queries < 10 {
		t.Errorf("only %d queries in the dashboard", queries)
	}
}
